"""The researchers' exports page and the report downloads (browser session). The API serves the same files to
tokens; the judgments download is annotation's (``annotation.views.judgments_file``)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST, require_safe
from rest_framework import exceptions

from access.authed_request import AuthedRequest
from access.checks import require_staff, user_roles
from annotation import selectors
from annotation.models import Study
from metrics import apis as metrics_apis
from metrics import selectors as metrics_selectors
from metrics import services
from metrics.forms import MetricRunForm

# The per-model tables docs/metrics.md#report-keys names; a report may hold more, which the API lists by name.
INDEX_TABLES = ("ari", "flags", "attribute_risk", "fingerprint")


def staff_study_or_404(request: HttpRequest, slug: str) -> Study:
    """The study of a staff page or download (admins and researchers); 403 for anyone else, 404 for no such study."""
    require_staff(request.user)
    study = selectors.study_for_staff(user=request.user, slug=slug)
    if study is None:
        raise Http404(f"no study {slug!r}")
    return study


@login_required
@require_safe
def exports_page(request: HttpRequest) -> HttpResponse:
    require_staff(request.user)
    studies = list(selectors.studies_for_exports(user=request.user))
    runs = metrics_selectors.latest_succeeded_runs(study_ids=[s.pk for s in studies])
    rows = []
    for study in studies:
        run_id, tables, left_out = runs.get(study.pk, (None, [], []))
        # Only the tables the report holds (a calibration-only report, or a study kind's, has no per-model table): the
        # four of docs/metrics.md#report-keys first, in their order, then any other the report has; the tables of
        # tables, which have no CSV, named after them.
        shown = [t for t in INDEX_TABLES if t in tables] + sorted(t for t in tables if t not in INDEX_TABLES)
        rows.append({"study": study, "run_id": run_id, "index_tables": shown, "left_out": left_out})
    return render(request, "exports/index.html", {"rows": rows, "roles": user_roles(user=request.user)})


@login_required
@require_safe
def report_file(request: HttpRequest, slug: str) -> HttpResponse:
    study = staff_study_or_404(request, slug)
    run = metrics_selectors.metric_run_latest_succeeded(study=study)
    if run is None:
        raise Http404("no succeeded metric run for this study yet")
    return metrics_apis.report_download(study, run)


@login_required
@require_safe
def index_table_file(request: HttpRequest, slug: str, table: str) -> StreamingHttpResponse:
    study = staff_study_or_404(request, slug)
    run = metrics_selectors.metric_run_latest_succeeded(study=study)
    if run is None:
        raise Http404("no succeeded metric run for this study yet")
    try:
        return metrics_apis.index_table_download(study, run, table)
    except exceptions.NotFound as error:
        raise Http404(str(error.detail)) from error


@login_required
@require_POST
def metric_run_start(request: AuthedRequest, slug: str) -> HttpResponse:
    """Start a metric run from the study's reports overview, with its parameters; back to the overview, which
    shows the run's progress."""
    study = staff_study_or_404(request, slug)
    if not request.user.has_perm("metrics.add_metricrun"):
        raise PermissionDenied("Your role cannot start metric runs.")
    form = MetricRunForm(request.POST)
    if not form.is_valid():
        for field, errors in form.errors.items():
            messages.error(request, f"Not started: {field} {' '.join(str(e) for e in errors)}")
        return redirect("reports", slug=study.slug)
    try:
        run = services.metric_run_request(study=study, by=request.user, trigger="manual", **form.cleaned_data)
    except ValidationError as error:
        messages.error(request, f"Not started: {'; '.join(error.messages)}")
        return redirect("reports", slug=study.slug)
    said = metrics_selectors.metric_run_said(run=run)
    messages.success(request, f"{said[0].upper()}{said[1:]} (B = {run.parameters['bootstrap']}, "
                              f"seed {run.parameters['seed']}, k = {run.parameters['top_k']}).")
    return redirect("reports", slug=study.slug)
