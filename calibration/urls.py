from django.urls import path

from calibration import views

urlpatterns = [
    path("studies/<slug:slug>/", views.study_dashboard, name="study-dashboard"),
    path("studies/<slug:slug>/rounds/new", views.round_create, name="round-create"),
    path("studies/<slug:slug>/rounds/<int:round_id>/sample", views.round_sample, name="round-sample"),
    path("studies/<slug:slug>/rounds/<int:round_id>/refs", views.round_refs, name="round-refs"),
    path("studies/<slug:slug>/rounds/<int:round_id>/open", views.round_open, name="round-open"),
    path("studies/<slug:slug>/rounds/<int:round_id>/close", views.round_close, name="round-close"),
    path("studies/<slug:slug>/rounds/<int:round_id>/reopen", views.round_reopen, name="round-reopen"),
    path("studies/<slug:slug>/main-round", views.main_round_assign, name="main-round-assign"),
    path("studies/<slug:slug>/panel/", views.panel, name="panel"),
    path("studies/<slug:slug>/panel/retain", views.panel_retain, name="panel-retain"),
    path("studies/<slug:slug>/alerts/<int:alert_id>/resolve", views.alert_resolve, name="alert-resolve"),
    path("rounds/<int:round_id>/consensus/", views.consensus, name="consensus"),
    path("rounds/<int:round_id>/consensus/record", views.gold_record, name="gold-record"),
    path("rounds/<int:round_id>/consensus/accept-unanimous", views.gold_accept_unanimous,
         name="gold-accept-unanimous"),
    path("rounds/<int:round_id>/workshop/", views.workshop, name="workshop"),
    path("rounds/<int:round_id>/workshop/note", views.workshop_note, name="workshop-note"),
    path("rounds/<int:round_id>/memo.<str:fmt>", views.memo, name="memo"),
    path("rounds/<int:round_id>/feedback/", views.feedback, name="feedback"),
    path("rounds/<int:round_id>/items/<int:turn_id>/history/", views.item_history, name="item-history"),
]
