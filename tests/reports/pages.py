"""Every dashboard page and download of a study, and a sweep that fetches them all (tests/reports/test_every_page.py).

Not a test module and independent of pytest: from a shell on any configuration,

    python manage.py shell -c "from tests.reports import pages; print(pages.sweep('demo', 'demo-admin'))"

``report_urls(study)`` lists the URLs from what the product itself uses to draw its dashboards, never a typed list:
the overview and its runs table; every page of the study's navigation (``kind_pages.pages_of``: the pages of the
study's kind, docs/architecture.md#dashboard-pages-of-each-kind) for the newest succeeded run, unfiltered, then
with each filter the page shows at its first and at its last value (the filter form's own choices for the run's
report) and with every filter set at once; in each of those views every figure and table the page builds from the
report as CSV and every figure as SVG, and in the unfiltered view every figure as PNG too (all blocks, with rows or
without, so an empty figure is drawn too); the span-evidence drill-downs the page links, the timeline of every
CARE history, the LC8 page and its one-trajectory plot for each trajectory (up to MAX_TRAJECTORIES); and the
exports page with the study's downloads there (judgments and items in both formats, report.json, every per-model
table the report holds).

``fetch_all(client, urls)`` fetches each URL and checks the answer is 200, of the type its extension says, and not
empty (a PNG is a PNG, an SVG has ``<svg``, JSON and JSON Lines parse, a CSV has a header, a page is a whole HTML
document); each report page is fetched a second time as the htmx partial its filter form swaps in. It also
follows the links, images and ``hx-get`` of every page it fetches to any dashboard or download of the same studies
whose path none of the URLs has (a page or download the product links but ``report_urls`` does not know), and
fetches those too. ``uncovered(urls)`` names the dashboard URL patterns none of the URLs reaches: every pattern of
``reports.urls`` and every ``export…`` pattern of the project (the exports page and its downloads; the API's
token-authenticated copies of those downloads are not swept).
"""

from __future__ import annotations

import csv
import io
import json
import re
import time
import traceback
import zipfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from html.parser import HTMLParser
from typing import Any
from urllib.parse import urlencode, urljoin, urlsplit

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, resolve, reverse
from django.urls.exceptions import Resolver404

from annotation.models import Study
from care import charts as care_charts
from lc8 import charts as lc8_charts
from lc8 import inputs as lc8_inputs
from metrics import runs as metric_runs
from metrics import selectors as metrics_selectors
from metrics import services as metric_services
from metrics.models import MetricRun
from reports import charts, kind_pages, selectors
from reports import urls as report_urlconf
from reports.forms import FilterForm

BODY_SHOWN = 300
# What a URL's extension says its answer is (anything else is an HTML page).
TYPES = {"csv": "text/csv", "svg": "image/svg+xml", "png": "image/png", "json": "application/json",
         "jsonl": "application/x-ndjson", "zip": "application/zip"}
CHART_FORMATS, TABLE_FORMATS = ("svg", "png", "csv"), ("csv",)
# The views that answer an htmx request (``HX-Request``) with the partial their filter form swaps in, and the one
# that is always a partial (the overview polls the runs table).
HTMX_PARTIALS = ("reports-page", "reports-lc8")
PARTIALS = ("reports-runs",)
RUN_WAIT_SECONDS = 600  # run_metrics: how long to wait for a run a worker computes
MAX_TRAJECTORIES = 20  # LC8: the trajectories plotted one by one (a paper-scale study has thousands)


@dataclass(frozen=True)
class Failure:
    url: str
    status: int | None
    problem: str
    body: str  # its first BODY_SHOWN characters (the last of the traceback, for a view that raised)

    def __str__(self) -> str:
        return f"{self.url} -> {self.status}: {self.problem}\n    {self.body!r}"


# --- which URLs -------------------------------------------------------------------------------------------------


def _walk(patterns: Iterable, namespace: str = "") -> Iterator[tuple[str, URLPattern]]:
    for entry in patterns:
        if isinstance(entry, URLResolver):
            yield from _walk(entry.url_patterns, f"{namespace}{entry.namespace}:" if entry.namespace else namespace)
        else:
            yield namespace, entry


def dashboard_url_names() -> set[str]:
    """The URL names the sweep must reach: every pattern of ``reports.urls``, and every pattern of the project
    named ``export…`` (the exports page and its downloads)."""
    # API operations among them (the bundle's) are swept by the API's own tests (tests/api/test_openapi.py).
    names = {entry.name for _, entry in _walk(report_urlconf.urlpatterns) if not entry.name.startswith("api-")}
    names |= {entry.name for namespace, entry in _walk(get_resolver().url_patterns)
              if not namespace and entry.name and entry.name.startswith("export")}
    return names


