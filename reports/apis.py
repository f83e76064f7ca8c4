"""REST API of the study bundle: one zip per succeeded metric run (docs/bundle.md), a download that can resume."""

from __future__ import annotations

from django.http import HttpResponseBase
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import exceptions, status
from rest_framework.request import Request
from rest_framework.response import Response

from api.downloads import ranged_file
from api.errors import error_responses
from api.openapi import ATTACHMENT_HEADER
from metrics.apis import Download, run_for
from reports import bundle

ZIP = "application/zip"
# The same bytes, for generators that know no zip type (openapi-python-client reads application/octet-stream as a
# file): a response may list both, and the server sends application/zip.
OCTETS = "application/octet-stream"
RANGE = OpenApiParameter("Range", OpenApiTypes.STR, OpenApiParameter.HEADER, required=False,
                         description="one byte range, to resume a download: `bytes=N-`, `bytes=N-M` or `bytes=-N` "
                                     "(the last N bytes); anything else is ignored and the whole file sent")
IF_RANGE = OpenApiParameter("If-Range", OpenApiTypes.STR, OpenApiParameter.HEADER, required=False,
                            description="the ETag of the copy being resumed: the range is sent only while the file "
                                        "is still that one, else the whole file (200)")
ETAG = OpenApiParameter("ETag", OpenApiTypes.STR, OpenApiParameter.HEADER, response=[200, 206], required=True,
                        description="strong: the SHA-256 of the zip, in quotes; the same run gives the same bytes")
ACCEPT_RANGES = OpenApiParameter("Accept-Ranges", OpenApiTypes.STR, OpenApiParameter.HEADER, response=[200, 206],
                                 required=True, description="`bytes`")
CONTENT_RANGE = OpenApiParameter("Content-Range", OpenApiTypes.STR, OpenApiParameter.HEADER, response=[206, 416],
                                 required=True, description="`bytes FIRST-LAST/SIZE` (206), `bytes */SIZE` (416)")
PARTIAL_ATTACHMENT = OpenApiParameter("Content-Disposition", OpenApiTypes.STR, OpenApiParameter.HEADER,
                                      response=[206], required=True, description='`attachment; filename="…"`')


class MetricRunBundleApi(Download):
    @extend_schema(
        parameters=[RANGE, IF_RANGE, ATTACHMENT_HEADER, PARTIAL_ATTACHMENT, ETAG, ACCEPT_RANGES, CONTENT_RANGE],
        responses={
            (200, ZIP): OpenApiResponse(OpenApiTypes.BINARY, description="the study bundle (docs/bundle.md)"),
            (200, OCTETS): OpenApiResponse(OpenApiTypes.BINARY, description="the study bundle (docs/bundle.md)"),
            (206, ZIP): OpenApiResponse(OpenApiTypes.BINARY, description="the bytes of the range asked for"),
            (206, OCTETS): OpenApiResponse(OpenApiTypes.BINARY, description="the bytes of the range asked for"),
            **error_responses(404, 409, 416),
        },
        summary="Download the study bundle of a succeeded run: data, gold, report, figures, tables, datapackage.json",
        description="A zip built once per run (the first download may take a while at paper scale), the same bytes "
                    "every time; resume an interrupted download with `Range` and `If-Range`. `409` for a run that "
                    "has not succeeded, or whose study's judgments changed since it read them (start a new run).",
        operation_id="metric_runs_bundle_retrieve",  # not drf-spectacular's "…bundle.zip_retrieve"
    )
    def get(self, request: Request, run_id: int) -> HttpResponseBase:
        run = run_for(request, run_id, with_result=True)
        try:
            built = bundle.bundle_file(run=run)
        except bundle.BundleRefusedError as error:
            return Response({"detail": str(error)}, status=status.HTTP_409_CONFLICT)
        if not built.path.is_file():  # pragma: no cover - removed between the build and now
            raise exceptions.NotFound("The bundle went away while it was being sent: ask again.")
        return ranged_file(request, built.path, etag=built.etag, content_type=ZIP, filename=bundle.bundle_name(run))
