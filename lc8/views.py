"""The LongCounsel-8 dashboard page (admins and researchers, like every report page): the stored run's ``lc8``
section as tables and figures (nothing recomputed on page load), the magnitude-vs-direction comparison of the
methods with its rank reversals in words, and the plot of one trajectory chosen in the URL (``?trajectory=``).

The trajectory plot is the one part not read from the run: it reads the stored labels of that ONE trajectory from
the database (small queries filtered to its sessions, ``lc8.inputs.lc8_inputs(conversation=…)``, the trajectory
named as the section names it: its external id, or DATASET/EXTERNAL_ID when two share the id) and types its series
with the core's ``trajectory_type``; it shows the labels as they are now. Blinding does not apply
here: staff pages show every coder's labels, the reference included.
"""

from __future__ import annotations

import hashlib
from typing import Any

from django import forms
from django.contrib.auth.decorators import login_required
from django.core.cache import cache
from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_safe

from annotation.models import Study
from common import provenance
from common.cells import csv_stream
from lc8 import charts as lc8_charts
from lc8 import inputs as lc8_inputs
from metrics.models import MetricRun
from metrics.report_warnings import section_warnings
from metrics.selectors import HISTORY_NAME_LENGTH
from metrics.views import staff_study_or_404
from reports import charts, kind_pages, selectors
from reports.views import names_context

MAX_OPTIONS = 1000  # more trajectories than this: the trajectory is typed, not chosen from a list
FIGURE_CACHE_SECONDS = 24 * 3600  # a succeeded run's figures never change (the trajectory plot is not cached)


class Lc8Form(forms.Form):
    """The page's filters, all in the URL: the run and the trajectory to plot."""

    run = forms.IntegerField(required=False, min_value=1, max_value=2**63 - 1)
    trajectory = forms.CharField(required=False, max_length=HISTORY_NAME_LENGTH)

    def __init__(self, data: Any, *, runs: list[tuple[int, str]], trajectories: list[str]):
        super().__init__(data)
        self.fields["run"].widget = forms.Select(choices=runs)
        if len(trajectories) <= MAX_OPTIONS:
            self.fields["trajectory"].widget = forms.Select(choices=[(t, t) for t in trajectories])
        else:
            self.fields["trajectory"].widget = forms.TextInput(attrs={"size": 24, "placeholder": trajectories[0]})


def lc8_study_or_404(request: HttpRequest, slug: str) -> Study:
    study = staff_study_or_404(request, slug)
    if lc8_charts.LC8_PAGE not in kind_pages.pages_of(study):  # LC8 studies only (a schema with an lc8 block)
        raise Http404("the LongCounsel-8 page is for LC8 studies (a schema with an lc8 block)")
    return study


def _state(request: HttpRequest, study: Study) -> dict[str, Any]:
    """The chosen run and its report, the chosen trajectory, the form, and what could not be used."""
    labels = selectors.run_choices(study=study, asked=request.GET.get("run"))
    trajectories = lc8_inputs.trajectory_names(study=study)
    form = Lc8Form(request.GET, runs=labels, trajectories=trajectories)
    form.is_valid()
    cleaned = getattr(form, "cleaned_data", {})
    run_id = cleaned.get("run")
    if request.GET.get("run") and not run_id:
        raise Http404("run must be the number of one of this study's succeeded metric runs")
    run, report = selectors.report_of(study=study, run_id=run_id)
    if run_id and run is None:
        raise Http404(f"run {run_id} is not a succeeded metric run of this study")
    dropped = []
    asked = request.GET.get("trajectory", "")
    trajectory = asked if asked in set(trajectories) else (trajectories[0] if trajectories else "")
    if asked and asked != trajectory:
        dropped.append(f"trajectory {asked!r} is not in this study: showing {trajectory or 'none'}")
    query = request.GET.copy()
    if run is not None:
        query["run"] = str(run.pk)
    if trajectory:
        query["trajectory"] = trajectory
    return {"run": run, "report": report, "form": form, "dropped": dropped, "trajectory": trajectory,
            "trajectories": len(trajectories), "query": query.urlencode()}


def _trajectory(study: Study, trajectory: str, report: dict | None) -> tuple[list[charts.Block], str]:
    """The blocks of one trajectory's plot, or why there are none."""
    if not trajectory:
        return [], "the study has no trajectory yet"
    from lc8.core.tracking import trajectory_type

    reference = ((report or {}).get("lc8") or {}).get("reference")
    try:
        inputs = lc8_inputs.lc8_inputs(study=study, conversation=trajectory, reference=reference)
    except lc8_inputs.Lc8Unavailable as why:
        return [], str(why)
    except ValueError as error:  # the run's reference coder may no longer be a reference member: the default one
        if reference is None:
            return [], str(error)
        try:
            inputs = lc8_inputs.lc8_inputs(study=study, conversation=trajectory)
        except ValueError as why:  # data the arrays cannot hold (e.g. a session beyond the block's sessions)
            return [], str(why)
    arrays = inputs.study
    rules = arrays.rules
    types: dict[tuple[str, str], str | None] = {(inputs.reference_name, ""): trajectory_type(arrays.reference[0],
                                                                                              rules)}
    coders: dict[str, dict[int | None, list[float]]] = {}
    for name, labels in arrays.coders.items():
        coders[name] = {}
        for seed, totals in labels.totals.items():
            coders[name][seed] = [float(v) for v in totals[0]]
            types[(name, "" if seed is None else str(seed))] = trajectory_type(totals[0], rules)
    return lc8_charts.trajectory_blocks(
        trajectory=trajectory, reference=inputs.reference_name,
        reference_row=[float(v) for v in arrays.reference[0]], coders=coders, roles=inputs.roles, types=types,
    ), ""


