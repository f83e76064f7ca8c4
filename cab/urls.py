"""The project's URLs: each app's own, the login pages (with access.forms' sign-in forms) and the Django admin; the
API's JSON 404 comes last. A dependency outage answers 503 instead of 500 (common.outage). The URLs of each study
kind with pages of its own (settings.STUDY_KINDS, a ``urls`` module) come before the dashboards', whose generic page
URLs would take a kind's page for one of theirs."""

from importlib.util import find_spec

from django.conf import settings
from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from access.forms import AdminSignInForm, SignInForm
from api import urls as api_urls

admin.site.login_form = AdminSignInForm

urlpatterns = [
    path("login/", auth_views.LoginView.as_view(authentication_form=SignInForm), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    *api_urls.schema_urlpatterns,
    *api_urls.page_urlpatterns,
    path("", include("access.urls")),
    path("", include("annotation.urls")),
    path("", include("calibration.urls")),
    path("", include("metrics.urls")),
    *(path("", include(f"{kind}.urls")) for kind in settings.STUDY_KINDS if find_spec(f"{kind}.urls")),
    path("", include("reports.urls")),
    *api_urls.not_found_urlpatterns,
]

handler500 = "common.outage.server_error"
