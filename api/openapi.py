"""The OpenAPI schema, described exactly: path parameters with their real patterns, every error answer an operation
can give (with its headers), and the token scope and roles each operation needs."""

from __future__ import annotations

from typing import Any

from drf_spectacular.openapi import AutoSchema
from drf_spectacular.plumbing import force_instance
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter
from rest_framework import serializers

from access import roles
from api.errors import ErrorOut
from api.permissions import READ_METHODS
from common import provenance
from common.rounds import NAME_PATTERN

# A regex route gives drf-spectacular only an unanchored pattern; the schema states exactly what each route accepts.
PATH_PARAMETER_SCHEMAS: dict[str, dict[str, Any]] = {
    "slug": {"type": "string", "pattern": r"^[-a-zA-Z0-9_]+$"},
    "round_name": {"type": "string", "pattern": rf"^({NAME_PATTERN})$"},
    "fmt": {"type": "string", "enum": ["csv", "jsonl"]},
    "table": {"type": "string", "pattern": r"^[a-z][a-z0-9_]{0,49}$"},
    "run_id": {"type": "integer", "minimum": 0},
}


def exact_path_parameters(result, generator, request, public):
    """drf-spectacular postprocessing hook."""
    for path_item in result.get("paths", {}).values():
        for operation in path_item.values():
            for parameter in operation.get("parameters", []) if isinstance(operation, dict) else []:
                if parameter.get("in") == "path" and parameter.get("name") in PATH_PARAMETER_SCHEMAS:
                    parameter["schema"] = dict(PATH_PARAMETER_SCHEMAS[parameter["name"]])
    return result


# --- what every operation can answer, besides what its view lists (api.errors.error_responses) -----------------

ALWAYS = (401, 403, 429)  # no or a bad token; a scope, study or role that does not reach; over the rate limit
WITH_A_BODY = (400, 413, 415)  # a malformed body; one over the size limit; a Content-Type the operation does not read
ERROR_HEADERS = [
    OpenApiParameter("WWW-Authenticate", OpenApiTypes.STR, OpenApiParameter.HEADER, response=[401], required=True,
                     description='the challenge: `Bearer realm="api"`'),
    OpenApiParameter("Retry-After", OpenApiTypes.INT, OpenApiParameter.HEADER, response=[429],
                     description="seconds to wait before the next request is accepted"),
]

# Headers of particular answers, which operations name in their extend_schema parameters.
LOCATION_HEADER = OpenApiParameter("Location", OpenApiTypes.STR, OpenApiParameter.HEADER, response=[201],
                                   required=True, description="the path of what was created (/api/v1/…)")
ATTACHMENT_HEADER = OpenApiParameter("Content-Disposition", OpenApiTypes.STR, OpenApiParameter.HEADER, response=[200],
                                     required=True, description='a download: `attachment; filename="…"`')
# A download that can be resumed (common.downloads): the request's Range and If-Range, the answer's ETag, length and
# range (docs/api.md#resuming-a-download).
RANGE_HEADERS = [
    # Any value: a form this does not answer (several ranges, another unit) gets the whole file, as HTTP says.
    OpenApiParameter("Range", OpenApiTypes.STR, OpenApiParameter.HEADER, required=False,
                     description="one byte range, `bytes=N-`, `bytes=N-M` or `bytes=-S`: the answer is 206 with those "
                                 "bytes (any other form gets the whole file)"),
    OpenApiParameter("If-Range", OpenApiTypes.STR, OpenApiParameter.HEADER, required=False,
                     description="the ETag of the file a client began: the range is sent only if the file is still "
                                 "that one, else the whole file (200)"),
    OpenApiParameter("ETag", OpenApiTypes.STR, OpenApiParameter.HEADER, response=[200, 206], required=True,
                     description='the file\'s SHA-256, `"sha256-<hex>"`: the same bytes, the same ETag'),
    OpenApiParameter("Accept-Ranges", {"type": "string", "enum": ["bytes"]}, OpenApiParameter.HEADER,
                     response=[200, 206], required=True, description="byte ranges are answered"),
    OpenApiParameter("Content-Range", OpenApiTypes.STR, OpenApiParameter.HEADER, response=[206, 416],
                     required=True, description="`bytes FIRST-LAST/SIZE` (206); `bytes */SIZE` (416)"),
    OpenApiParameter("Content-Disposition", OpenApiTypes.STR, OpenApiParameter.HEADER, response=[200, 206],
                     required=True, description='a download: `attachment; filename="…"`'),
    OpenApiParameter(provenance.REPR_DIGEST, OpenApiTypes.STR, OpenApiParameter.HEADER, response=[200, 206],
                     required=True, description="RFC 9530: the SHA-256 of the whole file (the ETag's bytes) as "
                                                "`sha-256=:<base64>:`, on a part too (docs/metrics.md#provenance)"),
]


