"""The Django side of the metrics engine: loading judgments, the report command, metric runs in a worker."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command

from annotation.models import Judgment
from metrics import runs, services
from metrics.models import MetricRun
from tests.celery_worker import celery_worker, wait_for
from tests.factories import StudyFactory

SPEC_REVIEWER_ROUND_KEYS = {"exact", "bucketed", "by_group", "kappa_user", "kappa_response", "kappa_flags", "bias",
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
            assert set(entry) >= SPEC_REVIEWER_ROUND_KEYS, (reviewer, name)
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
    assert len(reviewers) == 7 + 2, "7 reviewers and 2 experts code the calibration rounds"
    assert all(0.5 < entry["calibration-2"]["bucketed"] <= 1 for entry in reviewers.values())
    ari = [m["ARI"] for m in report["indices"]["ari"].values()]
    assert all(0 <= value <= 1 for value in ari)
    # The same seed gives the same report; NaN never appears.
    assert report_of("syn", "--bootstrap", "200", "--seed", "7") == report


@pytest.mark.django_db
def test_demo_study_report_has_every_spec_key():
    call_command("load_demo", "--quiet")
    report = report_of("demo", "--bootstrap", "50")
    assert_spec_keys(report, models=["GPT", "Claude", "Gemini", "Llama", "Qwen"])
    assert set(report["calibration"]["reviewers"]) == {"demo-panel-1", "demo-panel-2", "demo-panel-3"}
    assert report["calibration"]["reviewers"]["demo-panel-1"]["calibration-1"]["n_items"] == 4 * 80
    # A study without judgments: sections present and empty, never missing.
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
    call_command("import_judgments", str(path), "--study", "copy")
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
    from annotation.models import Study

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


@pytest.mark.django_db
def test_request_refuses_bad_parameters(admin_user):
    from django.core.exceptions import ValidationError

    with pytest.raises(ValidationError, match="must be a whole number from 1 to 100000"):
        services.metric_run_request(study=StudyFactory(), by=admin_user, bootstrap=0)
    assert not MetricRun.objects.exists()


@pytest.mark.worker
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_worker_process_computes_a_requested_run(admin_user):
    call_command("generate_synthetic", "--conversations", "10", "--reviewers", "4", "--seed", "3",
                 "--calibration-turns", "2", "--slug", "worker-study")
    from annotation.models import Study

    study = Study.objects.get(slug="worker-study")
    with celery_worker():
        run = services.metric_run_request(study=study, by=admin_user, trigger="api", bootstrap=50)
        wait_for(lambda: MetricRun.objects.get(pk=run.pk).status in {"succeeded", "failed"}, timeout=120)
    run.refresh_from_db()
    assert run.status == "succeeded", run.error
    assert run.attempts == 1 and run.started_at and run.finished_at
    inline = runs.report_build(study=study, bootstrap=50)
    assert run.result == json.loads(json.dumps(inline))
    assert Judgment.objects.filter(round__study=study).count() > 0


@pytest.mark.django_db
def test_closing_a_round_locks_judgments_and_requests_a_run(admin_user, reviewer, django_capture_on_commit_callbacks):
    from django.core.exceptions import ValidationError

    from annotation import services as annotation_services
    from calibration import services as calibration_services
    from tests.factories import ModelResponseFactory, RoundFactory, attribute

    round_ = RoundFactory(study=StudyFactory(status="open"))
    response = ModelResponseFactory()
    annotation_services.judgment_save(round=round_, by=reviewer, attribute=attribute("AUR"), response=response,
                                      score=1)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        calibration_services.round_close(round=round_, by=admin_user)
    run = MetricRun.objects.get(study=round_.study)
    assert run.trigger == "round-closed" and run.status == "queued" and len(callbacks) == 1
    round_.refresh_from_db()
    with pytest.raises(ValidationError, match="calibration-1 is closed: judgments can no longer change"):
        annotation_services.judgment_save(round=round_, by=reviewer, attribute=attribute("AUR"), response=response,
                                          score=2)
    assert Judgment.objects.get(coder=reviewer).score == 1


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_an_unreachable_broker_fails_the_run_visibly_and_never_runs_it_inline(admin_user):
    """A real process whose broker address has nothing listening (port 1) requests a run."""
    import os
    import subprocess
    import sys

    from django.conf import settings

    from tests.celery_worker import _database_url

    study = StudyFactory()
    code = ("from annotation.models import Study; from metrics import services; "
            f"services.metric_run_request(study=Study.objects.get(pk={study.pk}), by=None, bootstrap=10)")
    env = dict(os.environ, DATABASE_URL=_database_url(), REDIS_URL="redis://127.0.0.1:1/0")
    done = subprocess.run([sys.executable, "manage.py", "shell", "-c", code], env=env, cwd=settings.BASE_DIR,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    run = MetricRun.objects.get(study=study)
    assert run.status == "failed" and "could not reach the task broker" in run.error
    assert run.result is None and run.started_at is None
