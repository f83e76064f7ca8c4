"""Admin pages of the calibration protocol, and the reviewer's feedback page. Each parses a form, calls one
service from ``annotation.calibration`` and redirects (or swaps a fragment for htmx)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.html import escape
from django.views.decorators.http import require_POST

from annotation import calibration, services
from annotation.models import AttributeDefinition, ReviewerAlert, Round, Study, StudyMember
from benchmark.models import ModelResponse, Turn


def _admin(request: HttpRequest) -> None:
    if not calibration.is_study_admin(request.user):
        raise PermissionDenied("study admins only")


def _errors(request: HttpRequest, error: ValidationError) -> None:
    for message in error.messages:
        messages.error(request, message)


@login_required
def study_dashboard(request: HttpRequest, slug: str) -> HttpResponse:
    _admin(request)
    study = get_object_or_404(Study.objects.select_related("schema"), slug=slug)
    rounds = list(study.rounds.prefetch_related("items").order_by("kind", "number"))
    return render(request, "annotation/study.html", {
        "study": study, "rounds": rounds,
        "members": study.members.select_related("user").order_by("role", "alias", "user__username"),
        "alerts": ReviewerAlert.objects.filter(study=study, resolved_at__isnull=True).select_related("reviewer"),
        "next_calibration": max([r.number for r in rounds if r.kind == "calibration"], default=0) + 1,
        "time_on_task": calibration.time_on_task(study=study),
    })


@login_required
@require_POST
def round_action(request: HttpRequest, slug: str) -> HttpResponse:
    """One endpoint for the dashboard's round buttons: create, sample, set by hand, open, close, reopen."""
    _admin(request)
    study = get_object_or_404(Study, slug=slug)
    action = request.POST.get("action", "")
    try:
        if action == "create":
            number = int(request.POST.get("number", "1"))
            services.round_ensure(study=study, kind=Round.Kind.CALIBRATION, number=number, by=request.user)
        else:
            round_ = get_object_or_404(Round, pk=request.POST.get("round"), study=study)
            if action == "sample":
                calibration.calibration_set_sample(round=round_, by=request.user,
                                                   n=int(request.POST.get("n") or 10),
                                                   seed=int(request.POST.get("seed") or 0))
            elif action == "refs":
                calibration.calibration_set_from_refs(round=round_, by=request.user, refs=request.POST.get("refs", ""))
            elif action == "open":
                calibration.calibration_round_open(round=round_, by=request.user)
            elif action == "close":
                services.round_close(round=round_, by=request.user)
                messages.success(request, f"{round_.name} closed; a metrics run was started and the workshop is open.")
            elif action == "reopen":
                calibration.round_reopen(round=round_, by=request.user, reason=request.POST.get("reason", ""))
            else:
                raise ValidationError(f"unknown action {action!r}")
    except ValueError:
        messages.error(request, "numbers only for the set size, seed and round number")
    except ValidationError as error:
        _errors(request, error)
    return redirect("study-dashboard", slug=slug)


@login_required
@require_POST
def main_round_assign(request: HttpRequest, slug: str) -> HttpResponse:
    _admin(request)
    study = get_object_or_404(Study, slug=slug)
    try:
        summary = calibration.main_round_assign(
            study=study, by=request.user, overlap=float(request.POST.get("overlap") or 0.1),
            check_items=int(request.POST.get("check_items") or 0), seed=int(request.POST.get("seed") or 0))
        messages.success(request, f"{summary['assignments']} assignments for {summary['reviewers']} reviewers "
                                  f"({summary['double_coded_conversations']} double-coded conversations, "
                                  f"{summary['check_items']} check items).")
    except ValueError:
        messages.error(request, "overlap is a fraction (e.g. 0.1); check items and seed are whole numbers")
    except ValidationError as error:
        _errors(request, error)
    return redirect("study-dashboard", slug=slug)


@login_required
@require_POST
def alert_resolve(request: HttpRequest, slug: str, alert_id: int) -> HttpResponse:
    _admin(request)
    alert = get_object_or_404(ReviewerAlert, pk=alert_id, study__slug=slug)
    calibration.alert_resolve(alert=alert, by=request.user)
    return redirect("study-dashboard", slug=slug)


def _item_from_post(request: HttpRequest, round_: Round):
    attribute = get_object_or_404(AttributeDefinition, schema_id=round_.study.schema_id,
                                  code=request.POST.get("attribute", ""))
    turn = get_object_or_404(Turn, pk=request.POST.get("turn"), round_items__round=round_)
    response_id = request.POST.get("response") or None
    response = get_object_or_404(ModelResponse, pk=response_id, turn=turn) if response_id else None
    return attribute, turn, response


