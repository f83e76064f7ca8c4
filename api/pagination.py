"""Cursor pagination by id, stable under inserts."""

from __future__ import annotations

from rest_framework import exceptions
from rest_framework.pagination import CursorPagination


class IdCursorPagination(CursorPagination):
    """Stable under inserts (ordered by id); a cursor that does not decode to an id position is a 404.

    A ``page_size`` over ``max_page_size`` is a 400 naming the limit, never a smaller page than asked: a client
    that asked for 10,000 rows and got a full page of 5,000 could take it for all there is if it did not follow
    ``next``. The schema states the bounds (``get_schema_operation_parameters``)."""

    ordering = "id"
    page_size = 500
    page_size_query_param = "page_size"
    max_page_size = 5000

    def get_page_size(self, request):
        values = request.query_params.getlist(self.page_size_query_param)
        if not values:
            return self.page_size
        if len(values) > 1 or not (values[0].isascii() and values[0].isdigit()) or int(values[0]) < 1:
            raise exceptions.ValidationError({self.page_size_query_param: "one whole number, 1 or more"})
        if int(values[0]) > self.max_page_size:
            raise exceptions.ValidationError({self.page_size_query_param: (
                f"at most {self.max_page_size} a page here (asked {values[0][:20]}): ask for {self.max_page_size} "
                "or fewer and follow next to the last page")})
        return int(values[0])

    def get_schema_operation_parameters(self, view):
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            if parameter["name"] == self.page_size_query_param:
                parameter["schema"] = {"type": "integer", "minimum": 1, "maximum": self.max_page_size}
                parameter["description"] = (f"rows a page: 1 to {self.max_page_size} (more is a 400), default "
                                            f"{self.page_size}; follow `next` for the rest")
        return parameters

    def decode_cursor(self, request):
        if len(request.query_params.getlist(self.cursor_query_param)) > 1:
            raise exceptions.ValidationError({self.cursor_query_param: "give one cursor"})
        cursor = super().decode_cursor(request)
        if cursor is not None and cursor.position is not None:
            position = str(cursor.position)
            if not (position.isascii() and position.lstrip("-").isdigit()) or abs(int(position)) >= 2**63:
                raise exceptions.NotFound(self.invalid_cursor_message)
        return cursor