def download_url_names() -> set[str]:
    """The URL names of the project's downloads: every pattern whose last part names a file (``….csv``,
    ``….(?P<fmt>svg|png|csv)``, ``memo.<str:fmt>``, ``bundle.zip``), the API's copies among them."""
    names = set()
    for _namespace, entry in _walk(get_resolver().url_patterns):
        last = str(entry.pattern).replace("\\.", ".").rstrip("$").rsplit("/", 1)[-1]
        if entry.name and re.search(r"\.[a-z(<]", last):
            names.add(entry.name)
    return names


def url_name(url: str) -> str | None:
    """The URL name the URL resolves to, or None when it is not a URL of the project."""
    try:
        return resolve(urlsplit(url).path).url_name
    except Resolver404:
        return None


def uncovered(urls: Iterable[str]) -> list[str]:
    """The dashboard URL names (``dashboard_url_names``) that none of the URLs resolves to."""
    return sorted(dashboard_url_names() - {url_name(url) for url in urls})


def _url(name: str, args: Iterable[Any], query: dict[str, Any] | None = None) -> str:
    url = reverse(name, args=list(args))
    query = {key: value for key, value in (query or {}).items() if value not in ("", None)}
    return f"{url}?{urlencode(query)}" if query else url


def _downloads(name: str, args: list[Any], blocks: Iterable[charts.Block], query: dict[str, Any], *,
               png: bool = True) -> list[str]:
    """Each block's downloads as the page links them: a figure's SVG (and PNG) with ``download=1``, its CSV
    without."""
    found = []
    for block in blocks:
        for fmt in CHART_FORMATS if isinstance(block, charts.Chart) else TABLE_FORMATS:
            if fmt == "png" and not png:
                continue
            found.append(_url(name, [*args, block.name, fmt], {**query, "download": 1} if fmt != "csv" else query))
    return found


def filter_views(page: charts.Page, report: dict) -> list[dict[str, str]]:
    """The filter settings to show the page with: none; each filter the page shows at its first and at its last
    value (the filter form's choices for this report, the default left out: single- and multi-turn, raw scores,
    the first and the last model, round, dataset, signal); and every filter at its first value together."""
    form = FilterForm({}, choices=charts.choices(report))
    default = charts.Filters()
    values: dict[str, list[str]] = {}
    for name in page.filters:
        choices = [str(value) for value, _label in form.fields[name].choices]  # type: ignore[attr-defined]
        values[name] = [value for value in choices if value and value != getattr(default, name)]
    views: list[dict[str, str]] = [{}]
    views += [{name: value} for name, options in values.items() for value in dict.fromkeys(options[:1] + options[-1:])]
    together = {name: options[0] for name, options in values.items() if options}
    if len(together) > 1:
        views.append(together)
    return views


def _report_page_urls(study: Study, page: charts.Page, run: MetricRun | None, report: dict | None, *,
                      filtered: bool = True) -> list[str]:
    slug = study.slug
    run_query = {"run": run.pk} if run is not None else {}
    if report is None:
        return [_url("reports-page", [slug, page.slug], run_query)]
    found = []
    blocks = charts.page_blocks(page, report, charts.Filters())  # their names, whatever the filters
    for view in filter_views(page, report) if filtered else [{}]:
        query = {**run_query, **view}
        found.append(_url("reports-page", [slug, page.slug], query))
        # A figure's PNG is its SVG's drawing saved in another format: drawn for the unfiltered view only.
        found += _downloads("reports-file", [slug, page.slug], blocks, query, png=not view)
        if page.slug == "spans":  # the drill-downs the page links: all of them unfiltered, else the first
            filters = charts.Filters(**view)
            links = [_url("reports-span-examples", [slug], {"model": model, "subcategory": subcategory, **run_query,
                                                            "dataset": filters.dataset, "kind": filters.kind})
                     for model, subcategories in charts.span_example_links(report, filters)
                     for subcategory in subcategories]
            found += links if not view else links[:1]
    if page is care_charts.CARE_PAGE:
        found += [_url("reports-care-timeline", [slug, history], run_query)
                  for history in care_charts.histories(report)]
    return found


def _lc8_urls(study: Study, run: MetricRun | None, report: dict | None) -> list[str]:
    slug = study.slug
    run_query = {"run": run.pk} if run is not None else {}
    found = [_url("reports-lc8", [slug], run_query)]
    section = (report or {}).get("lc8")
    if section and not section.get("unavailable"):
        found += _downloads("reports-lc8-file", [slug], lc8_charts.report_blocks(report or {}), run_query)
    # One trajectory's plot: a chart and a table, whatever the trajectory (their names are the page's).
    plot = [charts.Chart(lc8_charts.TRAJECTORY_CHART, "", "lines", {}, [], []),
            charts.Table(lc8_charts.TRAJECTORY_TABLE, "", [], [])]
    for number, trajectory in enumerate(lc8_inputs.trajectory_names(study=study)[:MAX_TRAJECTORIES]):
        query = {**run_query, "trajectory": trajectory}
        found.append(_url("reports-lc8", [slug], query))
        found += _downloads("reports-lc8-file", [slug], plot, query, png=number == 0)
    return found


