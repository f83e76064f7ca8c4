"""The dashboards on a real study with a succeeded metric run: who may see them, what each page and download
holds, filters in the URL, a run started from the overview, and pinned query counts."""

from __future__ import annotations

import csv
import io
import json
import re

import pytest
from django.urls import reverse
from django.utils.html import escape

from annotation.models import Assignment, Study, StudyMember
from metrics import runs as metric_runs
from metrics.models import MetricRun
from reports import charts
from tests import scenarios

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def synthetic_study_id(shared_state):
    with shared_state():
        yield scenarios.synthetic_calibrated_study().pk


@pytest.fixture
def synthetic(db, synthetic_study_id):
    """``syn`` (tests/scenarios.py): two closed calibration rounds, a main round, a succeeded metric run."""
    return Study.objects.get(pk=synthetic_study_id)


def _run(study: Study) -> MetricRun:
    return MetricRun.objects.get(study=study, status="succeeded")


def test_dashboards_are_for_admins_and_researchers_only(client, synthetic, reviewer, expert, researcher, admin_user):
    urls = [reverse("reports", args=["syn"]), reverse("reports-runs", args=["syn"]),
            *(reverse("reports-page", args=["syn", slug]) for slug in charts.PAGES),
            reverse("reports-file", args=["syn", "risk", "fingerprint", "svg"]),
            reverse("reports-file", args=["syn", "risk", "ari-table", "csv"])]
    for user in (reviewer, expert):
        client.force_login(user)
        for url in urls:
            assert client.get(url).status_code == 403, (user.username, url)
    for user in (researcher, admin_user):
        client.force_login(user)
        for url in urls:
            assert client.get(url).status_code == 200, (user.username, url)
    client.logout()
    assert client.get(urls[0]).status_code == 302


def test_overview_shows_progress_time_on_task_and_runs(client, synthetic, researcher):
    assignment = Assignment.objects.filter(round__study=synthetic, round__kind="main").order_by("pk").first()
    Assignment.objects.filter(pk=assignment.pk).update(active_seconds=450, completed_at="2026-01-01T00:00Z")
    client.force_login(researcher)
    page = client.get(reverse("reports", args=["syn"])).content.decode()
    run = _run(synthetic)
    assert f"<td>{run.pk} <span class=\"muted\">" in page and "Succeeded" in page
    assert f"<td>{assignment.coder.username}</td>" in page and "7 min 30 s" in page
    assert 'hx-trigger="every 2s"' not in page  # nothing computing: no polling


def test_overview_polls_while_a_run_is_computing_and_shows_its_stage(client, synthetic, researcher):
    MetricRun.objects.create(study=synthetic, status="running", progress=0.5, progress_message="main-round indices",
                             parameters={"seed": 0, "bootstrap": 10})
    client.force_login(researcher)
    fragment = client.get(reverse("reports-runs", args=["syn"]), HTTP_HX_REQUEST="true").content.decode()
    assert fragment.lstrip().startswith('<section id="runs"') and "<html" not in fragment
    assert 'hx-trigger="every 2s"' in fragment and 'value="0.500"' in fragment
    assert "50 % · main-round indices" in fragment


def test_overview_says_when_a_run_was_sent_again_after_it_has_run(client, synthetic, researcher):
    """Issue 31 item 2: a run the workers' recovery sent again (a lost broker message, a stopped worker) says so on
    the dashboard, also once it has succeeded and its progress message is "done"."""
    run = _run(synthetic)
    client.force_login(researcher)
    assert "sent again" not in client.get(reverse("reports", args=["syn"])).content.decode()
    MetricRun.objects.filter(pk=run.pk).update(resent_at="2026-05-04T03:02:01Z")
    page = client.get(reverse("reports", args=["syn"])).content.decode()
    assert "sent again 2026-05-04 03:02:01" in page


