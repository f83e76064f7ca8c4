from django.urls import path, re_path

from annotation import apis, views
from common.rounds import NAME_PATTERN

SLUG = r"(?P<slug>[-a-zA-Z0-9_]+)"
ROUND = rf"(?P<round_name>{NAME_PATTERN})"

urlpatterns = [
    path("", views.home, name="home"),
    path("healthz", views.healthz, name="healthz"),
    path("schemas/<slug:slug>/spans.css", views.schema_spans_css, name="schema-spans-css"),
    path("rounds/<int:round_id>/", views.queue, name="queue"),
    path("rounds/<int:round_id>/coding-parts.js", views.coding_parts_script, name="coding-parts"),
    path("rounds/<int:round_id>/turns/<int:position>/", views.turn, name="turn"),
    path("rounds/<int:round_id>/turns/<int:position>/save", views.judgment_save, name="judgment-save"),
    path("rounds/<int:round_id>/turns/<int:position>/complete", views.complete, name="turn-complete"),
    path("rounds/<int:round_id>/turns/<int:position>/time", views.time_on_task, name="turn-time"),
    path("rounds/<int:round_id>/turns/<int:position>/note", views.note, name="turn-note"),
    path("studies/new/", views.study_create, name="study-create"),
    path("studies/<slug:slug>/data/", views.study_data, name="study-data"),
    path("studies/<slug:slug>/settings/", views.study_settings, name="study-settings"),
    path("studies/<slug:slug>/settings/blinding-key", views.study_blinding_rotate, name="study-blinding-rotate"),
    path("studies/<slug:slug>/conversations/upload", views.conversations_upload, name="conversations-upload"),
    path("studies/<slug:slug>/archive", views.study_archive, name="study-archive"),
    path("studies/<slug:slug>/members/add", views.member_add, name="member-add"),
    path("studies/<slug:slug>/members/<int:member_id>/remove", views.member_remove, name="member-remove"),
    re_path(rf"^exports/{SLUG}/judgments\.(?P<fmt>csv|jsonl)$", views.judgments_file, name="export-judgments"),
    re_path(rf"^exports/{SLUG}/items\.(?P<fmt>csv|jsonl)$", views.items_file, name="export-items"),
    # REST API
    path("api/v1/studies/", apis.StudyListApi.as_view(), name="api-studies"),
    re_path(rf"^api/v1/studies/{SLUG}/$", apis.StudyDetailApi.as_view(), name="api-study"),
    re_path(rf"^api/v1/studies/{SLUG}/rounds/$", apis.RoundListApi.as_view(), name="api-rounds"),
    re_path(rf"^api/v1/studies/{SLUG}/rounds/{ROUND}/assignments/$", apis.AssignmentListApi.as_view(),
            name="api-assignments"),
    re_path(rf"^api/v1/studies/{SLUG}/judgments/$", apis.JudgmentListApi.as_view(), name="api-judgments"),
    re_path(rf"^api/v1/studies/{SLUG}/judgments/import/$", apis.JudgmentImportApi.as_view(),
            name="api-judgments-import"),
    re_path(rf"^api/v1/studies/{SLUG}/methods/$", apis.MethodListApi.as_view(), name="api-methods"),
    re_path(rf"^api/v1/studies/{SLUG}/references/$", apis.ReferenceListApi.as_view(), name="api-references"),
    re_path(rf"^api/v1/studies/{SLUG}/session-labels/$", apis.SessionLabelApi.as_view(), name="api-session-labels"),
    re_path(rf"^api/v1/studies/{SLUG}/conversations/$", apis.ConversationIngestApi.as_view(),
            name="api-conversations"),
    re_path(rf"^api/v1/studies/{SLUG}/conversations/upload/$", apis.ConversationUploadApi.as_view(),
            name="api-conversations-upload"),
    re_path(rf"^api/v1/studies/{SLUG}/responses/$", apis.ResponseIngestApi.as_view(), name="api-responses"),
    re_path(rf"^api/v1/studies/{SLUG}/responses/upload/$", apis.ResponseUploadApi.as_view(),
            name="api-responses-upload"),
    re_path(rf"^api/v1/studies/{SLUG}/exports/judgments\.(?P<fmt>csv|jsonl)$", apis.JudgmentExportApi.as_view(),
            name="api-export-judgments"),
]
