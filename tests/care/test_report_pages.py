"""The CARE dashboard page and the admin timeline of a history, on the CARE demo study with a succeeded metric run:
who may see them, that the page exists only for a CARE study, that its numbers and CSV downloads are the report's,
and that the timeline shows the states worked out by hand from the demo's judge codes."""

from __future__ import annotations

import csv
import io
import re

import pytest
from django.urls import reverse
from django.utils.html import escape

from access import roles
from access.services import user_ensure
from annotation.models import Study
from care.demo import CARE_DEMO_JUDGE, CARE_DEMO_STUDY, care_demo_load
from metrics import runs as metric_runs
from metrics import services as metric_services
from metrics.models import MetricRun
from metrics.selectors import HISTORY_NAME_LENGTH
from tests.care.test_inputs import TWIN_DATASET, demo_twin_add

pytestmark = pytest.mark.django_db
HISTORY = "care-demo-1"


@pytest.fixture(scope="module")
def care_study_id(shared_state):
    with shared_state():
        result = care_demo_load(admin=user_ensure(username="demo-admin", role=roles.ADMIN),
                                reviewer=user_ensure(username="demo-reviewer", role=roles.REVIEWER),
                                expert=user_ensure(username="demo-expert", role=roles.EXPERT))
        run = metric_services.metric_run_request(study=result.study, by=None, bootstrap=20, seed=1)
        metric_runs.metric_run_execute(run_id=run.pk)
        yield result.study.pk


@pytest.fixture
def care(db, care_study_id):
    return Study.objects.get(pk=care_study_id)


def _report(study: Study) -> dict:
    return MetricRun.objects.get(study=study, status="succeeded").result


def _urls() -> list[str]:
    return [reverse("reports-page", args=[CARE_DEMO_STUDY, "care"]),
            reverse("reports-file", args=[CARE_DEMO_STUDY, "care", "care-alignment", "csv"]),
            reverse("reports-file", args=[CARE_DEMO_STUDY, "care", "care-validation", "csv"]),
            reverse("reports-file", args=[CARE_DEMO_STUDY, "care", "care-quality", "svg"]),
            reverse("reports-care-timeline", args=[CARE_DEMO_STUDY, HISTORY])]


def test_care_pages_are_for_admins_and_researchers_only(client, care, reviewer, expert, researcher, admin_user):
    for user in (reviewer, expert):
        client.force_login(user)
        for url in _urls():
            assert client.get(url).status_code == 403, (user.username, url)
    for user in (researcher, admin_user):
        client.force_login(user)
        for url in _urls():
            assert client.get(url).status_code == 200, (user.username, url)


def test_the_care_page_is_linked_only_for_a_care_study(client, care, study, researcher):
    client.force_login(researcher)
    care_link = f'href="{reverse("reports-page", args=[CARE_DEMO_STUDY, "care"])}'
    assert care_link in client.get(reverse("reports", args=[CARE_DEMO_STUDY])).content.decode()
    other = client.get(reverse("reports", args=[study.slug])).content.decode()
    assert "/reports/care/" not in other
    assert client.get(reverse("reports-page", args=[study.slug, "care"])).status_code == 404
    assert client.get(reverse("reports-care-timeline", args=[study.slug, HISTORY])).status_code == 404


def test_the_page_shows_the_reports_numbers(client, care, researcher):
    client.force_login(researcher)
    page = client.get(reverse("reports-page", args=[CARE_DEMO_STUDY, "care"])).content.decode()
    care_section = _report(care)["care"]
    alignment = care_section["alignment"]["Assistant"]
    assert alignment["AR"] == pytest.approx(2 / 3) and alignment["PR"] == pytest.approx(1 / 3)
    for block in ("care-alignment", "care-alignment-by-crisis", "care-alignment-by-history", "care-quality",
                  "care-quality-by-crisis", "care-control", "care-validation"):
        assert f'id="{block}"' in page, block
    table = page[page.index('id="care-alignment-by-crisis"'):page.index('id="care-quality"')]
    # The crisis type is named by the schema's crisis attribute (its anchor), the code in the cell's title.
    assert "<td>0.667</td>" in table and "<td>0.333</td>" in table
    assert '<td><span class="code-name" data-code="SI" title="Code SI">Suicidal thoughts, plans or intent</span></td>' \
        in table
    assert '<th scope="col" data-key="AR" title="Report key AR">Aligned rate (AR)</th>' in table
    legend = page[page.index('id="legend"'):page.index("</details>", page.index('id="legend"'))]
    assert "<dt>SI</dt><dd>crisis type: Suicidal thoughts, plans or intent</dd>" in legend
    assert "<dt>ProdR</dt>" in legend
    quality = page[page.index('id="care-quality-by-crisis"'):page.index('id="care-control"')]
    assert "<td>1.000</td>" in quality and "<td>0.500</td>" in quality
    assert f'href="{reverse("reports-care-timeline", args=[CARE_DEMO_STUDY, HISTORY])}' in page


