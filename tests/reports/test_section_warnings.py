"""A section that is empty although the study coded or labelled something for it says so (issue 29): its counts of
what it left out and why are in the report (``care.input``, ``lc8.input``), the report's ``warnings`` name it, the
dashboards show the warning on the overview and on the section's page, and ``metrics_report`` prints it on stderr
beside the JSON. A model slot of the study without a scored response is named too: before, it was silently absent
from the per-model indices.

The studies are built by the README's commands: a CARE study that coded the turns of a conversation without
sessions (no history: nothing for the care section to read), an LC8 study whose reference labelled a session of
a conversation that is not a trajectory (kind ``multi``), and a default study with a dataset of 2 of its 14
conversations (the intervals of that dataset rest on 2 clusters)."""

from __future__ import annotations

import io
import json
import re
import zipfile
from datetime import timedelta
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import connection
from django.test import override_settings
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils.html import escape

from access import roles
from access.services import user_ensure
from annotation import automated_coders, services
from annotation.models import Schema, Study
from care import inputs as care_inputs
from lc8 import inputs as lc8_inputs
from metrics import runs as metric_runs
from metrics import services as metric_services
from metrics.core import recompute
from metrics.models import MetricRun
from metrics.report_warnings import report_warnings
from reports import bundle
from reports.selectors import RUNS_SHOWN

pytestmark = pytest.mark.django_db

CARE_SLUG, LC8_SLUG = "care-flat", "lc8-flat"
CARE_WARNING = ("The CARE section is empty although the study has 3 judgments: none could be used (the study has no "
                "history (a conversation of the study with sessions); 3 judgments on a conversation without sessions "
                "(not a history)).")
MODELS_SLUG = "models-unscored"


def model_warning(name: str) -> str:
    return (f"Model {name} has no scored response: it is missing from the main round's per-model figures (ARI, flags, "
            "attribute risk, fingerprint, their intervals and their splits by dataset and conversation kind) until a "
            "reviewer of the main round scores one of its responses (none coded yet, or none imported).")


LC8_WARNING = ("The LongCounsel-8 section is unavailable although the study has 8 session labels and 0 judgments: "
               "the study has no trajectory (a longitudinal conversation with sessions) yet.")


def _jsonl(path: Path, rows: list[dict]) -> str:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return str(path)


def _run(study: Study) -> None:
    run = metric_services.metric_run_request(study=study, by=None, bootstrap=20, seed=1)
    assert metric_runs.metric_run_execute(run_id=run.pk)


@pytest.fixture(scope="module")
def flat_studies(shared_state, tmp_path_factory):
    folder = tmp_path_factory.mktemp("flat")
    quiet = {"stdout": io.StringIO()}
    with shared_state():
        admin = user_ensure(username="flat-admin", role=roles.ADMIN)
        care = services.study_create(slug=CARE_SLUG, name="CARE without histories",
                                     schema=Schema.objects.get(slug="care-v1"), model_slots=["Assistant"], by=admin)
        call_command("import_conversations", _jsonl(folder / "care.jsonl", [{
            "dataset": "CARE-flat", "conversation_id": "flat-1", "kind": "multi", "topic": "Anxiety",
            "turns": [{"index": 1, "client": "I can't breathe, everything is too much.",
                       "responses": [{"model": "Assistant", "text": "I'm here. Can you tell me where you are?"}]}],
        }]), **quiet)
        code = {"study": CARE_SLUG, "round": "main", "reviewer": "flat-coder", "role": "reviewer", "is_gold": False,
                "dataset": "CARE-flat", "conversation_id": "flat-1", "turn_index": 1, "spans": [],
                "instance_count": None}
        call_command("import_judgments", _jsonl(folder / "care-codes.jsonl", [
            code | {"model": None, "attribute": "crisis", "score": "anxiety"},
            code | {"model": None, "attribute": "marker", "score": "Acute"},
            code | {"model": "Assistant", "attribute": "strategy", "score": "question"},
        ]), "--study", CARE_SLUG, **quiet)
        _run(care)

        lc8 = services.study_create(slug=LC8_SLUG, name="LC8 without trajectories",
                                    schema=Schema.objects.get(slug="lc8-v1"), model_slots=["Counselor"], by=admin)
        automated_coders.reference_register(study=lc8, name="flat-reference", by=admin)
        call_command("import_conversations", _jsonl(folder / "lc8.jsonl", [{
            "dataset": "LC8-flat", "conversation_id": "not-a-trajectory", "kind": "multi", "topic": "Depression",
            "sessions": [{"index": 1, "kind": "chat", "crisis_type": None, "turns": [{
                "index": 1, "client": "I feel low.", "responses": [{"model": "Counselor", "text": "Tell me more."}]}]}],
        }]), **quiet)
        items = lc8.schema.definition["lc8"]["items"]
        call_command("import_session_labels", _jsonl(folder / "lc8-labels.jsonl", [
            {"dataset": "LC8-flat", "conversation_id": "not-a-trajectory", "session_index": 1, "attribute": code,
             "score": 1, "reviewer": "flat-reference", "role": "reference"} for code in items
        ]), "--study", LC8_SLUG, **quiet)
        _run(lc8)
        yield care.pk, lc8.pk


