"""Serializer fields of the REST API that take JSON as it was sent."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers


class TextField(serializers.CharField):
    """A JSON string, never a number turned into one: DRF's ``CharField`` accepts ``42`` as ``"42"``, which the
    OpenAPI schema (``type: string``) says is invalid and a client sending a name as a number has made a mistake."""

    default_error_messages = {"not_text": "must be a JSON string, not {kind}"}

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("not_text", kind=type(data).__name__)
        return super().to_internal_value(data)


class TextRegexField(TextField, serializers.RegexField):
    """``TextField`` with a pattern (DRF's ``RegexField``)."""
