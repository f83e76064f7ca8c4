from django.apps import AppConfig


class ToyKindConfig(AppConfig):
    name = "tests.toykind"
    label = "toykind"
    verbose_name = "Toy study kind (tests)"

    def ready(self) -> None:
        from tests.toykind import hooks

        hooks.register()