def _said(name: str, description: str, *, required: bool = True, responses: tuple[int, ...] = (200,)
          ) -> OpenApiParameter:
    return OpenApiParameter(name, OpenApiTypes.STR, OpenApiParameter.HEADER, response=list(responses),
                            required=required, description=description + " (docs/metrics.md#provenance)")


# A file made from a metric run states which (common.provenance.run_headers): the CSVs stay plain, so the headers
# carry what the file cannot. Software and fingerprint are absent only for a report written before it held them.
def _run_provenance(responses: tuple[int, ...]) -> list[OpenApiParameter]:
    return [
        _said(provenance.RUN, "the id of the metric run the file was made from", responses=responses),
        _said(provenance.RUN_FINISHED, "when that run finished, ISO 8601 in UTC (`2026-01-02T03:04:05Z`)",
              required=False, responses=responses),  # absent only for a run that holds no finish time
        _said(provenance.PARAMETERS, "the report's parameters (seed, bootstrap, panel size …) as compact JSON",
              responses=responses),
        _said(provenance.SOFTWARE, 'the software that computed the report, `{"commit":"…","version":"…"}`',
              required=False, responses=responses),
        _said(provenance.INPUT_FINGERPRINT, "the report's `input.fingerprint`: `sha256:` and the hash of the "
                                            "judgment rows it read", required=False, responses=responses),
    ]


RUN_PROVENANCE_HEADERS = _run_provenance((200,))
RESUMABLE_RUN_PROVENANCE_HEADERS = _run_provenance((200, 206))  # a study bundle: on a part too
# A file read from the database as it is now (common.provenance.export_headers): the software and the time.
EXPORT_PROVENANCE_HEADERS = [
    _said(provenance.SOFTWARE, 'the software that wrote the file, `{"commit":"…","version":"…"}`',
          responses=(200, 206)),
    _said(provenance.EXPORTED, "when the rows were read, ISO 8601 in UTC", responses=(200, 206)),
]

ERROR_DESCRIPTIONS = {
    "400": "a malformed parameter or body (`fields`), or wrong items (`errors`, `error_count`); nothing was written",
    "401": "no token, or one that is unknown, revoked or expired, or whose account is disabled (`detail` says which)",
    "403": "the token's scopes or study, or the account's role, do not cover this operation",
    "404": "nothing of that name that you can see (a study you cannot see does not exist for you)",
    "406": "the Accept header asks for something other than JSON",
    "409": "a conflict with what is stored (`detail`, and `errors` item by item); nothing was written",
    "413": "the body is over the size limit, or has too many items",
    "415": "a Content-Type this operation does not read",
    "416": "the Range asked for lies outside the file (`Content-Range: bytes */SIZE` says its length)",
    "422": "this Idempotency-Key was already used for a request with another body",
    "429": "over the rate limit of the token or account (or of the address, without one): wait `Retry-After` seconds",
}
NO_NUL = r"^[^\u0000]*$"

ROLE_NAMES = {roles.ADMIN: "admins", roles.RESEARCHER: "researchers", roles.REVIEWER: "reviewers",
              roles.EXPERT: "experts"}


