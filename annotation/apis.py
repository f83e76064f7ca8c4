"""REST API for studies, rounds, assignments and judgments, and the judgment exports and import.

Thin views: parse (one input serializer), call one selector or service, shape (one output serializer). Who may
see what is decided by the permissions (token scope, role) and the selectors (rows).
"""

from __future__ import annotations

import hashlib
import io
import re
from collections.abc import Callable
from functools import cached_property
from typing import Protocol

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.http import HttpRequest
from django.http.response import HttpResponseBase
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiRequest, OpenApiResponse, extend_schema
from rest_framework import exceptions, generics, serializers
from rest_framework.pagination import CursorPagination
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from access.checks import is_study_admin, user_sees_all_studies
from annotation import automated_coders, judgment_import, long_format, selectors, session_labels
from annotation.api_serializers import (
    AssignmentFilterIn,
    AssignmentOut,
    JudgmentFilterIn,
    JudgmentImportOut,
    JudgmentOut,
    JudgmentsFileIn,
    MethodIn,
    MethodOut,
    ReferenceIn,
    ReferenceOut,
    RoundOut,
    SessionLabelFilterIn,
    SessionLabelImportOut,
    SessionLabelOut,
    SessionLabelsIn,
    StudyIn,
    StudyOut,
)
from annotation.forms import study_create_scripted
from annotation.kinds import conversation_check
from annotation.models import SessionLabel, Study, StudyMember
from api import services as api_services
from api.errors import error_responses
from api.models import ApiToken
from api.openapi import EXPORT_PROVENANCE_HEADERS, LOCATION_HEADER, RANGE_HEADERS
from api.pagination import IdCursorPagination
from api.parsers import (
    BULK_PARSERS,
    MAX_ITEMS,
    BoundedJSONParser,
    BulkUploadParser,
    PayloadTooLarge,
    RawFile,
    RawJSONLinesAltParser,
    RawJSONLinesParser,
    RawTextParser,
    RawUploadParser,
    bulk_body,
    read_body,
)
from api.permissions import token_allows_study
from api.requests import (
    IDEMPOTENCY_HEADERS,
    idempotency_key,
    query_filter_named,
    query_filters,
    request_fingerprint,
    request_user,
)
from benchmark import conversation_ingest, response_ingest
from benchmark.api_serializers import (
    CONVERSATIONS_IN,
    ConversationFilterIn,
    ConversationOut,
    ConversationsIngestOut,
    ItemsFileIn,
    ResponseFilterIn,
    ResponseItemIn,
    ResponseItemOut,
    ResponsesIngestOut,
)
from common import downloads, provenance

READ = {"GET": ApiToken.Scope.READ}
# What a file sent as a form upload may be: a long-format file (its format is the form's field, its name's or its
# part's Content-Type: api.parsers.upload_format), or items (JSON Lines or a JSON array: its first character says).
_LONG_FORMAT_FILE = {"file": {"contentType": "text/csv, application/x-ndjson, application/jsonl"}}
_ITEMS_FILE = {"file": {"contentType": "application/x-ndjson, application/jsonl, application/json"}}


def study_for(request: Request, slug: str) -> Study:
    """The study in the URL, when the caller may see it; otherwise 404 (a study you cannot see does not exist
    for you). A study-scoped token reaches its own study only."""
    study = selectors.study_visible_get(user=request_user(request), slug=slug)
    if study is None:
        raise exceptions.NotFound(f"No study {slug!r} that you can see.")
    token_allows_study(request, study)
    return study


class _HashedBody(Protocol):
    @property
    def sha256(self) -> str: ...


def _replayable(request: Request, body: _HashedBody, call: Callable[[], tuple[int, dict]]) -> Response:
    """Run ``call`` once per Idempotency-Key (when the request has one) and answer with its status and body. The
    body is hashed only for a key: the hash only tells a resend from another request under the same key."""
    key = idempotency_key(request)
    status, data, replayed = api_services.idempotent_call(
        user=request_user(request), key=key, request_hash=request_fingerprint(request, body.sha256) if key else "",
        call=call,
    )
    return Response(data, status=status, headers={"Idempotent-Replayed": "true"} if replayed else None)


