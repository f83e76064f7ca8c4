"""``manage.py embedded_postgres status|stop``: the default run's own PostgreSQL (cab.embedded_db).

It starts on its own when a process first needs it and stops when the last such process exits; ``stop`` is for a
server whose last user was killed (and so could not stop it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from cab.embedded_db.server import server_for


class Command(BaseCommand):
    help = "Status or stop the embedded PostgreSQL of the default run (data in var/postgres)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("action", choices=("status", "stop"))

    def handle(self, *args: Any, **options: Any) -> None:
        database = settings.DATABASES["default"]
        if database["ENGINE"] != "cab.embedded_db":
            raise CommandError("DATABASE_URL is set: this installation does not use the embedded PostgreSQL")
        server = server_for(Path(database["EMBEDDED_ROOT"]))  # type: ignore[typeddict-item]
        if options["action"] == "stop":
            self.stdout.write("stopped" if server.stop() else "was not running")
        else:
            self.stdout.write(server.status())