def _export_urls(study: Study, run: MetricRun | None) -> list[str]:
    slug = study.slug
    found = [reverse("exports")]
    found += [reverse(name, args=[slug, fmt]) for name in ("export-judgments", "export-items")
              for fmt in ("csv", "jsonl")]
    if run is not None:
        found.append(reverse("export-report", args=[slug]))
        found.append(reverse("reports-bundle", args=[slug, run.pk]))  # the study bundle (docs/bundle.md)
        found += [reverse("export-index-table", args=[slug, table])
                  for table in metrics_selectors.index_tables(result=run.result)]
    return found


def report_urls(study: Study, *, common_filters: bool = True) -> list[str]:
    """Every dashboard page and download of the study, for its newest succeeded metric run (module docstring).
    Without ``common_filters``, the pages of ``charts.PAGES`` the study's kind has are listed unfiltered only: their
    filters are the same code for every study, swept on the synthetic study (tests/reports/test_every_page.py); a
    kind's own page (CARE, LongCounsel-8) keeps every filter view."""
    run, report = selectors.report_of(study=study, run_id=None)
    found = [reverse("reports", args=[study.slug]), reverse("reports-runs", args=[study.slug])]
    for page in kind_pages.pages_of(study):
        if page is lc8_charts.LC8_PAGE:
            found += _lc8_urls(study, run, report)
        else:
            common = page in charts.PAGES.values()
            found += _report_page_urls(study, page, run, report, filtered=common_filters or not common)
    found += _export_urls(study, run)
    return list(dict.fromkeys(found))


# --- fetching them ----------------------------------------------------------------------------------------------


class _Links(HTMLParser):
    """Every href, src and hx-get of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.found += [value for name, value in attrs if name in ("href", "src", "hx-get") and value]


def _slug(url: str) -> str | None:
    try:
        return resolve(urlsplit(url).path).kwargs.get("slug")
    except Resolver404:
        return None


def _links(page_url: str, body: str, slugs: set[str], names: set[str], host: str) -> list[str]:
    """The page's links to a dashboard or download of one of the studies (or to the exports page)."""
    parser = _Links()
    parser.feed(body)
    found = []
    for link in parser.found:
        parts = urlsplit(urljoin(page_url, link))
        if parts.netloc not in ("", host) or url_name(parts.path) not in names:
            continue
        url = f"{parts.path}?{parts.query}" if parts.query else parts.path
        slug = _slug(url)
        if slug is None or slug in slugs:
            found.append(url)
    return found


def _body(response) -> bytes:
    """The whole body. (Reading a streamed one to its end closes the response, as a WSGI server would: closing it
    again here would send request_finished, which in a test closes the test's database connection.)"""
    if getattr(response, "streaming", False):
        return b"".join(response.streaming_content)
    return response.content


def _problem(url: str, response, body: bytes, *, partial: bool) -> str:
    """What is wrong with a 200 answer, or ''."""
    extension = urlsplit(url).path.rsplit(".", 1)[-1] if "." in urlsplit(url).path.rsplit("/", 1)[-1] else ""
    expected = TYPES.get(extension, "text/html")
    content_type = response.get("Content-Type", "")
    if content_type.split(";")[0].strip() != expected:
        return f"content type {content_type!r}, expected {expected!r}"
    if not body.strip():
        return "empty body"
    if extension in ("png", "zip"):
        return _binary_problem(extension, body)
    text = body.decode("utf-8", errors="replace")
    if extension == "svg" and "<svg" not in text:
        return "no <svg> element"
    if extension == "json":
        try:
            json.loads(text)
        except ValueError as error:
            return f"not JSON: {error}"
    if extension == "jsonl":
        for number, line in enumerate(text.splitlines(), start=1):
            try:
                json.loads(line)
            except ValueError as error:
                return f"line {number} is not JSON: {error}"
    if extension == "csv" and not any(next(csv.reader(io.StringIO(text)), [])):
        return "no CSV header"
    if expected == "text/html" and not partial and "</html>" not in text:
        return "not a whole HTML page"
    return ""


def _binary_problem(extension: str, body: bytes) -> str:
    if extension == "png":
        return "" if body.startswith(b"\x89PNG\r\n\x1a\n") else "not a PNG"
    with zipfile.ZipFile(io.BytesIO(body)) as bundle:  # the study bundle: whole, with its report
        return "" if "report.json" in bundle.namelist() and bundle.testzip() is None else "not a whole bundle"


