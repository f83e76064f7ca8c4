"""The study bundle as a browser download (the exports page and the reports overview link it): the same file as
``GET /api/v1/metric-runs/{id}/bundle.zip``, resumable the same way. Admins and researchers only."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponseBase
from django.shortcuts import redirect
from django.views.decorators.http import require_safe

from metrics import selectors as metrics_selectors
from metrics.views import staff_study_or_404
from reports import bundle


@login_required
@require_safe
def run_bundle(request: HttpRequest, slug: str, run_id: int) -> HttpResponseBase:
    study = staff_study_or_404(request, slug)
    run = metrics_selectors.metric_run_latest_succeeded(study=study, run_id=run_id)
    if run is None:
        raise Http404(f"run {run_id} is not a succeeded metric run of this study")
    try:
        built = bundle.bundle_file(run=run)
    except bundle.BundleRefusedError as error:
        messages.error(request, f"No bundle: {error}")
        return redirect("exports")
    return bundle.bundle_download(request, run, built)
