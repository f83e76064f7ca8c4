"""Django's PostgreSQL backend for the embedded server: the same backend, which makes sure the server runs (and
holds it for this process) before it connects. Settings: ``EMBEDDED_ROOT``, the server's folder (``var/postgres``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.db.backends.postgresql import base as postgresql

from cab.embedded_db.server import server_for


class DatabaseWrapper(postgresql.DatabaseWrapper):
    def get_new_connection(self, conn_params: dict[str, Any]) -> Any:
        server_for(Path(self.settings_dict["EMBEDDED_ROOT"])).attach()
        return super().get_new_connection(conn_params)
