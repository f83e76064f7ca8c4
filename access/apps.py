from django.apps import AppConfig


class AccessConfig(AppConfig):
    name = "access"
    verbose_name = "Accounts and roles"

    def ready(self) -> None:
        # The sign-in signal receiver (idle sessions) must be connected before the first request, not when the
        # middleware module happens to load with it: a session created by force_login or a shell would miss it.
        from access import login_sessions  # noqa: F401
