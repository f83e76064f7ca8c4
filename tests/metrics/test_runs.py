"""Metric runs (metrics/runs.py) and the ``metrics_report`` command: the report has every key of
docs/metrics.md#report-keys, is the same for the same seed and after an export → import; a run is computed once, a
redelivery is a no-op."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command

from annotation.models import Study
from metrics import runs, services
from tests import scenarios
from tests.factories import JudgmentFactory, RoundFactory, StudyFactory

REPORT_REVIEWER_ROUND_KEYS = {"exact", "bucketed", "by_group", "kappa_user", "kappa_response", "kappa_flags", "bias",
                              "n_items"}


def report_of(slug: str, *extra: str) -> dict:
    out = io.StringIO()
    call_command("metrics_report", "--study", slug, *extra, stdout=out)
    return json.loads(out.getvalue())


def assert_spec_keys(report: dict, *, models: list[str]) -> None:
    calibration, indices = report["calibration"], report["indices"]
    assert calibration["reviewers"], "no reviewer in the calibration section"
    for reviewer, rounds in calibration["reviewers"].items():
        assert "delta_pp" in rounds, reviewer
        for name, entry in rounds.items():
            if name == "delta_pp":
                continue
            assert set(entry) >= REPORT_REVIEWER_ROUND_KEYS, (reviewer, name)
            assert set(entry["by_group"]) >= {"user", "response", "flag"}
    for name in calibration["pairwise"]:
        assert all(a < b for a, b in (pair.split("|") for pair in calibration["pairwise"][name]))
        assert set(calibration["pairwise_mean"][name]) == {"exact", "bucketed"}
        assert name in calibration["gold_in_plurality"]
    bootstrap = calibration["bootstrap"]
    assert {"resamples", "seed", "top_k"} <= set(bootstrap) and set(bootstrap["top_k"]) == {"4", "5", "6"}
    uiri = indices["uiri"]
    assert {"mean", "bands", "by_dataset"} <= set(uiri) and set(uiri["bands"]) == {"low", "medium", "high"}
    for model in models:
        assert set(indices["flags"][model]) == {"F1", "F2", "F3", "F4", "F5"}
        assert {"D", "E", "R", "F", "ARI", "n_responses"} <= set(indices["ari"][model])
        risk_codes = {"AUR", "TD", "FIX", "REC", "EMP", "LMT", "ME", "TN", "QOC", "SEN", "F1", "F2", "F3", "F4", "F5"}
        assert set(indices["attribute_risk"][model]) == risk_codes
        assert set(indices["fingerprint"][model]) == risk_codes


@pytest.mark.django_db
def test_synthetic_study_report_has_every_spec_key_and_plausible_values():
    call_command("generate_synthetic", "--conversations", "30", "--reviewers", "7", "--seed", "2",
                 "--calibration-turns", "4", "--slug", "syn", "--agreement", "0.85")
    report = report_of("syn", "--bootstrap", "200", "--seed", "7")
    assert_spec_keys(report, models=["GPT", "Claude", "Gemini", "Llama", "Qwen"])
    assert report["calibration"]["bootstrap"] == report["calibration"]["bootstrap"] | {"resamples": 200, "seed": 7}
    reviewers = report["calibration"]["reviewers"]
    assert sorted(reviewers) == [f"syn-r{i:02d}" for i in range(1, 8)], "the 2 experts are not reviewers"
    assert sorted(report["calibration"]["experts"]["calibration-1"]["experts"]) == ["syn-e1", "syn-e2"]
    assert all(0.5 < entry["calibration-2"]["bucketed"] <= 1 for entry in reviewers.values())
    ari = [m["ARI"] for m in report["indices"]["ari"].values()]
    assert all(0 <= value <= 1 for value in ari)
    # The same seed gives the same report; NaN never appears.
    assert report_of("syn", "--bootstrap", "200", "--seed", "7") == report


@pytest.mark.django_db
def test_demo_study_report_has_every_spec_key():
    """The demo leaves the main round to its admin: the report of the study taken through the README's walk-through
    has every key, indices included."""
    scenarios.demo_walked_through()
    report = report_of("demo", "--bootstrap", "50")
    assert_spec_keys(report, models=["GPT", "Claude", "Gemini", "Llama", "Qwen"])
    assert set(report["calibration"]["reviewers"]) == {"demo-panel-1", "demo-panel-2", "demo-panel-3"}
    assert report["calibration"]["reviewers"]["demo-panel-1"]["calibration-1"]["n_items"] == 2 * 80


@pytest.mark.django_db
def test_a_study_without_judgments_has_every_section_present_and_empty():
    StudyFactory(slug="empty")
    empty = report_of("empty", "--bootstrap", "50")
    assert empty["calibration"]["reviewers"] == {} and empty["indices"]["ari"] == {}


@pytest.mark.django_db
def test_export_then_import_gives_the_same_report(tmp_path):
    call_command("generate_synthetic", "--conversations", "16", "--reviewers", "4", "--seed", "8",
                 "--calibration-turns", "3", "--slug", "origin", "--panel-size", "4")
    out = io.StringIO()
    call_command("export_judgments", "--study", "origin", "--format", "jsonl", stdout=out)
    rows = [json.loads(line) | {"study": "copy"} for line in out.getvalue().splitlines()]
    path = tmp_path / "export.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    call_command("import_judgments", str(path), "--study", "copy", "--create-study")
    original = report_of("origin", "--bootstrap", "100")
    copy = report_of("copy", "--bootstrap", "100")
    original.pop("study"), copy.pop("study")
    # The retained panel is study set-up, not judgment data: the copy's indices use every main-round coder.
    original["parameters"].pop("panel"), copy["parameters"].pop("panel")
    assert copy["calibration"] == original["calibration"]
    assert copy["indices"] == original["indices"]


@pytest.mark.django_db
def test_metrics_report_refuses_bad_arguments():
    with pytest.raises(CommandError, match="no study with slug 'nope'"):
        call_command("metrics_report", "--study", "nope")
    StudyFactory(slug="s")
    with pytest.raises(CommandError, match="--bootstrap must be a whole number from 1 to 100000"):
        call_command("metrics_report", "--study", "s", "--bootstrap", "0")


@pytest.mark.django_db
def test_run_is_computed_once_and_a_redelivery_is_a_no_op(admin_user):
    call_command("generate_synthetic", "--conversations", "6", "--reviewers", "3", "--seed", "1",
                 "--calibration-turns", "2", "--slug", "eager")
    study = Study.objects.get(slug="eager")
    run = services.metric_run_request(study=study, by=admin_user, bootstrap=20)
    assert run.status == "queued"
    assert runs.metric_run_execute(run_id=run.pk) is True
    run.refresh_from_db()
    assert run.status == "succeeded" and run.progress == 1.0 and run.result["calibration"]["reviewers"]
    finished_at = run.finished_at
    assert runs.metric_run_execute(run_id=run.pk) is False, "a finished run is never computed twice"
    run.refresh_from_db()
    assert run.finished_at == finished_at and run.attempts == 1


def test_the_command_prints_the_report_as_the_download_writes_it(admin_user):
    """``metrics_report`` and a run's ``report.json`` are the same document (docs/metrics.md): the same keys in the
    same order at every level, the same values, numbers written alike (before, the command sorted the keys)."""
    from metrics.apis import report_download

    call_command("generate_synthetic", "--conversations", "6", "--reviewers", "3", "--seed", "1",
                 "--calibration-turns", "2", "--slug", "same-doc")
    study = Study.objects.get(slug="same-doc")
    run = services.metric_run_request(study=study, by=admin_user, bootstrap=20)
    runs.metric_run_execute(run_id=run.pk)
    run.refresh_from_db()
    out = io.StringIO()
    call_command("metrics_report", "--study", "same-doc", "--bootstrap", "20", "--indent", "1", stdout=out)
    printed = json.loads(out.getvalue(), object_pairs_hook=list)
    downloaded = json.loads(report_download(study, run).content, object_pairs_hook=list)
    assert downloaded[0][0] == "run"
    assert _without_times(printed) == _without_times(downloaded[1:])


def _without_times(pairs):
    """The document as nested (key, value) lists, the software's commit and the computing times left out (they
    differ between two computations of the same report)."""
    if isinstance(pairs, list) and all(isinstance(p, tuple) and len(p) == 2 for p in pairs):
        return [(k, _without_times(v)) for k, v in pairs if k not in ("seconds", "timings", "computed_at")]
    if isinstance(pairs, list):
        return [_without_times(v) for v in pairs]
    return pairs


# --- never stuck: heartbeats, take-over, recovery --------------------------------------------------------------


def _stalled(run, *, attempts: int = 1, beat_seconds_ago: float = 3600) -> None:
    """The run as a worker that died mid-computation leaves it: running, its last heartbeat long ago."""
    from datetime import timedelta

    from django.utils import timezone

    from metrics.models import MetricRun

    MetricRun.objects.filter(pk=run.pk).update(
        status="running", attempts=attempts, started_at=timezone.now() - timedelta(seconds=beat_seconds_ago),
        heartbeat_at=timezone.now() - timedelta(seconds=beat_seconds_ago))


@pytest.mark.django_db
def test_a_run_a_live_worker_holds_is_not_taken_but_a_silent_one_is(admin_user):
    call_command("generate_synthetic", "--conversations", "6", "--reviewers", "3", "--seed", "1",
                 "--calibration-turns", "2", "--slug", "beats")
    run = services.metric_run_request(study=Study.objects.get(slug="beats"), by=admin_user, bootstrap=20)
    _stalled(run, beat_seconds_ago=1)
    assert runs.metric_run_execute(run_id=run.pk) is False, "its worker beat a second ago: a duplicate delivery"
    _stalled(run, beat_seconds_ago=3600)
    assert runs.metric_run_execute(run_id=run.pk) is True
    run.refresh_from_db()
    assert run.status == "succeeded" and run.attempts == 2


@pytest.mark.django_db
def test_recovery_sends_silent_and_unsent_runs_again_and_fails_one_that_keeps_killing_workers(admin_user):
    from django.conf import settings

    from metrics.models import MetricRun
    from metrics.tasks import metric_runs_recover

    study = StudyFactory()
    silent, unsent, doomed, alive = (services.metric_run_request(study=study, by=admin_user, bootstrap=5)
                                     for _ in range(4))
    _stalled(silent)
    _stalled(doomed, attempts=settings.METRIC_RUN_MAX_ATTEMPTS)
    _stalled(alive, beat_seconds_ago=1)
    assert metric_runs_recover() == {"failed": 1, "taken_over": 1, "sent": 2, "resent": 0}
    states = {r.pk: r for r in MetricRun.objects.all()}
    assert states[silent.pk].status == "queued" and states[silent.pk].enqueued_at is not None
    assert states[silent.pk].resent_at is not None, "a run taken over from a stopped worker says it was sent again"
    assert states[unsent.pk].status == "queued" and states[unsent.pk].enqueued_at is not None
    assert states[unsent.pk].resent_at is None, "a first send after a broker outage is no second delivery"
    assert states[doomed.pk].status == "failed" and "stopped 3 times" in states[doomed.pk].error
    assert states[alive.pk].status == "running"
    assert metric_runs_recover() == {"failed": 0, "taken_over": 0, "sent": 0, "resent": 0}, "nothing is sent twice"


@pytest.mark.django_db
def test_judgments_without_a_score_are_counted_as_read_and_left_out():
    study = StudyFactory(slug="unscored")
    round_ = RoundFactory(study=study)
    JudgmentFactory(round=round_, score=2)
    JudgmentFactory(round=round_, score=None)  # a span highlighted before its score
    JudgmentFactory(round=round_, score=None)
    counted = report_of("unscored", "--bootstrap", "20")["input"]
    assert counted["dropped"]["unscored"] == 2
    assert counted["judgments"] == 3 and counted["used"] == 1
    spans_apart = {reason: n for reason, n in counted["dropped"].items() if reason != "span_unusable"}
    assert counted["judgments"] == counted["used"] + sum(spans_apart.values())


@pytest.mark.django_db
def test_a_queued_run_no_worker_took_within_the_deadline_is_sent_again_and_says_so(admin_user, settings):
    """Its broker message lost (Redis restarted empty): the run row's deadline, not the message, brings it back."""
    from datetime import timedelta

    from django.utils import timezone

    from metrics.models import MetricRun
    from metrics.tasks import metric_runs_recover

    study = StudyFactory()
    lost, fresh = (services.metric_run_request(study=study, by=admin_user, bootstrap=5) for _ in range(2))
    sent_at = timezone.now() - timedelta(seconds=settings.METRIC_RUN_RESEND_SECONDS + 5)
    MetricRun.objects.filter(pk=lost.pk).update(enqueued_at=sent_at)
    MetricRun.objects.filter(pk=fresh.pk).update(enqueued_at=timezone.now())
    assert metric_runs_recover() == {"failed": 0, "taken_over": 0, "sent": 0, "resent": 1}
    lost.refresh_from_db()
    fresh.refresh_from_db()
    assert lost.status == "queued" and lost.enqueued_at > sent_at
    assert lost.progress_message.startswith("sent again at ") and "message may be lost" in lost.progress_message
    assert lost.resent_at is not None and lost.resent_at >= lost.enqueued_at
    assert fresh.progress_message != lost.progress_message  # waiting within its deadline: left alone
    assert fresh.resent_at is None
    assert metric_runs_recover()["resent"] == 0, "sent again once per deadline, not on every round"


