"""``column = ANY(array)``: a filter on a long list of values with one parameter for the whole list.

``__in`` takes one parameter per value; a statement with thousands of them costs more to build and bind than to
run (psycopg splits the statement at every placeholder), which the bulk paths (ingestion: 5,000 values a chunk)
felt.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db.models import F, Lookup


class AnyOf(Lookup):
    lookup_name = "any_of"
    prepare_rhs = False

    def as_sql(self, compiler: Any, connection: Any) -> tuple[str, Any]:
        lhs, params = self.process_lhs(compiler, connection)
        return f"{lhs} = ANY(%s)", [*params, list(self.rhs)]


def any_of(field: str, values: Iterable[Any]) -> AnyOf:
    """``.filter(any_of("turn_id", ids))``: like ``.filter(turn_id__in=ids)``."""
    return AnyOf(F(field), list(values))
