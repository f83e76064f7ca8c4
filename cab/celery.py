import os

from celery import Celery, signals

from common.logs import WithoutRowValues

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "cab.settings")

app = Celery("cab")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@signals.after_setup_logger.connect
@signals.after_setup_task_logger.connect
def _without_row_values(logger: object, **_: object) -> None:
    """A worker sets up its own log handlers in place of Django's (``LOGGING``): they leave the row values of a
    database refusal out too (``common.logs.WithoutRowValues``, docs/architecture.md#conventions)."""
    for handler in getattr(logger, "handlers", []):
        if not any(isinstance(each, WithoutRowValues) for each in handler.filters):
            handler.addFilter(WithoutRowValues())


@app.task(name="cab.ping")
def ping(value: int) -> dict:
    """A health probe: proves a worker consumed from the broker and can reach the database."""
    # Imported here: this module is loaded before Django is set up (``celery -A cab``), and django.db needs it.
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        (one,) = cursor.fetchone()
    return {"echo": value, "db": connection.vendor, "select": one, "pid": os.getpid()}