def _cab_document(**indices) -> dict:
    from annotation.schema_document import builtin_path

    document = json.loads(builtin_path("cab-v1").read_text(encoding="utf-8"))
    return document | {"slug": "cab-bands", "indices": document["indices"] | indices}


@pytest.mark.django_db
def test_the_uiri_bands_are_the_schemas():
    """A schema's ``indices.uiri.bands`` set the report's UIRI bands (docs/metrics.md#uiri): before, they were read
    from nowhere, and every report banded at 0.30 and 0.60 whatever the study's schema said."""
    from annotation.services import schema_install
    from tests.factories import TurnFactory, UserFactory, attribute

    bands = [{"code": "low", "below": 0.2}, {"code": "medium", "below": 0.4}, {"code": "high", "below": None}]
    schema = schema_install(document=_cab_document(uiri=_cab_document()["indices"]["uiri"] | {"bands": bands}))
    study = StudyFactory(slug="bands", schema=schema)
    main = RoundFactory(study=study, kind="main", number=1)
    turn, coder = TurnFactory(), UserFactory()
    # UIRI = (1/2 + 1/2 + 0/1 + 1/1 + 1/2) / 5 = 0.5: Medium by the default bands, High by the schema's
    for code, score in {"U1": 1, "U2": 1, "U3": 0, "U4": 1, "U5": 1}.items():
        JudgmentFactory(round=main, coder=coder, attribute=attribute(code, "cab-bands"), response=None, turn=turn,
                        score=score)
    uiri = report_of("bands", "--bootstrap", "10")["indices"]["uiri"]
    assert uiri["mean"] == pytest.approx(0.5)
    assert uiri["thresholds"] == {"medium": 0.2, "high": 0.4}
    assert uiri["bands"] == {"low": 0.0, "medium": 0.0, "high": 1.0}


