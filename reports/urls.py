from django.urls import path, re_path

from reports import apis, bundle_views, views

SLUG = r"(?P<slug>[-a-zA-Z0-9_]+)"
PAGE = r"(?P<page>[a-z][a-z0-9-]{0,30})"  # digits: a kind's page may have them (its own URLs come first)
BLOCK = r"(?P<name>[a-z][a-z0-9-]{0,40})"

urlpatterns = [
    path("studies/<slug:slug>/reports/", views.overview, name="reports"),
    path("studies/<slug:slug>/reports/runs", views.runs, name="reports-runs"),
    path("studies/<slug:slug>/reports/runs/<int:run_id>/bundle.zip", bundle_views.run_bundle, name="reports-bundle"),
    path("api/v1/metric-runs/<int:run_id>/bundle.zip", apis.MetricRunBundleApi.as_view(), name="api-metric-run-bundle"),
    path("studies/<slug:slug>/reports/spans/examples/", views.span_examples, name="reports-span-examples"),
    re_path(rf"^studies/{SLUG}/reports/{PAGE}/$", views.page, name="reports-page"),
    re_path(rf"^studies/{SLUG}/reports/{PAGE}/{BLOCK}\.(?P<fmt>svg|png|csv)$", views.block_file,
            name="reports-file"),
]