def _blinded_studies(request, studies) -> set[int]:
    """The studies whose model names the caller may not see (one role lookup, however many studies)."""
    if user_sees_all_studies(user=request.user):
        return set()
    return {s.pk for s in studies if not s.show_model_names}


class StudyListApi(APIView):
    required_scopes = {"GET": ApiToken.Scope.READ, "POST": ApiToken.Scope.SETUP}
    required_perms = {"POST": ("annotation.add_study",)}

    @extend_schema(responses={200: StudyOut(many=True), **error_responses()}, summary="Studies you can see")
    def get(self, request):
        studies = selectors.studies_visible_to(user=request.user)
        if isinstance(request.auth, ApiToken) and request.auth.study_id is not None:
            studies = studies.filter(pk=request.auth.study_id)
        listed = list(studies)
        return Response(StudyOut(listed, many=True, context={"blinded": _blinded_studies(request, listed)}).data)

    @extend_schema(
        request=StudyIn, responses={201: StudyOut, **error_responses(409)}, parameters=[LOCATION_HEADER],
        summary="Create a study in set-up (admins): the New study form's fields, checks and messages",
        description=(
            "The same form, service and audit event as the admin's *New study* page and `manage.py create_study`. "
            "A refused study → 400 naming each field and why (`fields`), a slug in use → 409; nothing is written "
            "then. A token limited to one study cannot create another (403)."),
    )
    def post(self, request):
        token = request.auth
        if isinstance(token, ApiToken) and token.study is not None:  # select_related with the token
            raise exceptions.PermissionDenied(f"This token is limited to study {token.study.slug!r}.")
        if not is_study_admin(request.user):
            raise exceptions.PermissionDenied("Only study admins can do this.")
        given = StudyIn(data=request.data)
        given.is_valid(raise_exception=True)
        try:
            study = study_create_scripted(given=given.form_values(), by=request_user(request))
        except ValidationError as error:
            fields = error.message_dict
            if any(e.code == "unique" for e in error.error_dict.get("slug", ())):
                return Response({"detail": "; ".join(fields["slug"]), "fields": fields}, status=409)
            raise exceptions.ValidationError(fields) from error
        return Response(StudyOut(study, context={"blinded": set(), "created": True}).data, status=201,
                        headers={"Location": reverse("api-study", args=[study.slug])})


class StudyDetailApi(APIView):
    required_scopes = READ

    @extend_schema(responses={200: StudyOut, **error_responses(404)}, summary="One study")
    def get(self, request, slug: str):
        study = study_for(request, slug)
        return Response(StudyOut(study, context={"blinded": _blinded_studies(request, [study])}).data)


class RoundListApi(APIView):
    required_scopes = READ

    @extend_schema(responses={200: RoundOut(many=True), **error_responses(404)},
                   summary="Rounds with assignment progress (reviewers: their own)")
    def get(self, request, slug: str):
        study = study_for(request, slug)
        return Response(RoundOut(selectors.rounds_progress(user=request.user, study=study), many=True).data)


class AssignmentListApi(generics.ListAPIView):
    required_scopes = READ
    serializer_class = AssignmentOut
    pagination_class = IdCursorPagination

    @extend_schema(parameters=[AssignmentFilterIn], responses={200: AssignmentOut(many=True),
                                                                **error_responses(400, 404)},
                   summary="Assignments of a round (reviewers: their own), cursor-paginated")
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    def get_queryset(self):
        self.study = study_for(self.request, self.kwargs["slug"])
        rounds = [r.name for r in self.study.rounds.all()]
        if self.kwargs["round_name"] not in rounds:
            raise exceptions.NotFound(f"Study {self.study.slug!r} has no round {self.kwargs['round_name']!r} (its "
                                      f"rounds: {', '.join(rounds) or 'none yet'}).")
        filters = AssignmentFilterIn(data=query_filters(self.request))
        filters.is_valid(raise_exception=True)
        given = dict(filters.validated_data)
        user = request_user(self.request)
        if "reviewer" in given:
            given["reviewer"] = _reviewer_named(
                given["reviewer"], user=user, staff=user_sees_all_studies(user=user), what="assignments",
                names=lambda: [coder.username for coder in selectors.study_coders(study=self.study)])
        return selectors.assignments_visible_to(user=user, study=self.study, round_name=self.kwargs["round_name"],
                                                **given)

    def get_serializer_context(self):
        return {**super().get_serializer_context(), "staff": user_sees_all_studies(user=self.request.user),
                "sessions_blinded": selectors.session_order_hidden(user=self.request.user, study=self.study)}


