"""The researchers' exports page and the report downloads (browser session). The API serves the same files to
tokens; the judgments download is annotation's (``annotation.views.judgments_file``)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET
from rest_framework import exceptions

from access.checks import require_staff, user_roles
from annotation import selectors
from annotation.models import Study
from metrics import apis as metrics_apis
from metrics import selectors as metrics_selectors

# The per-model tables SPEC §7 names; a report may hold more, which the API lists by name.
INDEX_TABLES = ("ari", "flags", "attribute_risk", "fingerprint")


def _export_study(request: HttpRequest, slug: str) -> Study:
    require_staff(request.user)
    study = selectors.studies_for_exports(user=request.user).filter(slug=slug).first()
    if study is None:
        raise Http404(f"no study {slug!r}")
    return study


@login_required
@require_GET
def exports_page(request: HttpRequest) -> HttpResponse:
    require_staff(request.user)
    studies = list(selectors.studies_for_exports(user=request.user))
    runs = metrics_selectors.latest_succeeded_run_ids(study_ids=[s.pk for s in studies])
    rows = [{"study": s, "run_id": runs.get(s.pk)} for s in studies]
    return render(request, "exports/index.html", {"rows": rows, "index_tables": INDEX_TABLES,
                                                  "roles": user_roles(user=request.user)})


@login_required
@require_GET
def report_file(request: HttpRequest, slug: str) -> HttpResponse:
    study = _export_study(request, slug)
    run = metrics_selectors.metric_run_latest_succeeded(study=study)
    if run is None:
        raise Http404("no succeeded metric run for this study yet")
    return metrics_apis.report_download(study, run)


@login_required
@require_GET
def index_table_file(request: HttpRequest, slug: str, table: str) -> StreamingHttpResponse:
    study = _export_study(request, slug)
    run = metrics_selectors.metric_run_latest_succeeded(study=study)
    if run is None:
        raise Http404("no succeeded metric run for this study yet")
    try:
        return metrics_apis.index_table_download(study, run, table)
    except exceptions.NotFound as error:
        raise Http404(str(error.detail)) from error