def test_a_run_started_from_the_overview_keeps_its_parameters(client, synthetic, admin_user, researcher, reviewer):
    url = reverse("metric-run-start", args=["syn"])
    client.force_login(reviewer)
    assert client.post(url, {"bootstrap": "50", "seed": "3", "top_k": "4"}).status_code == 403
    client.force_login(researcher)
    before = MetricRun.objects.count()
    response = client.post(url, {"bootstrap": "0", "seed": "3", "top_k": "4"}, follow=True)
    assert "Not started: bootstrap" in response.content.decode() and MetricRun.objects.count() == before
    response = client.post(url, {"bootstrap": "50", "seed": "3", "top_k": "4"}, follow=True)
    run = MetricRun.objects.latest("pk")
    assert {k: run.parameters[k] for k in ("bootstrap", "seed", "top_k")} == {"bootstrap": 50, "seed": 3, "top_k": 4}
    assert run.requested_by == researcher and f"run {run.pk}" in response.content.decode()
    # The worker's part, here in-process: the stability shares are the panel size and the two below it.
    metric_runs.metric_run_execute(run_id=run.pk)
    run.refresh_from_db()
    assert run.status == "succeeded", run.error
    assert sorted(run.result["calibration"]["bootstrap"]["top_k"]) == ["2", "3", "4"]
    assert run.result["calibration"]["panel_ranking"]["panel_size"] == 4


@pytest.mark.parametrize("slug", list(charts.PAGES))
def test_every_page_shows_its_figures_with_three_downloads(client, synthetic, researcher, slug):
    client.force_login(researcher)
    run = _run(synthetic)
    page = client.get(reverse("reports-page", args=["syn", slug])).content.decode()
    blocks = charts.page_blocks(charts.PAGES[slug], run.result, charts.Filters())
    assert any(block.rows for block in blocks)
    for block in blocks:
        if not block.rows:  # nothing in the report for it: said in words, no empty picture
            assert "Nothing to show" in page
            continue
        csv_url = reverse("reports-file", args=["syn", slug, block.name, "csv"])
        assert f'href="{csv_url}?run={run.pk}"' in page
        if block.is_chart:
            svg_url = reverse("reports-file", args=["syn", slug, block.name, "svg"])
            assert f'src="{svg_url}?run={run.pk}"' in page and f'alt="{escape(block.alt)}"' in page
            assert reverse("reports-file", args=["syn", slug, block.name, "png"]) in page


