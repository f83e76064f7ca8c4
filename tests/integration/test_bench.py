"""The short benchmark run (./scripts/bench --short: the benchmarks of issue 14 at a tiny scale, each on its own
throwaway PostgreSQL and Redis) prints the one table with every figure row. In the suite it runs the three whose
figures this project owns in full or that load no server of their own (ingest, exports, lc8: about 30 s); the
others (reviewers, queues, metrics, dashboards: about 100 s alone, twice that beside the suite) are run whole by
`./scripts/bench --short` before every benchmark report (docs/benchmarks.md), and here each must accept the options
the short run passes it; the reviewer-queues benchmark's coding of a turn page is checked against the real page.
No timing is asserted: at this size and on a shared machine the verdicts mean nothing."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from perf import bench

ROOT = Path(__file__).resolve().parents[2]
IN_THE_SUITE = ("ingest", "exports", "lc8")
# The figures of the benchmarks this project owns in full; the others must give at least one row each.
FIGURES = {
    "ingest": ["ingest: bulk responses through the API", "ingest: bulk vs one request per response",
               "ingest: resend, all unchanged", "ingest: server worker peak RSS"],
    "exports": ["export csv: time vs COPY", "export csv: first byte", "export jsonl: time vs COPY",
                "export jsonl: first byte", "export: server worker peak RSS"],
}


@pytest.mark.slow(40)
def test_the_short_benchmark_run_prints_every_figure(tmp_path):
    output = tmp_path / "benchmarks.md"
    run = subprocess.run([str(ROOT / "scripts/bench"), "--short", "--only", ",".join(IN_THE_SUITE), "--output",
                          str(output)], cwd=ROOT, capture_output=True, text=True, timeout=3600)
    said = run.stdout + run.stderr
    assert run.returncode == 0, said[-4000:]
    assert "PROBLEM" not in run.stdout, said[-4000:]
    report = output.read_text()
    assert f"- command: `./scripts/bench --short --only {','.join(IN_THE_SUITE)} --output" in report
    assert "- machine: " in report and " cores (" in report and "GiB memory" in report
    rows = [line for line in report.splitlines() if line.startswith("| ") and not line.startswith("| bench ")]
    for name in IN_THE_SUITE:
        assert any(row.startswith(f"| {name} | ") for row in rows), f"no figure from {name}:\n{report}"
    for name, figures in FIGURES.items():
        for figure in figures:
            assert any(row.startswith(f"| {name} | {figure}") for row in rows), f"{name}: no {figure!r}\n{report}"
    assert any(row.startswith("| exports | export csv: ") and "judgments | " in row for row in rows)
    for row in rows:  # value, baseline and ratio are numbers, and every row has a verdict
        cells = [cell.strip() for cell in row.strip("|").split(" | ")]
        assert len(cells) == len(bench.HEADER), row
        assert cells[2].split()[0].replace(",", "").replace(".", "").lstrip("-").isdigit(), row
        assert cells[-1] == "–" or cells[-1] == "met" or cells[-1].startswith("MISSED"), row


@pytest.mark.parametrize(("name", "script", "extra"), [b for b in bench.BENCHMARKS if b[0] not in IN_THE_SUITE])
def test_the_other_benchmarks_take_the_short_runs_options(name, script, extra):
    """What the short run passes a benchmark it can still parse (its --help lists each option; the run itself is
    ./scripts/bench --short)."""
    argv = bench.command_for(ROOT / "perf" / script, scale=bench.SHORT_SCALE, short=True, extra=extra)
    assert argv is not None, f"perf/{script} has no --json"
    given = [arg for arg in argv[argv.index("--json"):] if arg.startswith("--")]
    assert set(given) >= {"--json"} | {arg for arg in extra if arg.startswith("--")}, (name, given)
    shown = subprocess.run([str(ROOT / ".venv/bin/python"), str(ROOT / "perf" / script), "--help"], cwd=ROOT,
                           capture_output=True, text=True, timeout=120)
    assert shown.returncode == 0, shown.stderr[-2000:]
    for option in given:
        assert option in shown.stdout, f"{script} --help does not list {option}"


def test_a_miss_says_by_how_much():
    row = {"figure": "x", "value": 20_000.0, "unit": "rows/s", "baseline": "b", "baseline_value": 100.0,
           "target": "≥ 30,000 rows/s", "met": False}
    assert bench.verdict(row) == "MISSED by 10,000 rows/s, 33%"
    assert bench.verdict(row | {"target": "≥ 300× baseline"}) == "MISSED by 100×, 33%"
    assert bench.verdict(row | {"value": 0.7, "unit": "s", "target": "< 0.5 s"}) == "MISSED by 0.2 s, 40%"
    assert bench.verdict(row | {"met": True}) == "met"
    assert bench.verdict(row | {"target": ""}) == "–"


@pytest.mark.django_db
def test_the_queue_benchmark_codes_a_turn_as_the_page_does(client):
    """The reviewer-queues benchmark (issue 34) reads the real turn page and codes it in the page's order: a unit's
    first save creates its judgment, a unit with spans is highlighted (a draft) before it is scored, a second look
    updates the first unit, and the turn then completes and moves the queue counters. Should the page's markup
    change under the benchmark, this fails rather than the benchmark measuring refusals."""
    from django.contrib.auth import get_user_model

    from annotation.models import Judgment, QueueProgress
    from perf import reviewer_queues

    _, probes = reviewer_queues.setup([4], 1, 0.001)
    probe = probes[4]
    assert (probe.size, probe.position) == (4, 3)  # the first half completed: the reviewer resumes at the third
    user = get_user_model().objects.get(username=probe.username)
    client.force_login(user)
    turn_url = f"/rounds/{probe.round_id}/turns/{probe.position}/"
    html = client.get(turn_url).content.decode()
    parts = reviewer_queues.parts_of(client.get(reviewer_queues.parts_url(html)).content.decode())
    probe.forms = reviewer_queues.page_forms(html, parts)
    assert probe.forms and all(form["scale"] and form["version"] == 0 for form in probe.forms)
    assert any(form["sub"] for form in probe.forms), "some unit of the page takes spans"
    assert {form["coder"] for form in probe.forms} == {str(user.pk)}, "each save names the page's account"
    sent = []
    while (data := reviewer_queues.next_save(probe)) is not None:
        answer = client.post(f"{turn_url}save", data, headers={"HX-Request": "true"})
        assert answer.status_code == 200 and b'data-state="saved"' in answer.content, (data, answer.content[:300])
        reviewer_queues.answered(probe, data, answer.content.decode())
        sent.append((data["form_id"], data["score"] != ""))
    spanned = [form["form_id"] for form in probe.forms if form["sub"]]
    for form_id in spanned:  # highlighted first, then scored
        assert [scored for sent_id, scored in sent if sent_id == form_id] == [False, True], form_id
    assert [form_id for form_id, _ in sent[:-1] if form_id not in spanned] == \
        [form["form_id"] for form in probe.forms if not form["sub"]], "the page's order"
    assert sent[-1] == (probe.forms[0]["form_id"], True)  # the second look: an update
    assert Judgment.objects.filter(coder=user).count() == len(probe.forms)
    done = client.post(f"{turn_url}complete", {"confirm": "1"}, headers={"HX-Request": "true"})
    assert done.status_code == 204 and done["HX-Redirect"] == f"/rounds/{probe.round_id}/turns/4/"
    assert QueueProgress.objects.get(round_id=probe.round_id, coder=user).done == 3


@pytest.mark.django_db
def test_the_signed_in_floor_goes_through_the_products_checks(client, django_user_model):
    """The queue benchmark's signed-in floor (``perf/bare_wsgi.py``) is a POST through every middleware of the
    product: it answers only with a session and the CSRF token, as an autosave does, and the product's own
    application does not serve it."""
    from django.core.signals import request_finished, request_started
    from django.db import close_old_connections
    from django.middleware.csrf import get_token
    from django.test import RequestFactory

    from cab.wsgi import application as product
    from perf import bare_wsgi
    from perf._common import SIGNED_IN_PATH

    client.force_login(django_user_model.objects.create_user("floor"))
    page = RequestFactory().get("/")
    token = get_token(page)  # masked, as the page sends it; the cookie keeps its secret
    signed_in = f"sessionid={client.cookies['sessionid'].value}; csrftoken={page.META['CSRF_COOKIE']}"

    def post(app, *, cookies: str, header: str | None, method: str = "post") -> tuple[str, bytes]:
        environ = getattr(RequestFactory(), method)(
            SIGNED_IN_PATH, {"form_id": "t-XX", "score": "1"}, HTTP_COOKIE=cookies,
            **({"HTTP_X_CSRFTOKEN": header} if header else {})).environ
        status: list[str] = []
        # As Django's test client does: the test's transaction keeps its connection across the request.
        request_started.disconnect(close_old_connections)
        request_finished.disconnect(close_old_connections)
        try:
            content = b"".join(app(environ, lambda line, headers, *_: status.append(line)))
        finally:
            request_started.connect(close_old_connections)
            request_finished.connect(close_old_connections)
        return status[0], content

    assert post(bare_wsgi.application, cookies=signed_in, header=token) == ("200 OK", b"1")
    assert post(bare_wsgi.application, cookies=signed_in, header=None)[0].startswith("403")
    assert post(bare_wsgi.application, cookies=signed_in.split("; ")[1], header=token)[0].startswith("401")
    assert post(bare_wsgi.application, cookies=signed_in, header=token, method="get")[0].startswith("405")
    assert post(product, cookies=signed_in, header=token)[0].startswith("404")
