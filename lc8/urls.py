"""The LongCounsel-8 page's URLs (cab/urls.py includes them before the dashboards' generic page URLs, which would
take its slug for a page of their own)."""

from django.urls import path, re_path

from lc8 import views

SLUG = r"(?P<slug>[-a-zA-Z0-9_]+)"
BLOCK = r"(?P<name>[a-z][a-z0-9-]{0,40})"

urlpatterns = [
    path("studies/<slug:slug>/reports/lc8/", views.lc8_page, name="reports-lc8"),
    re_path(rf"^studies/{SLUG}/reports/lc8/{BLOCK}\.(?P<fmt>svg|png|csv)$", views.lc8_file, name="reports-lc8-file"),
]
