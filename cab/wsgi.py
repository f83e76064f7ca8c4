import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "cab.settings")
application = get_wsgi_application()

from cab.startup import log_mode  # noqa: E402 - needs the settings loaded above

log_mode()
