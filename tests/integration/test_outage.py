"""A dependency outage answers 503, never 500, and the product recovers by itself (issue 31, item 4): a real gunicorn
on its own PostgreSQL and Redis, each stopped and started again while a signed-in reviewer and an API client keep
asking. While PostgreSQL is down, pages answer the styled 503 page and the API its JSON error, both with
Retry-After, and /healthz names the dependency (503); while Redis is down, the same for signed-in pages (their
session is read through Redis) and /healthz; once each is back, the same requests answer 200 again, the session
still valid."""

from __future__ import annotations

import contextlib
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
def test_an_outage_of_postgresql_or_redis_answers_503_and_recovers(tmp_path):
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
    web = None
    try:
        for args in (["migrate", "--no-input"], ["collectstatic", "--no-input", "-v", "0"]):
            done = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True,
                                  text=True, timeout=300)
            assert done.returncode == 0, done.stderr[-3000:]
        made = subprocess.run(
            [sys.executable, "manage.py", "shell", "-c",
             "from access import roles\nfrom access.services import user_ensure\nfrom api import services\n"
             f"user = user_ensure(username='olga', role=roles.ADMIN, password={PASSWORD!r})\n"
             "print(services.api_token_create(user=user, name='t', scopes=['read'], by=None)[1])"],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
        assert made.returncode == 0, made.stderr[-3000:]
        token = made.stdout.split()[-1]
        web = subprocess.Popen([sys.executable, "-m", "gunicorn", "cab.wsgi", "-b", f"127.0.0.1:{web_port}", "-w",
                                "1", "--timeout", "60"], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True, start_new_session=True)
        _wait(lambda: _status(f"{base}/healthz") == 200, "gunicorn did not serve")
        browser, api = requests.Session(), requests.Session()
        api.headers["Authorization"] = f"Bearer {token}"
        login = browser.get(f"{base}/login/")
        csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', login.text).group(1)
        signed_in = browser.post(f"{base}/login/", data={"username": "olga", "password": PASSWORD,
                                                         "csrfmiddlewaretoken": csrf}, headers={"Referer": base})
        assert signed_in.status_code == 200 and signed_in.url == f"{base}/", signed_in.url

        def everything_answers() -> bool:
            return (browser.get(f"{base}/", allow_redirects=False).status_code == 200
                    and api.get(f"{base}/api/v1/studies/").status_code == 200
                    and _status(f"{base}/healthz") == 200)

        assert everything_answers()
        assert requests.get(f"{base}/healthz", timeout=30).json()["checks"] == {"database": "ok", "redis": "ok"}

        # PostgreSQL down
        database.stop()
        _unavailable(browser.get(f"{base}/", allow_redirects=False), api=False)
        _unavailable(api.get(f"{base}/api/v1/studies/"), api=True)
        health = requests.get(f"{base}/healthz", timeout=30)
        assert health.status_code == 503 and health.headers["Retry-After"] == "10"
        assert health.json()["status"] == "unavailable"
        assert health.json()["checks"]["database"].startswith("unreachable (")
        database = Server(tmp_path / "pg", tcp_port=pg_port)  # the same data directory, started again
        servers.append(database)
        database.attach()
        _wait(everything_answers, "not every request answered 200 after PostgreSQL came back")

        # Redis down (and back empty: sessions are read through to the database)
        redis.__exit__(None, None, None)
        _unavailable(browser.get(f"{base}/", allow_redirects=False), api=False)
        health = requests.get(f"{base}/healthz", timeout=30)
        assert health.status_code == 503
        assert health.json()["checks"]["database"] == "ok"
        assert health.json()["checks"]["redis"].startswith("unreachable (")
        redis = redis_server(redis_port, tmp_path / "redis")
        redis.__enter__()
        _wait(everything_answers, "not every request answered 200 after Redis came back")
    finally:
        if web is not None:
            os.killpg(web.pid, signal.SIGTERM)
            web.communicate(timeout=30)
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
