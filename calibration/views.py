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
from django.core.paginator import Page, Paginator
from django.db.models import Count
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST, require_safe

from access.authed_request import AuthedRequest
from access.checks import require_study_admin
from annotation import selectors as annotation_selectors
from annotation import services as annotation_services
from annotation.models import Assignment, ReviewerAlert, Round, Study, StudyMember
from annotation.services import ChangedMeanwhile
from calibration import forms, selectors, services
from metrics import selectors as metrics_selectors

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


def _act(request: HttpRequest, action: Callable[[], str]) -> bool:
    """Run one service call; say what it did, or why it was refused (nothing changed then). True if it was done."""
    try:
        messages.success(request, action())
    except ValidationError as error:
        _refused(request, error)
        return False
    return True


def _invalid(request: HttpRequest, form: forms.forms.Form) -> None:
    for message in forms.form_errors(form):
        messages.error(request, message)


PAGE_SIZE = 20  # items per page of the consensus, workshop and feedback lists


def _page(request: HttpRequest, items: list) -> Page:
    """One page of a list (an out-of-range or malformed ``page`` gives the last or the first page)."""
    return Paginator(items, PAGE_SIZE).get_page(request.GET.get("page"))


def _back_to(name: str, round_: Round, position: forms.PositionForm, keys: tuple[str, ...], *,
             moved: bool = False) -> HttpResponse:
    """Back to a paged list after an action: the same filter, page and item (or the next one, ``moved``)."""
    query, anchor = position.query(keys), position.anchor(moved=moved)
    return redirect(reverse(name, args=[round_.pk]) + (f"?{query}" if query else "") + (f"#{anchor}" if anchor else ""))


def _study_round(slug: str, round_id: int) -> Round:
    return get_object_or_404(Round.objects.select_related("study"), pk=round_id, study__slug=slug)


# --- the study dashboard and its round actions ------------------------------------------------------------------


@admin_only
@require_safe
def study_dashboard(request: AuthedRequest, slug: str) -> HttpResponse:
    study = get_object_or_404(Study.objects.select_related("schema"), slug=slug)
    rounds = list(study.rounds.prefetch_related("items__turn__conversation__dataset")
                  .annotate(n_assignments=Count("assignments")).order_by("kind", "number"))
    for round_ in rounds:
        round_.reopen_rule = services.REOPEN_RULE[round_.kind]  # type: ignore[attr-defined]
    # Only a draft calibration round draws a set: the count is read for it alone, its own turns among them (drawn
    # again, its set may take them again).
    for round_ in rounds:
        if round_.kind == Round.Kind.CALIBRATION and round_.status == Round.Status.DRAFT:
            available = selectors.calibration_candidates_count(study=study, round=round_)
            round_.available = available  # type: ignore[attr-defined]
            round_.sample_size = min(services.SAMPLE_SIZE, available)  # type: ignore[attr-defined]
    return render(request, "calibration/study.html", {
        "study": study, "rounds": rounds,
        "member_candidates": annotation_selectors.member_candidates(study=study),
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
        def create() -> str:
            round_ = services.calibration_round_create(study=study, by=request.user, **form.cleaned_data)
            if round_.gold_pool:
                return (f"{round_.name} is ready as a draft reserved gold pool: build its set; only experts will "
                        "code it, and its gold conversations become hidden check items of the main round.")
            return f"{round_.name} is ready as a draft: build its calibration set."

        _act(request, create)
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
    lambda r, _: f"{r.name} closed" + (" and the workshop is open" if r.kind == Round.Kind.CALIBRATION else "")
    + f"; {metrics_selectors.metric_run_latest_said(study=r.study, trigger='round-closed')}.")


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
    lambda r, reopen: f"{r.name} is open again; the reason was recorded." + (
        f" {reopen.turns_back_in_queues} completed turn(s) of coders went back to their queues, each with a new "
        "response to code (added while the round was closed)." if reopen.turns_back_in_queues else ""))


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
        wanted = form.cleaned_data.get("check_items") or 0
        short = (f" Only {summary['check_conversations_fewest']} unseen gold conversations were available for "
                 "some reviewer: code a reserved gold pool for more." if summary["check_conversations_fewest"] < wanted
                 else "")
        # Retained reviewers the round's conversations did not reach: said now, as the queues are made once.
        idle = list(StudyMember.objects.filter(study=study, role=StudyMember.Role.REVIEWER, retained=True)
                    .exclude(user__in=Assignment.objects.filter(round__study=study, round__kind=Round.Kind.MAIN)
                             .values("coder"))
                    .order_by("user__username").values_list("user__username", flat=True))
        left = (f" {' and '.join([', '.join(idle[:-1]), idle[-1]] if len(idle) > 1 else idle)} "
                f"{'are' if len(idle) > 1 else 'is'} retained but got no turns: there are fewer conversations to "
                "give than retained reviewers (a double-coded share of 1 gives each conversation to two); a main "
                "round's queues are made once." if idle else "")
        return (f"{summary['assignments']} assignments for {summary['reviewers']} reviewers "
                f"({summary['double_coded_conversations']} double-coded conversations, "
                f"{summary['check_items']} hidden check-item turns).{short}{left}")

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