@login_required
def consensus(request: HttpRequest, round_id: int) -> HttpResponse:
    _admin(request)
    round_ = get_object_or_404(Round.objects.select_related("study"), pk=round_id, kind=Round.Kind.CALIBRATION)
    if request.method == "POST":
        try:
            if request.POST.get("action") == "accept-unanimous":
                n = calibration.gold_accept_unanimous(round=round_, by=request.user)
                messages.success(request, f"{n} unanimous items recorded as gold.")
            else:
                attribute, turn, response = _item_from_post(request, round_)
                experts = StudyMember.objects.filter(study=round_.study, role=StudyMember.Role.EXPERT,
                                                     user__username__in=request.POST.getlist("agreed"))
                calibration.gold_record(round=round_, by=request.user, attribute=attribute, turn=turn,
                                        response=response, score=int(request.POST.get("score", "")),
                                        agreed_by=[m.user for m in experts], note=request.POST.get("note", ""))
        except ValueError:
            messages.error(request, "choose the gold value")
        except ValidationError as error:
            _errors(request, error)
        return redirect("consensus", round_id=round_.pk)
    items = calibration.consensus_items(round=round_)
    show = request.GET.get("show", "open")
    shown = [i for i in items if (i.gold is None if show == "open" else not i.unanimous if show == "differ" else True)]
    experts = sorted(items[0].expert_scores) if items else []
    return render(request, "annotation/consensus.html", {
        "round": round_, "items": shown, "experts": experts, "show": show, "total": len(items),
        "recorded": sum(1 for i in items if i.gold is not None),
        "differ": sum(1 for i in items if not i.unanimous),
    })


@login_required
def workshop(request: HttpRequest, round_id: int) -> HttpResponse:
    _admin(request)
    round_ = get_object_or_404(Round.objects.select_related("study__schema"), pk=round_id)
    if round_.status != Round.Status.CLOSED:
        messages.error(request, "the workshop opens when the round is closed")
        return redirect("study-dashboard", slug=round_.study.slug)
    filters = {k: request.GET.get(k, "") for k in ("attribute", "dataset", "reviewer")}
    reveal = request.GET.get("reveal") == "1"
    items = calibration.workshop_items(round=round_, reveal=reveal, **filters)
    return render(request, "annotation/workshop.html", {
        "round": round_, "items": items[:200], "n_items": len(items), "filters": filters, "reveal": reveal,
        "attributes": round_.study.schema.attributes.order_by("position"),
        "datasets": sorted({i.turn.conversation.dataset.name for i in items}),
        "aliases": sorted(calibration.reviewer_aliases(study=round_.study, reveal=reveal).values()),
    })


@login_required
@require_POST
def workshop_note(request: HttpRequest, round_id: int) -> HttpResponse:
    _admin(request)
    round_ = get_object_or_404(Round, pk=round_id)
    try:
        attribute, turn, response = _item_from_post(request, round_)
        calibration.workshop_note_save(round=round_, by=request.user, attribute=attribute, turn=turn,
                                       response=response, text=request.POST.get("text", ""))
    except ValidationError as error:
        return HttpResponse(f'<span class="state state-error">{escape("; ".join(error.messages))}</span>',
                            status=422)
    return HttpResponse('<span class="state state-saved">Note saved</span>')


@login_required
def memo(request: HttpRequest, round_id: int, fmt: str) -> HttpResponse:
    _admin(request)
    round_ = get_object_or_404(Round.objects.select_related("study"), pk=round_id)
    markdown = calibration.calibration_memo_markdown(round=round_)
    if fmt == "md":
        response = HttpResponse(markdown, content_type="text/markdown; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="memo-{round_.study.slug}-{round_.name}.md"'
        return response
    return render(request, "annotation/memo.html", {"round": round_, "markdown": markdown,
                                                    "notes": round_.workshop_notes.select_related(
                                                        "attribute", "turn__conversation__dataset", "response",
                                                        "written_by").order_by("attribute__position", "turn_id")})


@login_required
def feedback(request: HttpRequest, round_id: int) -> HttpResponse:
    round_ = get_object_or_404(Round.objects.select_related("study"), pk=round_id)
    if not StudyMember.objects.filter(study=round_.study, user=request.user).exists():
        raise Http404("not a member of this study")
    try:
        result = calibration.reviewer_feedback(round=round_, user=request.user)
    except ValidationError as error:
        return render(request, "annotation/feedback.html", {"round": round_, "error": "; ".join(error.messages)})
    return render(request, "annotation/feedback.html", {"round": round_, "f": result})


@login_required
def panel(request: HttpRequest, slug: str) -> HttpResponse:
    _admin(request)
    study = get_object_or_404(Study, slug=slug)
    if request.method == "POST":
        try:
            calibration.panel_retain(study=study, by=request.user, usernames=request.POST.getlist("retain"),
                                     reason=request.POST.get("reason", ""),
                                     k=int(request.POST.get("k") or 0) or None)
            messages.success(request, "Retained panel saved.")
        except ValueError:
            messages.error(request, "k must be a whole number")
        except ValidationError as error:
            _errors(request, error)
        return redirect("panel", slug=slug)
    ranking = calibration.panel_ranking(study=study)
    k = int(request.GET.get("k") or 6) if (request.GET.get("k") or "6").isdigit() else 6
    if ranking:
        # Tick the retained panel once chosen; until then suggest the top k.
        chosen = any(row["retained"] for row in ranking["rows"])
        for row in ranking["rows"]:
            row["preselect"] = row["retained"] if chosen else row["position"] <= k
    return render(request, "annotation/panel.html", {"study": study, "ranking": ranking, "k": k})
