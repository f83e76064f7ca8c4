import logging

from django.apps import AppConfig
from django.conf import settings

log = logging.getLogger("cab")


class CabConfig(AppConfig):
    name = "cab"
    verbose_name = "Cognitive Atrophy Bench"

    def ready(self) -> None:
        database = settings.DATABASES["default"]["ENGINE"].rsplit(".", 1)[-1]
        if settings.CELERY_TASK_ALWAYS_EAGER or database == "sqlite3":
            log.info(
                "embedded mode: database=%s, tasks %s (set DATABASE_URL and REDIS_URL for the full stack)",
                database,
                "run in-process" if settings.CELERY_TASK_ALWAYS_EAGER else "go to the broker",
            )
