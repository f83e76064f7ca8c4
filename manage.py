#!/usr/bin/env python
import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "cab.settings")
    import django
    from django.core.exceptions import ImproperlyConfigured
    from django.core.management import execute_from_command_line

    try:
        django.setup()
    except ImproperlyConfigured as error:  # a setting refused at start: its one-line reason, not a traceback
        sys.exit(f"cab: {error}")
    if sys.argv[1:2] == ["runserver"]:
        from cab.startup import runserver_started

        runserver_started(sys.argv)
    try:
        execute_from_command_line(sys.argv)
    except Exception as error:
        said = _unmigrated_said(error) or _outage_said(error)
        if said is None:
            raise
        sys.exit(said)


def _outage_said(error: Exception) -> str | None:
    """A command that meets a database (or broker) that cannot be reached, stopped, frozen past the connect timeout
    or restarted under it, or a database busy with another transaction (common.outage): said in one line with the
    driver's first line, exit status 1, not a traceback. What the command had not committed was rolled back; the
    importers are all or nothing and load_demo idempotent, so running it again is the remedy. None for any other
    error."""
    from common.outage import said, unreachable

    what = said(error)
    if what is None:
        return None
    detail = next((line.strip() for line in str(error).splitlines() if line.strip()), "")
    once = {"database": " once the database answers", "redis": " once the broker answers"}.get(unreachable(error) or "")
    return f"cab: {what} ({type(error).__name__}{': ' + detail if detail else ''}); run the command again{once or ''}"


def _unmigrated_said(error: Exception) -> str | None:
    """A command run on a database that lacks this version's tables (a fresh var/ before ``migrate``, README "Data
    and commands") fails on its first query with PostgreSQL's "relation … does not exist": said in one line with
    what to run, not as a traceback. None for any other error, which is raised as it is."""
    from django.db import DEFAULT_DB_ALIAS, ProgrammingError, connections
    from django.db.migrations.executor import MigrationExecutor
    from psycopg.errors import UndefinedTable

    if not isinstance(error, ProgrammingError) or not isinstance(error.__cause__, UndefinedTable):
        return None
    connection = connections[DEFAULT_DB_ALIAS]
    try:
        connection.close()  # the failed statement's transaction, if one was left open
        executor = MigrationExecutor(connection)
        missing = executor.migration_plan(executor.loader.graph.leaf_nodes())
    except Exception:  # the migrations cannot be read either: the original error says more
        return None
    if not missing:
        return None
    return (f"cab: the database {connection.settings_dict['NAME']} lacks {len(missing)} migration(s) of this version "
            "(it has no tables yet, or an older version's): run python manage.py migrate first (./scripts/run does)")


if __name__ == "__main__":
    main()