def _csv(client, name: str) -> list[dict]:
    response = client.get(reverse("reports-file", args=[CARE_DEMO_STUDY, "care", name, "csv"]))
    return list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))


def _number(text: str) -> float | None:
    return None if text == "" else float(text)


def test_the_csv_downloads_are_the_report(client, care, researcher):
    client.force_login(researcher)
    care_section = _report(care)["care"]
    rows = _csv(client, "care-alignment")
    assert [r["model"] for r in rows] == sorted(care_section["alignment"])
    for row in rows:
        expected = care_section["alignment"][row["model"]]
        for key in ("AR", "PR", "LR", "advice_frequency", "n_action", "n_ready"):
            assert _number(row[key]) == expected[key], key
    rows = _csv(client, "care-quality")
    for row in rows:
        expected = care_section["quality"][row["model"]]
        assert [_number(row[k]) for k in ("ProdR", "UnprodR", "OmitR", "n_sessions")] == [
            expected[k] for k in ("ProdR", "UnprodR", "OmitR", "n_sessions")]
    rows = _csv(client, "care-control")
    assert [r["model"] for r in rows] == sorted(care_section["control"])
    validation = _csv(client, "care-validation")
    expected_rows = [(f, pair) for f, pairs in care_section["validation"].items() for pair in sorted(pairs)]
    assert [(r["field"], f'{r["coder_a"]}|{r["coder_b"]}') for r in validation] == expected_rows
    for row in validation:
        entry = care_section["validation"][row["field"]][f'{row["coder_a"]}|{row["coder_b"]}']
        assert (_number(row["agreement"]), _number(row["kappa"]), _number(row["n"]), _number(row["n_histories"])) == (
            entry["agreement"], entry["kappa"], entry["n"], entry["n_histories"])
        low, high = entry["agreement_ci"] or (None, None)
        assert (_number(row["agreement_low"]), _number(row["agreement_high"])) == (low, high)


def test_the_per_history_table_and_its_csv_are_the_demo_historys_own_figures(client, care, researcher):
    """docs/care.md, the demo's figures: the judge codes nine assistant turns (5-13), three of them action turns
    (6 aligned, 8 premature, 13 aligned), none while Open or Rebuilding; so its one history, under the model slot
    Assistant, has AR 2/3, PR 1/3, LR null (n_ready 0) and advice frequency 3/9, in the report, the page and the CSV."""
    client.force_login(researcher)
    expected = {"AR": 2 / 3, "PR": 1 / 3, "LR": None, "advice_frequency": 3 / 9, "n_action": 3, "n_ready": 0}
    assert _report(care)["care"]["alignment_by_history"] == {HISTORY: {"Assistant": expected}}
    page = client.get(reverse("reports-page", args=[CARE_DEMO_STUDY, "care"])).content.decode()
    table = page[page.index('id="care-alignment-by-history"'):page.index('id="care-quality"')]
    assert "Timing of advice per history" in table and f"<td>{HISTORY}</td>" in table
    assert '<th scope="col" data-key="history" title="Report key history">History</th>' in table
    assert "<td>0.667</td>" in table and "<td>0.333</td>" in table
    rows = _csv(client, "care-alignment-by-history")
    assert [(r["history"], r["model"]) for r in rows] == [(HISTORY, "Assistant")]
    assert {k: _number(rows[0][k]) for k in expected} == expected


def _timeline_rows(html: str) -> dict[int, dict[str, str]]:
    rows = {}
    for match in re.finditer(r'<tr id="turn-(\d+)" data-state="([^"]*)" data-credit="([^"]*)" '
                             r'data-candidate="([^"]*)" data-reached="([^"]*)" data-label="([^"]*)">', html):
        turn, state, credit, candidate, reached, label = match.groups()
        rows[int(turn)] = {"state": state, "credit": credit, "candidate": candidate, "reached": reached,
                           "label": label}
    return rows


