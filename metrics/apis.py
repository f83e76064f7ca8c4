"""REST API for metric runs (start one, poll it, fetch its result) and the report / index-table downloads."""

from __future__ import annotations

import hashlib
import json

from django.http import HttpResponse, StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import exceptions, generics, status
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.apis import study_for
from annotation.models import Study
from api import services as api_services
from api.errors import error_responses
from api.models import ApiToken
from api.openapi import ATTACHMENT_HEADER, RUN_PROVENANCE_HEADERS
from api.pagination import IdCursorPagination
from api.permissions import token_allows_study
from api.requests import idempotency_headers, idempotency_key, query_filters, request_fingerprint, request_user
from common import provenance
from common.cells import csv_stream
from common.outage import read_after_commit
from metrics import selectors, services
from metrics.api_serializers import MetricReportOut, MetricRunFilterIn, MetricRunIn, MetricRunOut, ReportFileOut
from metrics.core.report_file import report_file_text

READ = {"GET": ApiToken.Scope.READ}
RUN_IDEMPOTENCY_HEADERS = idempotency_headers(resend="the same run again, as it is now", status=202)
RUN_PARAMETER = OpenApiParameter("run", OpenApiTypes.INT, OpenApiParameter.QUERY, required=False,
                                 description="a run id; default: the study's newest succeeded run")


class NewestRunsFirst(IdCursorPagination):
    """A study's runs, newest first, a page at a time: every run is listed (a study run a few hundred times for a
    sensitivity analysis loses none of them past a first page), and a new run does not move the pages after it."""

    ordering = "-id"
    page_size = 100
    max_page_size = 1000


class MetricRunListApi(generics.ListAPIView):
    required_scopes = {"GET": ApiToken.Scope.READ, "POST": ApiToken.Scope.METRICS}
    required_perms = {"POST": ("metrics.add_metricrun",)}
    staff_only = True
    serializer_class = MetricRunOut
    pagination_class = NewestRunsFirst

    @extend_schema(parameters=[MetricRunFilterIn], responses={200: MetricRunOut(many=True),
                                                               **error_responses(400, 404)},
                   summary="A study's metric runs, newest first, cursor-paginated (?page_size= at most 1000, "
                           "default 100; follow next)")
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    def get_queryset(self):
        study = study_for(self.request, self.kwargs["slug"])
        filters = MetricRunFilterIn(data=query_filters(self.request))
        filters.is_valid(raise_exception=True)
        runs = selectors.metric_runs_for(study=study)
        wanted = filters.validated_data.get("status")
        return runs if wanted is None else runs.filter(status=wanted)

    @extend_schema(request=MetricRunIn, parameters=RUN_IDEMPOTENCY_HEADERS,
                   responses={202: MetricRunOut, **error_responses(404, 422)},
                   summary="Start a metric run (computed by a worker; poll it)",
                   description="With an Idempotency-Key, a resend after a lost answer makes no second run: it is "
                               "answered with the run the first made.")
    def post(self, request, slug: str):
        study = study_for(request, slug)
        params = MetricRunIn(data=request.data)
        params.is_valid(raise_exception=True)
        key = idempotency_key(request)

        def call() -> tuple[int, dict]:
            run = services.metric_run_request(study=study, by=request.user, trigger="api", **params.validated_data)
            return status.HTTP_202_ACCEPTED, MetricRunOut(run).data

        # The key's record is committed with the run, which is handed to the broker after that commit.
        code, saved, replayed = api_services.idempotent_call(
            user=request_user(request), key=key, call=call,
            request_hash=request_fingerprint(request, _sha256(params.validated_data)) if key else "")
        # The run as it is now (the broker took it, or not; embedded, it may be done); as saved when the database
        # cannot be reached: it is saved, and a 503 "nothing was changed" would make a client ask again.
        run = read_after_commit(lambda: selectors.metric_run_get(run_id=saved["id"]), otherwise=None)
        return Response(saved if run is None else MetricRunOut(run).data, status=code,
                        headers={"Idempotent-Replayed": "true"} if replayed else None)


def _sha256(parameters: dict) -> str:
    """The run's parameters (defaults filled in) for an Idempotency-Key: the same parameters are the same request."""
    return hashlib.sha256(json.dumps(parameters, sort_keys=True).encode()).hexdigest()


def run_for(request, run_id: int, *, with_result: bool = False):
    """The run, when the caller may see its study (404 otherwise; 403 for a token limited to another study)."""
    run = selectors.metric_run_get(run_id=run_id)
    if run is None or not _study_visible(request, run.study):
        raise exceptions.NotFound(f"No metric run {run_id} that you can see.")
    token_allows_study(request, run.study)
    if with_result:
        run.refresh_from_db(fields=["result"])
    return run


def _study_visible(request, study: Study) -> bool:
    try:
        study_for(request, study.slug)
    except exceptions.NotFound:
        return False
    return True


