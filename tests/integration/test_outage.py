"""A dependency outage answers 503, never 500, and the product recovers by itself (issue 31, item 4): a real gunicorn
on its own PostgreSQL and Redis, each stopped and started again while a signed-in reviewer and an API client keep
asking. While PostgreSQL is down, pages answer the styled 503 page and the API its JSON error, both with
Retry-After, and /healthz names the dependency (503); a researcher's ``cab wait`` goes on waiting through it, and
ends with the run once a worker has computed it; while Redis is down, signed-in pages and the API answer 200
(sessions are in the database; issue 31 item 1), /healthz says "degraded", and a sign-out and an admin's
deactivation made in the outage take effect at once and still hold when Redis is back empty; once each is back,
the same requests answer 200 again, the session still valid."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

from cab.embedded_db.server import Server
from tests.celery_worker import celery_worker
from tests.integration.test_default_configuration import NOT_DEFAULT
from tests.redis_server import free_port, redis_server

ROOT = Path(__file__).resolve().parents[2]
PASSWORD = "an-outage-Passphrase-7"  # noqa: S105 - a throwaway account of this test's own database


def _wait(predicate, message: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, message
        time.sleep(0.2)


def _unavailable(answer: requests.Response, *, api: bool) -> None:
    assert answer.status_code == 503, (answer.status_code, answer.text[:500])
    assert answer.headers["Retry-After"] == "10"
    if api:
        assert answer.headers["Content-Type"] == "application/json"
        assert "cannot be reached" in answer.json()["detail"]
    else:
        assert answer.headers["Content-Type"].startswith("text/html")
        assert "<h1>Briefly unavailable</h1>" in answer.text and "app.css" in answer.text


@pytest.mark.slow(30)
def test_postgresql_down_answers_503_redis_down_keeps_serving_and_both_recover(tmp_path):
    pg_port, redis_port, web_port = free_port(), free_port(), free_port()
    database = Server(tmp_path / "pg", tcp_port=pg_port)
    servers = [database]  # each object that attached, to let go of at the end
    url = database.attach().url("cab")
    env = {key: value for key, value in os.environ.items() if key not in NOT_DEFAULT}
    env |= {"DATABASE_URL": url, "REDIS_URL": f"redis://127.0.0.1:{redis_port}/0", "DEBUG": "0",
            "CAB_VAR_DIR": str(tmp_path / "var"), "PYTHONUNBUFFERED": "1"}
    base = f"http://127.0.0.1:{web_port}"
    redis = redis_server(redis_port, tmp_path / "redis")
    redis.__enter__()
    web = waiter = None
    try:
        for args in (["migrate", "--no-input"], ["collectstatic", "--no-input", "-v", "0"]):
            done = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True,
                                  text=True, timeout=300)
            assert done.returncode == 0, done.stderr[-3000:]
        made = subprocess.run(
            [sys.executable, "manage.py", "shell", "-c",
             "from access import roles\nfrom access.services import user_ensure\nfrom api import services\n"
             "from django.core.management import call_command\nfrom annotation.models import Study\n"
             "from metrics.services import metric_run_request\n"
             f"user = user_ensure(username='olga', role=roles.ADMIN, password={PASSWORD!r})\n"
             f"rita = user_ensure(username='rita', role=roles.REVIEWER, password={PASSWORD!r})\n"
             "call_command('generate_synthetic', '--conversations', '3', '--reviewers', '2', '--seed', '1', "
             "'--calibration-turns', '2', '--slug', 'waited', verbosity=0)\n"
             "run = metric_run_request(study=Study.objects.get(slug='waited'), by=user, bootstrap=20)\n"
             "print(rita.pk, run.pk, services.api_token_create(user=user, name='t', scopes=['read'], by=None)[1])"],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
        assert made.returncode == 0, made.stderr[-3000:]
        rita_id, run_id, token = made.stdout.split()[-3:]
        web_log = (tmp_path / "gunicorn.log").open("w")
        web = subprocess.Popen([sys.executable, "-m", "gunicorn", "cab.wsgi", "-b", f"127.0.0.1:{web_port}", "-w",
                                "1", "--timeout", "60"], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                               # a file, not a pipe nobody reads while the test runs: a full pipe froze the
                               # worker on its next log line (the outage's 503s logged a traceback each, then)
                               stderr=web_log, start_new_session=True)
        _wait(lambda: _status(f"{base}/healthz") == 200, "gunicorn did not serve")
        browser, api = requests.Session(), requests.Session()
        api.headers["Authorization"] = f"Bearer {token}"
        assert _signed_in(browser, base)

        def everything_answers() -> bool:
            return (browser.get(f"{base}/", allow_redirects=False).status_code == 200
                    and api.get(f"{base}/api/v1/studies/").status_code == 200
                    and _status(f"{base}/healthz") == 200)

        assert everything_answers()
        assert requests.get(f"{base}/healthz", timeout=30).json()["checks"] == {"database": "ok", "redis": "ok"}

        # A researcher waits for a metric run (queued: no worker yet) with the CLI, through the outage below.
        waiter = subprocess.Popen([sys.executable, "-m", "cab_cli", "wait", run_id, "--every", "0.2", "--timeout",
                                   "240"], cwd=ROOT, env={**os.environ, "CAB_URL": base, "CAB_TOKEN": token,
                                                          "CAB_PROGRESS": "0"},
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(1)

        # PostgreSQL down
        database.stop()
        _unavailable(browser.get(f"{base}/", allow_redirects=False), api=False)
        _unavailable(api.get(f"{base}/api/v1/studies/"), api=True)
        health = requests.get(f"{base}/healthz", timeout=30)
        assert health.status_code == 503 and health.headers["Retry-After"] == "10"
        assert health.json()["status"] == "unavailable"
        assert health.json()["checks"]["database"].startswith("unreachable (")
        logged = (tmp_path / "gunicorn.log").read_text()  # one line a 503, no traceback
        assert "WARNING common.outage 503 GET /: the database cannot be reached (OperationalError)" in logged, logged
        assert "WARNING common.outage 503 GET /api/v1/studies/: the database cannot be reached" in logged, logged
        assert "WARNING common.outage 503 GET /healthz: the database is unreachable (OperationalError)" in logged
        assert "Traceback" not in logged, logged
        assert "ERROR" not in logged, logged
        # Down until the CLI's own poll has met the outage (its one line in gunicorn's log): on a loaded host the CLI
        # may start after the checks above, and a restart before its first poll leaves it no outage to wait through.
        _wait(lambda: f"503 GET /api/v1/metric-runs/{run_id}/:" in (tmp_path / "gunicorn.log").read_text(),
              "the CLI never asked while PostgreSQL was down")
        database = Server(tmp_path / "pg", tcp_port=pg_port)  # the same data directory, started again
        servers.append(database)
        database.attach()
        _wait(everything_answers, "not every request answered 200 after PostgreSQL came back")
        time.sleep(1)
        assert waiter.poll() is None, f"the CLI stopped waiting: {waiter.communicate()}"
        with celery_worker(env={"DATABASE_URL": url, "REDIS_URL": env["REDIS_URL"]}):  # now the run is computed
            out, err = waiter.communicate(timeout=120)
        assert waiter.returncode == 0, (out, err)
        assert json.loads(out)["status"] == "succeeded"
        assert "the server is briefly unavailable (HTTP 503: " in err and "the server answers again" in err, err

        # Redis down: signed-in pages and the API go on (sessions are in the database, rate limits uncounted),
        # /healthz says degraded, and a sign-out made meanwhile holds once Redis is back (empty).
        leaving, rita = requests.Session(), requests.Session()
        assert _signed_in(leaving, base) and _signed_in(rita, base, username="rita")
        redis.__exit__(None, None, None)
        assert browser.get(f"{base}/", allow_redirects=False).status_code == 200
        assert api.get(f"{base}/api/v1/studies/").status_code == 200
        health = requests.get(f"{base}/healthz", timeout=30)
        assert health.status_code == 200 and health.json()["status"] == "degraded"
        assert health.json()["checks"]["database"] == "ok"
        assert health.json()["checks"]["redis"].startswith("unreachable (")
        page = leaving.get(f"{base}/")
        replayed = requests.Session()  # the signed-out cookie, kept by someone who copied it
        replayed.cookies.set("sessionid", leaving.cookies["sessionid"])
        token_field = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
        assert leaving.post(f"{base}/logout/", data={"csrfmiddlewaretoken": token_field},
                            headers={"Referer": base}).status_code == 200
        # an admin deactivates an account meanwhile: its session stops at once, and stays stopped
        people = browser.get(f"{base}/people/")
        csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', people.text).group(1)
        deactivated = browser.post(f"{base}/people/{rita_id}/active", data={"csrfmiddlewaretoken": csrf},
                                   headers={"Referer": base}, allow_redirects=False)
        assert deactivated.status_code == 302, (deactivated.status_code, deactivated.text[:300])
        assert "rita is deactivated" in browser.get(f"{base}/people/").text
        assert rita.get(f"{base}/", allow_redirects=False).status_code == 302
        redis = redis_server(redis_port, tmp_path / "redis")
        redis.__enter__()
        _wait(everything_answers, "not every request answered 200 after Redis came back")
        assert rita.get(f"{base}/", allow_redirects=False).status_code == 302, "the deactivation did not hold"
        assert replayed.get(f"{base}/", allow_redirects=False).status_code == 302, "the sign-out did not hold"
        assert browser.get(f"{base}/", allow_redirects=False).status_code == 200, "the other session was kept"
    finally:
        if waiter is not None and waiter.poll() is None:
            waiter.kill()
            waiter.communicate()
        if web is not None:
            os.killpg(web.pid, signal.SIGTERM)
            web.wait(timeout=30)
            web_log.close()
        with contextlib.suppress(Exception):
            redis.__exit__(None, None, None)
        for server in servers[:-1]:
            server.detach()
        servers[-1].remove()


def _status(url: str) -> int | None:
    try:
        return requests.get(url, timeout=10).status_code
    except requests.RequestException:
        return None


def _signed_in(browser: requests.Session, base: str, username: str = "olga") -> bool:
    login = browser.get(f"{base}/login/")
    csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', login.text).group(1)
    answer = browser.post(f"{base}/login/", data={"username": username, "password": PASSWORD,
                                                  "csrfmiddlewaretoken": csrf}, headers={"Referer": base})
    return answer.status_code == 200 and answer.url == f"{base}/"