_HEX_DIGEST = re.compile("[0-9a-f]{32}")


class _BlindCursorPagination(IdCursorPagination):
    """A cursor on ``judgments_visible_to``'s keyed order: its positions are hex digests, not ids."""

    ordering = selectors.JUDGMENT_BLIND_ORDER

    def decode_cursor(self, request):
        if len(request.query_params.getlist(self.cursor_query_param)) > 1:
            raise exceptions.ValidationError({self.cursor_query_param: "give one cursor"})
        cursor = CursorPagination.decode_cursor(self, request)
        if cursor is not None and cursor.position is not None and not _HEX_DIGEST.fullmatch(str(cursor.position)):
            raise exceptions.NotFound(self.invalid_cursor_message)
        return cursor


def _judgment_filters_named(study: Study, given: dict, *, user: User, staff: bool) -> dict:
    """``JudgmentFilterIn``'s values, each resolved to what the study has (``query_filter_named``): a value naming
    nothing of the study is a 400, never an empty list. Reviewers and experts read their own judgments only, so
    their ``reviewer`` can only be themselves, said without telling who else codes; model names reach this only for
    those who may see them (a blinded study refuses the filter first)."""
    named = dict(given)
    if "round" in named:  # rounds are no secret: every member lists them (…/rounds/)
        named["round"] = query_filter_named(parameter="round", value=named["round"], what="rounds",
                                            names=[r.name for r in study.rounds.all()])
    if "model" in named:
        named["model"] = query_filter_named(parameter="model", value=named["model"],
                                            names=selectors.study_models(study=study), what="models")
    if "attribute" in named:
        named["attribute"] = query_filter_named(
            parameter="attribute", value=named["attribute"], what="attributes",
            names=study.schema.attributes.values_list("code", flat=True))
    if "reviewer" in named:
        named["reviewer"] = _reviewer_named(named["reviewer"], user=user, staff=staff, what="judgments",
                                            names=lambda: selectors.study_judgment_coders(study=study))
    return named


def _reviewer_named(value: str, *, user: User, staff: bool, what: str, names: Callable[[], list[str]]) -> str:
    """A ``reviewer`` filter: for staff one of ``names`` (the study's coders); reviewers and experts read their own
    ``what`` only, so theirs can only be themselves, said without telling who else codes."""
    if staff:
        return query_filter_named(parameter="reviewer", value=value, names=names(), what="coders")
    if value.casefold() != user.get_username().casefold():
        raise exceptions.ValidationError(
            {"reviewer": f"you see only your own {what}: give {user.get_username()!r} or leave it out"})
    return user.get_username()


