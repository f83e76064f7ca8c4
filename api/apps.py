from django.apps import AppConfig


class ApiConfig(AppConfig):
    name = "api"
    # The label the tables (cab_apitoken, cab_idempotencyrecord) and migrations were created under, when this
    # code lived in the cab package: keeping it makes the move a no-op for every existing database.
    label = "cab"
    verbose_name = "API"