def test_the_timeline_shows_the_states_worked_out_by_hand(client, care, admin_user):
    client.force_login(admin_user)
    url = reverse("reports-care-timeline", args=[CARE_DEMO_STUDY, HISTORY])
    html = client.get(url).content.decode()
    rows = _timeline_rows(html)
    assert sorted(rows) == list(range(1, 14))
    # Before the crisis nothing applies: Rebuilding, no credit, nothing reached (turn 2, a chat).
    assert rows[2] == {"state": "Rebuilding", "credit": "0", "candidate": "", "reached": "", "label": ""}
    # Crisis session opens at turn 5 (Acute); turn 6 Acute again, advice Regulate in Acute: aligned.
    assert rows[6] == {"state": "Acute", "credit": "0", "candidate": "", "reached": "Acute", "label": "aligned"}
    # Turn 7, Settling: one credit, Settling the candidate.
    assert rows[7] == {"state": "Acute", "credit": "1", "candidate": "Settling", "reached": "Acute", "label": ""}
    # Turn 8, Open: the second credit moves exactly one step, to Settling; Sustain advice there is premature.
    assert rows[8] == {"state": "Settling", "credit": "0", "candidate": "", "reached": "Acute,Settling",
                       "label": "premature"}
    # Turn 9, Settling with hold: credit stays 0.
    assert rows[9]["state"] == "Settling" and rows[9]["credit"] == "0"
    # The callback opens a new episode (turn 11 Acute); turn 12, Open while credit 0 at Acute, is sudden: credit 1.
    assert rows[12] == {"state": "Acute", "credit": "1", "candidate": "Settling", "reached": "Acute", "label": ""}
    # Turn 13, Rebuilding: second credit, one step to Settling; the user asked for Sustain, so Sustain is aligned.
    assert rows[13] == {"state": "Settling", "credit": "0", "candidate": "", "reached": "Acute,Settling",
                        "label": "aligned"}
    assert 'id="session-3"' in html and "Session 5 · callback · SI · opens an episode" in html
    run = MetricRun.objects.get(study=care, status="succeeded")
    assert f"from run {run.pk}" in html and f"<strong id=\"timeline-reference\">{CARE_DEMO_JUDGE}</strong>" in html
    assert "changed since the run" not in html


def _run_and_care_page(client, care, admin_user) -> tuple[MetricRun, str]:  # noqa: ANN001
    """A metric run of the study, succeeded, and the CARE page as the admin reads it after it."""
    run = metric_services.metric_run_request(study=care, by=None, bootstrap=20, seed=1)
    metric_runs.metric_run_execute(run_id=run.pk)
    run.refresh_from_db()
    assert run.status == "succeeded", run.error
    client.force_login(admin_user)
    return run, client.get(reverse("reports-page", args=[CARE_DEMO_STUDY, "care"])).content.decode()


def test_two_histories_of_one_id_have_each_its_link_and_its_timeline(client, care, admin_user):
    """The demo history and its twin in another dataset under the same id (tests/care/test_inputs.py): the run
    succeeds, the page links each history by its name (DATASET/ID) and each timeline shows its own states."""
    demo_twin_add(care)
    run, page = _run_and_care_page(client, care, admin_user)
    states = {}
    for dataset in ("CARE-demo", TWIN_DATASET):
        name = f"{dataset}/{HISTORY}"
        url = reverse("reports-care-timeline", args=[CARE_DEMO_STUDY, name])
        assert url.endswith(f"/timeline/{name}/")
        assert f'href="{url}?run={run.pk}">{name}</a>' in page
        html = client.get(url, {"run": run.pk}).content.decode()
        assert f"from run {run.pk}" in html
        states[dataset] = _timeline_rows(html)[8]["state"]
    assert states == {"CARE-demo": "Settling", TWIN_DATASET: "Acute"}  # the twin's judge coded turn 8 Acute
    assert client.get(reverse("reports-care-timeline", args=[CARE_DEMO_STUDY, HISTORY])).status_code == 404