class JudgmentListApi(generics.ListAPIView):
    required_scopes = READ
    serializer_class = JudgmentOut
    pagination_class = IdCursorPagination
    staff = False  # set from the caller's role by get_queryset

    @extend_schema(parameters=[JudgmentFilterIn], responses={200: JudgmentOut(many=True),
                                                              **error_responses(400, 404)},
                   summary="Judgments (reviewers: their own only, never gold), filterable, cursor-paginated")
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    @property
    def paginator(self):
        """Staff page by id; reviewers and experts by the keyed order of ``judgments_visible_to`` (their list must not
        come in the order judgments were created)."""
        if not hasattr(self, "_paginator"):
            self._paginator = IdCursorPagination() if self.staff else _BlindCursorPagination()
        return self._paginator

    def get_queryset(self):
        self.study = study_for(self.request, self.kwargs["slug"])
        self.staff = user_sees_all_studies(user=self.request.user)
        self.blinded = not self.study.show_model_names and not self.staff
        filters = JudgmentFilterIn(data=query_filters(self.request))
        filters.is_valid(raise_exception=True)
        data = dict(filters.validated_data)
        if self.blinded and data.get("model"):
            raise exceptions.ValidationError({"model": "model names are hidden from reviewers in this study"})
        named = _judgment_filters_named(self.study, data, user=request_user(self.request), staff=self.staff)
        return selectors.judgments_visible_to(user=request_user(self.request), study=self.study,
                                              round_name=named.pop("round", None), **named)

    def get_serializer_context(self):
        # A rater of a study whose session order is blinded (docs/sessions.md#study-settings) is never told which
        # trajectory a judgment is of, nor which session of it, as on the session page.
        sessions_blinded = selectors.session_order_hidden(user=self.request.user, study=self.study)
        # Each coder's role in the study, or the one they had when taken off it: the long format's role column.
        coder_roles = {coder.user_id: coder.role for coder in selectors.study_coders(study=self.study)}
        return {**super().get_serializer_context(), "study": self.study, "blinded": self.blinded,
                "staff": self.staff, "sessions_blinded": sessions_blinded, "coder_roles": coder_roles}


class JudgmentImportApi(APIView):
    """All or nothing, through the same importer as ``manage.py import_judgments``."""

    required_scopes = {"POST": ApiToken.Scope.IMPORT}
    required_perms = {"POST": ("annotation.add_judgment", "annotation.change_study")}
    parser_classes = [RawTextParser, RawJSONLinesParser, RawJSONLinesAltParser, RawUploadParser]
    error_row_key = "line"
    # A file is imported whole, so it cannot be split: it may be larger than a body (JUDGMENTS_IMPORT_MAX_SIZE,
    # streamed to a temporary file: api.parsers.RawFile), and past that the command reads it from the disk
    too_large = "Import a larger file with manage.py import_judgments on the server (docs/api.md#importing-judgments)."

    @extend_schema(
        # The file as the body itself (text/csv, application/x-ndjson, application/jsonl) is read too, and said in
        # the description only: generators skip an operation whose body is of a type they do not know.
        request={"multipart/form-data": OpenApiRequest(JudgmentsFileIn, encoding=_LONG_FORMAT_FILE)},
        parameters=IDEMPOTENCY_HEADERS,
        responses={200: JudgmentImportOut, **error_responses(404, 422)},
        summary="Import judgments (the long format, CSV or JSON Lines) into a study, all or nothing",
        description=(
            "The file as a form upload (`multipart/form-data`: the part `file`, and `format` unless the file's name "
            "says it), or as the body itself with `Content-Type: text/csv` or `application/x-ndjson` "
            "(`application/jsonl`). Any wrong row → 400 listing every problem (line, field, message), nothing "
            "written."),
    )
    def post(self, request, slug: str):
        study = study_for(request, slug)  # before the body is read: a study you cannot see is a 404 at once
        body = request.data
        if not isinstance(body, RawFile):
            raise exceptions.ParseError("The body is empty: send the CSV or JSON Lines file as the body.")
        with body.file:  # the temporary file goes when the import is done, whatever its answer
            fmt = "csv" if body.media_type == "text/csv" else "jsonl"

            def call():
                summary = judgment_import.judgments_file_import(file=body.file, fmt=fmt, study_slug=study.slug,
                                                                by=request.user)
                return 200, JudgmentImportOut(summary).data

            return _replayable(request, body, call)