CONSENSUS_SHOWS = {"open": "without gold", "differ": "where experts differ",
                   "stale": "where who agreed no longer holds", "all": "all"}
CONSENSUS_KEYS = ("show", "page")


@login_required
@require_safe
def consensus(request: AuthedRequest, round_id: int) -> HttpResponse:
    """Admins decide gold here; the study's experts may read a closed round's screen when the study allows it."""
    round_ = _calibration_round(round_id)
    may_edit = selectors.consensus_access(round=round_, user=request.user)
    items = selectors.consensus_items(round=round_, seen_by=None if may_edit else request.user)
    show = request.GET.get("show", "")
    if show not in CONSENSUS_SHOWS:
        show = "open" if may_edit else "all"
    kept: dict[str, Callable[[selectors.ConsensusItem], bool]] = {
        "open": lambda i: i.gold is None, "differ": lambda i: not i.unanimous, "stale": lambda i: bool(i.stale),
        "all": lambda i: True}
    shown = [i for i in items if kept[show](i)]
    page = _page(request, shown)
    rows = list(page)
    # Each row names the one after it: recording gold takes an item out of "without gold", and the page then
    # comes back to the next item.
    following = [row.key for row in rows[1:]] + [""] if rows else []
    return render(request, "calibration/consensus.html", {
        "round": round_, "page": page, "rows": list(zip(rows, following, strict=True)), "may_edit": may_edit,
        "experts": list(items[0].expert_scores) if items else [], "former": items[0].former if items else (),
        "show": show, "shows": CONSENSUS_SHOWS,
        "total": len(items), "recorded": sum(1 for i in items if i.gold is not None),
        "differ": sum(1 for i in items if not i.unanimous), "stale": sum(1 for i in items if i.stale),
    })


@admin_only
@require_POST
def gold_record(request: AuthedRequest, round_id: int) -> HttpResponse:
    round_ = _calibration_round(round_id)
    position = forms.PositionForm(request.POST)
    form = forms.GoldForm(request.POST, round=round_)
    if not form.is_valid():
        _invalid(request, form)
        return _back_to("consensus", round_, position, CONSENSUS_KEYS)
    data = form.cleaned_data

    def record() -> str:
        services.gold_record(round=round_, by=request.user, attribute=data["attribute"], turn=data["turn"],
                             response=data["response"], score=data["score"], note=data["note"],
                             agreed_by=[form.experts[name] for name in data["agreed"]],
                             expected_version=data["version"], reason=data["reason"])
        unit = f"{data['turn']}" + (f" · {data['response'].model_slot}" if data["response"] else "")
        return f"Gold {data['attribute'].code} = {data['score']} recorded for {unit}."

    recorded = _act(request, record)
    moved = recorded and position.query(("show",)) in ("", "show=open")
    return _back_to("consensus", round_, position, CONSENSUS_KEYS, moved=moved)


@admin_only
@require_POST
def gold_accept_unanimous(request: AuthedRequest, round_id: int) -> HttpResponse:
    round_ = _calibration_round(round_id)
    _act(request, lambda: f"{services.gold_accept_unanimous(round=round_, by=request.user)} unanimous items "
                          "recorded as gold.")
    return _back_to("consensus", round_, forms.PositionForm(request.POST), CONSENSUS_KEYS)


# --- workshop and memo -------------------------------------------------------------------------------------------


