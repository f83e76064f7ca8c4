"""Bulk ingestion over REST: conversations (SPEC §6) and model responses, into a study's material.

Each request is validated as a whole and applied in one transaction (all or nothing, errors item by item), is
idempotent by content (a resend reports the items as unchanged), and may carry an Idempotency-Key to replay the
first answer. The body is a JSON array or JSON Lines (Content-Type application/x-ndjson or application/jsonl).
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.apis import IDEMPOTENCY_HEADER
from benchmark import services
from benchmark.api_serializers import ConversationsIngestOut, ResponseItemIn, ResponsesIngestOut
from benchmark.serializers import ConversationIn
from cab import services as cab_services
from cab.api_permissions import study_for
from cab.api_support import BULK_PARSERS, MAX_ITEMS, bulk_body, error_responses, idempotency_key, request_fingerprint
from cab.models import ApiToken

INGEST_PERMS = ("benchmark.add_conversation", "benchmark.change_conversation", "benchmark.add_modelresponse",
                "benchmark.change_modelresponse")
_ERRORS = error_responses(400, 404, 409, 413, 415, 422)
_DESCRIPTION = (
    f"Up to {MAX_ITEMS:,} items per request as a JSON array, or as JSON Lines (`application/x-ndjson`). "
    "Validated as a whole: any wrong item → 400 listing every problem (index, field, message) and nothing is "
    "written. New text for a response that already has judgments → 409 listing the items, nothing written. "
    "Resending identical content writes nothing and counts the items as unchanged. A body over the size limit → 413."
)


class _IngestApi(APIView):
    required_scopes = {"POST": ApiToken.Scope.INGEST}
    required_perms = {"POST": INGEST_PERMS}
    parser_classes = BULK_PARSERS
    error_row_key = "index"

    def ingest(self, request, slug: str, service, output) -> Response:
        study = study_for(request, slug)
        body = bulk_body(request)

        def call():
            summary = service(body.items, model_slots=study.model_slots, by=request.user)
            return 200, output(summary.as_dict()).data

        status, data, replayed = cab_services.idempotent_call(
            user=request.user, key=idempotency_key(request), request_hash=request_fingerprint(request, body.sha256),
            call=call,
        )
        return Response(data, status=status, headers={"Idempotent-Replayed": "true"} if replayed else None)


class ConversationIngestApi(_IngestApi):
    @extend_schema(request=ConversationIn(many=True), parameters=[IDEMPOTENCY_HEADER],
                   responses={200: ConversationsIngestOut, **_ERRORS},
                   summary="Ingest conversations with their turns and responses", description=_DESCRIPTION)
    def post(self, request, slug: str):
        return self.ingest(request, slug, lambda items, **kw: services.conversations_ingest(records=items, **kw),
                           ConversationsIngestOut)


class ResponseIngestApi(_IngestApi):
    @extend_schema(request=ResponseItemIn(many=True), parameters=[IDEMPOTENCY_HEADER],
                   responses={200: ResponsesIngestOut, **_ERRORS},
                   summary="Ingest model responses, each addressed by dataset, conversation, turn and model",
                   description=_DESCRIPTION)
    def post(self, request, slug: str):
        return self.ingest(request, slug, lambda items, **kw: services.responses_ingest(items=items, **kw),
                           ResponsesIngestOut)
