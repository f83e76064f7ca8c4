"""REST API (/api/v1/…), its OpenAPI schema and docs (/api/schema/, /api/docs/), and the exports page (/exports/)."""

from django.urls import path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from annotation import apis as annotation_apis
from annotation import export_views
from benchmark import apis as benchmark_apis
from cab.api_support import api_not_found
from metrics import apis as metrics_apis

ROUND = r"(?P<round_name>calibration-[1-9][0-9]{0,8}|main)"
SLUG = r"(?P<slug>[-a-zA-Z0-9_]+)"
TABLE = r"(?P<table>[a-z][a-z0-9_]{0,49})"


class ApiDocsView(SpectacularSwaggerSplitView):
    """Swagger UI from our own static files (drf-spectacular-sidecar), its start-up script a separate file:
    the page runs under the site's CSP, which forbids inline scripts and styles and any foreign origin."""

    template_name = "exports/api_docs.html"


urlpatterns = [
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("api/docs/", ApiDocsView.as_view(url_name="api-schema"), name="api-docs"),
    path("api/v1/studies/", annotation_apis.StudyListApi.as_view(), name="api-studies"),
    re_path(rf"^api/v1/studies/{SLUG}/$", annotation_apis.StudyDetailApi.as_view(), name="api-study"),
    re_path(rf"^api/v1/studies/{SLUG}/rounds/$", annotation_apis.RoundListApi.as_view(), name="api-rounds"),
    re_path(rf"^api/v1/studies/{SLUG}/rounds/{ROUND}/assignments/$", annotation_apis.AssignmentListApi.as_view(),
            name="api-assignments"),
    re_path(rf"^api/v1/studies/{SLUG}/judgments/$", annotation_apis.JudgmentListApi.as_view(), name="api-judgments"),
    re_path(rf"^api/v1/studies/{SLUG}/judgments/import/$", annotation_apis.JudgmentImportApi.as_view(),
            name="api-judgments-import"),
    re_path(rf"^api/v1/studies/{SLUG}/conversations/$", benchmark_apis.ConversationIngestApi.as_view(),
            name="api-conversations"),
    re_path(rf"^api/v1/studies/{SLUG}/responses/$", benchmark_apis.ResponseIngestApi.as_view(), name="api-responses"),
    re_path(rf"^api/v1/studies/{SLUG}/metric-runs/$", metrics_apis.MetricRunListApi.as_view(),
            name="api-metric-runs"),
    path("api/v1/metric-runs/<int:run_id>/", metrics_apis.MetricRunApi.as_view(), name="api-metric-run"),
    path("api/v1/metric-runs/<int:run_id>/result/", metrics_apis.MetricRunResultApi.as_view(),
         name="api-metric-run-result"),
    re_path(rf"^api/v1/studies/{SLUG}/exports/judgments\.(?P<fmt>csv|jsonl)$",
            annotation_apis.JudgmentExportApi.as_view(), name="api-export-judgments"),
    re_path(rf"^api/v1/studies/{SLUG}/exports/report\.json$", metrics_apis.ReportExportApi.as_view(),
            name="api-export-report"),
    re_path(rf"^api/v1/studies/{SLUG}/exports/indices/{TABLE}\.csv$", metrics_apis.IndexTableExportApi.as_view(),
            name="api-export-index-table"),
    path("exports/", export_views.exports_page, name="exports"),
    re_path(rf"^exports/{SLUG}/judgments\.(?P<fmt>csv|jsonl)$", export_views.judgments_file,
            name="export-judgments"),
    re_path(rf"^exports/{SLUG}/report\.json$", export_views.report_file, name="export-report"),
    re_path(rf"^exports/{SLUG}/indices/{TABLE}\.csv$", export_views.index_table_file, name="export-index-table"),
    re_path(r"^api/v1/", api_not_found),
]
