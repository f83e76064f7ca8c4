from django.apps import AppConfig


class CareConfig(AppConfig):
    name = "care"
    verbose_name = "CARE"

    def ready(self) -> None:
        from care import hooks  # the kind's hooks import its models' modules: only once the apps are loaded

        hooks.register()
