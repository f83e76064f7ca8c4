from django.apps import AppConfig


class Lc8Config(AppConfig):
    name = "lc8"
    verbose_name = "LongCounsel-8"

    def ready(self) -> None:
        from lc8 import hooks  # the kind's hooks import its models' modules: only once the apps are loaded

        hooks.register()