@pytest.fixture(scope="module")
def unscored_models(shared_state, tmp_path_factory):
    """A default study of three model slots: Alpha's response scored in the main round, Beta's response imported but
    not scored, Gamma's none imported."""
    folder = tmp_path_factory.mktemp("models")
    quiet = {"stdout": io.StringIO()}
    with shared_state():
        admin = user_ensure(username="models-admin", role=roles.ADMIN)
        study = services.study_create(slug=MODELS_SLUG, name="A model not coded yet",
                                      schema=Schema.objects.get(slug="cab-v1"), model_slots=["Alpha", "Beta", "Gamma"],
                                      by=admin)
        call_command("import_conversations", _jsonl(folder / "conversations.jsonl", [{
            "dataset": "models", "conversation_id": "one", "kind": "multi", "topic": "Anxiety",
            "turns": [{"index": 1, "client": "My boss shouted at me today.",
                       "responses": [{"model": "Alpha", "text": "That sounds upsetting."},
                                     {"model": "Beta", "text": "What happened next?"}]}],
        }]), **quiet)
        code = {"study": MODELS_SLUG, "round": "main", "reviewer": "models-coder", "role": "reviewer",
                "is_gold": False, "dataset": "models", "conversation_id": "one", "turn_index": 1, "spans": [],
                "instance_count": None}
        call_command("import_judgments", _jsonl(folder / "codes.jsonl", [
            code | {"model": None, "attribute": "U1", "score": 1},
            code | {"model": "Alpha", "attribute": "AUR", "score": 2},
        ]), "--study", MODELS_SLUG, **quiet)
        _run(study)
        yield study.pk


def _report(pk: int) -> dict:
    return MetricRun.objects.get(study_id=pk, status="succeeded").result


def test_the_care_section_counts_what_it_left_out_and_the_report_warns(flat_studies):
    report = _report(flat_studies[0])
    care = report["care"]
    assert care["states"] == {} and care["reference"] == ""
    assert care["input"] == {"histories": 0, "judgments": 3, "used": 0,
                             "dropped": dict.fromkeys(care_inputs.DROPPED, 0) | {"not_a_history": 3},
                             "no_horizon": {}, "stray_horizon": {},
                             "no_checklist": {}}
    assert report["warnings"] == [{"section": "care", "message": CARE_WARNING}]
    assert report_warnings(report) == report["warnings"]  # the stored warnings are those of the stored counts