@pytest.mark.django_db
@pytest.mark.parametrize(("indices", "trend"), [
    (None, "escalating"),  # the default flat slope, 0.005: a slope of 0.1 per turn rises
    ({"trajectories": {"flat_slope": 0.1}}, "flat"),  # |0.1| <= 0.1
])
def test_the_trajectories_flat_slope_is_the_schemas(indices, trend):
    """A schema's ``indices.trajectories.flat_slope`` classes the trajectories
    (docs/metrics.md#multi-turn-trajectories): before, every report used 0.005 whatever the study's schema said.
    ``rising``'s UIRI goes from 0.2 to 0.3 (``scenarios.thresholds_study``)."""
    scenarios.thresholds_study(slug="trend", indices=indices)
    report = report_of("trend", "--bootstrap", "10")
    threshold = indices["trajectories"]["flat_slope"] if indices else 0.005
    trajectories = report["indices"]["trajectories"]
    assert trajectories["uiri_conversations"]["trend"]["rising"] == {
        "uiri": {"1": pytest.approx(0.2), "2": pytest.approx(0.3)}, "slope": pytest.approx(0.1), "class": trend}
    assert trajectories["threshold"] == report["parameters"]["slope_flat_threshold"] == threshold


@pytest.mark.django_db
@pytest.mark.parametrize(("coupling", "significant"), [
    (None, False),  # the defaults: |rho| 0.5 >= 0.20 but q 2/3 is not below 0.05
    ({"min_abs_rho": 0.4, "max_q": 0.7}, True),  # 0.5 >= 0.4 and 2/3 < 0.7
    ({"min_abs_rho": 0.6, "max_q": 0.7}, False),  # 0.5 < 0.6
])
def test_the_couplings_thresholds_are_the_schemas(coupling, significant):
    """A schema's ``indices.coupling.min_abs_rho`` and ``max_q`` decide which coupling cells are significant
    (docs/metrics.md#input-response-coupling): before, every report used 0.20 and 0.05. Alpha's one defined cell,
    (U1, AUR), has rho 0.5 and q 2/3 (``scenarios.thresholds_study``)."""
    scenarios.thresholds_study(slug="coupled", indices=None if coupling is None else {"coupling": coupling})
    report = report_of("coupled", "--bootstrap", "10")
    given = coupling or {"min_abs_rho": 0.2, "max_q": 0.05}
    cell = report["indices"]["coupling"]["raw"]["Alpha"]["U1"]["AUR"]
    assert cell == {"rho": pytest.approx(0.5), "p": pytest.approx(2 / 3), "q": pytest.approx(2 / 3),
                    "significant": significant, "n": 3}
    assert [one for row in report["indices"]["coupling"]["raw"]["Alpha"].values() for one in row.values()
            if one["rho"] is not None] == [cell], "the only defined cell: its q is its p"
    parameters = report["parameters"]
    assert {key: report["indices"]["coupling"][key] for key in given} == given
    assert (parameters["coupling_min_abs_rho"], parameters["coupling_max_q"]) == (given["min_abs_rho"],
                                                                                  given["max_q"])
