"""Researcher dashboards: a study's overview (progress, time on task, metric runs with live progress) and one
page per part of the report, each figure with its SVG, PNG and CSV downloads. Admins and researchers only."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.core.cache import cache
from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_safe

from annotation.forms import error_text
from annotation.models import Study
from common import provenance
from common.cells import csv_stream
from metrics import selectors as metrics_selectors
from metrics.forms import top_k_cap
from metrics.kind_sections import default_bootstrap
from metrics.models import MetricRun
from metrics.parameters import BOOTSTRAP_MAX, BOOTSTRAP_MIN, DEFAULT_SEED, DEFAULT_TOP_K, SEED_MAX
from metrics.report_warnings import section_warnings
from metrics.views import staff_study_or_404 as _study
from reports import charts, kind_pages, labels, selectors
from reports.forms import FilterForm, SpanExamplesForm

FIGURE_CACHE_SECONDS = 24 * 3600  # a succeeded run's report never changes, nor do its figures
# The report's largest parts (most of its megabytes at paper scale), each read by one page only: the other report
# pages leave them in the database (their figures, filter choices and downloads never read them).
HEAVY = {("indices", "coupling"): "coupling", ("indices", "trajectories"): "trajectories",
         ("indices", "spans"): "spans"}
# Large sections split by dataset and conversation kind (docs/metrics.md, item 20): a page without those filters in
# its URL does not fetch their splits. (The risk page's are small, and its dataset choices read them.)
SPLIT = {"coupling": ("indices", "coupling"), "spans": ("indices", "spans")}


def report_paths_unread(report_page: charts.Page, query: Mapping[str, str]) -> list[tuple[str, ...]]:
    """The paths of the stored report the page will not read for this URL (its heavy parts and splits)."""
    if charts.PAGES.get(report_page.slug) is not report_page:
        return []  # a kind's own page reads its own section: the whole report
    paths: list[tuple[str, ...]] = [path for path, reader in HEAVY.items() if reader != report_page.slug]
    section = SPLIT.get(report_page.slug)
    if section is not None:
        paths += [(*section, split) for split, name in (("by_dataset", "dataset"), ("by_kind", "kind"))
                  if not query.get(name)]
    return paths


def names_context(study: Study, legend: str) -> dict[str, Any]:
    """What every dashboard page needs to name the study's codes: ``code_names`` for the table headers and the
    ``legend`` of its kind of page (``main`` or a kind's section: reports.labels)."""
    names = selectors.code_names(study=study, value_codes=kind_pages.value_codes_of(study))
    return {"code_names": names.all, "legend": labels.legend(legend, names.clusters, names.attributes, names.values)}


def _page(slug: str, study: Study) -> charts.Page:
    """The study's page of that slug: a page its kind does not have (``reports.kind_pages``) is a 404. (The
    pages a kind serves itself have their own URLs, before these.)"""
    page = kind_pages.page_of(study, slug)
    if page is None:
        raise Http404(f"no report page {slug!r} for this study's kind")
    return page


def _view_query(request: HttpRequest, run: MetricRun | None) -> str:
    """The query of the run line's "link to this view of run N" (``reports/run_line.html``): the page's own, with the
    run it shows, so that the link opens that run once a newer one succeeds, however the page was opened (without
    ``?run=``: the newest run). One home for the report pages and the span drill-down."""
    query = request.GET.copy()
    if run is not None:
        query["run"] = str(run.pk)
    return query.urlencode()


def _shown_run_href(study: Study, run: MetricRun | None) -> str | None:
    """Where the overview's run line links: the study's first report page with that run chosen (the overview shows
    no run's figures, and a link to it would show a newer run once there is one)."""
    if run is None:
        return None
    first = kind_pages.pages_of(study)[0]
    return f"{reverse('reports-page', args=[study.slug, first.slug])}?{urlencode({'run': run.pk})}"


@login_required
@require_safe
def overview(request: HttpRequest, slug: str) -> HttpResponse:
    study = _study(request, slug)
    runs = selectors.recent_runs(study=study)
    warned_run, warnings = selectors.shown_run(study=study)
    reviewers = metrics_selectors.reviewer_count(study=study)  # the cap of the panel size k (metrics.forms)
    return render(request, "reports/overview.html", {
        "study": study, "pages": kind_pages.pages_of(study), "progress": selectors.study_progress(study=study),
        "runs": runs, "runs_active": selectors.runs_active(runs), "warned_run": warned_run, "warnings": warnings,
        "warned_run_href": _shown_run_href(study, warned_run),
        "may_start": request.user.has_perm("metrics.add_metricrun"),
        "defaults": {"bootstrap": default_bootstrap(study), "seed": DEFAULT_SEED,
                     "top_k": min(DEFAULT_TOP_K, top_k_cap(reviewers)), "top_k_max": top_k_cap(reviewers),
                     "reviewers": reviewers, "bootstrap_min": BOOTSTRAP_MIN, "bootstrap_max": BOOTSTRAP_MAX,
                     "seed_max": SEED_MAX},
    })


@login_required
@require_safe
def runs(request: HttpRequest, slug: str) -> HttpResponse:
    """The runs table alone: polled by the overview while a run is queued or computing."""
    study = _study(request, slug)
    recent = selectors.recent_runs(study=study)
    warned_run, warnings = selectors.shown_run(study=study)
    return render(request, "reports/overview.html#runs", {
        "study": study, "runs": recent, "runs_active": selectors.runs_active(recent), "warned_run": warned_run,
        "warned_run_href": _shown_run_href(study, warned_run), "warnings": warnings})


def _report(
    request: HttpRequest, study: Study, report_page: charts.Page,
) -> tuple[FilterForm, charts.Filters, list[str], MetricRun | None, dict | None]:
    labels = selectors.run_choices(study=study, asked=request.GET.get("run"))
    probe = FilterForm(request.GET, runs=labels)
    probe.is_valid()
    run_id = probe.cleaned_data.get("run") if hasattr(probe, "cleaned_data") else None
    if request.GET.get("run") and not run_id:
        raise Http404("run must be the number of one of this study's succeeded metric runs")
    run, report = selectors.report_of(study=study, run_id=run_id,
                                      without=report_paths_unread(report_page, request.GET))
    if run_id and run is None:
        raise Http404(f"run {run_id} is not a succeeded metric run of this study")
    form = FilterForm(request.GET, runs=labels, choices=charts.choices(report or {}))
    filters, dropped = form.filters(shown=report_page.filters)
    filters, missing = charts.split_missing(report_page, report or {}, filters)
    return form, filters, dropped + missing, run, report


@login_required
@require_safe
def page(request: HttpRequest, slug: str, page: str) -> HttpResponse:
    study = _study(request, slug)
    report_page = _page(page, study)
    form, filters, dropped, run, report = _report(request, study, report_page)
    blocks = charts.page_blocks(report_page, report, filters) if report is not None else []
    context = {
        "study": study, "page": report_page, "pages": kind_pages.pages_of(study), "form": form, "dropped": dropped,
        "warnings": section_warnings(report, report_page.section),
        "run": run, "blocks": blocks, "query": _view_query(request, run),
        "span_links": charts.span_example_links(report, filters) if report and page == "spans" else [],
        "span_filters": urlencode({name: value for name, value in (("dataset", filters.dataset),
                                                                   ("kind", filters.kind)) if value}),
    }
    context |= names_context(study, report_page.section)
    if report_page.context is not None:  # a kind's own page: what its template reads beyond the blocks
        context |= report_page.context(report)
    name = report_page.template
    template = f"{name}#body" if request.htmx else name  # type: ignore[attr-defined]
    return render(request, template, context)


@login_required
@require_safe
def block_file(request: HttpRequest, slug: str, page: str, name: str, fmt: str) -> HttpResponse | StreamingHttpResponse:
    study = _study(request, slug)
    report_page = _page(page, study)
    _form, filters, _dropped, run, report = _report(request, study, report_page)
    if run is None or report is None:
        raise Http404("no succeeded metric run for this study yet")
    block = charts.block_get(report_page, name, report, filters)
    if block is None:
        raise Http404(f"the {report_page.title} page has no figure or table {name!r}")
    filename = f"{study.slug}-{name}-run{run.pk}"
    said = provenance.run_headers(run, report)  # docs/metrics.md#provenance: CSV, SVG and PNG alike
    if fmt == "csv":  # a plain CSV (it loads as it is): its name says the run, the headers the rest
        return StreamingHttpResponse(
            csv_stream(block.columns, block.rows), content_type="text/csv; charset=utf-8",
            headers={**said, "Content-Disposition": f'attachment; filename="{filename}.csv"'})
    if not isinstance(block, charts.Chart):
        raise Http404(f"{name!r} is a table: download it as CSV")
    # The codes its page's table names are named in the picture too (reports.labels.chart_named; the CSV keeps
    # them). v2: the files say their run in their metadata (common.provenance.figure_metadata).
    names = selectors.code_names(study=study).all
    key = "reports:v2:" + hashlib.sha256(f"{run.pk}|{page}|{name}|{fmt}|{filters}|{sorted(names.items())}"
                                         .encode()).hexdigest()
    content = cache.get(key)
    if content is None:
        from reports import figures  # matplotlib loads only in the processes that draw

        metadata = provenance.figure_metadata(provenance.run_facts(run, report), title=block.title, fmt=fmt)
        content = figures.render(labels.chart_named(block, names), fmt, metadata)
        cache.set(key, content, FIGURE_CACHE_SECONDS)
    response = HttpResponse(content, content_type={"svg": "image/svg+xml", "png": "image/png"}[fmt], headers=said)
    if request.GET.get("download"):
        response["Content-Disposition"] = f'attachment; filename="{filename}.{fmt}"'
    response["Cache-Control"] = "private, max-age=3600"
    return response


@login_required
@require_safe
def span_examples(request: HttpRequest, slug: str) -> HttpResponse:
    """The span-evidence drill-down: example responses of one model with one subcategory highlighted, within the
    span-evidence page's dataset and conversation-kind filters."""
    study = _study(request, slug)
    _page("spans", study)  # the drill-down of a page the study's kind has
    form = SpanExamplesForm(request.GET)
    if not form.is_valid():
        raise Http404(error_text(form))
    query = form.cleaned_data
    line_run, _ = selectors.report_of(study=study, run_id=query["run"], without=selectors.sections_unread())
    if query["run"] is not None and line_run is None:
        raise Http404(f"run {query['run']} is not a succeeded metric run of this study")
    total, examples = selectors.span_examples(study=study, model=query["model"], subcategory=query["subcategory"],
                                              dataset=query["dataset"], kind=query["kind"])
    run = str(query["run"] or "")
    back = {name: value for name, value in (("run", run), ("model", query["model"]), ("dataset", query["dataset"]),
                                            ("kind", query["kind"])) if value}
    return render(request, "reports/span_examples.html", {
        "study": study, "pages": kind_pages.pages_of(study), "model": query["model"],
        "subcategory": query["subcategory"], "dataset": query["dataset"], "kind": query["kind"], "total": total,
        "examples": examples, "run": run,
        "back": urlencode(back), "line_run": line_run, "query": _view_query(request, line_run),
    })
