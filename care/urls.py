"""The CARE pages' URLs (cab/urls.py includes them before the dashboards' generic page URLs)."""

from django.urls import path

from care import views

urlpatterns = [
    path("studies/<slug:slug>/reports/care/timeline/<str:conversation>/", views.history_timeline,
         name="reports-care-timeline"),
]
