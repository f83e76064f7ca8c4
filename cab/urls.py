from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from annotation import calibration_views
from annotation import views as annotation_views

urlpatterns = [
    path("", annotation_views.home, name="home"),
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("healthz", annotation_views.healthz, name="healthz"),
    path("schemas/<slug:slug>/spans.css", annotation_views.schema_spans_css, name="schema-spans-css"),
    path("rounds/<int:round_id>/", annotation_views.queue, name="queue"),
    path("rounds/<int:round_id>/turns/<int:position>/", annotation_views.turn, name="turn"),
    path("rounds/<int:round_id>/turns/<int:position>/save", annotation_views.judgment_save, name="judgment-save"),
    path("rounds/<int:round_id>/turns/<int:position>/complete", annotation_views.complete, name="turn-complete"),
    path("rounds/<int:round_id>/turns/<int:position>/time", annotation_views.time_on_task, name="turn-time"),
    path("studies/<slug:slug>/", calibration_views.study_dashboard, name="study-dashboard"),
    path("studies/<slug:slug>/rounds", calibration_views.round_action, name="round-action"),
    path("studies/<slug:slug>/main-round", calibration_views.main_round_assign, name="main-round-assign"),
    path("studies/<slug:slug>/panel/", calibration_views.panel, name="panel"),
    path("studies/<slug:slug>/alerts/<int:alert_id>/resolve", calibration_views.alert_resolve, name="alert-resolve"),
    path("rounds/<int:round_id>/consensus/", calibration_views.consensus, name="consensus"),
    path("rounds/<int:round_id>/workshop/", calibration_views.workshop, name="workshop"),
    path("rounds/<int:round_id>/workshop/note", calibration_views.workshop_note, name="workshop-note"),
    path("rounds/<int:round_id>/memo.<str:fmt>", calibration_views.memo, name="memo"),
    path("rounds/<int:round_id>/feedback/", calibration_views.feedback, name="feedback"),
    path("admin/", admin.site.urls),
    # REST API (/api/v1/…, /api/schema/, /api/docs/) and researcher downloads (/exports/…).
    path("", include("cab.api_urls")),
]