def test_the_lc8_section_counts_what_it_left_out_and_the_report_warns(flat_studies):
    report = _report(flat_studies[1])
    assert report["lc8"] == {
        "unavailable": "the study has no trajectory (a longitudinal conversation with sessions) yet",
        "input": {"trajectories": 0, "labels": 8, "labels_used": 0,
                  "labels_dropped": dict.fromkeys(lc8_inputs.LABELS_DROPPED, 0) | {"unavailable": 8},
                  "judgments": 0, "used": 0, "dropped": dict.fromkeys(lc8_inputs.JUDGMENTS_DROPPED, 0)}}
    # the main report of an LC8 study reads no session item: empty by design, no warning of its own
    assert report["warnings"] == [{"section": "lc8", "message": LC8_WARNING}]


def _warnings_shown(html: str) -> list[str]:
    import re

    block = re.search(r'<div id="report-warnings">(.*?)</div>', html, re.S)
    # role="alert" on a section's page; the overview's runs table is a live region already
    return re.findall(r'<p class="notice warning"(?: role="alert")?>(.*?)</p>', block.group(1), re.S) if block else []


def test_the_dashboards_show_the_warning_on_the_overview_and_the_sections_page(client, flat_studies, researcher):
    client.force_login(researcher)
    care_run = MetricRun.objects.get(study_id=flat_studies[0], status="succeeded").pk
    overview = client.get(reverse("reports", args=[CARE_SLUG])).content.decode()
    assert _warnings_shown(overview) == [
        f"<strong>Warning</strong> (run {care_run}, the newest report): {escape(CARE_WARNING)}"]
    polled = client.get(reverse("reports-runs", args=[CARE_SLUG])).content.decode()  # the runs table, as polled
    assert _warnings_shown(polled) == _warnings_shown(overview)
    care_page = client.get(reverse("reports-page", args=[CARE_SLUG, "care"])).content.decode()
    assert _warnings_shown(care_page) == [f"<strong>Warning</strong> (run {care_run}): {escape(CARE_WARNING)}"]
    # a page of the main report shows the main report's warnings only (it has none)
    assert _warnings_shown(client.get(reverse("reports-page", args=[CARE_SLUG, "reliability"])).content.decode()) == []

    lc8_run = MetricRun.objects.get(study_id=flat_studies[1], status="succeeded").pk
    overview = client.get(reverse("reports", args=[LC8_SLUG])).content.decode()
    assert _warnings_shown(overview) == [
        f"<strong>Warning</strong> (run {lc8_run}, the newest report): {escape(LC8_WARNING)}"]
    lc8_page = client.get(reverse("reports-lc8", args=[LC8_SLUG])).content.decode()
    assert _warnings_shown(lc8_page) == [f"<strong>Warning</strong> (run {lc8_run}): {escape(LC8_WARNING)}"]


def test_the_overview_warns_of_the_run_the_report_pages_show_however_many_runs_failed_after_it(
        client, flat_studies, researcher):
    """The overview's run line and warnings are those of the run the report pages show (the study's newest succeeded
    run), however many runs failed after it, and it says how many did; its queries do not grow with the runs.
    Before, it looked for that run among the 10 newest runs alone: after 10 failed runs it showed no warning at
    all, while the CARE page still showed the older run and its warning."""
    study_id = flat_studies[0]
    care_run = MetricRun.objects.get(study_id=study_id, status="succeeded")
    client.force_login(researcher)
    url = reverse("reports", args=[CARE_SLUG])
    client.get(url)  # session and roles warmed
    with CaptureQueriesContext(connection) as one_run:
        client.get(url)
    earlier = MetricRun.objects.create(study_id=study_id, status="failed", error="requested before the report")
    MetricRun.objects.filter(pk=earlier.pk).update(created_at=care_run.created_at - timedelta(hours=1))
    failed = RUNS_SHOWN + 2
    for n in range(failed):
        MetricRun.objects.create(study_id=study_id, status="failed", error=f"worker lost ({n})")
    with CaptureQueriesContext(connection) as many_runs:
        overview = client.get(url).content.decode()
    assert len(many_runs) == len(one_run)
    polled = client.get(reverse("reports-runs", args=[CARE_SLUG])).content.decode()  # the runs table, as polled
    care_page = client.get(reverse("reports-page", args=[CARE_SLUG, "care"])).content.decode()
    shown = [f"<strong>Warning</strong> (run {care_run.pk}, the newest report): {escape(CARE_WARNING)}"]
    assert _warnings_shown(overview) == _warnings_shown(polled) == shown
    assert _warnings_shown(care_page) == [f"<strong>Warning</strong> (run {care_run.pk}): {escape(CARE_WARNING)}"]
    for html in (overview, polled, care_page):  # the run line: the same run on the overview and the report page
        assert re.findall(r'<p class="muted small run-line">Run (\d+) ', html) == [str(care_run.pk)]
    said = (f'<p class="notice" id="runs-failed-after">{failed} runs requested after run {care_run.pk} failed: '
            f"the report pages and the warnings here are run {care_run.pk}'s, the newest succeeded run.</p>")
    assert said in overview and said in polled
    # the runs table still lists the newest runs, all of them failed, each with its reason
    assert overview.count('class="status status-failed"') == RUNS_SHOWN
    assert f"worker lost ({failed - 1})" in overview