def test_downloads_serve_the_data_behind_the_figure(client, synthetic, researcher):
    client.force_login(researcher)
    run = _run(synthetic)
    response = client.get(reverse("reports-file", args=["syn", "risk", "ari", "csv"]))
    rows = list(csv.reader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert rows[0] == ["model", "cluster", "value", "ci_low", "ci_high"]
    ari = run.result["indices"]["ari"]
    by_key = {(r[0], r[1]): r for r in rows[1:]}
    assert float(by_key[("GPT", "ARI")][2]) == pytest.approx(ari["GPT"]["ARI"])
    svg = client.get(reverse("reports-file", args=["syn", "risk", "fingerprint", "svg"]))
    assert svg["Content-Type"] == "image/svg+xml" and b"<svg" in svg.content and b"fingerprint" in svg.content
    png = client.get(reverse("reports-file", args=["syn", "risk", "fingerprint", "png"]), {"download": "1"})
    assert png.content[:4] == b"\x89PNG" and "attachment" in png["Content-Disposition"]
    assert client.get(reverse("reports-file", args=["syn", "risk", "ari-table", "svg"])).status_code == 404
    assert client.get(reverse("reports-file", args=["syn", "risk", "nope", "csv"])).status_code == 404


def test_filters_live_in_the_url_and_a_foreign_value_falls_back_with_a_notice(client, synthetic, researcher):
    client.force_login(researcher)
    one = client.get(reverse("reports-page", args=["syn", "risk"]), {"model": "GPT"}).content.decode()
    assert "<td>GPT</td>" in one and "<td>Claude</td>" not in one
    csv_one = client.get(reverse("reports-file", args=["syn", "risk", "ari-table", "csv"]), {"model": "GPT"})
    assert [r[0] for r in csv.reader(io.StringIO(b"".join(csv_one.streaming_content).decode()))][1:] == ["GPT"]
    foreign = client.get(reverse("reports-page", args=["syn", "risk"]), {"model": "<b>nope</b>"}).content.decode()
    assert "is not in this report: showing the default" in foreign and "<b>nope</b>" not in foreign
    assert "<td>Claude</td>" in foreign
    assert client.get(reverse("reports-page", args=["syn", "risk"]), {"run": "x"}).status_code == 404
    assert client.get(reverse("reports-page", args=["syn", "risk"]), {"run": "999999"}).status_code == 404
    assert client.get(reverse("reports-page", args=["syn", "nope"])).status_code == 404


def test_filter_changes_answer_htmx_with_the_body_alone(client, synthetic, researcher):
    client.force_login(researcher)
    body = client.get(reverse("reports-page", args=["syn", "coupling"]), {"model": "GPT", "scale": "raw"},
                      HTTP_HX_REQUEST="true").content.decode()
    assert body.lstrip().startswith('<div id="report-body">') and "<html" not in body
    assert "GPT (raw scale)" in body


MULTI, SINGLE = "Synthetic multi-turn", "Synthetic single-turn"


@pytest.mark.parametrize("slug", ["risk", "coupling", "spans"])
def test_risk_coupling_and_spans_filter_by_dataset_and_kind_in_the_url(client, synthetic, researcher, slug):
    client.force_login(researcher)
    url = reverse("reports-page", args=["syn", slug])
    page = client.get(url, {"dataset": MULTI, "kind": "multi"}).content.decode()
    # both filters are on the page's form (htmx: a change reloads the body and pushes the URL) and keep their value
    form = re.search(r'<form method="get" class="filters report-filters".*?</form>', page, flags=re.S).group(0)
    assert 'hx-push-url="true"' in form and 'name="dataset"' in form and 'name="kind"' in form
    assert re.search(rf'<option value="{MULTI}" selected>', form) and '<option value="multi" selected>' in form
    assert f"{MULTI}, multi-turn conversations" in page or f"{MULTI}; multi-turn conversations" in page
    assert "Nothing to show" not in page
    # the single-turn conversations of the multi-turn dataset: none, so nothing (not the whole study's figures)
    empty = client.get(url, {"dataset": MULTI, "kind": "single"}, HTTP_HX_REQUEST="true").content.decode()
    assert empty.lstrip().startswith('<div id="report-body">') and "Nothing to show" in empty


def test_a_run_from_before_the_dataset_split_says_so_and_shows_every_dataset(client, synthetic, researcher):
    run = _run(synthetic)
    old = run.result
    for section in (old["indices"], old["indices"]["coupling"], old["indices"]["spans"]):
        section.pop("by_dataset")
    MetricRun.objects.filter(pk=run.pk).update(result=old)
    client.force_login(researcher)
    page = client.get(reverse("reports-page", args=["syn", "risk"]), {"dataset": MULTI}).content.decode()
    assert "computed before the Atrophy risk figures were split by dataset" in page
    assert "<td>Claude</td>" in page and f"({MULTI})" not in page
    csv_all = client.get(reverse("reports-file", args=["syn", "risk", "ari-table", "csv"]), {"dataset": MULTI})
    rows = list(csv.reader(io.StringIO(b"".join(csv_all.streaming_content).decode())))
    assert rows[1][1] == repr(old["indices"]["ari"][rows[1][0]]["D"])  # the whole study's value


def test_a_page_fetches_only_the_parts_of_the_report_it_reads_and_shows_the_same(client, synthetic, researcher):
    from reports import selectors, views

    run, full = selectors.report_of(study=synthetic, run_id=None)
    assert run == _run(synthetic) and full == run.result
    for slug, page in charts.PAGES.items():
        for filters in (charts.Filters(), charts.Filters(dataset=MULTI, model="GPT"), charts.Filters(kind="single"),
                        charts.Filters(dataset=MULTI, kind="multi", model="GPT")):
            query = {"dataset": filters.dataset, "kind": filters.kind}
            without = views.report_paths_unread(page, query)
            assert without, slug  # every page leaves something it does not read in the database
            _, slim = selectors.report_of(study=synthetic, run_id=run.pk, without=without)
            for path in without:
                *parents, last = path
                holder = slim
                for part in parents:
                    holder = holder[part]
                assert last not in holder, (slug, path)
            for built, expected in zip(charts.page_blocks(page, slim, filters), charts.page_blocks(page, full, filters),
                                       strict=True):
                assert (built.title, built.rows, built.caption) == (expected.title, expected.rows, expected.caption)
            assert charts.choices(slim).datasets == charts.choices(full).datasets
            assert charts.split_missing(page, slim, filters) == (filters, [])
            if slug == "trajectories":
                assert charts.choices(slim).signals == charts.choices(full).signals
    # a filter the page does not have is ignored without a notice (the risk page has no signal choices to check)
    client.force_login(researcher)
    page = client.get(reverse("reports-page", args=["syn", "risk"]), {"signal": "ARI"}).content.decode()
    assert "is not in this report" not in page


def test_a_page_without_a_succeeded_run_says_how_to_get_one(client, synthetic, researcher):
    MetricRun.objects.filter(study=synthetic).update(status="failed", result=None)
    client.force_login(researcher)
    page = client.get(reverse("reports-page", args=["syn", "reliability"])).content.decode()
    assert "No succeeded metric run for this study yet" in page
    assert client.get(reverse("reports-file", args=["syn", "risk", "ari", "svg"])).status_code == 404


def test_query_counts_are_pinned(client, synthetic, researcher, django_assert_num_queries):
    client.force_login(researcher)
    client.get(reverse("reports", args=["syn"]))  # session and roles warmed
    # session, user, roles (access check and page header), study, runs, the run the report pages show (its run
    # line and warnings), rounds, progress, permissions (2), reviewers (the cap of the panel size k)
    with django_assert_num_queries(12):
        client.get(reverse("reports", args=["syn"]))
    with django_assert_num_queries(8):  # … and the schema's attribute names (headers and legend)
        client.get(reverse("reports-page", args=["syn", "reliability"]))
    with django_assert_num_queries(7):
        client.get(reverse("reports-file", args=["syn", "risk", "ari", "csv"]))


def _figure_spans(study):  # noqa: ANN001, ANN202
    """The highlights the span-evidence figure reads: main round, scored, not gold, the retained panel's if there
    is one, no automated coder's; written here from the rule, not from the selector."""
    from annotation.models import Span, StudyMember

    spans = Span.objects.filter(judgment__round__kind="main", judgment__round__study=study, judgment__is_gold=False,
                                judgment__score__isnull=False) \
        .exclude(judgment__coder__study_memberships__role="method")
    panel = list(StudyMember.objects.filter(study=study, retained=True).values_list("user_id", flat=True))
    return spans.filter(judgment__coder_id__in=panel) if panel else spans


def test_span_drill_down_shows_example_responses_with_every_reviewer_highlight(client, synthetic, researcher,
                                                                                reviewer, django_assert_num_queries):
    from annotation.models import Span

    span = (Span.objects.filter(judgment__round__study=synthetic, judgment__round__kind="main",
                                judgment__is_gold=False).select_related("judgment__response", "subcategory")
            .order_by("pk").first())
    model, sub = span.judgment.response.model_slot, span.subcategory.slug
    client.force_login(researcher)
    spans_page = client.get(reverse("reports-page", args=["syn", "spans"]), {"model": model}).content.decode()
    url = reverse("reports-span-examples", args=["syn"])
    assert f'href="{url}?model={model}&amp;subcategory={sub}' in spans_page
    client.get(url, {"model": model, "subcategory": sub})
    with django_assert_num_queries(11):  # session, user, roles ×2, study, the run (its run line), the coders'
        # roles and panel, count, chosen ids, spans, responses
        page = client.get(url, {"model": model, "subcategory": sub}).content.decode()
    expected = _figure_spans(synthetic).filter(judgment__response__model_slot=model, subcategory__slug=sub) \
        .values("judgment__response_id").distinct().count()
    assert f"{expected} main-round response" in page
    first = (Span.objects.filter(judgment__round__kind="main", judgment__round__study=synthetic,
                                 judgment__is_gold=False, judgment__response__model_slot=model, subcategory__slug=sub)
             .select_related("judgment__response").order_by("judgment__response_id", "pk").first())
    # The first response is shown whole, its highlights as <mark>s: the text without them is the response's text.
    assert escape(first.judgment.response.text) in re.sub(r"</?mark[^>]*>", "", page)
    highlighted = "".join(re.findall(r'<mark class="span-hit[^"]*"[^>]*>(.*?)</mark>', page, flags=re.S))
    assert escape(first.judgment.response.text[first.start:first.end]) in highlighted or first.end - first.start > 0 \
        and all(piece in highlighted for piece in escape(first.judgment.response.text[first.start:first.end]).split())
    client.force_login(reviewer)
    assert client.get(url, {"model": model, "subcategory": sub}).status_code == 403


def test_span_drill_down_keeps_the_dataset_and_kind_filters(client, synthetic, researcher,
                                                            django_assert_num_queries):

    client.force_login(researcher)
    spans_page = client.get(reverse("reports-page", args=["syn", "spans"]),
                            {"model": "GPT", "dataset": MULTI, "kind": "multi"}).content.decode()
    url = reverse("reports-span-examples", args=["syn"])
    links = re.findall(rf'href="{url}\?model=GPT&amp;subcategory=([\w-]+)&amp;run=\d+&amp;([^"]*)"', spans_page)
    assert links and all(query == "dataset=Synthetic+multi-turn&amp;kind=multi" for _, query in links)
    sub = links[0][0]
    everywhere = _figure_spans(synthetic).filter(judgment__response__model_slot="GPT", subcategory__slug=sub)

    def responses(spans) -> int:  # noqa: ANN001
        return spans.values("judgment__response_id").distinct().count()

    in_multi = everywhere.filter(judgment__response__turn__conversation__dataset__name=MULTI,
                                 judgment__response__turn__conversation__kind="multi")
    assert 0 < responses(in_multi) < responses(everywhere)
    client.get(url, {"model": "GPT", "subcategory": sub, "dataset": MULTI, "kind": "multi"})
    with django_assert_num_queries(11):  # the filters join inside the same queries (and the run line's run)
        page = client.get(url, {"model": "GPT", "subcategory": sub, "dataset": MULTI, "kind": "multi"}
                          ).content.decode()
    assert f"{responses(in_multi)} main-round response" in page and f"in {MULTI} to multi-turn" in page
    assert all(f"{MULTI} · " in heading for heading in re.findall(r"<h2>(.*?)</h2>", page))
    assert "dataset=Synthetic+multi-turn&amp;kind=multi" in page  # the way back keeps the filters
    single = client.get(url, {"model": "GPT", "subcategory": sub, "kind": "single"}).content.decode()
    expected = responses(everywhere.exclude(judgment__response__turn__conversation__kind="multi"))
    assert f"{expected} main-round response" in single
    assert client.get(url, {"model": "GPT", "subcategory": sub, "kind": "both"}).status_code == 404


@pytest.mark.parametrize("bad", [{"model": "GPT\x00"}, {"subcategory": "a\x00b"}, {"dataset": "\x00"},
                                 {"run": "\u00b2"}, {"run": "0"}, {"run": "-1"}, {"run": str(2**63)}, {"run": "x"},
                                 {"run": "999999"}, {"model": ""}, {"kind": "both"}])
def test_span_drill_down_refuses_bad_parameters_with_a_404_not_a_500(client, synthetic, researcher, bad):
    """A NUL byte (PostgreSQL refuses it in text), a run that is not a number of the study's succeeded runs ("²"
    is a digit to ``str.isdigit`` but not to ``int``; 2**63 is past bigint): a plain 404, never a 500."""
    from annotation.models import Span

    span = (Span.objects.filter(judgment__round__study=synthetic, judgment__round__kind="main")
            .select_related("judgment__response", "subcategory").order_by("pk").first())
    good = {"model": span.judgment.response.model_slot, "subcategory": span.subcategory.slug,
            "run": str(_run(synthetic).pk)}
    client.force_login(researcher)
    client.raise_request_exception = False
    url = reverse("reports-span-examples", args=["syn"])
    assert client.get(url, good).status_code == 200
    assert client.get(url, {**good, **bad}).status_code == 404


def _said_by_svg(content: bytes) -> dict[str, str]:
    """The Dublin Core elements of an SVG's metadata (``dc:title``, ``dc:source`` …), by local name."""
    from xml.etree import ElementTree

    dc = "{http://purl.org/dc/elements/1.1/}"
    return {element.tag[len(dc):]: element.text or "" for element in ElementTree.fromstring(content).iter()  # noqa: S314
            if element.tag.startswith(dc)}


def _said_by_png(content: bytes) -> dict[str, str]:
    from PIL import Image

    with Image.open(io.BytesIO(content)) as image:
        return dict(image.text)  # type: ignore[attr-defined]


def test_every_figure_download_states_its_run_software_parameters_and_input(client, synthetic, researcher):
    """docs/metrics.md#provenance: the CSV in its name and headers (it stays plain: it loads as it is), the SVG and
    PNG in their headers and in their own metadata, the same bytes every time."""
    from django.conf import settings

    from common.provenance import compact

    client.force_login(researcher)
    run = _run(synthetic)
    report = run.result
    expected = {"CAB-Run": str(run.pk), "CAB-Run-Finished": run.finished_at.strftime("%Y-%m-%dT%H:%M:%SZ"),
                "CAB-Parameters": compact(report["parameters"]), "CAB-Software": compact(report["software"]),
                "CAB-Input-Fingerprint": report["input"]["fingerprint"]}
    assert report["software"] == {"version": settings.CAB_VERSION, "commit": settings.CAB_COMMIT}
    assert report["input"]["fingerprint"].startswith("sha256:") and report["parameters"]["seed"] is not None
    for fmt in ("csv", "svg", "png"):
        response = client.get(reverse("reports-file", args=["syn", "risk", "ari", fmt]), {"download": "1"})
        assert response.status_code == 200
        assert {name: response[name] for name in expected} == expected, fmt
        assert f"run{run.pk}.{fmt}" in response["Content-Disposition"]
    rows = list(csv.reader(io.StringIO(b"".join(client.get(
        reverse("reports-file", args=["syn", "risk", "ari", "csv"])).streaming_content).decode())))
    assert rows[0] == ["model", "cluster", "value", "ci_low", "ci_high"]  # no provenance line in the CSV itself

    facts = {"run": run.pk, "finished_at": expected["CAB-Run-Finished"], "parameters": report["parameters"],
             "software": report["software"], "input_fingerprint": expected["CAB-Input-Fingerprint"]}
    svg = client.get(reverse("reports-file", args=["syn", "risk", "ari", "svg"])).content
    said = _said_by_svg(svg)
    assert said["source"] == (f"CAB metric run {run.pk}, finished {expected['CAB-Run-Finished']}, "
                              f"input {expected['CAB-Input-Fingerprint']}")
    assert json.loads(said["description"]) == facts and said["title"]
    assert "date" not in said  # no creation time: the same chart of the same run is the same bytes
    png = client.get(reverse("reports-file", args=["syn", "risk", "ari", "png"])).content
    text = _said_by_png(png)
    assert {name: text[name] for name in expected} == expected
    assert json.loads(text["Description"]) == facts and text["Source"] == said["source"]
    assert "Creation Time" not in text

    from django.core.cache import cache

    cache.clear()  # drawn again: the same bytes
    assert client.get(reverse("reports-file", args=["syn", "risk", "ari", "svg"])).content == svg
    assert client.get(reverse("reports-file", args=["syn", "risk", "ari", "png"])).content == png


def test_the_panel_size_k_offered_is_capped_at_the_reviewers_and_a_larger_one_is_still_a_run(client, synthetic,
                                                                                              researcher):
    """docs/metrics.md#panel-selection: the field offers at most the study's reviewers and says so, its default
    lowered to that many; a larger k (as the API and a round's close may start) is a valid run, out of range is not."""
    reviewers = StudyMember.objects.filter(study=synthetic, role="reviewer").count()
    assert 1 < reviewers < 50
    client.force_login(researcher)
    page = client.get(reverse("reports", args=["syn"])).content.decode()
    field = re.search(r'<input type="number" name="top_k"[^>]*>', page)[0]
    assert f'max="{reviewers}"' in field and f'value="{min(6, reviewers)}"' in field
    assert 'aria-describedby="top-k-cap"' in field
    assert f"at most {reviewers}: the study has {reviewers} reviewers" in page
    before = MetricRun.objects.count()
    url = reverse("metric-run-start", args=["syn"])
    for asked in ("51", "0", "many"):
        response = client.post(url, {"bootstrap": "50", "seed": "3", "top_k": asked}, follow=True)
        assert response.status_code == 200, asked
        assert "Not started: top_k" in response.content.decode(), asked
    assert MetricRun.objects.count() == before
    for asked in (reviewers, reviewers + 1):
        response = client.post(url, {"bootstrap": "50", "seed": "3", "top_k": str(asked)}, follow=True)
        assert response.status_code == 200 and "Not started" not in response.content.decode()
    assert sorted(run.parameters["top_k"] for run in MetricRun.objects.all()[:2]) == [reviewers, reviewers + 1]


def test_the_pictures_name_the_codes_their_tables_name_and_the_csv_keeps_the_codes(client, synthetic, researcher):
    """docs/metrics.md#display-names: the ARI chart's clusters, the fingerprint's and the flags' codes are named in
    the SVG as the page's table names them ("Directiveness (D)"); the CSV keeps the codes."""
    from reports import selectors as report_selectors

    names = report_selectors.code_names(study=synthetic)
    client.force_login(researcher)
    ari = client.get(reverse("reports-file", args=["syn", "risk", "ari", "svg"])).content.decode()
    for code, name in names.clusters.items():
        assert f"{name} ({code})" in ari
    assert "Atrophy risk index (ARI)" in ari
    fingerprint = client.get(reverse("reports-file", args=["syn", "risk", "fingerprint", "svg"])).content.decode()
    named = [f"{name} ({code})" for code, name in names.attributes.items() if f"{name} ({code})" in fingerprint]
    assert named, "the fingerprint's attributes are named"
    rows = list(csv.reader(io.StringIO(b"".join(client.get(
        reverse("reports-file", args=["syn", "risk", "ari", "csv"])).streaming_content).decode())))
    assert {row[1] for row in rows[1:]} <= {"D", "E", "R", "F", "ARI"}  # codes, as the report has them


def test_chart_named_renames_only_the_parts_its_table_names():
    from reports.charts import Chart
    from reports.labels import chart_named

    chart = Chart("ari", "t", "bars", {"categories": ["GPT"], "series": {"D": [0.1], "X": [0.2]},
                                      "intervals": {"D": [(0.0, 0.2)]}}, ["model", "cluster"], [["GPT", "D"]])
    named = chart_named(chart, {"D": "Directiveness", "GPT": "not a code here"})
    assert named.spec["series"] == {"Directiveness (D)": [0.1], "X": [0.2]}
    assert named.spec["intervals"] == {"Directiveness (D)": [(0.0, 0.2)]} and named.spec["categories"] == ["GPT"]
    assert named.rows == [["GPT", "D"]] and chart.spec["series"] == {"D": [0.1], "X": [0.2]}  # the CSV's, unchanged
    other = Chart("pairwise", "t", "heatmap", {"rows": ["D"], "columns": ["D"]}, [], [])
    assert chart_named(other, {"D": "Directiveness"}) is other


def test_a_link_to_an_older_run_keeps_opening_it_once_newer_runs_are_made(client, synthetic, researcher):
    """The run picker lists the study's 50 newest succeeded runs (reports.selectors.RUN_CHOICES); a link to an older
    one (the run line's "link to this view", kept in a paper's notes) opens it with the run chosen in the picker.
    Before, the picker did not hold it, so the browser showed the newest run as chosen above the older run's
    figures: a figure read off that page was credited to the wrong run."""
    from tests.factories import MetricRunFactory

    old = _run(synthetic)
    for _ in range(50):
        MetricRunFactory(study=synthetic, status="succeeded", result=old.result, parameters=old.parameters,
                         finished_at=old.finished_at)
    client.force_login(researcher)
    page = client.get(reverse("reports-page", args=["syn", "risk"]), {"run": str(old.pk)})
    assert page.status_code == 200
    text = page.content.decode()
    assert re.search(rf'<option value="{old.pk}" selected>run {old.pk} ', text), "the old run is the one shown"
    assert f"Run {old.pk} · finished" in text
    assert client.get(reverse("reports-page", args=["syn", "risk"]), {"run": "999999"}).status_code == 404


def test_the_overviews_run_line_links_to_the_run_it_shows_by_its_number(client, synthetic, researcher):
    """The overview's run line ended in "link to this view", a link to the overview itself (``?``), which shows no
    run's figures and, once a newer run succeeds, the newer one's line: the run's number was neither in the link's
    text nor in its address. It links to the run's first report page with the run chosen, named by its number,
    and the report pages' own link names the run they show; both the overview and its polled runs table."""
    run = _run(synthetic)
    client.force_login(researcher)
    first = charts.PAGES[next(iter(charts.PAGES))]
    href = f"{reverse('reports-page', args=['syn', first.slug])}?run={run.pk}"
    for url in (reverse("reports", args=["syn"]), reverse("reports-runs", args=["syn"])):
        text = client.get(url).content.decode()
        assert f'<a href="{href}">run {run.pk}\'s report</a>' in text, url
        assert "link to this view" not in text
    page = client.get(reverse("reports-page", args=["syn", "risk"]), {"run": str(run.pk)}).content.decode()
    assert re.search(rf'<a href="\?[^"]*run={run.pk}[^"]*">link to this view of run {run.pk}</a>', page)


def test_the_span_drill_downs_run_line_links_to_the_run_it_names(client, synthetic, researcher):
    """The drill-down's run line says "link to this view of run N", but opened without ``?run=`` (as a link kept
    from elsewhere opens it) its address was the page's own query, without the run: once a newer run succeeds, the
    link opened the newer run's line. It carries the run it names, as the report pages' link does."""
    from annotation.models import Span

    span = (Span.objects.filter(judgment__round__study=synthetic, judgment__round__kind="main")
            .select_related("judgment__response", "subcategory").order_by("pk").first())
    run = _run(synthetic)
    client.force_login(researcher)
    url = reverse("reports-span-examples", args=["syn"])
    page = client.get(url, {"model": span.judgment.response.model_slot,
                            "subcategory": span.subcategory.slug}).content.decode()
    [link] = re.findall(r'<a href="([^"]*)">link to this view of run (\d+)</a>', page)
    assert link[1] == str(run.pk)
    assert f"run={run.pk}" in link[0].split("?", 1)[1].split("&amp;"), link