class MethodListApi(APIView):
    """A study's automated coders (LLM judges): registered here, with version and prompt id, before their labels
    arrive through the judgments import (long format, role ``method``)."""

    required_scopes = {"GET": ApiToken.Scope.READ, "POST": ApiToken.Scope.IMPORT}
    required_perms = {"POST": ("annotation.add_judgment", "annotation.change_study")}
    staff_only = True

    @extend_schema(responses={200: MethodOut(many=True), **error_responses(404)}, summary="A study's methods")
    def get(self, request, slug: str):
        study = study_for(request, slug)
        members = study.members.filter(role=StudyMember.Role.METHOD).select_related("user").order_by("user__username")
        return Response(MethodOut(members, many=True).data)

    @extend_schema(request=MethodIn, responses={200: MethodOut, **error_responses(404)},
                   summary="Register a method (an automated coder such as an LLM judge) in a study (idempotent)")
    def post(self, request, slug: str):
        study = study_for(request, slug)
        given = MethodIn(data=request.data)
        given.is_valid(raise_exception=True)
        try:
            member = automated_coders.method_register(study=study, name=given.validated_data["name"],
                                                      version=given.validated_data["version"],
                                                      prompt_id=given.validated_data["prompt_id"], by=request.user)
        except ValidationError as error:
            raise exceptions.ValidationError(automated_coders.coder_errors(error)) from error
        return Response(MethodOut(member).data)


class ReferenceListApi(APIView):
    """A study's reference coders (docs/sessions.md#coders-methods-and-reference-coders): whose session labels every
    rater and method is measured against (e.g. the controlled PHQ-8 state), registered here before their labels arrive
    (``session-labels/``)."""

    required_scopes = {"GET": ApiToken.Scope.READ, "POST": ApiToken.Scope.IMPORT}
    required_perms = {"POST": ("annotation.add_judgment", "annotation.change_study")}
    staff_only = True

    @extend_schema(responses={200: ReferenceOut(many=True), **error_responses(404)},
                   summary="A study's reference coders")
    def get(self, request, slug: str):
        study = study_for(request, slug)
        members = (study.members.filter(role=StudyMember.Role.REFERENCE).select_related("user")
                   .order_by("user__username"))
        return Response(ReferenceOut(members, many=True).data)

    @extend_schema(request=ReferenceIn, responses={200: ReferenceOut, **error_responses(404)},
                   summary="Register a reference coder (the source of a study's reference labels) (idempotent)")
    def post(self, request, slug: str):
        study = study_for(request, slug)
        given = ReferenceIn(data=request.data)
        given.is_valid(raise_exception=True)
        try:
            member = automated_coders.reference_register(study=study, name=given.validated_data["name"],
                                                         description=given.validated_data["description"],
                                                         by=request.user)
        except ValidationError as error:
            raise exceptions.ValidationError(automated_coders.coder_errors(error)) from error
        return Response(ReferenceOut(member).data)


class _RowsBody:
    def __init__(self, data, content: bytes):
        self.data, self._content = data, content

    @cached_property
    def sha256(self) -> str:
        """For an Idempotency-Key only (see ``_replayable``)."""
        return hashlib.sha256(self._content).hexdigest()


class _RowsJSONParser(BoundedJSONParser):
    """``{"rows": [...]}`` as parsed JSON, with the body's bytes for an Idempotency-Key's hash."""

    def parse(self, stream, media_type=None, parser_context=None):
        content = read_body(stream, parser_context)
        data = super().parse(io.BytesIO(content), media_type, None)
        return _RowsBody(data, content)


