"""The LongCounsel-8 dashboard page on the small LC8 study of tests/lc8/test_inputs.py with a succeeded
metric run: who may see it, that it exists only for an LC8 study, that every number it shows is the report's (tables
and CSV downloads), the rank reversal said in words, and the per-trajectory plot of the trajectory chosen in the URL
read from the stored labels."""

from __future__ import annotations

import csv
import html
import io
import re
from pathlib import Path

import pytest
from django.urls import reverse

from annotation.models import StudyMember
from metrics import runs as metric_runs
from metrics import services as metric_services
from metrics.models import MetricRun
from reports.templatetags.reports_tags import cell
from tests.lc8.test_inputs import (
    REFERENCE,
    SLUG,
    TWIN_DATASET,
    TWIN_REFERENCE,
    build_lc8_study,
    method_labels,
    twin_add,
)

pytestmark = pytest.mark.django_db
TYPES = ("improving", "worsening", "fluctuating", "stable")
RANKINGS = ("by_current_mae", "by_change_mae", "by_direction_accuracy")  # the report's, docs/lc8-metrics.md#output
FIDELITY = ("item_exact", "item_mae", "total_bias", "pearson", "spearman", "screening_agreement", "severe_tail_mae",
            "n_sessions", "n_item_sessions", "n_severe_sessions")


@pytest.fixture(scope="module")
def lc8_run_id(shared_state):
    with shared_state():
        study = build_lc8_study()
        run = metric_services.metric_run_request(study=study, by=None, bootstrap=20, seed=1)
        metric_runs.metric_run_execute(run_id=run.pk)
        yield run.pk


@pytest.fixture
def section(db, lc8_run_id) -> dict:
    return MetricRun.objects.get(pk=lc8_run_id).result["lc8"]


def _page(client, **query) -> str:
    response = client.get(reverse("reports-lc8", args=[SLUG]), query)
    assert response.status_code == 200
    return response.content.decode()


def _table(page: str, name: str) -> list[list[str]]:
    """The shown cells of one table block, as text."""
    start = page.index(f'<section class="block" id="{name}"')
    body = page[start:page.index("</section>", start)]
    return [[html.unescape(re.sub(r"<[^>]+>", "", c)).strip() for c in re.findall(r"<td>(.*?)</td>", row, re.S)]
            for row in re.findall(r"<tr>(.*?)</tr>", body.split("<tbody>", 1)[1], re.S)]


def _shown(value) -> str:
    return "n/a" if value is None else cell(value)


def test_the_page_is_for_admins_and_researchers_only(client, lc8_run_id, reviewer, expert, researcher, admin_user):
    urls = [reverse("reports-lc8", args=[SLUG]),
            reverse("reports-lc8-file", args=[SLUG, "lc8-coders", "csv"]),
            reverse("reports-lc8-file", args=[SLUG, "lc8-magnitude-direction", "svg"]),
            reverse("reports-lc8-file", args=[SLUG, "lc8-trajectory", "png"]) + "?trajectory=lc8-b",
            reverse("reports-lc8-file", args=[SLUG, "lc8-trajectory-values", "csv"])]
    for user in (reviewer, expert):
        client.force_login(user)
        for url in urls:
            assert client.get(url).status_code == 403, (user.username, url)
    for user in (researcher, admin_user):
        client.force_login(user)
        for url in urls:
            assert client.get(url).status_code == 200, (user.username, url)


def test_the_page_is_linked_only_for_an_lc8_study(client, lc8_run_id, study, researcher):
    client.force_login(researcher)
    link = f'href="{reverse("reports-page", args=[SLUG, "lc8"])}'
    assert link == f'href="{reverse("reports-lc8", args=[SLUG])}'  # the navigation's link is this page
    assert link in client.get(reverse("reports", args=[SLUG])).content.decode()
    assert "/reports/lc8/" not in client.get(reverse("reports", args=[study.slug])).content.decode()
    assert client.get(reverse("reports-lc8", args=[study.slug])).status_code == 404
    assert client.get(reverse("reports-lc8-file", args=[study.slug, "lc8-coders", "csv"])).status_code == 404


