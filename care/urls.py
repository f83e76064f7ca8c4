"""The CARE pages' URLs (cab/urls.py includes them before the dashboards' generic page URLs)."""

from django.urls import path

from care import views

urlpatterns = [
    # a history's name may hold a "/" (DATASET/EXTERNAL_ID, metrics.core.history_names): a path, not a str
    path("studies/<slug:slug>/reports/care/timeline/<path:conversation>/", views.history_timeline,
         name="reports-care-timeline"),
]