class SessionLabelApi(generics.ListAPIView):
    """Session labels (docs/sessions.md#session-labels): methods' predictions per seed and the reference labels. POST
    imports them in the long format (all or nothing, idempotent; ``annotation.session_labels``); GET lists them
    (staff)."""

    required_scopes = {"GET": ApiToken.Scope.READ, "POST": ApiToken.Scope.IMPORT}
    required_perms = {"POST": ("annotation.add_judgment", "annotation.change_study")}
    staff_only = True
    serializer_class = SessionLabelOut
    pagination_class = IdCursorPagination
    parser_classes = [_RowsJSONParser]
    error_row_key = "index"

    @extend_schema(parameters=[SessionLabelFilterIn], responses={200: SessionLabelOut(many=True),
                                                                  **error_responses(400, 404)},
                   summary="A study's session labels (methods' predictions, reference labels), filterable, "
                           "cursor-paginated")
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    def get_queryset(self):
        study = study_for(self.request, self.kwargs["slug"])
        filters = SessionLabelFilterIn(data=query_filters(self.request))
        filters.is_valid(raise_exception=True)
        given = filters.validated_data
        labels = SessionLabel.objects.filter(study=study).select_related(
            "coder__user", "session__conversation__dataset", "attribute")
        if "coder" in given:
            coders = StudyMember.objects.filter(study=study, role__in=session_labels.ROLES)
            coder = query_filter_named(parameter="coder", value=given["coder"], what="methods and references",
                                       names=coders.values_list("user__username", flat=True))
            labels = labels.filter(coder__user__username=coder)
        if "seed" in given:
            labels = labels.filter(seed=given["seed"])
        if "role" in given:
            labels = labels.filter(coder__role=given["role"])
        return labels

    @extend_schema(
        request=SessionLabelsIn, parameters=IDEMPOTENCY_HEADERS,
        responses={200: SessionLabelImportOut, **error_responses(404, 422)},
        summary="Import session labels (methods' predictions per seed, reference labels), all or nothing",
        description=(
            f"Up to {MAX_ITEMS:,} rows a request, `{{\"rows\": [...]}}`, each a long-format row naming a session "
            "(dataset, conversation_id, session_index), a session attribute, a score (a JSON number: a method's "
            "value is stored exactly, never rounded or clipped; a reference label is a whole number on the "
            "attribute's scale), the coder (reviewer, registered as a method or reference) and its role, and for "
            "a method an optional seed. Any wrong row → 400 listing every problem (index, field, message), nothing "
            "written. A resend counts the labels as unchanged; a changed value is updated."),
    )
    def post(self, request, slug: str):
        study = study_for(request, slug)
        body = request.data
        if not isinstance(body, _RowsBody):
            raise exceptions.ParseError('The body is empty: send {"rows": [...]} as JSON.')
        rows = body.data.get("rows") if isinstance(body.data, dict) else None
        if not isinstance(rows, list):
            raise exceptions.ValidationError({"rows": 'the body must be a JSON object {"rows": [...]}'})
        if len(rows) > MAX_ITEMS:
            raise PayloadTooLarge(f"{len(rows):,} rows; at most {MAX_ITEMS:,} are accepted per request.")

        def call():
            summary = session_labels.session_labels_import(study=study, rows=rows, by=request.user)
            return 200, SessionLabelImportOut(summary.as_dict()).data

        return _replayable(request, body, call)


class _AnyAccept(APIView):
    """Downloads answer in their own format whatever the Accept header says (errors are still JSON)."""

    answers_any_accept = True  # never a 406 (api.openapi)

    def perform_content_negotiation(self, request, force=False):
        return super().perform_content_negotiation(request, force=True)


def judgments_download(request: HttpRequest, study: Study, fmt: str) -> HttpResponseBase:
    """The file is written whole to a temporary file first (memory stays flat), so that it has a length, an ETag
    and byte ranges: an interrupted download resumes where it stopped (docs/api.md#resuming-a-download), and a
    line that cannot be made is an error answer instead of a cut file."""
    exported = provenance.export_headers()  # when the rows were read: before they are written
    spooled = downloads.Spooled(long_format.WRITERS[fmt](study=study))
    return downloads.resumable(request, spooled, content_type=long_format.CONTENT_TYPES[fmt],
                               filename=f"{study.slug}-judgments.{fmt}", provenance=exported)


class JudgmentExportApi(_AnyAccept, APIView):
    required_scopes = READ
    staff_only = True

    @extend_schema(
        responses={(200, "text/csv"): OpenApiResponse(OpenApiTypes.STR, description="the long format of judgments"),
                   (200, "application/x-ndjson"): OpenApiResponse(OpenApiTypes.STR),
                   (206, "text/csv"): OpenApiResponse(OpenApiTypes.STR, description="the bytes of the Range asked for"),
                   (206, "application/x-ndjson"): OpenApiResponse(OpenApiTypes.STR),
                   **error_responses(404, 416)},
        summary="Download all of a study's judgments (admins and researchers); resumable",
        description="The whole file with its length and ETag; a `Range` (with `If-Range`: the ETag) resumes an "
                    "interrupted download (docs/api.md#resuming-a-download).",
        operation_id="studies_exports_judgments_retrieve",  # drf-spectacular's would be "…judgments._retrieve"
        parameters=[*RANGE_HEADERS, *EXPORT_PROVENANCE_HEADERS],
    )
    def get(self, request, slug: str, fmt: str):
        return judgments_download(request, study_for(request, slug), fmt)


