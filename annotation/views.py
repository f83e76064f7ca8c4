"""Pages for coders: their rounds, their queue and the turn view. Views parse input, call one service and
render; every lookup is scoped to the signed-in coder, so other people's work is unreachable by URL."""

from __future__ import annotations

import json
from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.db import connection
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from access.checks import is_study_admin, require_staff, user_roles
from access.requests import AuthedRequest
from annotation import selectors, services
from annotation.apis import judgments_download
from annotation.forms import CompleteForm, JudgmentSaveForm, TimeForm, error_text
from annotation.models import Assignment, Round, Schema, SpanSubcategory
from annotation.services import StaleJudgmentError


@login_required
def home(request: AuthedRequest) -> HttpResponse:
    return render(
        request,
        "home.html",
        {
            "studies": selectors.studies_visible_to(user=request.user),
            "rounds": selectors.coder_rounds(user=request.user),
            "feedback_rounds": selectors.coder_feedback_rounds(user=request.user),
            "is_admin": is_study_admin(request.user),
            "roles": user_roles(user=request.user),
        },
    )


@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return JsonResponse({"status": "ok", "database": connection.vendor})


@login_required
def queue(request: AuthedRequest, round_id: int) -> HttpResponse:
    round_ = get_object_or_404(Round.objects.select_related("study"), pk=round_id)
    assignments = selectors.coder_queue(round=round_, user=request.user)
    if not assignments:
        raise Http404("no assignments for you in this round")
    done = sum(1 for a in assignments if a.completed_at)
    return render(request, "annotation/queue.html", {"round": round_, "assignments": assignments, "done": done})


@login_required
def turn(request: AuthedRequest, round_id: int, position: int) -> HttpResponse:
    view = selectors.turn_view(round_id=round_id, user=request.user, position=position)
    if view is None:
        raise Http404("no such assignment for you")
    return render(request, "annotation/turn.html", {"v": view, "editable": view.round.status == Round.Status.OPEN})


@login_required
@require_POST
def judgment_save(request: AuthedRequest, round_id: int, position: int) -> HttpResponse:
    assignment = get_object_or_404(
        selectors.coder_assignments(user=request.user).select_related("round__study", "turn"), round_id=round_id,
        position=position,
    )
    form = JudgmentSaveForm(request.POST, assignment=assignment)
    context: dict[str, Any] = {"form_id": request.POST.get("form_id", "")[:100]}
    if not form.is_valid():
        context |= {"state": "error", "message": error_text(form)}
        return render(request, "annotation/turn.html#save-result", context, status=422)
    data = form.cleaned_data
    try:
        judgment = services.judgment_save(
            round=assignment.round, by=request.user, attribute=data["attribute"], turn=assignment.turn,
            response=data["response"], score=data["score"], instance_count=data["instance_count"],
            spans=data["spans"], expected_version=data["version"] or 0,
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
def complete(request: AuthedRequest, round_id: int, position: int) -> HttpResponse:
    assignment = get_object_or_404(
        selectors.coder_assignments(user=request.user).select_related("round"), round_id=round_id, position=position
    )
    form = CompleteForm(request.POST)
    form.is_valid()  # a checkbox: anything but a true value is "not confirmed"
    try:
        check = services.assignment_complete(
            assignment=assignment, by=request.user, confirm=bool(form.cleaned_data.get("confirm"))
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
def time_on_task(request: AuthedRequest, round_id: int, position: int) -> HttpResponse:
    assignment = get_object_or_404(selectors.coder_assignments(user=request.user), round_id=round_id,
                                   position=position)
    form = TimeForm(request.POST)
    if not form.is_valid():
        return HttpResponse(f"seconds {form.errors['seconds'][0]}", status=422, content_type="text/plain")
    services.assignment_time_add(assignment=assignment, by=request.user, seconds=form.cleaned_data["seconds"])
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


@login_required
@require_GET
def judgments_file(request: AuthedRequest, slug: str, fmt: str) -> StreamingHttpResponse:
    """A study's judgments in the long format, for admins and researchers (the exports page links here)."""
    require_staff(request.user)
    study = selectors.studies_for_exports(user=request.user).filter(slug=slug).first()
    if study is None:
        raise Http404(f"no study {slug!r}")
    return judgments_download(study, fmt)