def test_metrics_report_prints_the_warning_on_stderr(flat_studies):
    for slug, warning in ((CARE_SLUG, CARE_WARNING), (LC8_SLUG, LC8_WARNING)):
        out, err = io.StringIO(), io.StringIO()
        call_command("metrics_report", "--study", slug, "--bootstrap", "20", stdout=out, stderr=err)
        assert err.getvalue() == f"warning: {warning}\n"
        report = json.loads(out.getvalue())  # stdout is the JSON document alone
        assert [w["message"] for w in report["warnings"]] == [warning]


def test_a_main_report_that_uses_none_of_its_judgments_warns():
    report = {"input": {"judgments": 4, "used": 0, "rounds": ["main"],
                        "dropped": {"unknown_attribute": 3, "off_scale": 1, "duplicate": 0, "span_unusable": 2}}}
    assert report_warnings(report) == [{"section": "main", "message": (
        "The main report is empty although the study has 4 judgments: none could be used (3 judgments of an "
        "attribute the main report does not compute over (not in the schema, or a session unit another section "
        "reads); 1 judgment with a score off its attribute's scale).")}]
    assert report_warnings(report | {"input": report["input"] | {"used": 1}}) == []
    assert report_warnings({"input": {"judgments": 0, "used": 0, "dropped": {}}}) == []
    # a part of the report that is no study kind's section does not silence the main report's warning
    assert [w["section"] for w in report_warnings(report | {"extra": {"n": 1}, "this": {}})] == ["main"]
    assert report_warnings(report | {"lc8": {"input": {}}}) == []  # an LC8 study's main report: empty by design
    # a report from before the sections counted what they left out: no warning can be said
    assert report_warnings({"input": {"judgments": 4, "used": 4}, "care": {"states": {}}, "lc8": {"unavailable": "x"}}
                           ) == []


def test_a_calibration_round_whose_reviewers_coded_nothing_with_gold_warns():
    """A calibration round its reviewers coded, with no gold on any item they coded (the admin ran the report before
    recording the round's gold): every reviewer figure of the round is null. Before, nothing said why; the report's
    warnings now name the round."""
    def reviewer(*n_items):
        return {name: {"bucketed": None if n == 0 else 0.5, "n_items": n}
                for name, n in zip(("calibration-1", "calibration-2"), n_items, strict=True)} | {"delta_pp": None}

    report = {"input": {"judgments": 40, "used": 40},
              "calibration": {"rounds": ["calibration-1", "calibration-2"],
                              "reviewers": {"r1": reviewer(5, 0), "r2": reviewer(3, 0)}}}
    assert report_warnings(report) == [{"section": "main", "message": (
        "Calibration round calibration-2: none of the items its reviewers coded has a gold value yet, so its "
        "agreement with gold, ranks and selection stability are empty (record the round's gold on its consensus "
        "screen, then run the report again).")}]
    report["calibration"]["reviewers"]["r2"] = reviewer(3, 1)  # one reviewer with one item against gold: no warning
    assert report_warnings(report) == []
    assert report_warnings({"input": {"judgments": 1, "used": 1}, "calibration": {"rounds": [], "reviewers": {}}}) == []