def roles_allowed(*, perms: tuple[str, ...], staff_only: bool) -> list[str]:
    """The roles whose permissions (access.roles) carry every one of ``perms``, among admins and researchers for a
    staff-only operation: what api.permissions.RolePermission lets through."""
    allowed = []
    for role, granted in roles.ROLE_PERMISSIONS.items():
        names = {f"{app}.{codename}" for app, codename in granted}
        if set(perms) <= names and (not staff_only or role in roles.STAFF_ROLES):
            allowed.append(role)
    return allowed


class Schema(AutoSchema):
    """drf-spectacular's AutoSchema, plus what the views' permissions and the exception handler decide for every
    operation alike: its error answers, the token scope it needs (``x-required-scope``, and a sentence of its
    description) and who may call it. Added to the finished operation: ``extend_schema`` replaces the methods that
    build its parts."""

    def get_operation(self, path, path_regex, path_prefix, method, registry):
        operation = super().get_operation(path, path_regex, path_prefix, method, registry)
        if operation is None:
            return None
        scope = self.required_scope()
        if scope is not None:
            operation["x-required-scope"] = scope
            operation["description"] = "\n\n".join(
                part for part in (operation.get("description"), self._who_may_call(scope)) if part)
        operation["responses"] = self._with_common_errors(operation["responses"])
        return operation

    def _method_key(self) -> str:
        return "GET" if self.method in READ_METHODS else self.method

    def required_scope(self) -> str | None:
        scope = getattr(self.view, "required_scopes", {}).get(self._method_key())
        return str(scope) if scope is not None else None

    def _who_may_call(self, scope: str) -> str:
        perms = tuple(getattr(self.view, "required_perms", {}).get(self._method_key(), ()))
        allowed = roles_allowed(perms=perms, staff_only=getattr(self.view, "staff_only", False))
        who = ("any role (what you see follows it)" if len(allowed) == len(roles.ROLES)
               else " and ".join(ROLE_NAMES[role] for role in allowed) + " only")
        return (f"**Needs** a token with the `{scope}` scope (a token limited to one study reaches that study "
                f"only), or a signed-in session; {who}.")

    def _with_common_errors(self, responses: dict[str, Any]) -> dict[str, Any]:
        codes = [*ALWAYS, *(WITH_A_BODY if self.method in ("POST", "PUT", "PATCH") else ())]
        if not getattr(self.view, "answers_any_accept", False):
            codes.append(406)  # an Accept header that JSON does not satisfy
        for code in codes:
            if str(code) not in responses:
                responses[str(code)] = self._get_response_for_code(ErrorOut, str(code), ["application/json"])
        for code, answer in responses.items():
            if code >= "400" and not answer.get("description"):
                answer["description"] = ERROR_DESCRIPTIONS.get(code, "")
        return dict(sorted(responses.items()))

    def get_override_parameters(self) -> list[Any]:
        return [*super().get_override_parameters(), *ERROR_HEADERS]

    # --- what DRF's fields refuse that drf-spectacular leaves unsaid (found by the fuzz test's valid bodies) ---

    def _map_serializer_field(self, field, direction, bypass_extensions=False):
        schema = super()._map_serializer_field(field, direction, bypass_extensions)
        if (direction == "request" and isinstance(schema, dict) and schema.get("type") == "array"
                and getattr(field, "allow_empty", True) is False):
            schema.setdefault("minItems", 1)  # DRF: "This list may not be empty."
        return schema

    def _map_basic_serializer(self, serializer, direction):
        schema = super()._map_basic_serializer(serializer, direction)
        if direction != "request":
            return schema
        if getattr(serializer, "refuses_unknown_fields", False):
            schema["additionalProperties"] = False
        for name, field in force_instance(serializer).fields.items():
            text = schema.get("properties", {}).get(name)
            # After drf-spectacular's own constraints (a blank-or-pattern field is a oneOf): plain text only.
            if (isinstance(field, serializers.CharField) and isinstance(text, dict) and text.get("type") == "string"
                    and not {"pattern", "enum", "format"} & set(text)):
                text["pattern"] = NO_NUL  # DRF: "Null characters are not allowed." (PostgreSQL text holds none)
        return schema
