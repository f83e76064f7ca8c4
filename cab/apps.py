from django.apps import AppConfig


class ProjectConfig(AppConfig):
    """The project package as an app for its one command (``manage.py embedded_postgres``); no models. Labelled
    ``project`` because ``cab`` is the api app's label (its tables are named after it)."""

    name = "cab"
    label = "project"