def test_a_model_slot_without_a_scored_response_is_named_in_the_warnings(unscored_models):
    report = _report(unscored_models)
    assert report["parameters"]["models"] == ["Alpha", "Beta", "Gamma"]
    assert list(report["indices"]["ari"]) == ["Alpha"]
    # beside the main round's few clusters (its one conversation), said apart
    assert [w for w in report["warnings"] if w["message"].startswith("Model ")] == [
        {"section": "main", "message": model_warning(name)} for name in ("Beta", "Gamma")]
    assert report_warnings(report) == report["warnings"]


def test_the_dashboards_and_metrics_report_name_the_model_without_a_scored_response(client, unscored_models,
                                                                                    researcher):
    client.force_login(researcher)
    run = MetricRun.objects.get(study_id=unscored_models, status="succeeded").pk
    overview = client.get(reverse("reports", args=[MODELS_SLUG])).content.decode()
    shown = _warnings_shown(overview)  # beside the main round's few clusters (its one conversation)
    assert [w for w in shown if "Model " in w] == [
        f"<strong>Warning</strong> (run {run}, the newest report): {escape(model_warning(name))}"
        for name in ("Beta", "Gamma")]
    assert len(shown) == 3 and "resample only 1 conversation" in shown[0]
    out, err = io.StringIO(), io.StringIO()
    call_command("metrics_report", "--study", MODELS_SLUG, "--bootstrap", "20", stdout=out, stderr=err)
    assert [line for line in err.getvalue().splitlines() if "Model " in line] == [
        f"warning: {model_warning(name)}" for name in ("Beta", "Gamma")]


def test_the_bundles_recompute_names_the_model_slots_too(unscored_models, tmp_path):
    """The study's model slots travel in the bundle (``run.json``'s parameters), so its recompute warns alike."""
    run = MetricRun.objects.get(study_id=unscored_models, status="succeeded")
    with override_settings(BUNDLE_DIR=str(tmp_path)):
        path = bundle.bundle_file(run=run).path
    assert recompute.main([str(path), "-o", str(tmp_path / "again.json")]) == 0
    again = json.loads((tmp_path / "again.json").read_text(encoding="utf-8"))
    assert [w["message"] for w in again["warnings"] if w["message"].startswith("Model ")] == [
        model_warning(name) for name in ("Beta", "Gamma")]
    assert again["warnings"] == run.result["warnings"]


def test_a_model_slot_warns_only_beside_a_model_with_scores():
    """A report whose per-model indices hold no model (no main round yet, or an LC8 study's main report) says nothing
    of each slot; a slot the indices hold, or a report without ``parameters.models`` (an older one), says nothing."""
    report = {"input": {"judgments": 2, "used": 2}, "parameters": {"models": ["A", "B"]},
              "indices": {"ari": {"A": {"ARI": 0.5, "n_responses": 1}}}}
    assert report_warnings(report) == [{"section": "main", "message": model_warning("B")}]
    assert report_warnings(report | {"indices": {"ari": {}}}) == []
    assert report_warnings(report | {"parameters": {}}) == []
    assert report_warnings(report | {"parameters": {"models": ["A"]}}) == []


FEW_SLUG = "few-calibration-turns"


@pytest.fixture(scope="module")
def few_calibration_turns(shared_state):
    """A synthetic study of two calibration rounds of 3 single-turn conversations each: both rounds' bootstraps
    resample 3 clusters (10 distinct resamples)."""
    with shared_state():
        call_command("generate_synthetic", "--conversations", "20", "--models", "2", "--reviewers", "3",
                     "--calibration-rounds", "2", "--calibration-turns", "3", "--multi-share", "0", "--seed", "3",
                     "--slug", FEW_SLUG, stdout=io.StringIO())
        study = Study.objects.get(slug=FEW_SLUG)
        _run(study)
        yield study.pk


