"""One error shape for every API answer: the exception handler turns the services' errors (row errors,
conflicts, Django ValidationError, PermissionDenied) into specific 4xx answers, never a 500; and the shapes of
those answers for the OpenAPI schema."""

from __future__ import annotations

from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from rest_framework import exceptions, serializers, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from api.services import IdempotencyKeyReused
from common.errors import RowConflicts, RowErrors

MAX_ERRORS_SHOWN = 1000


def row_errors_body(error: RowErrors, *, key: str) -> dict:
    shown = error.errors[:MAX_ERRORS_SHOWN]
    return {
        "detail": f"{len(error.errors)} error(s); nothing was changed.",
        "error_count": len(error.errors),
        "errors": [{key: e.row, "field": e.field, "message": e.message} for e in shown],
    }


def exception_handler(exc, context):
    key = getattr(context.get("view"), "error_row_key", "index")
    if isinstance(exc, RowConflicts):
        body = row_errors_body(exc, key=key)
        body["detail"] = exc.conflict_detail.format(n=len(exc.errors))
        return Response(body, status=status.HTTP_409_CONFLICT)
    if isinstance(exc, RowErrors):
        return Response(row_errors_body(exc, key=key), status=status.HTTP_400_BAD_REQUEST)
    if isinstance(exc, IdempotencyKeyReused):
        return Response({"detail": "This Idempotency-Key was already used for a different request; use a new key "
                                   "for new content."}, status=status.HTTP_422_UNPROCESSABLE_ENTITY)
    if isinstance(exc, DjangoValidationError):
        messages = field_messages(exc.message_dict if hasattr(exc, "error_dict") else exc.messages)
        return Response({"detail": "; ".join(exc.messages), "fields": messages}, status=status.HTTP_400_BAD_REQUEST)
    response = drf_exception_handler(exc, context)
    if response is not None and isinstance(exc, exceptions.ValidationError):
        # One error shape everywhere: {"detail": …} first, the per-field messages beside it.
        fields = field_messages(exc.detail)
        response.data = {"detail": "Invalid input: " + "; ".join(
            f"{name}: {' '.join(msgs)}" for name, msgs in fields.items()), "fields": fields}
    return response


def field_messages(detail: object, where: str = "") -> dict[str, list[str]]:
    """``fields`` of an error answer: always {field: [message, …]}, whatever shape the error came in (a message, a
    list of them, a dict of either, nested serializers' errors), so a client reads it one way. A nested field is
    named by its path (``turns[0].index``, ``model_slots[1]``, as the ingestion's item errors name it); an error of
    no field is ``detail``."""
    if isinstance(detail, dict):
        found: dict[str, list[str]] = {}
        for name, value in detail.items():
            # a list field's errors are keyed by the item's position: model_slots[0]
            path = f"{where}[{name}]" if isinstance(name, int) else f"{where}.{name}" if where else str(name)
            found.update(field_messages(value, path))
        return found
    if isinstance(detail, list) and any(isinstance(value, (dict, list)) for value in detail):
        # A list serializer's errors: one entry per item, empty for the items that were right.
        found = {}
        for position, value in enumerate(detail):
            if value:
                found.update(field_messages(value, f"{where}[{position}]"))
        return found
    messages = detail if isinstance(detail, list) else [detail]
    return {where or "detail": [str(message) for message in messages]}


# --- the shape of every error answer, for the OpenAPI schema -----------------------------------------------


class ItemErrorOut(serializers.Serializer):
    index = serializers.IntegerField(required=False, help_text="0-based position of the item in the request")
    line = serializers.IntegerField(required=False, help_text="1-based line of an uploaded file (CSV: header is 1)")
    field = serializers.CharField()
    message = serializers.CharField()


class ErrorOut(serializers.Serializer):
    # ``fields`` and ``errors`` shadow Serializer properties only in the stubs: the serializer metaclass moves
    # declared fields out of the class body.
    detail = serializers.CharField()
    fields = serializers.DictField(  # type: ignore[assignment]
        child=serializers.ListField(child=serializers.CharField()), required=False,
        help_text="field -> its messages (always a list), for a malformed parameter or body; a nested field is "
                  "named by its path (turns[0].index), an error of no one field is under detail"
    )
    error_count = serializers.IntegerField(required=False)
    errors = ItemErrorOut(  # type: ignore[assignment]
        many=True, required=False, help_text="every problem, item by item (at most 1000 shown)"
    )



def error_responses(*codes: int) -> dict[int, type[ErrorOut]]:
    """The error answers particular to an operation (404 for what its path names, 409, 422…); those every operation
    can give (401, 403, 406, 429, and 400, 413 and 415 with a body) are added to each by ``api.openapi.Schema``."""
    return dict.fromkeys(sorted(codes), ErrorOut)


@csrf_exempt  # nothing happens here; without this a POST would get the HTML CSRF page instead of the JSON 404
def api_not_found(request: HttpRequest, *args: object, **kwargs: object) -> JsonResponse:
    """Any /api/v1/… path that names no endpoint: a JSON 404 like every other API error (not the HTML page)."""
    return JsonResponse({"detail": "No such API endpoint; see /api/docs/."}, status=404)