# --- bulk ingestion of a study's material (conversations, model responses) --------------------------------------
# Each request is validated as a whole and applied in one transaction (all or nothing, errors item by item), is
# idempotent by content (a resend reports the items as unchanged), and may carry an Idempotency-Key to replay the
# first answer. The body is a JSON array or JSON Lines (Content-Type application/x-ndjson or application/jsonl).

INGEST_PERMS = ("benchmark.add_conversation", "benchmark.change_conversation", "benchmark.add_modelresponse",
                "benchmark.change_modelresponse")
READ_MATERIAL_PERMS = ("benchmark.view_conversation", "benchmark.view_turn", "benchmark.view_modelresponse")
_ERRORS = error_responses(404, 409, 422)
_DESCRIPTION = (
    f"Up to {MAX_ITEMS:,} items per request: a JSON array (`application/json`), or JSON Lines as the body "
    "(`Content-Type: application/x-ndjson` or `application/jsonl`; a file as a form upload: this path + `upload/`). "
    "Validated as a whole: any wrong item → 400 listing every problem (index, field, message) and nothing is "
    "written. A change to material of another study (a conversation another study ingested first, or has in a "
    "round or judged) → 409 naming the conversation, nothing written. New text for what reviewers coded against "
    "(a response that has judgments or is in an open round; a turn, or a later turn of its conversation, that has "
    "judgments or is in an open round; the fields of a conversation that has either) → 409 listing the items, "
    "nothing written. Resending identical content writes nothing and counts the items as unchanged. A body over "
    "the size limit → 413."
)


def _ingest(request: Request, slug: str, service, output) -> Response:
    study = study_for(request, slug)
    body = bulk_body(request)

    def call():
        summary = service(items=body.items, study=study, model_slots=study.model_slots, by=request.user)
        return 200, output(summary.as_dict()).data

    return _replayable(request, body, call)


class _IngestApi(generics.ListAPIView):
    """POST ingests a study's material; GET reads it back with its texts (admins and researchers: reviewers and
    experts read the texts they code on their turn pages, blinded as the study says, never through the API)."""

    required_scopes = {"GET": ApiToken.Scope.READ, "POST": ApiToken.Scope.INGEST}
    # Reading the texts takes the view permissions of the material, which admins' and researchers' roles carry.
    required_perms = {"GET": READ_MATERIAL_PERMS, "POST": INGEST_PERMS}
    parser_classes = BULK_PARSERS
    error_row_key = "index"
    filters_class: type[serializers.Serializer]

    def filters(self) -> tuple[Study, dict]:
        study = study_for(self.request, self.kwargs["slug"])
        given = self.filters_class(data=query_filters(self.request))
        given.is_valid(raise_exception=True)
        named = dict(given.validated_data)
        # Staff only, like the texts: the names a value may take are listed when it names none.
        if "dataset" in named:
            named["dataset"] = query_filter_named(parameter="dataset", value=named["dataset"], what="datasets",
                                                  names=selectors.study_dataset_names(study=study))
        if "model" in named:
            named["model"] = query_filter_named(parameter="model", value=named["model"], what="models",
                                                names=selectors.study_models(study=study))
        return study, named


class _UploadApi(APIView):
    """The same ingestion, of a file sent as a form upload: an operation of its own, because generated clients
    cannot choose between a JSON array body and another one on one operation (openapi-python-client 0.29 builds
    ``isinstance(body, list[…])``, which raises)."""

    required_scopes = {"POST": ApiToken.Scope.INGEST}
    required_perms = {"POST": INGEST_PERMS}
    parser_classes = [BulkUploadParser]
    error_row_key = "index"