@admin_only
@require_safe
def workshop(request: AuthedRequest, round_id: int) -> HttpResponse:
    round_ = get_object_or_404(Round.objects.select_related("study__schema"), pk=round_id)
    if round_.status != Round.Status.CLOSED:
        messages.error(request, "the workshop opens when the round is closed")
        return redirect("study-dashboard", slug=round_.study.slug)
    filters = {k: request.GET.get(k, "")[:100] for k in ("attribute", "dataset", "reviewer")}
    reveal = request.GET.get("reveal") == "1"
    model_names = request.GET.get("models") == "1"  # hidden unless the admin chooses to show them
    items = selectors.workshop_items(round=round_, reveal=reveal, **filters)
    page = _page(request, items)
    aliases = selectors.reviewer_aliases(study=round_.study, reveal=reveal)
    selectors.workshop_items_detail(round=round_, items=list(page), aliases=aliases, model_names=model_names)
    return render(request, "calibration/workshop.html", {
        "round": round_, "page": page, "filters": filters, "reveal": reveal, "model_names": model_names,
        "attributes": round_.study.schema.attributes.order_by("position"),
        "datasets": sorted({i.turn.conversation.dataset.name for i in items}),
        "aliases": sorted(aliases.values()),
        "elsewhere": selectors.workshop_items_elsewhere(round=round_),
    })


WORKSHOP_KEYS = ("attribute", "dataset", "reviewer", "reveal", "models", "page")


@admin_only
@require_POST
def workshop_note(request: AuthedRequest, round_id: int) -> HttpResponse:
    """Saved by htmx, which shows the outcome beside the note; without JavaScript, back to the same filter, page and
    item with a message."""
    round_ = get_object_or_404(Round.objects.select_related("study"), pk=round_id)
    form = forms.NoteForm(request.POST, round=round_)
    error, done = ("; ".join(forms.form_errors(form)) if not form.is_valid() else ""), ""
    shown = request.POST.get("shown")  # kept as it was when the save is refused
    if not error:
        data = form.cleaned_data
        try:
            note = services.workshop_note_save(round=round_, by=request.user, attribute=data["attribute"],
                                               turn=data["turn"], response=data["response"], text=data["text"],
                                               shown=(data["shown"] or "") if "shown" in request.POST else None)
        except ValidationError as refused:
            error = "; ".join(refused.messages)
        else:
            done = f"Note {'saved' if note else 'removed'} on {data['attribute'].code} · {data['turn']}."
            shown = note.text if note else ""
    if request.htmx:
        # The answer carries the note as now stored, so the next save of this form compares with it.
        return render(request, "calibration/workshop.html#note-state",
                      {"error": error, "done": done, "shown": shown}, status=422 if error else 200)
    if error:
        messages.error(request, error)
    else:
        messages.success(request, done)
    return _back_to("workshop", round_, forms.PositionForm(request.POST), WORKSHOP_KEYS)


@admin_only
@require_safe
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
@require_safe
def feedback(request: AuthedRequest, round_id: int) -> HttpResponse:
    """A reviewer's own agreement with gold once the round is closed. A reviewer's page only: an expert's would
    show the panel's consensus, which experts read on the consensus screen where the study allows it."""
    round_ = get_object_or_404(Round.objects.select_related("study"), pk=round_id)
    if not StudyMember.objects.filter(study=round_.study, user=request.user, role=StudyMember.Role.REVIEWER).exists():
        raise Http404("no feedback for you in this study")
    try:
        result = selectors.reviewer_feedback(round=round_, user=request.user)
    except ValidationError as error:
        return render(request, "calibration/feedback.html", {"round": round_, "error": "; ".join(error.messages)})
    page = _page(request, result.differences)
    selectors.feedback_spans(round=round_, user=request.user, differences=list(page))
    return render(request, "calibration/feedback.html", {
        "round": round_, "f": result, "page": page,
        "order_hidden": annotation_selectors.session_order_hidden(user=request.user, study=round_.study)})


def _default_panel_size() -> int:
    # Only before any report: the engine's default, imported here so that web workers do not load the science
    # stack (metrics.core.report imports scipy and scikit-learn) at start-up.
    from metrics.core.report import ReportParams

    return ReportParams.panel_size