class MetricRunApi(APIView):
    required_scopes = READ
    staff_only = True

    @extend_schema(responses={200: MetricRunOut, **error_responses(404)}, summary="Status and progress of a run")
    def get(self, request, run_id: int):
        return Response(MetricRunOut(run_for(request, run_id)).data)


class MetricRunResultApi(APIView):
    required_scopes = READ
    staff_only = True

    @extend_schema(responses={200: OpenApiResponse(MetricReportOut,
                                                   description="the metrics report (docs/metrics.md#report-keys)"),
                              **error_responses(404, 409)},
                   summary="The result of a succeeded run (409 while it is queued, running or failed)")
    def get(self, request, run_id: int):
        run = run_for(request, run_id)
        if run.status != run.Status.SUCCEEDED:
            return Response({"detail": f"Run {run.pk} is {run.status}; it has no result."},
                            status=status.HTTP_409_CONFLICT)
        return Response(selectors.metric_run_result(run_id=run.pk))


class Download(APIView):
    """Downloads answer in their own format whatever the Accept header says (errors are still JSON)."""

    answers_any_accept = True  # never a 406 (api.openapi)

    required_scopes = READ
    staff_only = True

    def perform_content_negotiation(self, request, force=False):
        return super().perform_content_negotiation(request, force=True)


def _succeeded_run(request, study: Study):
    run_id = request.query_params.get("run")
    if run_id is not None and not (run_id.isascii() and run_id.isdigit() and int(run_id) < 2**63):
        raise exceptions.ValidationError({"run": "must be a run id"})
    run = selectors.metric_run_latest_succeeded(study=study, run_id=int(run_id) if run_id else None)
    if run is None:
        raise exceptions.NotFound("No succeeded metric run" + (f" {run_id}" if run_id else "") + " for this study.")
    return run


def report_download(study: Study, run) -> HttpResponse:
    """The run's report as a file, led by the run it came from (docs/metrics.md#provenance): the stored report says
    what was read and by which software; the file adds which run, when, and what asked for it."""
    return HttpResponse(
        report_file_text(run_provenance(run), run.result), content_type="application/json",
        headers={**provenance.run_headers(run, run.result),
                 "Content-Disposition": f'attachment; filename="{study.slug}-report-run{run.pk}.json"'},
    )


def run_provenance(run) -> dict:
    """Which run a report file is: its id, trigger, parameters and times (ISO 8601, UTC)."""
    def when(moment):
        return moment.isoformat() if moment else None

    return {"id": run.pk, "trigger": run.trigger, "parameters": run.parameters, "requested_at": when(run.created_at),
            "started_at": when(run.started_at), "finished_at": when(run.finished_at)}


def index_table_download(study: Study, run, table: str) -> StreamingHttpResponse:
    """One per-model table as a plain CSV (it loads as it is): its name says the run, its headers the rest of its
    provenance (``common.provenance.run_headers``)."""
    tables = selectors.index_tables(result=run.result)
    if table in selectors.index_tables_left_out(result=run.result):
        raise exceptions.NotFound(f"The report's {table} holds a table in each cell, which no CSV row can hold: it is "
                                  f"in report.json only. Its per-model tables: {', '.join(tables) or 'none'}.")
    if table not in tables:
        raise exceptions.NotFound(f"The report has no per-model table {table!r}; it has {', '.join(tables) or 'none'}.")
    header, rows = tables[table]
    return StreamingHttpResponse(
        csv_stream(header, rows), content_type="text/csv; charset=utf-8",
        headers={**provenance.run_headers(run, run.result),
                 "Content-Disposition": f'attachment; filename="{study.slug}-{table}-run{run.pk}.csv"'},
    )


class ReportExportApi(Download):
    @extend_schema(parameters=[RUN_PARAMETER, ATTACHMENT_HEADER, *RUN_PROVENANCE_HEADERS],
                   responses={(200, "application/json"): OpenApiResponse(ReportFileOut),
                              **error_responses(400, 404)},
                   summary="Download the metrics report of a succeeded run",
                   operation_id="studies_exports_report_retrieve")  # not drf-spectacular's "…report.json_retrieve"
    def get(self, request, slug: str):
        study = study_for(request, slug)
        return report_download(study, _succeeded_run(request, study))


class IndexTableExportApi(Download):
    @extend_schema(parameters=[RUN_PARAMETER, ATTACHMENT_HEADER, *RUN_PROVENANCE_HEADERS],
                   responses={(200, "text/csv"): OpenApiResponse(OpenApiTypes.STR, description="one row per model"),
                              **error_responses(400, 404)},
                   summary="Download one per-model index table (flags, ari, attribute_risk, fingerprint …) as CSV",
                   operation_id="studies_exports_indices_retrieve")  # not drf-spectacular's "…indices_.csv_retrieve"
    def get(self, request, slug: str, table: str):
        study = study_for(request, slug)
        return index_table_download(study, _succeeded_run(request, study), table)