@login_required
@require_safe
def lc8_page(request: HttpRequest, slug: str) -> HttpResponse:
    study = lc8_study_or_404(request, slug)
    state = _state(request, study)
    report = state["report"]
    section = (report or {}).get("lc8")
    trajectory_blocks, trajectory_missing = _trajectory(study, state["trajectory"], report)
    context = {
        "study": study, "page": lc8_charts.LC8_PAGE, "pages": kind_pages.pages_of(study), **state,
        "section": section, "unavailable": (section or {}).get("unavailable", ""),
        "warnings": section_warnings(report, lc8_charts.SLUG),
        "blocks": lc8_charts.report_blocks(report) if section and not section.get("unavailable") else [],
        "reversals": lc8_charts.reversal_sentences(report or {}),
        "trajectory_blocks": trajectory_blocks, "trajectory_missing": trajectory_missing,
        "typed_trajectory": state["trajectories"] > MAX_OPTIONS, **names_context(study, "lc8"),
    }
    template = "lc8/report.html#body" if request.htmx else "lc8/report.html"  # type: ignore[attr-defined]
    return render(request, template, context)


@login_required
@require_safe
def lc8_file(request: HttpRequest, slug: str, name: str, fmt: str) -> HttpResponse | StreamingHttpResponse:
    """A block of the page as CSV, or a chart as SVG or PNG: the run's blocks (cached, like every report figure)
    and the chosen trajectory's (read now, never cached)."""
    study = lc8_study_or_404(request, slug)
    state = _state(request, study)
    run: MetricRun | None = state["run"]
    report = state["report"]
    block: charts.Block | None = None
    if name in (lc8_charts.TRAJECTORY_CHART, lc8_charts.TRAJECTORY_TABLE):
        found, why = _trajectory(study, state["trajectory"], report)
        if not found:
            raise Http404(why)
        block = next(b for b in found if b.name == name)
        filename = f"{study.slug}-{name}-{state['trajectory']}"
    else:
        if run is None or report is None:
            raise Http404("no succeeded metric run for this study yet")
        if not ((report.get("lc8") or {}) and not report["lc8"].get("unavailable")):
            raise Http404(f"run {run.pk} has no LongCounsel-8 section")
        block = next((b for b in lc8_charts.report_blocks(report) if b.name == name), None)
        if block is None:
            raise Http404(f"the LongCounsel-8 page has no figure or table {name!r}")
        filename = f"{study.slug}-{name}-run{run.pk}"
    filename = "".join(c if c.isalnum() or c in "-_." else "_" for c in filename)
    # docs/metrics.md#provenance: a block of the run says the run; the trajectory's, read now, the software and time
    from_run = run is not None and block.name not in (lc8_charts.TRAJECTORY_CHART, lc8_charts.TRAJECTORY_TABLE)
    said = provenance.run_headers(run, report) if from_run and run is not None else provenance.export_headers()
    if fmt == "csv":  # a plain CSV (it loads as it is): its name says the run, the headers the rest
        return StreamingHttpResponse(
            csv_stream(block.columns, block.rows), content_type="text/csv; charset=utf-8",
            headers={**said, "Content-Disposition": f'attachment; filename="{filename}.csv"'})
    if not isinstance(block, charts.Chart):
        raise Http404(f"{name!r} is a table: download it as CSV")
    from reports import figures  # matplotlib loads only in the processes that draw

    if not from_run or run is None:
        content, caching = figures.render(block, fmt), "private, no-cache"
    else:
        # v2: the files say their run in their metadata (common.provenance.figure_metadata)
        key = "reports:lc8:v2:" + hashlib.sha256(f"{run.pk}|{name}|{fmt}".encode()).hexdigest()
        content = cache.get(key)
        if content is None:
            metadata = provenance.figure_metadata(provenance.run_facts(run, report), title=block.title, fmt=fmt)
            content = figures.render(block, fmt, metadata)
            cache.set(key, content, FIGURE_CACHE_SECONDS)
        caching = "private, max-age=3600"
    response = HttpResponse(content, content_type={"svg": "image/svg+xml", "png": "image/png"}[fmt], headers=said)
    if request.GET.get("download"):
        response["Content-Disposition"] = f'attachment; filename="{filename}.{fmt}"'
    response["Cache-Control"] = caching
    return response
