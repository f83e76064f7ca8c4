"""The metrics API (metrics/apis.py): start a run (enqueued after commit), poll its status and progress, fetch its
result; download the report and its per-model index tables."""

from __future__ import annotations

import csv
import io
import json

import pytest

from api.models import IdempotencyRecord
from metrics.models import MetricRun
from tests.factories import MetricRunFactory
from tests.metrics.conftest import REPORT

pytestmark = pytest.mark.django_db

RUNS = "/api/v1/studies/cab-demo/metric-runs/"


def test_a_researcher_starts_a_run_and_it_is_enqueued_after_commit(
    researcher, as_token, study, django_capture_on_commit_callbacks
):
    api = as_token(researcher, scopes=["read", "metrics"])
    with django_capture_on_commit_callbacks() as callbacks:
        response = api.post(RUNS, {"seed": 7, "bootstrap": 50}, format="json")
    assert response.status_code == 202
    body = response.json()
    assert body["status"] == "queued" and body["trigger"] == "api" and body["requested_by"] == "researcher"
    assert body["parameters"]["seed"] == 7 and body["parameters"]["bootstrap"] == 50
    assert len(callbacks) == 1  # the task is sent only once the run row is committed
    assert MetricRun.objects.get().requested_by == researcher


@pytest.mark.parametrize(("payload", "field"), [({"seed": -1}, "seed"), ({"bootstrap": 0}, "bootstrap"),
                                                ({"bootstrap": "many"}, "bootstrap")])
def test_bad_run_parameters_are_a_400_naming_the_field(researcher, as_token, study, payload, field):
    response = as_token(researcher).post(RUNS, payload, format="json")
    assert response.status_code == 400
    assert field in response.json()["fields"]
    assert not MetricRun.objects.exists()


def test_starting_a_run_needs_the_metrics_scope_and_a_staff_role(researcher, reviewer, as_token, study):
    assert as_token(researcher, scopes=["read"]).post(RUNS, {}, format="json").status_code == 403
    assert as_token(reviewer).post(RUNS, {}, format="json").status_code == 403
    assert as_token(reviewer).get(RUNS).status_code == 403
    assert not MetricRun.objects.exists()


def test_poll_a_run_then_fetch_its_result(researcher, as_token, study, django_assert_max_num_queries):
    run = MetricRunFactory(study=study, status="running", progress=0.4, progress_message="bootstrap")
    api = as_token(researcher)
    with django_assert_max_num_queries(7):
        status = api.get(f"/api/v1/metric-runs/{run.pk}/").json()
    assert (status["status"], status["progress"], status["progress_message"]) == ("running", 0.4, "bootstrap")
    assert api.get(f"/api/v1/metric-runs/{run.pk}/result/").status_code == 409
    MetricRun.objects.filter(pk=run.pk).update(status="succeeded", result={"indices": {}, "version": 1}, progress=1)
    result = api.get(f"/api/v1/metric-runs/{run.pk}/result/")
    assert result.status_code == 200 and result.json() == {"indices": {}, "version": 1}
    assert [r["id"] for r in api.get(RUNS).json()["results"]] == [run.pk]


def test_a_failed_run_shows_the_first_line_of_its_error_only(researcher, as_token, study):
    run = MetricRunFactory(study=study, status="failed", error="ValueError: bad spec\nTraceback (most recent…)")
    assert as_token(researcher).get(f"/api/v1/metric-runs/{run.pk}/").json()["error"] == "ValueError: bad spec"


def test_a_study_scoped_token_cannot_see_runs_of_another_study(researcher, as_token, study, other_study):
    run = MetricRunFactory(study=other_study)
    response = as_token(researcher, scopes=["read"], study=study).get(f"/api/v1/metric-runs/{run.pk}/")
    assert response.status_code == 403
    assert as_token(researcher).get("/api/v1/metric-runs/999999/").status_code == 404


# --- the report and its index tables ----------------------------------------------------------------------------


