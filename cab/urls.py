"""The project's URLs: each app's own, the login pages and the Django admin; the API's JSON 404 comes last. A
dependency outage answers 503 instead of 500 (common.outage)."""

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from api import urls as api_urls

urlpatterns = [
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    *api_urls.schema_urlpatterns,
    *api_urls.page_urlpatterns,
    path("", include("access.urls")),
    path("", include("annotation.urls")),
    path("", include("calibration.urls")),
    path("", include("metrics.urls")),
    path("", include("reports.urls")),
    *api_urls.not_found_urlpatterns,
]

handler500 = "common.outage.server_error"
