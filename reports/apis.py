"""REST API of the study bundle: one zip per succeeded metric run (docs/bundle.md), a download that can resume."""

from __future__ import annotations

from django.http import HttpResponseBase
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response

from api.errors import error_responses
from api.openapi import RANGE_HEADERS, RESUMABLE_RUN_PROVENANCE_HEADERS
from metrics.apis import Download, run_for
from reports import bundle

ZIP = "application/zip"
# The same bytes, for generators that know no zip type (openapi-python-client reads application/octet-stream as a
# file): a response may list both, and the server sends application/zip.
OCTETS = "application/octet-stream"


class MetricRunBundleApi(Download):
    @extend_schema(
        parameters=[*RANGE_HEADERS, *RESUMABLE_RUN_PROVENANCE_HEADERS],
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
        return bundle.bundle_download(request, run, built)