def test_report_json_download(researcher, as_token, succeeded_run):
    response = as_token(researcher).get("/api/v1/studies/cab-demo/exports/report.json")
    assert response.status_code == 200
    assert response["Content-Disposition"] == f'attachment; filename="cab-demo-report-run{succeeded_run.pk}.json"'
    downloaded = json.loads(response.content)
    assert list(downloaded)[0] == "run", "the file starts with the run it came from"
    succeeded_run.refresh_from_db()
    assert downloaded.pop("run") == {"id": succeeded_run.pk, "trigger": succeeded_run.trigger,
                                     "parameters": succeeded_run.parameters,
                                     "requested_at": succeeded_run.created_at.isoformat(),
                                     "started_at": succeeded_run.started_at and succeeded_run.started_at.isoformat(),
                                     "finished_at": succeeded_run.finished_at.isoformat()}
    assert downloaded == succeeded_run.result


def test_per_model_index_table_as_csv(researcher, as_token, succeeded_run):
    response = as_token(researcher).get("/api/v1/studies/cab-demo/exports/indices/flags.csv")
    assert response.status_code == 200
    assert "attachment" in response["Content-Disposition"]
    rows = list(csv.reader(io.StringIO(b"".join(response.streaming_content).decode(), newline="")))
    assert rows == [["model", "F1", "F2"], ["GPT", "0.1", "0.0"], ["'-Claude", "0.2", "0.05"]]
    missing = as_token(researcher).get("/api/v1/studies/cab-demo/exports/indices/uiri.csv")
    assert missing.status_code == 404
    assert "ari" in missing.json()["detail"]


def test_report_without_a_succeeded_run_is_a_404(researcher, as_token, study):
    MetricRunFactory(study=study, status="failed", error="boom")
    assert as_token(researcher).get("/api/v1/studies/cab-demo/exports/report.json").status_code == 404


def test_the_report_and_index_table_downloads_state_their_provenance_in_headers(researcher, as_token, client, study):
    """docs/metrics.md#provenance: run id, finish time, parameters, software and input fingerprint, the same on the
    API and on the exports page; the index table stays a plain CSV, its name saying the run."""
    report = {**REPORT, "parameters": {"seed": 7, "bootstrap": 50, "panel_k": 3},
              "software": {"version": "9.9.9", "commit": "ab" * 20}, "input": {"fingerprint": "sha256:" + "c" * 64}}
    run = MetricRunFactory(study=study, status="succeeded", result=report, progress=1.0,
                           finished_at="2026-01-02T03:04:05.678Z", parameters={"seed": 7, "bootstrap": 50})
    expected = {"CAB-Run": str(run.pk), "CAB-Run-Finished": "2026-01-02T03:04:05Z",
                "CAB-Parameters": '{"bootstrap":50,"panel_k":3,"seed":7}',
                "CAB-Software": '{"commit":"' + "ab" * 20 + '","version":"9.9.9"}',
                "CAB-Input-Fingerprint": "sha256:" + "c" * 64}
    client.force_login(researcher)
    api = as_token(researcher)
    for response in (api.get("/api/v1/studies/cab-demo/exports/report.json"),
                     client.get("/exports/cab-demo/report.json"),
                     api.get("/api/v1/studies/cab-demo/exports/indices/flags.csv"),
                     client.get("/exports/cab-demo/indices/flags.csv")):
        assert response.status_code == 200
        assert {name: response.get(name) for name in expected} == expected
        assert f"-run{run.pk}." in response["Content-Disposition"]
    table = client.get("/exports/cab-demo/indices/flags.csv")
    assert b"".join(table.streaming_content).decode().splitlines()[0] == "model,F1,F2"  # plain: it loads as it is


def test_an_old_report_without_software_or_fingerprint_leaves_those_headers_out(researcher, as_token, succeeded_run):
    response = as_token(researcher).get("/api/v1/studies/cab-demo/exports/indices/flags.csv")
    assert response["CAB-Run"] == str(succeeded_run.pk)
    assert "CAB-Software" not in response and "CAB-Input-Fingerprint" not in response


