"""Cursor pagination by id, stable under inserts."""

from __future__ import annotations

from rest_framework import exceptions
from rest_framework.pagination import CursorPagination


class IdCursorPagination(CursorPagination):
    """Stable under inserts (ordered by id); a cursor that does not decode to an id position is a 404."""

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
        return min(int(values[0]), self.max_page_size)

    def decode_cursor(self, request):
        if len(request.query_params.getlist(self.cursor_query_param)) > 1:
            raise exceptions.ValidationError({self.cursor_query_param: "give one cursor"})
        cursor = super().decode_cursor(request)
        if cursor is not None and cursor.position is not None:
            position = str(cursor.position)
            if not (position.isascii() and position.lstrip("-").isdigit()) or abs(int(position)) >= 2**63:
                raise exceptions.NotFound(self.invalid_cursor_message)
        return cursor
