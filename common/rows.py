"""Model instances from rows of a statement written by hand, converted as the ORM converts them.

A few reads run on every autosave or page, where Django compiling a queryset costs more CPU than the database
spends answering it (issue 11's figures); they are written as SQL of their own and turn their rows into model
instances here, through the same converters a queryset applies (a JSON field's, for one), so what they return is
what the queryset returned. Each such read has a test comparing it with its queryset.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from django.db import connection
from django.db.models import Model


@dataclass(frozen=True)
class ModelColumns:
    """One model's columns in a hand-written SELECT (``alias.column``, in this order) and how to read them back."""

    model: type[Model]
    alias: str
    fields: list[Any]
    converters: list[tuple[int, Any, list[Callable[..., Any]]]]

    @classmethod
    def of(cls, model: type[Model], alias: str, *, leave_out: Sequence[str] = ()) -> ModelColumns:
        """Every concrete field of ``model`` but those named in ``leave_out`` (read later, if ever: deferred)."""
        fields = [f for f in model._meta.concrete_fields if f.name not in leave_out]
        converters = []
        for index, f in enumerate(fields):
            col = f.get_col(alias)
            found = connection.ops.get_db_converters(col) + col.get_db_converters(connection)
            if found:
                converters.append((index, col, found))
        return cls(model, alias, fields, converters)

    def select(self) -> str:
        quote = connection.ops.quote_name
        return ", ".join(f"{self.alias}.{quote(str(f.column))}" for f in self.fields)

    def instance(self, row: Sequence[Any], offset: int = 0) -> Model:
        """The model instance of the columns at ``offset`` in ``row``."""
        values = list(row[offset:offset + len(self.fields)])
        for index, col, converters in self.converters:
            for convert in converters:
                values[index] = convert(values[index], col, connection)
        return self.model.from_db(connection.alias, [f.attname for f in self.fields], values)