def test_every_number_shown_is_the_reports(client, section, researcher):
    client.force_login(researcher)
    page = _page(client)
    coders = section["coders"]
    assert sorted(coders) == ["m-alpha", "m-beta", "rater-1", "ref-self"]
    rows = _table(page, "lc8-coders")
    assert [r[0] for r in rows] == sorted(coders)
    for row in rows:
        entry = coders[row[0]]
        expected = [row[0], section["roles"][row[0]]]
        for key in ("current_mae", "change_mae", "direction_accuracy"):  # a value and its interval in one cell
            low, high = entry["ci"][key]
            expected.append(_shown(entry[key]) + (f" [{_shown(low)}–{_shown(high)}]"
                                                  if entry[key] is not None and (low, high) != (None, None) else ""))
            expected.append(_shown(entry["ci_trajectories"][key]))  # the trajectories the interval rests on
        expected += [_shown(entry[k]) for k in ("trend_agreement", "n_trajectories", "n_large_changes", "n_seeds")]
        assert row == expected, row[0]
    for row in _table(page, "lc8-mae-by-type"):
        assert row[2:] == [_shown(coders[row[0]]["mae_by_type"][t]) for t in TYPES], row[0]
    counts = section["reference_types"]
    assert _table(page, "lc8-reference-types") == [
        [t, str(counts[t]), _shown(counts[t] / sum(counts.values()))] for t in TYPES]
    assert counts == {"improving": 1, "worsening": 1, "fluctuating": 1, "stable": 0}  # lc8-d misses a session
    fidelity = _table(page, "lc8-fidelity")
    assert [r[0] for r in fidelity] == sorted(section["fidelity"])
    for row in fidelity:
        assert row[2:] == [_shown(section["fidelity"][row[0]][k]) for k in FIDELITY], row[0]
    assert f'<strong id="lc8-reference">{section["reference"]}</strong>' in page
    assert f"{section['resamples']} trajectory bootstrap resamples, seed {section['seed']}" in page


def test_the_rank_reversal_is_said_in_words(client, section, researcher):
    client.force_login(researcher)
    page = _page(client)
    assert section["ranking"]["reversals"] == [["m-alpha", "m-beta"]]
    alpha, beta = section["coders"]["m-alpha"], section["coders"]["m-beta"]
    sentence = (f"m-alpha has the lower change MAE ({alpha['change_mae']:.3f} vs {beta['change_mae']:.3f}) "
                f"but m-beta the higher direction accuracy ({beta['direction_accuracy']:.3f} vs "
                f"{alpha['direction_accuracy']:.3f}).")
    reversals = page[page.index('id="lc8-reversals"'):]
    assert f"<li>{sentence}</li>" in reversals[:reversals.index("</section>")]
    # the figure's picture is the download route's SVG, and its alt text names the reversal too
    assert f'src="{reverse("reports-lc8-file", args=[SLUG, "lc8-magnitude-direction", "svg"])}?' in page
    assert html.escape(sentence, quote=True) in page.split('id="lc8-magnitude-direction"', 1)[1].split("</section>")[0]


def _caption(page: str, name: str) -> str:
    start = page.index(f'<section class="block" id="{name}"')
    body = page[start:page.index("</section>", start)]
    [caption] = re.findall(r'<p class="caption small">(.*?)</p>', body, re.S)
    return html.unescape(caption)


def test_the_three_rankings_are_the_reports(client, section, researcher):
    """Before, the page showed the ranks by change MAE and direction accuracy only, recomputed from the coders'
    figures; by current-score MAE, which the report has, nowhere."""
    client.force_login(researcher)
    page = _page(client)
    ranking = section["ranking"]
    assert ranking["by_current_mae"] and ranking["by_change_mae"] and ranking["by_direction_accuracy"]
    depth = max(len(ranking[key]) for key in RANKINGS)
    assert _table(page, "lc8-rankings") == [
        [str(place + 1), *(ranking[key][place] if place < len(ranking[key]) else "n/a" for key in RANKINGS)]
        for place in range(depth)]
    points = _csv(client, "lc8-magnitude-direction")
    assert [(p["coder"], p["rank_by_change_mae"], p["rank_by_direction_accuracy"]) for p in points] == [
        (name, str(ranking["by_change_mae"].index(name) + 1), str(ranking["by_direction_accuracy"].index(name) + 1))
        for name in sorted(ranking["by_change_mae"])]