def test_the_schema_documents_the_provenance_headers_of_every_download(client):
    schema = client.get("/api/schema/?format=json").json()
    run_said = {"CAB-Run", "CAB-Run-Finished", "CAB-Parameters", "CAB-Software", "CAB-Input-Fingerprint"}
    for path, codes, said in (
        ("/api/v1/studies/{slug}/exports/report.json", ("200",), run_said),
        ("/api/v1/studies/{slug}/exports/indices/{table}.csv", ("200",), run_said),
        ("/api/v1/metric-runs/{run_id}/bundle.zip", ("200", "206"), run_said | {"Repr-Digest"}),
        ("/api/v1/studies/{slug}/exports/judgments.{fmt}", ("200", "206"),
         {"CAB-Software", "CAB-Exported", "Repr-Digest"}),
    ):
        answers = schema["paths"][path]["get"]["responses"]
        for code in codes:
            assert said <= set(answers[code]["headers"]), (path, code)
            assert all("provenance" in answers[code]["headers"][name]["description"] for name in said)


def test_a_run_asked_for_again_with_its_idempotency_key_is_the_same_run(researcher, as_token, study):
    """A client that lost the answer asks again with the same key. Before, the key was ignored and every resend made
    another run; now the resend is answered with the run the first request made (as it is now), and the key's
    record is committed with the run."""
    api = as_token(researcher, scopes=["read", "metrics"])
    first = api.post(RUNS, {"bootstrap": 50}, format="json", HTTP_IDEMPOTENCY_KEY="run-1")
    (run,) = MetricRun.objects.all()
    assert (first.status_code, first.json()["id"], first.headers.get("Idempotent-Replayed")) == (202, run.pk, None)
    assert IdempotencyRecord.objects.get(key="run-1").response["id"] == run.pk
    MetricRun.objects.filter(pk=run.pk).update(progress_message="half way")
    again = api.post(RUNS, {"bootstrap": 50}, format="json", HTTP_IDEMPOTENCY_KEY="run-1")
    assert (again.status_code, again.headers["Idempotent-Replayed"]) == (202, "true")
    assert (again.json()["id"], again.json()["progress_message"]) == (run.pk, "half way")
    assert MetricRun.objects.count() == 1

    other = api.post(RUNS, {"bootstrap": 60}, format="json", HTTP_IDEMPOTENCY_KEY="run-1")
    assert other.status_code == 422 and "Idempotency-Key" in other.json()["detail"]
    assert api.post(RUNS, {"bootstrap": 50}, format="json", HTTP_IDEMPOTENCY_KEY="run 2").status_code == 400
    assert api.post(RUNS, {"bootstrap": 50}, format="json").status_code == 202  # without a key: another run
    assert MetricRun.objects.count() == 2


def test_every_run_of_a_study_is_listed_newest_first_a_page_at_a_time(researcher, as_token, study):
    """A study run more than a page's worth of times (a sensitivity analysis over seeds) keeps every run in the list:
    before, the list stopped at the 100 newest, without a word, and `cab download bundle` took the newest succeeded
    run among those only. Now the list is cursor-paginated, newest first, and filters by state."""
    runs = [MetricRunFactory(study=study, status="failed") if n % 7
            else MetricRunFactory(study=study, status="succeeded", result=REPORT) for n in range(105)]
    api = as_token(researcher)
    first = api.get(RUNS).json()
    assert [r["id"] for r in first["results"]] == [run.pk for run in reversed(runs)][:100]
    rest = api.get(first["next"]).json()
    assert [r["id"] for r in rest["results"]] == [run.pk for run in reversed(runs)][100:] and rest["next"] is None
    succeeded = api.get(RUNS, {"status": "succeeded", "page_size": "1"}).json()
    assert [r["id"] for r in succeeded["results"]] == [max(run.pk for run in runs if run.status == "succeeded")]
    refused = api.get(RUNS, {"status": "done"})
    assert refused.status_code == 400 and "status" in json.dumps(refused.json()), refused.json()