@admin_only
@require_safe
def panel(request: AuthedRequest, slug: str) -> HttpResponse:
    study = get_object_or_404(Study, slug=slug)
    ranking = selectors.panel_ranking(study=study)
    query = forms.PanelViewForm(request.GET)
    asked = (query.cleaned_data["k"] if query.is_valid() else None) or ranking["panel_size"] or _default_panel_size()
    # A top k of at least as many reviewers as the report ranks is all of them: k is capped there, and top-k shares
    # for such k (1.00 for everyone) are not shown (docs/metrics.md#panel-selection).
    ranked = sum(1 for row in ranking["rows"] if row["ranked"])
    k = min(asked, ranked) if ranked else asked
    top = selectors.panel_top(ranking=ranking, k=k)
    shown_ks = [key for key in ranking["ks"] if int(key) < ranked]
    # Tick the retained panel once chosen; until then suggest the top k.
    chosen = any(row["retained"] for row in ranking["rows"] if row["member"])
    for row in ranking["rows"]:
        row["top"] = row["reviewer"] in top
        row["preselect"] = row["member"] and (row["retained"] is True if chosen else row["top"])
        row["top_k_shown"] = [(key, row["top_k"].get(key)) for key in shown_ks]
    return render(request, "calibration/panel.html", {
        "study": study, "ranking": ranking, "k": k, "asked": asked, "ranked": ranked, "top": top,
        "shown_ks": shown_ks, "hidden_ks": [key for key in ranking["ks"] if key not in shown_ks],
        "suggested_k": min(ranking["panel_size"], ranked) if ranking["panel_size"] and ranked else
        ranking["panel_size"]})


@admin_only
@require_POST
def panel_retain(request: AuthedRequest, slug: str) -> HttpResponse:
    """The first post shows what the change does (who becomes retained, who stops, the top k it is compared with,
    what happens to the main round); the confirmation posts again and the service retains exactly the ticked
    reviewers. A confirmation of a panel that changed meanwhile is shown afresh, never applied."""
    study = get_object_or_404(Study, slug=slug)
    ranking = selectors.panel_ranking(study=study)
    form = forms.PanelForm(request.POST, reviewers=[row["reviewer"] for row in ranking["rows"] if row["member"]])
    if not form.is_valid():
        _invalid(request, form)
        return redirect("panel", slug=slug)
    data = form.cleaned_data
    change = selectors.panel_change(study=study, ranking=ranking, usernames=data["retain"], k=data["k"])
    stale = False
    if data["confirm"]:
        try:
            services.panel_retain(study=study, by=request.user, usernames=change.retain, reason=data["reason"],
                                  k=change.k, expected_state=data["state"])
        except ChangedMeanwhile:
            stale = True  # the change as it stands now is shown again
        except ValidationError as error:
            _refused(request, error)
        else:
            messages.success(request, _panel_saved(change))
            return redirect("panel", slug=slug)
    return render(request, "calibration/confirm_panel.html", {
        "study": study, "ranking": ranking, "change": change, "reason": data["reason"], "stale": stale})


def _panel_saved(change: selectors.PanelChange) -> str:
    said = [f"Retained panel saved: {', '.join(change.retain)}."]
    if change.becomes_retained:
        said.append(f"Now retained: {', '.join(change.becomes_retained)}.")
    if change.stops_retained:
        said.append(f"No longer retained: {', '.join(change.stops_retained)}.")
    if change.decided_out:
        said.append(f"Not retained (were undecided): {', '.join(change.decided_out)}.")
    if change.unchanged:
        said.append("Nobody's retained state changed.")
    return " ".join(said)


# --- an item's history ---------------------------------------------------------------------------------------------

HISTORY_PAGE_SIZE = 100  # changes per page of an item's history


@admin_only
@require_safe
def item_history(request: AuthedRequest, round_id: int, turn_id: int) -> HttpResponse:
    """Every recorded change of the judgments on one item of a round (everyone's and gold), newest first: who,
    when, through which path, old → new. Admins only: it names coders and models."""
    round_ = get_object_or_404(Round.objects.select_related("study"), pk=round_id)
    turn = annotation_selectors.round_item_turn(round=round_, turn_id=turn_id)
    if turn is None:
        raise Http404("that turn is not an item of this round")
    page = Paginator(annotation_selectors.item_history(round=round_, turn=turn), HISTORY_PAGE_SIZE).get_page(
        request.GET.get("page"))
    return render(request, "calibration/item_history.html", {
        "round": round_, "turn": turn, "page": page, "rows": selectors.item_history_rows(revisions=page)})