PAPER = (Path(__file__).resolve().parents[2] / "docs" / "lc8-metrics.md").read_text(encoding="utf-8")
COMPARISON = PAPER[PAPER.index("For comparison, the LongCounsel-8 paper reports"):].split("\n\n", 1)[0]


def test_the_papers_reference_ranges_are_in_the_captions_of_the_tables_they_compare_with(client, lc8_run_id,
                                                                                         researcher):
    """docs/lc8-metrics.md#definitions: the values the paper reports, for its methods and for self-report labels
    against the controlled state; before, the page said none of them."""
    methods_said = COMPARISON.split("for its", 1)[1].replace("\n", " ")
    self_report = COMPARISON.split("for its", 1)[0].replace("\n", " ")
    method_ranges = re.findall(r"\d+\.\d+–\d+\.\d+", methods_said)
    self_ranges = re.findall(r"\d+\.\d+–\d+\.\d+", self_report)
    assert len(method_ranges) == 3 and len(self_ranges) == 4, COMPARISON
    client.force_login(researcher)
    page = _page(client)
    captions = {name: _caption(page, name) for name in ("lc8-coders", "lc8-magnitude-direction", "lc8-rankings",
                                                        "lc8-fidelity")}
    for name in ("lc8-coders", "lc8-magnitude-direction", "lc8-rankings"):  # the methods' figures
        assert all(r in captions[name] for r in method_ranges), (name, captions[name])
    assert all(r in captions["lc8-coders"] for r in self_ranges[:3])  # total and change MAE, trend agreement
    assert self_ranges[3] in captions["lc8-fidelity"]  # the severe-tail MAE


def test_without_methods_the_page_ranks_no_one_as_the_report(client, lc8_run_id, researcher):
    """A study without methods has empty rankings (docs/lc8-metrics.md L10); before, the page plotted and ranked
    every coder (1, 2, … by change MAE and by direction accuracy) while the report ranked none."""
    study = MetricRun.objects.get(pk=lc8_run_id).study
    StudyMember.objects.filter(study=study, role="method").update(role="reviewer")
    run = metric_services.metric_run_request(study=study, by=None, bootstrap=5, seed=1)
    metric_runs.metric_run_execute(run_id=run.pk)
    section = MetricRun.objects.get(pk=run.pk).result["lc8"]
    assert section["coders"] and section["ranking"] == {key: [] for key in (*RANKINGS, "reversals")}
    client.force_login(researcher)
    page = _page(client, run=run.pk)
    rankings = page[page.index('<section class="block" id="lc8-rankings"'):]
    assert "Nothing to show: the study has no method" in rankings[:rankings.index("</section>")]
    points = _csv(client, "lc8-magnitude-direction", run=run.pk)
    assert sorted(p["coder"] for p in points) == sorted(section["coders"])  # every coder plotted, none ranked
    assert {(p["rank_by_change_mae"], p["rank_by_direction_accuracy"]) for p in points} == {("", "")}


def _csv(client, name: str, **query) -> list[dict]:
    response = client.get(reverse("reports-lc8-file", args=[SLUG, name, "csv"]), query)
    assert response.status_code == 200
    return list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))


def _number(text: str) -> float | None:
    return None if text == "" else float(text)


def test_the_csv_downloads_are_the_report(client, section, researcher):
    client.force_login(researcher)
    rows = _csv(client, "lc8-coders")
    for row in rows:
        entry = section["coders"][row["coder"]]
        for key in ("current_mae", "change_mae", "direction_accuracy"):
            assert _number(row[key]) == entry[key]
            assert [_number(row[f"{key}_low"]), _number(row[f"{key}_high"])] == entry["ci"][key]
            assert int(row[f"{key}_ci_trajectories"]) == entry["ci_trajectories"][key]
        assert int(row["n_trajectories"]) == entry["n_trajectories"]
    points = _csv(client, "lc8-magnitude-direction")
    assert [p["coder"] for p in points] == ["m-alpha", "m-beta"]  # the methods
    assert [(p["rank_by_change_mae"], p["rank_by_direction_accuracy"]) for p in points] == [("1", "2"), ("2", "1")]
    for point in points:
        entry = section["coders"][point["coder"]]
        assert (_number(point["change_mae"]), _number(point["direction_accuracy"])) == (
            entry["change_mae"], entry["direction_accuracy"])
    fidelity = _csv(client, "lc8-fidelity")
    for row in fidelity:
        assert [_number(row[k]) for k in FIDELITY] == [section["fidelity"][row["coder"]][k] for k in FIDELITY]


