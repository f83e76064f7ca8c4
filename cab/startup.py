"""What the entry points do at start-up: say once which database and task runner they use (``cab.wsgi``, which
``runserver`` loads too), and keep the embedded PostgreSQL up for a ``runserver`` across its code reloads."""

import logging
import os
import signal
import sys
from pathlib import Path

from django.conf import settings


def log_mode() -> None:
    logging.getLogger("cab").info(settings.STARTUP_NOTE)


def runserver_started(argv: list[str]) -> None:
    """``manage.py runserver``: its reloader process holds the embedded server, so a code reload (which replaces
    the serving child) neither stops nor restarts it. SIGTERM ends it as Ctrl+C does, through the exit handlers,
    so the last process out stops the server."""
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    reloader = "--noreload" not in argv and os.environ.get("RUN_MAIN") != "true"
    database = settings.DATABASES["default"]
    if reloader and database["ENGINE"] == "cab.embedded_db":
        from cab.embedded_db.server import server_for

        server_for(Path(database["EMBEDDED_ROOT"])).attach()  # type: ignore[typeddict-item]
