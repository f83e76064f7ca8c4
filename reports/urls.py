from django.urls import path, re_path

from reports import apis, bundle_views, care_views, lc8_views, views

SLUG = r"(?P<slug>[-a-zA-Z0-9_]+)"
PAGE = r"(?P<page>[a-z][a-z0-9-]{0,30})"  # digits: the lc8 page
BLOCK = r"(?P<name>[a-z][a-z0-9-]{0,40})"

urlpatterns = [
    path("studies/<slug:slug>/reports/", views.overview, name="reports"),
    path("studies/<slug:slug>/reports/runs", views.runs, name="reports-runs"),
    path("studies/<slug:slug>/reports/runs/<int:run_id>/bundle.zip", bundle_views.run_bundle, name="reports-bundle"),
    path("api/v1/metric-runs/<int:run_id>/bundle.zip", apis.MetricRunBundleApi.as_view(), name="api-metric-run-bundle"),
    path("studies/<slug:slug>/reports/spans/examples/", views.span_examples, name="reports-span-examples"),
    path("studies/<slug:slug>/reports/care/timeline/<str:conversation>/", care_views.history_timeline,
         name="reports-care-timeline"),
    path("studies/<slug:slug>/reports/lc8/", lc8_views.lc8_page, name="reports-lc8"),  # before the generic pages
    re_path(rf"^studies/{SLUG}/reports/lc8/{BLOCK}\.(?P<fmt>svg|png|csv)$", lc8_views.lc8_file,
            name="reports-lc8-file"),
    re_path(rf"^studies/{SLUG}/reports/{PAGE}/$", views.page, name="reports-page"),
    re_path(rf"^studies/{SLUG}/reports/{PAGE}/{BLOCK}\.(?P<fmt>svg|png|csv)$", views.block_file,
            name="reports-file"),
]