_UPLOAD_REQUEST = {"multipart/form-data": OpenApiRequest(ItemsFileIn, encoding=_ITEMS_FILE)}
_UPLOAD_DESCRIPTION = (
    "The items as a file, sent as a form upload (`multipart/form-data`, the part `file`): JSON Lines, one item a "
    "line, or a JSON array. Everything else is as for the JSON body of this path without `upload/`.")


class _ConversationPagination(IdCursorPagination):
    page_size = 100  # a conversation comes with every text of it
    max_page_size = 1000


def _conversations_ingest(*, study: Study, **given) -> conversation_ingest.ImportSummary:
    """The conversations' ingestion through ``study``, each record checked by the study's kind."""
    return conversation_ingest.conversations_ingest(study=study, problems=conversation_check(study), **given)


class ConversationIngestApi(_IngestApi):
    serializer_class = ConversationOut
    pagination_class = _ConversationPagination
    filters_class = ConversationFilterIn

    @extend_schema(parameters=[ConversationFilterIn],
                   responses={200: ConversationOut(many=True), **error_responses(400, 404)},
                   summary="A study's conversations with their turns' and responses' texts, cursor-paginated",
                   description="The study's conversations: those it ingested first and those it has in a round, "
                               "judged or labelled; the responses of its model slots. `?dataset=&conversation_id=` "
                               "names one.")
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    def get_queryset(self):
        study, given = self.filters()
        return selectors.conversations_with_texts(study=study, **given)

    # JSON Lines as the body itself is read too, and said in the description only: a generated client would drop
    # that body (a type it does not know) or fail on two (see _UploadApi).
    @extend_schema(request={"application/json": CONVERSATIONS_IN}, parameters=IDEMPOTENCY_HEADERS,
                   responses={200: ConversationsIngestOut, **_ERRORS},
                   summary="Ingest conversations with their turns and responses", description=_DESCRIPTION)
    def post(self, request, slug: str):
        return _ingest(request, slug, _conversations_ingest, ConversationsIngestOut)


class ConversationUploadApi(_UploadApi):
    @extend_schema(request=_UPLOAD_REQUEST, parameters=IDEMPOTENCY_HEADERS,
                   responses={200: ConversationsIngestOut, **_ERRORS},
                   summary="Ingest conversations from a file (JSON Lines or a JSON array) sent as a form upload",
                   description=_UPLOAD_DESCRIPTION)
    def post(self, request, slug: str):
        return _ingest(request, slug, _conversations_ingest, ConversationsIngestOut)


class ResponseIngestApi(_IngestApi):
    serializer_class = ResponseItemOut
    pagination_class = IdCursorPagination
    filters_class = ResponseFilterIn

    @extend_schema(parameters=[ResponseFilterIn],
                   responses={200: ResponseItemOut(many=True), **error_responses(400, 404)},
                   summary="A study's model responses with their texts, filterable, cursor-paginated",
                   description="The responses of the study's conversations (as `GET …/conversations/`) under its "
                               "model slots, in the shape they are ingested in.")
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    def get_queryset(self):
        study, given = self.filters()
        return selectors.responses_with_texts(study=study, **given)

    @extend_schema(request={"application/json": ResponseItemIn(many=True)}, parameters=IDEMPOTENCY_HEADERS,
                   responses={200: ResponsesIngestOut, **_ERRORS},
                   summary="Ingest model responses, each addressed by dataset, conversation, turn and model",
                   description=_DESCRIPTION)
    def post(self, request, slug: str):
        return _ingest(request, slug, response_ingest.responses_ingest, ResponsesIngestOut)


class ResponseUploadApi(_UploadApi):
    @extend_schema(request=_UPLOAD_REQUEST, parameters=IDEMPOTENCY_HEADERS,
                   responses={200: ResponsesIngestOut, **_ERRORS},
                   summary="Ingest model responses from a file (JSON Lines or a JSON array) sent as a form upload",
                   description=_UPLOAD_DESCRIPTION)
    def post(self, request, slug: str):
        return _ingest(request, slug, response_ingest.responses_ingest, ResponsesIngestOut)