def test_the_figures_are_pictures(client, lc8_run_id, researcher):
    client.force_login(researcher)
    svg = client.get(reverse("reports-lc8-file", args=[SLUG, "lc8-magnitude-direction", "svg"]))
    assert svg["Content-Type"] == "image/svg+xml" and b"m-alpha" in svg.content and b"m-beta" in svg.content
    png = client.get(reverse("reports-lc8-file", args=[SLUG, "lc8-magnitude-direction", "png"]), {"download": 1})
    assert png.content.startswith(b"\x89PNG") and "attachment" in png["Content-Disposition"]
    trajectory = client.get(reverse("reports-lc8-file", args=[SLUG, "lc8-trajectory", "svg"]),
                            {"trajectory": "lc8-b"})
    assert b"lc8-b" in trajectory.content and trajectory["Cache-Control"] == "private, no-cache"
    table = client.get(reverse("reports-lc8-file", args=[SLUG, "lc8-coders", "svg"]))
    assert table.status_code == 404  # a table: CSV only
    assert client.get(reverse("reports-lc8-file", args=[SLUG, "no-such-block", "csv"])).status_code == 404


def test_the_trajectory_chosen_in_the_url_is_plotted_from_its_labels(client, lc8_run_id, researcher,
                                                                     django_assert_max_num_queries):
    client.force_login(researcher)
    with django_assert_max_num_queries(20):
        page = _page(client, trajectory="lc8-b")
    assert '<strong id="lc8-trajectory-name">lc8-b</strong>' in page
    assert '<option value="lc8-b" selected>lc8-b</option>' in page
    assert f'src="{reverse("reports-lc8-file", args=[SLUG, "lc8-trajectory", "svg"])}?' in page
    rows = {(r[0], r[2]): r for r in _table(page, "lc8-trajectory-values")}
    assert rows[("ref-controlled", "")][1:] == ["reference", "", "worsening", *(_shown(float(v)) for v in
                                                                             REFERENCE["lc8-b"])]
    for seed in (0, 1, 2):
        shown = rows[("m-beta", str(seed))]
        sent = [method_labels("m-beta", seed, "lc8-b", s)[0] for s in range(1, 6)]
        assert shown[4:] == [_shown(v) for v in sent], seed  # seed 2's session 1: three items only, no total
    assert rows[("m-alpha", "1")][3:5] == ["worsening", "5.100"]  # 5.1, 7.2, 6.0 (the fall it called), 14.4, 15.5
    assert ("rater-1", "") not in rows  # the rater coded nothing of lc8-b
    values = _csv(client, "lc8-trajectory-values", trajectory="lc8-b")
    assert [v["session_1"] for v in values if v["coder"] == "ref-controlled"] == ["5.0"]
    points = _csv(client, "lc8-trajectory", trajectory="lc8-b")
    assert [float(p["total"]) for p in points if p["coder"] == "ref-controlled"] == REFERENCE["lc8-b"]


def test_two_trajectories_of_one_id_are_each_chosen_and_plotted_by_their_name(client, lc8_run_id, researcher):
    from annotation.models import Study

    twin_add(Study.objects.get(slug=SLUG))
    client.force_login(researcher)
    for dataset, totals in (("LongCounsel-8-test", REFERENCE["lc8-a"]), (TWIN_DATASET, TWIN_REFERENCE)):
        name = f"{dataset}/lc8-a"
        page = _page(client, trajectory=name)
        assert f'<option value="{name}" selected>{name}</option>' in page
        assert f'<strong id="lc8-trajectory-name">{name}</strong>' in page
        points = _csv(client, "lc8-trajectory", trajectory=name)
        assert [float(p["total"]) for p in points if p["coder"] == "ref-controlled"] == totals
        assert {p["trajectory"] for p in points} == {name}


