"""Admin pages of the calibration protocol, and the reviewer's feedback page. One URL and view per action: each
parses a form, calls one service and redirects with a message saying what happened (or swaps a partial for htmx).
Who may do it is decided in one place (``access.checks``), and a refusal is a 403."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.db.models import Count
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST

from access.checks import require_study_admin
from access.requests import AuthedRequest
from annotation import services as annotation_services
from annotation.models import ReviewerAlert, Round, Study, StudyMember
from calibration import forms, selectors, services

View = Callable[..., HttpResponse]


def admin_only(view: View) -> View:
    @login_required
    @wraps(view)
    def wrapper(request: AuthedRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        require_study_admin(request.user)
        return view(request, *args, **kwargs)

    return wrapper


def _refused(request: HttpRequest, error: ValidationError) -> None:
    for message in error.messages:
        messages.error(request, message)


def _act(request: HttpRequest, action: Callable[[], str]) -> None:
    """Run one service call; say what it did, or why it was refused (nothing changed then)."""
    try:
        messages.success(request, action())
    except ValidationError as error:
        _refused(request, error)


def _invalid(request: HttpRequest, form: forms.forms.Form) -> None:
    for message in forms.form_errors(form):
        messages.error(request, message)


def _study_round(slug: str, round_id: int) -> Round:
    return get_object_or_404(Round.objects.select_related("study"), pk=round_id, study__slug=slug)


# --- the study dashboard and its round actions ------------------------------------------------------------------


@admin_only
@require_GET
def study_dashboard(request: AuthedRequest, slug: str) -> HttpResponse:
    study = get_object_or_404(Study.objects.select_related("schema"), slug=slug)
    rounds = list(study.rounds.prefetch_related("items__turn__conversation__dataset")
                  .annotate(n_assignments=Count("assignments")).order_by("kind", "number"))
    return render(request, "calibration/study.html", {
        "study": study, "rounds": rounds,
        "members": study.members.select_related("user").order_by("role", "alias", "user__username"),
        "alerts": ReviewerAlert.objects.filter(study=study, resolved_at__isnull=True).select_related("reviewer"),
        "next_calibration": max([r.number for r in rounds if r.kind == Round.Kind.CALIBRATION], default=0) + 1,
        "open_calibration": next((r for r in rounds if r.kind == Round.Kind.CALIBRATION
                                  and r.status == Round.Status.OPEN), None),
        "time_on_task": selectors.time_on_task(study=study),
    })


@admin_only
@require_POST
def round_create(request: AuthedRequest, slug: str) -> HttpResponse:
    study = get_object_or_404(Study, slug=slug)
    form = forms.RoundCreateForm(request.POST)
    if not form.is_valid():
        _invalid(request, form)
    else:
        round_ = annotation_services.round_ensure(study=study, kind=Round.Kind.CALIBRATION,
                                                  number=form.cleaned_data["number"], by=request.user)
        messages.success(request, f"{round_.name} is ready as a draft: build its calibration set.")
    return redirect("study-dashboard", slug=slug)


def _round_action(form_class: type[forms.forms.Form] | None, call: Callable[[Round, Any, dict], Any],
                  done: Callable[[Round, Any], str]) -> View:
    """The view of one round action on the dashboard: parse its form, call the service, say what happened."""

    @admin_only
    @require_POST
    def view(request: HttpRequest, slug: str, round_id: int) -> HttpResponse:
        round_ = _study_round(slug, round_id)
        form = form_class(request.POST) if form_class is not None else None
        if form is not None and not form.is_valid():
            _invalid(request, form)
        else:
            _act(request, lambda: done(round_, call(round_, request.user, forms.given(form) if form else {})))
        return redirect("study-dashboard", slug=slug)

    return view


round_sample = _round_action(
    forms.SampleSetForm, lambda r, by, data: services.calibration_set_sample(round=r, by=by, **data),
    lambda r, turns: f"{r.name}: a set of {len(turns)} turns was drawn.")
round_refs = _round_action(
    forms.RefsSetForm, lambda r, by, data: services.calibration_set_from_refs(round=r, by=by, **data),
    lambda r, turns: f"{r.name}: the set is the {len(turns)} turns listed.")
round_open = _round_action(
    forms.OpenForm, lambda r, by, data: services.round_open(round=r, by=by, **data),
    lambda r, _: f"{r.name} is open: " + ("every reviewer and expert has its items." if r.kind == Round.Kind.CALIBRATION
                                          else "the retained panel sees its queues."))
_close = _round_action(
    None, lambda r, by, data: services.round_close(round=r, by=by),
    lambda r, _: f"{r.name} closed; a metrics run was requested" + (
        " and the workshop is open." if r.kind == Round.Kind.CALIBRATION else "."))


@admin_only
@require_POST
def round_close(request: HttpRequest, slug: str, round_id: int) -> HttpResponse:
    """Closing with coders unfinished asks first, naming them; the confirmation posts here again."""
    round_ = _study_round(slug, round_id)
    form = forms.CloseForm(request.POST)
    form.is_valid()
    unfinished = selectors.unfinished_coders(round=round_)
    if unfinished and not form.cleaned_data.get("confirm") and round_.status == Round.Status.OPEN:
        return render(request, "calibration/confirm_close.html", {"round": round_, "unfinished": unfinished})
    return _close(request, slug, round_id)
round_reopen = _round_action(
    forms.ReopenForm, lambda r, by, data: services.round_reopen(round=r, by=by, **data),
    lambda r, _: f"{r.name} is open again; the reason was recorded.")


@admin_only
@require_POST
def main_round_assign(request: AuthedRequest, slug: str) -> HttpResponse:
    study = get_object_or_404(Study, slug=slug)
    form = forms.MainRoundForm(request.POST)
    if not form.is_valid():
        _invalid(request, form)
        return redirect("study-dashboard", slug=slug)
    def assign() -> str:
        summary = services.main_round_assign(study=study, by=request.user, **forms.given(form))
        return (f"{summary['assignments']} assignments for {summary['reviewers']} reviewers "
                f"({summary['double_coded_conversations']} double-coded conversations, "
                f"{summary['check_items']} check items).")

    _act(request, assign)
    return redirect("study-dashboard", slug=slug)


@admin_only
@require_POST
def alert_resolve(request: AuthedRequest, slug: str, alert_id: int) -> HttpResponse:
    alert = get_object_or_404(ReviewerAlert, pk=alert_id, study__slug=slug)
    _act(request, lambda: f"Alert on {annotation_services.alert_resolve(alert=alert, by=request.user).reviewer} "
                          "resolved.")
    return redirect("study-dashboard", slug=slug)


# --- gold consensus ----------------------------------------------------------------------------------------------


def _calibration_round(round_id: int) -> Round:
    return get_object_or_404(Round.objects.select_related("study"), pk=round_id, kind=Round.Kind.CALIBRATION)


@admin_only
@require_GET
def consensus(request: AuthedRequest, round_id: int) -> HttpResponse:
    round_ = _calibration_round(round_id)
    items = selectors.consensus_items(round=round_)
    show = request.GET.get("show", "open")
    shown = [i for i in items if (i.gold is None if show == "open" else not i.unanimous if show == "differ" else True)]
    experts = sorted(items[0].expert_scores) if items else []
    return render(request, "calibration/consensus.html", {
        "round": round_, "items": shown, "experts": experts, "show": show, "total": len(items),
        "recorded": sum(1 for i in items if i.gold is not None),
        "differ": sum(1 for i in items if not i.unanimous),
    })


def _back_to_consensus(round_: Round, show: str) -> HttpResponse:
    response = redirect("consensus", round_id=round_.pk)
    if show in ("open", "differ", "all"):
        response["Location"] += f"?show={show}"
    return response


@admin_only
@require_POST
def gold_record(request: AuthedRequest, round_id: int) -> HttpResponse:
    round_ = _calibration_round(round_id)
    form = forms.GoldForm(request.POST, round=round_)
    if not form.is_valid():
        _invalid(request, form)
        return _back_to_consensus(round_, request.POST.get("show", ""))
    data = form.cleaned_data

    def record() -> str:
        services.gold_record(round=round_, by=request.user, attribute=data["attribute"], turn=data["turn"],
                             response=data["response"], score=data["score"], note=data["note"],
                             agreed_by=[form.experts[name] for name in data["agreed"]],
                             expected_version=data["version"], reason=data["reason"])
        return f"Gold {data['attribute'].code} = {data['score']} recorded for {data['turn']}."

    _act(request, record)
    return _back_to_consensus(round_, request.POST.get("show", ""))


@admin_only
@require_POST
def gold_accept_unanimous(request: AuthedRequest, round_id: int) -> HttpResponse:
    round_ = _calibration_round(round_id)
    _act(request, lambda: f"{services.gold_accept_unanimous(round=round_, by=request.user)} unanimous items "
                          "recorded as gold.")
    return redirect("consensus", round_id=round_.pk)


# --- workshop and memo -------------------------------------------------------------------------------------------


@admin_only
@require_GET
def workshop(request: AuthedRequest, round_id: int) -> HttpResponse:
    round_ = get_object_or_404(Round.objects.select_related("study__schema"), pk=round_id)
    if round_.status != Round.Status.CLOSED:
        messages.error(request, "the workshop opens when the round is closed")
        return redirect("study-dashboard", slug=round_.study.slug)
    filters = {k: request.GET.get(k, "")[:100] for k in ("attribute", "dataset", "reviewer")}
    reveal = request.GET.get("reveal") == "1"
    items = selectors.workshop_items(round=round_, reveal=reveal, **filters)
    return render(request, "calibration/workshop.html", {
        "round": round_, "items": items[:200], "n_items": len(items), "filters": filters, "reveal": reveal,
        "attributes": round_.study.schema.attributes.order_by("position"),
        "datasets": sorted({i.turn.conversation.dataset.name for i in items}),
        "aliases": sorted(selectors.reviewer_aliases(study=round_.study, reveal=reveal).values()),
    })


@admin_only
@require_POST
def workshop_note(request: AuthedRequest, round_id: int) -> HttpResponse:
    round_ = get_object_or_404(Round.objects.select_related("study"), pk=round_id)
    form = forms.NoteForm(request.POST, round=round_)
    error = "; ".join(forms.form_errors(form)) if not form.is_valid() else ""
    if not error:
        data = form.cleaned_data
        try:
            services.workshop_note_save(round=round_, by=request.user, attribute=data["attribute"],
                                        turn=data["turn"], response=data["response"], text=data["text"])
        except ValidationError as refused:
            error = "; ".join(refused.messages)
    return render(request, "calibration/workshop.html#note-state", {"error": error}, status=422 if error else 200)


@admin_only
@require_GET
def memo(request: AuthedRequest, round_id: int, fmt: str) -> HttpResponse:
    round_ = get_object_or_404(Round.objects.select_related("study"), pk=round_id)
    markdown = selectors.calibration_memo_markdown(round=round_)
    if fmt == "md":
        response = HttpResponse(markdown, content_type="text/markdown; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="memo-{round_.study.slug}-{round_.name}.md"'
        return response
    return render(request, "calibration/memo.html", {"round": round_, "markdown": markdown,
                                                     "notes": round_.workshop_notes.select_related(
                                                         "attribute", "turn__conversation__dataset", "response",
                                                         "written_by").order_by("attribute__position", "turn_id")})


# --- feedback and panel ------------------------------------------------------------------------------------------


@login_required
@require_GET
def feedback(request: AuthedRequest, round_id: int) -> HttpResponse:
    round_ = get_object_or_404(Round.objects.select_related("study"), pk=round_id)
    if not StudyMember.objects.filter(study=round_.study, user=request.user).exists():
        raise Http404("not a member of this study")
    try:
        result = selectors.reviewer_feedback(round=round_, user=request.user)
    except ValidationError as error:
        return render(request, "calibration/feedback.html", {"round": round_, "error": "; ".join(error.messages)})
    return render(request, "calibration/feedback.html", {"round": round_, "f": result})


@admin_only
@require_GET
def panel(request: AuthedRequest, slug: str) -> HttpResponse:
    study = get_object_or_404(Study, slug=slug)
    ranking = selectors.panel_ranking(study=study)
    k_text = request.GET.get("k") or "6"
    k = int(k_text) if k_text.isascii() and k_text.isdigit() and 0 < int(k_text) < 1000 else 6
    if ranking:
        # Tick the retained panel once chosen; until then suggest the top k.
        chosen = any(row["retained"] for row in ranking["rows"])
        for row in ranking["rows"]:
            row["preselect"] = row["retained"] if chosen else row["position"] <= k
    return render(request, "calibration/panel.html", {"study": study, "ranking": ranking, "k": k})


@admin_only
@require_POST
def panel_retain(request: AuthedRequest, slug: str) -> HttpResponse:
    study = get_object_or_404(Study, slug=slug)
    reviewers = list(StudyMember.objects.filter(study=study, role=StudyMember.Role.REVIEWER)
                     .values_list("user__username", flat=True))
    form = forms.PanelForm(request.POST, reviewers=reviewers)
    if not form.is_valid():
        _invalid(request, form)
        return redirect("panel", slug=slug)
    data = form.cleaned_data
    _act(request, lambda: "Retained panel saved: " + ", ".join(
        services.panel_retain(study=study, by=request.user, usernames=data["retain"], reason=data["reason"],
                              k=data["k"])) + ".")
    return redirect("panel", slug=slug)
