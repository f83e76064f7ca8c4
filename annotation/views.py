"""Pages for coders: their rounds, their queue and the turn view. Views parse input, call one service and
render; every lookup is scoped to the signed-in coder, so other people's work is unreachable by URL."""

from __future__ import annotations

import json

from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.db import connection
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from annotation import calibration, selectors, services
from annotation.models import Assignment, AttributeDefinition, Round, Schema, SpanSubcategory
from annotation.services import SpanInput, StaleJudgmentError
from benchmark.models import ModelResponse


@login_required
def home(request: HttpRequest) -> HttpResponse:
    return render(
        request,
        "home.html",
        {
            "studies": selectors.studies_visible_to(user=request.user),
            "rounds": selectors.coder_rounds(user=request.user),
            "feedback_rounds": selectors.coder_feedback_rounds(user=request.user),
            "is_admin": calibration.is_study_admin(request.user),
            "roles": selectors.user_roles(user=request.user),
        },
    )


@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return JsonResponse({"status": "ok", "database": connection.vendor})


@login_required
def queue(request: HttpRequest, round_id: int) -> HttpResponse:
    round_ = get_object_or_404(Round.objects.select_related("study"), pk=round_id)
    assignments = selectors.coder_queue(round=round_, user=request.user)
    if not assignments:
        raise Http404("no assignments for you in this round")
    done = sum(1 for a in assignments if a.completed_at)
    return render(request, "annotation/queue.html", {"round": round_, "assignments": assignments, "done": done})


@login_required
def turn(request: HttpRequest, round_id: int, position: int) -> HttpResponse:
    view = selectors.turn_view(round_id=round_id, user=request.user, position=position)
    if view is None:
        raise Http404("no such assignment for you")
    return render(request, "annotation/turn.html", {"v": view, "editable": view.round.status == Round.Status.OPEN})


def _int_or_none(value: str | None) -> int | None:
    if value in (None, ""):
        return None
    try:
        return int(value)
    except ValueError as error:
        raise ValidationError(f"{value!r} is not a whole number") from error


def _spans(value: str | None) -> list[SpanInput]:
    try:
        items = json.loads(value or "[]")
        return [SpanInput(int(s["start"]), int(s["end"]), str(s["subcategory"])) for s in items]
    except (ValueError, TypeError, KeyError) as error:
        raise ValidationError("spans must be a JSON list of {start, end, subcategory}") from error


@login_required
@require_POST
def judgment_save(request: HttpRequest, round_id: int, position: int) -> HttpResponse:
    assignment = get_object_or_404(
        Assignment.objects.select_related("round__study", "turn"), round_id=round_id, coder=request.user,
        position=position,
    )
    form_id = request.POST.get("form_id", "")
    attribute = AttributeDefinition.objects.filter(
        schema_id=assignment.round.study.schema_id, code=request.POST.get("attribute", "")
    ).first()
    response = None
    context = {"form_id": form_id}
    try:
        if attribute is None:
            raise ValidationError("unknown attribute")
        response_id = _int_or_none(request.POST.get("response"))
        if response_id is not None:
            response = ModelResponse.objects.filter(pk=response_id, turn=assignment.turn).first()
            if response is None:
                raise ValidationError("that response is not part of this turn")
        judgment = services.judgment_save(
            round=assignment.round, by=request.user, attribute=attribute, turn=assignment.turn, response=response,
            score=_int_or_none(request.POST.get("score")),
            instance_count=_int_or_none(request.POST.get("instance_count")),
            spans=_spans(request.POST.get("spans")) if attribute.subcategories.exists() else None,
            expected_version=_int_or_none(request.POST.get("version")) or 0,
        )
    except StaleJudgmentError as stale:
        current = stale.current
        spans = [{"start": s.start, "end": s.end, "subcategory": s.subcategory.slug}
                 for s in current.spans.select_related("subcategory")]
        context |= {"state": "stale", "judgment": current, "spans_json": json.dumps(spans)}
        return render(request, "annotation/turn.html#save-result", context, status=409)
    except ValidationError as error:
        context |= {"state": "error", "message": "; ".join(error.messages)}
        return render(request, "annotation/turn.html#save-result", context, status=422)
    context |= {"state": "saved", "judgment": judgment}
    return render(request, "annotation/turn.html#save-result", context)


@login_required
@require_POST
def complete(request: HttpRequest, round_id: int, position: int) -> HttpResponse:
    assignment = get_object_or_404(
        Assignment.objects.select_related("round"), round_id=round_id, coder=request.user, position=position
    )
    try:
        check = services.assignment_complete(
            assignment=assignment, by=request.user, confirm=request.POST.get("confirm") == "1"
        )
    except ValidationError as error:
        return render(request, "annotation/turn.html#complete-result", {"error": "; ".join(error.messages)},
                      status=422)
    if check.completed:
        following = (
            Assignment.objects.filter(round_id=round_id, coder=request.user, position__gt=position)
            .order_by("position").values_list("position", flat=True).first()
        )
        target = (reverse("turn", args=[round_id, following]) if following is not None
                  else reverse("queue", args=[round_id]))
        if request.htmx:
            response = HttpResponse(status=204)
            response["HX-Redirect"] = target
            return response
        return redirect(target)
    return render(request, "annotation/turn.html#complete-result", {"check": check, "position": position,
                                                                     "round_id": round_id})


@login_required
@require_POST
def time_on_task(request: HttpRequest, round_id: int, position: int) -> HttpResponse:
    assignment = get_object_or_404(Assignment, round_id=round_id, coder=request.user, position=position)
    try:
        seconds = int(request.POST.get("seconds", "0"))
    except ValueError:
        return HttpResponse("seconds must be a whole number", status=422)
    services.assignment_time_add(assignment=assignment, by=request.user, seconds=seconds)
    return HttpResponse(status=204)


_UNDERLINE = {"solid": "solid", "dashed": "dashed", "dotted": "dotted", "double": "double"}


@require_GET
def schema_spans_css(request: HttpRequest, slug: str) -> HttpResponse:
    """Highlight colours and underline styles of a schema's span subcategories, as a stylesheet (the CSP allows
    no inline styles, and colours are data)."""
    schema = get_object_or_404(Schema, slug=slug)
    rules = []
    for sub in SpanSubcategory.objects.filter(schema=schema).order_by("attribute__position", "position"):
        colour = sub.colour if len(sub.colour) == 7 and sub.colour.startswith("#") else "#888888"
        red, green, blue = (int(colour[i:i + 2], 16) for i in (1, 3, 5))
        style = _UNDERLINE.get(sub.style, "solid")
        rules.append(
            f".sw-{sub.slug}{{background:{colour};border-bottom:3px {style} #222}}\n"
            f".hl-{sub.slug}{{background-color:rgba({red},{green},{blue},.30);"
            f"border-bottom:3px {style} {colour}}}"
        )
    response = HttpResponse("\n".join(rules) + "\n", content_type="text/css; charset=utf-8")
    response["Cache-Control"] = "public, max-age=300"
    return response
