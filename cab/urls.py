from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from annotation import views as annotation_views

urlpatterns = [
    path("", annotation_views.home, name="home"),
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("healthz", annotation_views.healthz, name="healthz"),
    path("admin/", admin.site.urls),
    # REST API (/api/v1/…, /api/schema/, /api/docs/) and researcher downloads (/exports/…).
    path("", include("cab.api_urls")),
]