def test_an_unknown_trajectory_falls_back_to_the_first(client, lc8_run_id, researcher):
    client.force_login(researcher)
    page = _page(client, trajectory="nope")
    assert "trajectory &#x27;nope&#x27; is not in this study: showing lc8-a" in page
    assert '<strong id="lc8-trajectory-name">lc8-a</strong>' in page
    partial = client.get(reverse("reports-lc8", args=[SLUG]), {"trajectory": "lc8-c"}, HTTP_HX_REQUEST="true")
    body = partial.content.decode()
    assert body.lstrip().startswith('<div id="report-body">') and "<nav" not in body
    assert '<strong id="lc8-trajectory-name">lc8-c</strong>' in body


def test_a_run_without_the_section_says_so(client, lc8_run_id, researcher):
    run = MetricRun.objects.get(pk=lc8_run_id)
    run.result = {key: value for key, value in run.result.items() if key != "lc8"}
    run.save(update_fields=["result"])
    client.force_login(researcher)
    page = _page(client)
    assert 'id="lc8-missing"' in page and 'id="lc8-coders"' not in page
    assert '<strong id="lc8-trajectory-name">lc8-a</strong>' in page  # the plot reads the labels, not the run
    assert client.get(reverse("reports-lc8-file", args=[SLUG, "lc8-coders", "csv"])).status_code == 404


def test_a_run_that_could_not_measure_says_why(client, lc8_run_id, researcher):
    run = MetricRun.objects.get(pk=lc8_run_id)
    run.result = run.result | {"lc8": {"unavailable": "the study has no reference coder (a member with role "
                                                      "reference) yet"}}
    run.save(update_fields=["result"])
    client.force_login(researcher)
    page = _page(client)
    assert (f"Run {run.pk} could not measure tracking: the study has no reference coder (a member with role "
            "reference) yet.") in page
    assert 'id="lc8-coders"' not in page


def test_the_downloads_state_their_run_and_the_trajectory_its_export(client, lc8_run_id, researcher):
    """docs/metrics.md#provenance: a block of the run says the run in its headers (CSV, SVG, PNG) and the pictures
    in their metadata too; the trajectory, read now from the labels, says the software and when it was read."""
    from PIL import Image

    from common.provenance import compact

    client.force_login(researcher)
    run = MetricRun.objects.get(pk=lc8_run_id)
    expected = {"CAB-Run": str(run.pk), "CAB-Run-Finished": run.finished_at.strftime("%Y-%m-%dT%H:%M:%SZ"),
                "CAB-Parameters": compact(run.result["parameters"]), "CAB-Software": compact(run.result["software"]),
                "CAB-Input-Fingerprint": run.result["input"]["fingerprint"]}
    for fmt in ("csv", "svg", "png"):
        response = client.get(reverse("reports-lc8-file", args=[SLUG, "lc8-magnitude-direction", fmt]))
        assert {name: response[name] for name in expected} == expected, fmt
    svg = client.get(reverse("reports-lc8-file", args=[SLUG, "lc8-magnitude-direction", "svg"])).content.decode()
    assert f"<dc:source>CAB metric run {run.pk}, finished {expected['CAB-Run-Finished']}, input " in svg
    png = client.get(reverse("reports-lc8-file", args=[SLUG, "lc8-magnitude-direction", "png"])).content
    with Image.open(io.BytesIO(png)) as image:
        assert image.text["CAB-Run"] == str(run.pk)  # type: ignore[attr-defined]
        assert image.text["CAB-Input-Fingerprint"] == expected["CAB-Input-Fingerprint"]  # type: ignore[attr-defined]
    trajectory = client.get(reverse("reports-lc8-file", args=[SLUG, "lc8-trajectory-values", "csv"]),
                            {"trajectory": "lc8-b"})
    assert "CAB-Run" not in trajectory and trajectory["CAB-Software"] == expected["CAB-Software"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", trajectory["CAB-Exported"])
