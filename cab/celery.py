import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "cab.settings")

app = Celery("cab")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@app.task(name="cab.ping")
def ping(value: int) -> dict:
    """A health probe: proves a worker consumed from the broker and can reach the database."""
    # Imported here: this module is loaded before Django is set up (``celery -A cab``), and django.db needs it.
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        (one,) = cursor.fetchone()
    return {"echo": value, "db": connection.vendor, "select": one, "pid": os.getpid()}
