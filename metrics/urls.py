from django.urls import path, re_path

from metrics import apis, views

SLUG = r"(?P<slug>[-a-zA-Z0-9_]+)"
TABLE = r"(?P<table>[a-z][a-z0-9_]{0,49})"

urlpatterns = [
    path("exports/", views.exports_page, name="exports"),
    path("studies/<slug:slug>/metric-runs/start", views.metric_run_start, name="metric-run-start"),
    re_path(rf"^exports/{SLUG}/report\.json$", views.report_file, name="export-report"),
    re_path(rf"^exports/{SLUG}/indices/{TABLE}\.csv$", views.index_table_file, name="export-index-table"),
    re_path(rf"^api/v1/studies/{SLUG}/metric-runs/$", apis.MetricRunListApi.as_view(), name="api-metric-runs"),
    path("api/v1/metric-runs/<int:run_id>/", apis.MetricRunApi.as_view(), name="api-metric-run"),
    path("api/v1/metric-runs/<int:run_id>/result/", apis.MetricRunResultApi.as_view(),
         name="api-metric-run-result"),
    re_path(rf"^api/v1/studies/{SLUG}/exports/report\.json$", apis.ReportExportApi.as_view(),
            name="api-export-report"),
    re_path(rf"^api/v1/studies/{SLUG}/exports/indices/{TABLE}\.csv$", apis.IndexTableExportApi.as_view(),
            name="api-export-index-table"),
]