def fetch(client: Client, url: str, *, partial: bool = False) -> tuple[Failure | None, str]:
    """One GET: (the failure or None, the body as text when it is an HTML page, else '')."""
    headers = {"HX-Request": "true"} if partial else {}
    try:
        response = client.get(url, headers=headers)
    except Exception as error:  # noqa: BLE001 - a client with raise_request_exception=True
        return Failure(url, None, f"raised {type(error).__name__}: {error}", traceback.format_exc()[-BODY_SHOWN:]), ""
    body = _body(response)
    text = body.decode("utf-8", errors="replace")
    if getattr(response, "exc_info", None):  # the view raised: what, and the end of the traceback
        error = response.exc_info[1]
        return Failure(url, response.status_code, f"raised {type(error).__name__}: {error}",
                       "".join(traceback.format_exception(*response.exc_info))[-BODY_SHOWN:]), ""
    if response.status_code != 200:
        return Failure(url, response.status_code, "not 200", text[:BODY_SHOWN]), ""
    problem = _problem(url, response, body, partial=partial)
    if problem:
        return Failure(url, 200, problem, text[:BODY_SHOWN]), ""
    return None, text if response.get("Content-Type", "").startswith("text/html") else ""


def fetch_all(client: Client, urls: Iterable[str], *, follow_links: bool = True,
              fetched: list[str] | None = None) -> list[Failure]:
    """Fetch every URL and, with ``follow_links``, every dashboard or download of the same studies that a fetched
    page links to under a path none of the URLs has (and so on); the failures. ``fetched``, when given, receives
    every URL fetched."""
    queue = list(dict.fromkeys(urls))
    slugs = {slug for slug in map(_slug, queue) if slug}
    names = dashboard_url_names()
    host = client.defaults.get("HTTP_HOST", "testserver")
    seen = {urlsplit(url).path for url in queue}
    failures: list[Failure] = []
    while queue:
        url = queue.pop(0)
        if fetched is not None:
            fetched.append(url)
        failure, page = fetch(client, url, partial=url_name(url) in PARTIALS)
        if failure is not None:
            failures.append(failure)
            continue
        if url_name(url) in HTMX_PARTIALS:
            partial_failure, _ = fetch(client, url, partial=True)
            if partial_failure is not None:
                failures.append(Failure(f"{url} (HX-Request)", partial_failure.status, partial_failure.problem,
                                        partial_failure.body))
        if follow_links and page:
            for link in _links(url, page, slugs, names, host):
                if urlsplit(link).path not in seen:  # a page or download the list does not have at all
                    seen.add(urlsplit(link).path)
                    queue.append(link)
    return failures


def staff_client(username: str) -> Client:
    """A test client signed in as the account (an admin or a researcher), which answers a view's exception with a
    500 rather than raising it, and speaks to a host and scheme the settings accept (outside the test runner too)."""
    hosts = [host for host in settings.ALLOWED_HOSTS if host not in ("*",) and not host.startswith(".")]
    host = "testserver" if "testserver" in settings.ALLOWED_HOSTS or "*" in settings.ALLOWED_HOSTS or not hosts \
        else hosts[0]
    defaults: dict[str, Any] = {"SERVER_NAME": host, "HTTP_HOST": host}
    if getattr(settings, "SECURE_SSL_REDIRECT", False):
        defaults |= {"wsgi.url_scheme": "https", "SERVER_PORT": "443"}
    client = Client(raise_request_exception=False, **defaults)
    client.force_login(get_user_model().objects.get(username=username))
    return client


def run_metrics(study: Study, *, bootstrap: int = 20, seed: int = 1) -> MetricRun:
    """Request a metric run of the study and compute it here and now (if the request's own commit has not already
    had it computed, with in-process tasks); the succeeded run, or AssertionError with the run's error."""
    with transaction.atomic():
        run = metric_services.metric_run_request(study=study, by=None, bootstrap=bootstrap, seed=seed)
    if not metric_runs.metric_run_execute(run_id=run.pk):  # computed already, or a worker has it: wait
        deadline = time.monotonic() + RUN_WAIT_SECONDS
        while run.status in (MetricRun.Status.QUEUED, MetricRun.Status.RUNNING) and time.monotonic() < deadline:
            time.sleep(0.5)
            run.refresh_from_db()
    run.refresh_from_db()
    assert run.status == MetricRun.Status.SUCCEEDED, f"metric run {run.pk} of {study.slug}: {run.status} {run.error}"
    return run


def sweep(slug: str, username: str) -> list[Failure]:
    """Fetch every dashboard page and download of the study as the account; the failures (for ``manage.py shell``)."""
    study = Study.objects.get(slug=slug)
    return fetch_all(staff_client(username), report_urls(study))
