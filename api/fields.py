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


class JsonBooleanField(serializers.BooleanField):
    """``true`` or ``false``, nothing else: DRF's ``BooleanField`` also takes ``"yes"``, ``1``, ``"on"``…"""

    default_error_messages = {"not_boolean": "must be true or false, not {kind}"}

    def to_internal_value(self, data: Any) -> bool:
        if not isinstance(data, bool):
            self.fail("not_boolean", kind=type(data).__name__)
        return data


def _json_number(field: serializers.Field, data: Any) -> Any:
    """``data`` when it is a JSON number (a bool is not one), else the field's ``not_number`` error."""
    if isinstance(data, bool) or not isinstance(data, int | float):
        field.fail("not_number", kind=type(data).__name__)
    return data


class JsonNumberField(serializers.FloatField):
    """A JSON number, passed on as sent (what it may be is the caller's rule): never a string or a boolean."""

    default_error_messages = {"not_number": "must be a JSON number, not {kind}"}

    def to_internal_value(self, data: Any) -> Any:
        return _json_number(self, data)


class JsonIntegerField(serializers.IntegerField):
    """A JSON number meant to be whole, passed on as sent (whether it is, and its range, are the caller's rule)."""

    default_error_messages = {"not_number": "must be a JSON number, not {kind}"}

    def to_internal_value(self, data: Any) -> Any:
        return _json_number(self, data)