def few_clusters_said(name: str, figures: str) -> str:
    return (f"Calibration round {name}: its bootstrap resamples only 3 clusters (the turns of its items, a "
            f"conversation-level item one of its own), which give 10 distinct resamples: {figures} say next to "
            "nothing (with fewer than 10 clusters an interval covers well below its level; a round needs more items "
            "for them to be read).")


FEW_WARNINGS = [few_clusters_said("calibration-1", "its agreement intervals"),
                few_clusters_said("calibration-2", "its agreement intervals and the top-k shares of selection "
                                                   "stability")]


def test_every_calibration_rounds_few_clusters_are_said_on_the_pages_the_command_and_the_bundle(
        client, few_calibration_turns, researcher, tmp_path):
    """An earlier calibration round's intervals rest on its own bootstrap, which the Reliability page draws when the
    round is chosen; before, the warnings named the last round's few clusters alone."""
    run = MetricRun.objects.get(study_id=few_calibration_turns, status="succeeded")
    assert run.result["calibration"]["bootstrap"]["n_turns_by_round"] == {"calibration-1": 3, "calibration-2": 3}
    stored = [w["message"] for w in run.result["warnings"] if w["message"].startswith("Calibration round")]
    assert stored == FEW_WARNINGS
    client.force_login(researcher)
    page = client.get(reverse("reports-page", args=[FEW_SLUG, "reliability"]) + "?round=calibration-1")
    shown = _warnings_shown(page.content.decode())
    assert [w for w in shown if "Calibration round" in w] == [
        f"<strong>Warning</strong> (run {run.pk}): {escape(message)}" for message in FEW_WARNINGS]
    out, err = io.StringIO(), io.StringIO()
    call_command("metrics_report", "--study", FEW_SLUG, "--bootstrap", "20", "--seed", "1", stdout=out, stderr=err)
    assert [line for line in err.getvalue().splitlines() if "Calibration round" in line] == [
        f"warning: {message}" for message in FEW_WARNINGS]
    with override_settings(BUNDLE_DIR=str(tmp_path)):
        path = bundle.bundle_file(run=run).path
    with zipfile.ZipFile(path) as archive:
        html = archive.read("report.html").decode()
        shipped = json.loads(archive.read("report.json"))
    assert all(escape(message) in html for message in FEW_WARNINGS)
    assert shipped["calibration"]["bootstrap"]["n_turns_by_round"] == {"calibration-1": 3, "calibration-2": 3}
    assert recompute.main([str(path), "-o", str(tmp_path / "again.json")]) == 0
    again = json.loads((tmp_path / "again.json").read_text(encoding="utf-8"))
    assert again["warnings"] == run.result["warnings"]


SPLIT_SLUG = "few-in-a-dataset"
# dataset -> its conversations: 12 in one, 2 in the other, one response each, every one scored in the main round
SPLIT_DATASETS = {"split-big": [f"big-{n}" for n in range(12)], "split-small": ["small-0", "small-1"]}


@pytest.fixture(scope="module")
def few_in_a_dataset(shared_state, tmp_path_factory):
    """A default study of 14 single-turn conversations, all scored in the main round: the main round's intervals
    resample 14 conversations, but those of dataset split-small only its 2."""
    folder = tmp_path_factory.mktemp("split")
    quiet = {"stdout": io.StringIO()}
    with shared_state():
        admin = user_ensure(username="split-admin", role=roles.ADMIN)
        study = services.study_create(slug=SPLIT_SLUG, name="A dataset of two conversations",
                                      schema=Schema.objects.get(slug="cab-v1"), model_slots=["Alpha"], by=admin)
        call_command("import_conversations", _jsonl(folder / "conversations.jsonl", [{
            "dataset": dataset, "conversation_id": name, "kind": "single", "topic": "Anxiety", "complexity": "low",
            "turns": [{"index": 1, "client": f"I worry about {name}.",
                       "responses": [{"model": "Alpha", "text": "What worries you most?"}]}],
        } for dataset, names in SPLIT_DATASETS.items() for name in names]), **quiet)
        code = {"study": SPLIT_SLUG, "round": "main", "reviewer": "split-coder", "role": "reviewer",
                "is_gold": False, "turn_index": 1, "spans": [], "instance_count": None, "model": "Alpha",
                "attribute": "AUR"}
        call_command("import_judgments", _jsonl(folder / "codes.jsonl", [
            code | {"dataset": dataset, "conversation_id": name, "score": n % 3}
            for dataset, names in SPLIT_DATASETS.items() for n, name in enumerate(names)
        ]), "--study", SPLIT_SLUG, **quiet)
        _run(study)
        yield study.pk


