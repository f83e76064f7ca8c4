"""The one line every entry point logs at start-up when the product runs embedded (SQLite, in-process tasks)."""

import logging

from django.conf import settings


def log_mode() -> None:
    if settings.EMBEDDED_MODE_NOTE:
        logging.getLogger("cab").info(settings.EMBEDDED_MODE_NOTE)
