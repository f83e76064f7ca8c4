"""What a newcomer runs: the README's run command on the default configuration (no DATABASE_URL, no REDIS_URL: the
embedded PostgreSQL and in-process tasks), in a var/ of its own (CAB_VAR_DIR). It serves the demo and prints its URL
(HOST/PORT), and a second load says what the demo holds rather than create it; the CARE and
LongCounsel-8 demos load beside it; every dashboard page and download of the three demo studies answers 200 after a
metric run of each (tests/reports/pages.py, run by `manage.py shell` in the same configuration, so the sweep goes
through the same settings, database and in-process tasks; it is the demos' only sweep. The pages every study has are
swept unfiltered here: their filter views are the same code for every study and tests/reports/test_every_page.py
sweeps them all on a synthetic study; the CARE and LongCounsel-8 pages keep every filter view); the database guards
(triggers) are there; and when the server is stopped no PostgreSQL is left running."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from cab.embedded_db.server import Server

ROOT = Path(__file__).resolve().parents[2]
# Test-runner settings that are not the README's default configuration.
NOT_DEFAULT = {"DATABASE_URL", "REDIS_URL", "DB_CONN_MAX_AGE", "CAB_TEST_SERVICES", "DJANGO_SETTINGS_MODULE",
               "DJANGO_ENV", "SECRET_KEY", "DEBUG", "STATIC_ROOT", "LOG_LEVEL"}

SWEEP = """
import json, os
from annotation.models import Study
from tests.reports import pages
failures, counts, linked_only = [], {}, {}
for slug in os.environ["SWEEP_STUDIES"].split(","):
    study = Study.objects.get(slug=slug)
    run = pages.run_metrics(study)
    urls = pages.report_urls(study, common_filters=False)
    counts[slug] = len(urls)
    fetched = []
    failures += [str(failure) for failure in pages.fetch_all(pages.staff_client("demo-researcher"), urls,
                                                             fetched=fetched)]
    linked_only[slug] = sorted({pages.url_name(url) for url in fetched} - {pages.url_name(url) for url in urls})
print(json.dumps({"failures": failures, "counts": counts, "linked_only": linked_only}))
"""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:  # noqa: S310 - our own loopback server
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


@pytest.fixture
def default_env(tmp_path):
    env = {key: value for key, value in os.environ.items() if key not in NOT_DEFAULT}
    return env | {"CAB_VAR_DIR": str(tmp_path / "var"), "PORT": str(_free_port()), "PYTHONUNBUFFERED": "1"}


def _manage(env: dict[str, str], *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=timeout)


@pytest.mark.slow(50)
def test_the_run_command_serves_every_demo_dashboard_on_the_default_configuration(default_env, tmp_path):
    log = (tmp_path / "run.log").open("w")
    run = subprocess.Popen([str(ROOT / "scripts" / "run")], cwd=ROOT, env=default_env, stdout=log,
                           stderr=subprocess.STDOUT, start_new_session=True)
    server = Server(Path(default_env["CAB_VAR_DIR"]) / "postgres")
    base = f"http://127.0.0.1:{default_env['PORT']}"
    try:
        deadline = time.monotonic() + 600
        while _get_or_none(f"{base}/healthz") is None:
            assert run.poll() is None, (tmp_path / "run.log").read_text()[-4000:]
            assert time.monotonic() < deadline, "the run command did not serve within 10 minutes"
            time.sleep(0.5)
        status, body = _get(f"{base}/healthz")
        assert status == 200 and json.loads(body)["database"] == "postgresql"
        status, body = _get(f"{base}/login/")
        assert status == 200 and b"<form" in body

        # it printed where it serves, the address HOST/PORT name, and that it created the demo
        said = (tmp_path / "run.log").read_text()
        assert f"Serving {base}/ (HOST=127.0.0.1, PORT={default_env['PORT']}; Ctrl+C stops it)" in said, said[-4000:]
        assert f"Open {base}/ (the study: /studies/demo/" in said and "Open http://127.0.0.1:8000/" not in said
        assert "Demo study 'Demo: Appendix D examples' created: 4 conversations, 20 model responses." in said

        loaded = _manage(default_env, "load_demo", "--care", "--lc8")
        assert loaded.returncode == 0, loaded.stderr[-4000:]
        # loaded again (as a restart does), the demo is said as it is, not created again
        assert ("Demo study 'Demo: Appendix D examples' already present, left as it is: 2 conversations in use, "
                in loaded.stdout), loaded.stdout
        assert "Demo study 'Demo: Appendix D examples' created" not in loaded.stdout
        assert "CARE demo study 'care-demo' (/studies/care-demo/) created" in loaded.stdout
        swept = _manage(default_env | {"SWEEP_STUDIES": "demo,care-demo,lc8-demo"}, "shell", "-c", SWEEP,
                        timeout=1200)
        assert swept.returncode == 0, swept.stderr[-4000:]
        outcome = json.loads(swept.stdout.strip().splitlines()[-1])
        assert outcome["failures"] == [], "\n".join(outcome["failures"])
        # a CARE or LC8 study shows fewer pages than a default one (docs/architecture.md#dashboard-pages-of-each-kind):
        # 67 URLs for the demo, 44 for the CARE demo, 50 for the LC8 demo
        assert all(count > 35 for count in outcome["counts"].values()), outcome["counts"]
        # what the pages link is what pages.report_urls lists (else a page could be missed by every sweep)
        assert outcome["linked_only"] == {slug: [] for slug in outcome["counts"]}, outcome["linked_only"]

        guard = _manage(default_env, "shell", "-c", "from django.db import connection\n"
                        "with connection.cursor() as c:\n"
                        "    c.execute('SELECT count(*) FROM pg_trigger WHERE NOT tgisinternal')\n"
                        "    print(c.fetchone()[0])")
        assert guard.returncode == 0 and int(guard.stdout.split()[-1]) >= 5, guard.stdout + guard.stderr
        said = (tmp_path / "run.log").read_text()
        assert said.count("database: embedded PostgreSQL") == 1, said[-4000:]
        assert "sqlite" not in said.lower()
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGTERM)  # as Ctrl+C reaches the whole group
            run.wait(timeout=60)
        log.close()
        deadline = time.monotonic() + 30
        while not server.status().startswith("stopped") and time.monotonic() < deadline:
            time.sleep(0.2)
        left_running = not server.status().startswith("stopped")
        server.remove()
    assert not left_running, "the run command left its PostgreSQL running"


def _get_or_none(url: str) -> int | None:
    try:
        return _get(url)[0]
    except OSError:
        return None