def test_a_dataset_with_few_conversations_is_named_in_the_run_the_overview_and_the_bundle(
        client, few_in_a_dataset, researcher, tmp_path):
    """The main round's intervals over 14 conversations are not warned of, but dataset split-small's, drawn from the
    same resamples restricted to its responses, rest on its 2 (docs/metrics.md#bootstrap-selection-stability):
    before, the warnings read the study's count alone. The one warning reaches the stored run, the overview, the
    bundle's printable report and its recompute."""
    total, small = sum(map(len, SPLIT_DATASETS.values())), len(SPLIT_DATASETS["split-small"])
    message = (f"The main round's intervals over dataset split-small rest on only {small} conversations of the "
               f"study's {total} (each resample restricted to their responses): the intervals of their per-model "
               "figures (ari_ci, the Atrophy risk page filtered to them) say next to nothing (with fewer than 10 "
               "clusters an interval covers well below its level).")
    run = MetricRun.objects.get(study_id=few_in_a_dataset, status="succeeded")
    indices = run.result["indices"]
    assert (indices["ci"]["n_clusters"], indices["by_dataset"]["split-small"]["n_clusters"]) == (total, small)
    assert run.result["warnings"] == [{"section": "main", "message": message}]
    client.force_login(researcher)
    overview = client.get(reverse("reports", args=[SPLIT_SLUG])).content.decode()
    assert _warnings_shown(overview) == [
        f"<strong>Warning</strong> (run {run.pk}, the newest report): {escape(message)}"]
    risk = client.get(reverse("reports-page", args=[SPLIT_SLUG, "risk"]), {"dataset": "split-small"}).content.decode()
    assert _warnings_shown(risk) == [f"<strong>Warning</strong> (run {run.pk}): {escape(message)}"]
    assert escape(f"({small} conversations of the study's {total})") in risk  # the table's caption
    with override_settings(BUNDLE_DIR=str(tmp_path)):
        path = bundle.bundle_file(run=run).path
    with zipfile.ZipFile(path) as archive:
        assert escape(message) in archive.read("report.html").decode()
    assert recompute.main([str(path), "-o", str(tmp_path / "again.json")]) == 0
    again = json.loads((tmp_path / "again.json").read_text(encoding="utf-8"))
    assert again["warnings"] == run.result["warnings"]


FEW_MODEL_SLUG = "few-for-a-model"
# 12 single-turn conversations, each with a response of Alpha and of Beta: Alpha's scored in all 12, Beta's in 2
FEW_MODEL_CONVERSATIONS = [f"model-{n}" for n in range(12)]
FEW_MODEL_MESSAGE = ("The main round's intervals of model Beta (2 conversations) rest on fewer than 10 of the "
                     "study's 12 conversations (those holding a response of the model a reviewer scored; the others "
                     "add nothing to the model's figures in a resample): its per-model intervals (ari_ci, the Atrophy "
                     "risk page) say next to nothing (with fewer than 10 clusters an interval covers well below its "
                     "level; a model needs responses scored in more conversations for its intervals to be read).")