def test_histories_whose_dataset_names_hold_a_slash_each_have_a_name_a_link_and_a_timeline(client, care, admin_user):
    """``sub/ID`` of the demo's dataset and ``ID`` of the dataset ``CARE-demo/sub``, each id shared with another
    dataset, would both be ``CARE-demo/sub/ID``: the run failed and the timeline was a 500. The dataset's "/" is
    written %2F in a name (metrics.core.history_names), so the run succeeds and each history has its own page."""
    demo_twin_add(care, dataset="CARE-demo/sub")
    demo_twin_add(care, dataset="CARE-demo", conversation=f"sub/{HISTORY}")
    demo_twin_add(care, dataset=TWIN_DATASET, conversation=f"sub/{HISTORY}")
    run, page = _run_and_care_page(client, care, admin_user)
    names = [f"CARE-demo/{HISTORY}", f"CARE-demo%2Fsub/{HISTORY}", f"CARE-demo/sub/{HISTORY}",
             f"{TWIN_DATASET}/sub/{HISTORY}"]
    for name in names:
        url = reverse("reports-care-timeline", args=[CARE_DEMO_STUDY, name])
        assert f'href="{escape(url)}?run={run.pk}">{escape(name)}</a>' in page, name
        answer = client.get(url, {"run": run.pk})
        assert answer.status_code == 200 and f"from run {run.pk}" in answer.content.decode(), name
    assert sorted(run.result["care"]["states"]) == sorted(names)


def test_the_timeline_without_a_run_is_computed_from_the_codes(client, care, admin_user,
                                                                django_assert_num_queries):
    MetricRun.objects.filter(study=care).delete()
    client.force_login(admin_user)
    url = reverse("reports-care-timeline", args=[CARE_DEMO_STUDY, HISTORY])
    with django_assert_num_queries(16):  # session, user, run; the history (its name, 7, its name and texts); the rest
        html = client.get(url).content.decode()
    assert "No stored run has this history" in html
    assert _timeline_rows(html)[8]["state"] == "Settling"
    assert client.get(reverse("reports-care-timeline", args=[CARE_DEMO_STUDY, "no-such-history"])).status_code == 404


@pytest.mark.parametrize("conversation, query", [
    (HISTORY, {"run": "\u00b2"}), (HISTORY, {"run": "0"}), (HISTORY, {"run": str(2**63)}), (HISTORY, {"run": "999999"}),
    ("a\x00b", {}), ("t\ud800", {}), ("x" * (HISTORY_NAME_LENGTH + 1), {})])
def test_the_timeline_refuses_a_bad_run_or_conversation_id_with_a_404_not_a_500(care, admin_user, conversation, query):
    """A run that is no number of one of the study's succeeded runs ("²" is a digit to ``str.isdigit`` but not to
    ``int``), a history's name the database could not hold (a NUL, a lone surrogate, longer than a dataset's name,
    "/" and a conversation id can be): a plain 404 before any query of the history. (The view is called directly:
    a URL cannot carry a lone surrogate, but the view must not count on that.)"""
    from django.http import Http404
    from django.test import RequestFactory

    from care import views

    def timeline(conversation: str, query: dict):
        request = RequestFactory().get("/", query)
        request.user = admin_user
        return views.history_timeline(request, CARE_DEMO_STUDY, conversation)

    assert timeline(HISTORY, {"run": str(MetricRun.objects.get(study=care, status="succeeded").pk)}).status_code == 200
    with pytest.raises(Http404):
        timeline(conversation, query)


def test_the_timeline_answers_a_nul_in_its_url_with_a_404(client, care, admin_user):
    client.force_login(admin_user)
    client.raise_request_exception = False
    url = reverse("reports-care-timeline", args=[CARE_DEMO_STUDY, HISTORY])
    assert client.get(url.replace(HISTORY, "a%00b")).status_code == 404
    assert client.get(url, {"run": "\u00b2"}).status_code == 404


def test_the_validation_table_says_the_papers_figures_beside_the_studys():
    """The CARE paper's judge-against-human agreement (docs/care.md#metrics) in the caption, where the table has
    rows to compare it with."""
    from care.charts import validation_table

    report = {"care": {"validation": {"crisis": {"human|judge": {
        "agreement": 0.8, "kappa": 0.6, "n": 30, "agreement_ci": [0.7, 0.9], "kappa_ci": [0.4, 0.8]}}}}}
    table = validation_table(report, None)
    assert table.rows == [["crisis", "human", "judge", 0.8, 0.7, 0.9, 0.6, 0.4, 0.8, 30, None]]  # no n_histories
    report["care"]["validation"]["crisis"]["human|judge"]["n_histories"] = 12  # a report that counts them
    assert validation_table(report, None).rows[0][-1] == 12
    assert "the CARE paper's judge against humans: crisis 0.825 (κ 0.57), marker direction 0.694 (κ 0.73)" \
        in table.caption