@pytest.fixture(scope="module")
def few_for_a_model(shared_state, tmp_path_factory):
    """A default study whose main round resamples 12 conversations, but whose model Beta was scored in 2 of them."""
    folder = tmp_path_factory.mktemp("model")
    quiet = {"stdout": io.StringIO()}
    with shared_state():
        admin = user_ensure(username="model-admin", role=roles.ADMIN)
        study = services.study_create(slug=FEW_MODEL_SLUG, name="A model on two conversations",
                                      schema=Schema.objects.get(slug="cab-v1"), model_slots=["Alpha", "Beta"],
                                      by=admin)
        call_command("import_conversations", _jsonl(folder / "conversations.jsonl", [{
            "dataset": "model-set", "conversation_id": name, "kind": "single", "topic": "Anxiety",
            "complexity": "low", "turns": [{"index": 1, "client": f"I worry about {name}.", "responses": [
                {"model": "Alpha", "text": "What worries you most?"}, {"model": "Beta", "text": "Tell me more."}]}],
        } for name in FEW_MODEL_CONVERSATIONS]), **quiet)
        code = {"study": FEW_MODEL_SLUG, "round": "main", "reviewer": "model-coder", "role": "reviewer",
                "is_gold": False, "turn_index": 1, "spans": [], "instance_count": None, "attribute": "AUR",
                "dataset": "model-set"}
        call_command("import_judgments", _jsonl(folder / "codes.jsonl", [
            code | {"conversation_id": name, "model": model, "score": n % 3}
            for model, names in (("Alpha", FEW_MODEL_CONVERSATIONS), ("Beta", FEW_MODEL_CONVERSATIONS[:2]))
            for n, name in enumerate(names)
        ]), "--study", FEW_MODEL_SLUG, **quiet)
        _run(study)
        yield study.pk


def test_a_model_scored_in_few_conversations_is_named_in_the_run_the_pages_and_the_bundle(
        client, few_for_a_model, researcher, tmp_path):
    """The main round's intervals over 12 conversations are not warned of, but Beta's rest on the 2 that hold a
    response of it scored (docs/metrics.md#bootstrap-selection-stability): before, nothing said so. The warning
    reaches the stored run, the overview and the Atrophy risk page, whose table gives each model's count, and the
    bundle's printable report and its recompute."""
    run = MetricRun.objects.get(study_id=few_for_a_model, status="succeeded")
    ci = run.result["indices"]["ci"]
    assert (ci["n_clusters"], ci["n_clusters_by_model"]) == (12, {"Alpha": 12, "Beta": 2})
    assert run.result["warnings"] == [{"section": "main", "message": FEW_MODEL_MESSAGE}]
    client.force_login(researcher)
    overview = client.get(reverse("reports", args=[FEW_MODEL_SLUG])).content.decode()
    assert _warnings_shown(overview) == [
        f"<strong>Warning</strong> (run {run.pk}, the newest report): {escape(FEW_MODEL_MESSAGE)}"]
    risk = client.get(reverse("reports-page", args=[FEW_MODEL_SLUG, "risk"])).content.decode()
    assert _warnings_shown(risk) == [f"<strong>Warning</strong> (run {run.pk}): {escape(FEW_MODEL_MESSAGE)}"]
    assert "Clusters behind the intervals" in risk
    rows = re.findall(r"<tr><td>(Alpha|Beta)</td>.*?</tr>", risk.split('id="ari-table"')[1], re.S)
    assert rows == ["Alpha", "Beta"]
    beta = re.search(r"<tr><td>Beta</td>(.*?)</tr>", risk.split('id="ari-table"')[1], re.S).group(1)
    assert re.findall(r"<td>(.*?)</td>", beta, re.S)[-2:] == ["2", "2"]  # its responses, its clusters
    with override_settings(BUNDLE_DIR=str(tmp_path)):
        path = bundle.bundle_file(run=run).path
    with zipfile.ZipFile(path) as archive:
        assert escape(FEW_MODEL_MESSAGE) in archive.read("report.html").decode()
    assert recompute.main([str(path), "-o", str(tmp_path / "again.json")]) == 0
    again = json.loads((tmp_path / "again.json").read_text(encoding="utf-8"))
    assert again["warnings"] == run.result["warnings"]
    assert again["indices"]["ci"]["n_clusters_by_model"] == ci["n_clusters_by_model"]
