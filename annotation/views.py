"""Pages for coders (their rounds, their queue and the turn view) and the admins' study set-up (create a study,
upload its conversations, see its data, members, archive). Views parse input with a form, call one service and
render; every coder lookup is scoped to the signed-in coder, so other people's work is unreachable by URL."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from functools import wraps
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import connection
from django.db.models import Exists, OuterRef
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse, StreamingHttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import get_object_or_404, redirect, render
from django.template.loader import get_template, render_to_string
from django.urls import NoReverseMatch, reverse
from django.utils.html import format_html
from django.views.decorators.http import require_http_methods, require_POST, require_safe
from django_redis import get_redis_connection

from access.authed_request import AuthedRequest
from access.checks import is_study_admin, require_staff, require_study_admin, user_roles
from annotation import item_export, long_format, rules, selectors, services
from annotation.apis import judgments_download
from annotation.forms import (
    AssignmentNoteForm,
    CompleteForm,
    JudgmentSaveForm,
    MemberForm,
    QueuePageForm,
    StudyDataFilter,
    StudyForm,
    StudySettingsForm,
    TimeForm,
    UploadForm,
    error_text,
)
from annotation.kinds import conversation_check, kind_of
from annotation.models import Assignment, Judgment, Round, Schema, SpanSubcategory, Study, StudyMember
from annotation.services import ItemLockedError, StaleJudgmentError, StaleNoteError
from benchmark import conversation_ingest
from benchmark.models import TOPICS, Conversation
from benchmark.serializers import ConversationIn, conversation_example
from common.errors import RowErrors
from common.outage import RETRY_AFTER_SECONDS, logged, unreachable
from common.uploads import size_said


@require_safe
@login_required
def home(request: AuthedRequest) -> HttpResponse:
    """A reviewer's work and feedback; in the studies where the user is an expert, their gold-panel work and, when
    the study allows it, the consensus screens of its closed calibration rounds instead (an expert's "feedback"
    would compare them with gold they decided themselves)."""
    rounds = selectors.coder_rounds(user=request.user)
    experts = selectors.expert_studies(user=request.user, rounds=rounds)
    expert_of = {e.study.pk for e in experts}
    studies, counts_conversations = selectors.home_studies(user=request.user)
    return render(
        request,
        "home.html",
        {
            "studies": studies,
            "counts_conversations": counts_conversations,
            "rounds": [r for r in rounds if r["round__study_id"] not in expert_of],
            "feedback_rounds": [r for r in selectors.coder_feedback_rounds(user=request.user)
                                if r.study_id not in expert_of],
            "expert_studies": experts,
            "is_admin": is_study_admin(request.user),
            "roles": user_roles(user=request.user),
        },
    )


def _reachable(check: Callable[[], object]) -> str:
    """"ok", or "unreachable (the error's class)" for an outage (common.outage); any other error is raised."""
    try:
        check()
    except Exception as error:
        if unreachable(error) is None:
            raise
        return f"unreachable ({type(error).__name__})"
    return "ok"


def _database_check() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")


@require_safe
def healthz(request: HttpRequest) -> JsonResponse:
    """Each dependency's state (the orchestrator's probe). Without the database nothing can be served: 503 with
    Retry-After. Without Redis pages, saves and the API go on (sessions are in the database, rate limits are let
    through uncounted, metric runs wait queued and are sent when it is back): 200, ``"status": "degraded"``, so a
    probe does not restart a web server that is still serving. Redis is checked only where it is configured."""
    checks = {"database": _reachable(_database_check)}
    if settings.CELERY_BROKER_URL.startswith("redis"):
        checks["redis"] = _reachable(lambda: get_redis_connection("default").ping())
    serving = checks["database"] == "ok"
    status = "unavailable" if not serving else "ok" if all(s == "ok" for s in checks.values()) else "degraded"
    response = JsonResponse({"status": status, "database": connection.vendor, "checks": checks},
                            status=200 if serving else 503)
    if not serving:
        response["Retry-After"] = str(RETRY_AFTER_SECONDS)
        logged(request, response, said=f"the database is {checks['database']}")
    return response


@login_required
def queue(request: AuthedRequest, round_id: int) -> HttpResponse:
    """One page of the coder's queue (``?start=POSITION``), with the whole queue's progress and a link to the first
    item still to do: a page of a queue of 14,000 items costs what a page of a queue of 10 does."""
    form = QueuePageForm(request.GET)
    start = (form.cleaned_data["start"] if form.is_valid() else None) or 0
    page = selectors.coder_queue_page(round_id=round_id, user=request.user, start=start)
    if page is None:
        raise Http404("no assignments for you in this round")
    return render(request, "annotation/queue.html", {
        "page": page, "round": page.round,
        # A blinded session order: no conversation id, no turn index (it dates the session) in the list either.
        "order_hidden": selectors.session_order_hidden(user=request.user, study=page.round.study)})


@login_required
def turn(request: AuthedRequest, round_id: int, position: int) -> HttpResponse:
    view = selectors.turn_view(round_id=round_id, user=request.user, position=position)
    if view is None:
        raise Http404("no such assignment for you")
    editable = view.round.status == Round.Status.OPEN and not view.assignment.feedback_locked
    try:
        note_url = reverse("turn-note", args=[round_id, position])
    except NoReverseMatch:  # the comment and flags endpoint is optional for the page
        note_url = ""
    page = {"v": view, "editable": editable, "note_url": note_url, "flag_choices": list(Assignment.FLAGS.items()),
            # One source of truth for the instance-count bound: the page checks what the server's rule checks
            # (on a kind's own coding page too).
            "max_instance_count": rules.MAX_INSTANCE_COUNT}
    kind = kind_of(view.study)
    # A kind whose assignments are rated on a page of its own (a session-rated kind: the turn's session).
    own_page = kind.coding_page(view, request.user)
    if own_page is not None:
        return render(request, own_page.template, page | own_page.context)
    # What the kind adds to the turn page (a longitudinal history above the turn, a session checklist below it).
    kind_turn = kind.turn_page(view, request.user)
    _, digest = coding_parts(study=view.study, editable=editable)
    parts_url = f"{reverse('coding-parts', args=[round_id])}?editable={int(editable)}&v={digest}"
    return render(request, "annotation/turn.html", page | {
        "parts_url": parts_url,
        "kind_turn": kind_turn, **(kind_turn.context if kind_turn is not None else {}),
    })


# What a coding page's requests carry to name the account that opened the page (its data-coder).
PAGE_CODER = "coder"


def _page_of_another_account(request: HttpRequest) -> bool:
    """Whether a coding page's request comes from a page another account opened: the browser's session is no
    longer the page's (another account signed in in another tab). A page names its account with every change it
    sends (``PAGE_CODER``); its changes must never land in the other account's judgments."""
    claimed = request.POST.get(PAGE_CODER)
    return claimed not in (None, "") and claimed != str(request.user.pk)


def _signed_in_or_401(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """For the endpoints the page's scripts call: a request without a session answers 401, which the page turns
    into a sign-in dialog that keeps the pending changes (a redirect to the login page would be followed by the
    browser and its page taken for an answer). So does a request of a page another account opened: its changes
    wait until the page's own account signs in again."""

    @wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not request.user.is_authenticated:
            return HttpResponse("Your session has ended: sign in again.", status=401, content_type="text/plain")
        if _page_of_another_account(request):
            return HttpResponse("This page was opened by another account: sign in again as that account to save.",
                                status=401, content_type="text/plain")
        return view(request, *args, **kwargs)

    return wrapped


@_signed_in_or_401
@require_POST
def judgment_save(request: AuthedRequest, round_id: int, position: int) -> HttpResponse:
    assignment = selectors.coder_assignment(user=request.user, round_id=round_id, position=position)
    if assignment is None:
        raise Http404("no such assignment for you")
    form = JudgmentSaveForm(request.POST, assignment=assignment)
    context: dict[str, Any] = {"form_id": request.POST.get("form_id", "")[:100]}
    if not form.is_valid():
        context |= {"state": "refused", "message": error_text(form)}
        return _save_answer(context, status=422)
    data = form.cleaned_data
    try:
        saved = services.item_judgment_save(
            assignment=assignment, by=request.user, attribute=data["attribute"], turn=data["turn"],
            session=data["session"], response=data["response"], score=data["score"],
            instance_count=data["instance_count"],
            spans=data["spans"], expected_version=data["version"] or 0,
        )
    except StaleJudgmentError as stale:
        # A judgment gone since (purged) is shown as not coded: version 0, no score, no spans.
        context |= {"state": "stale", **_judgment_shown(stale.current)}
        return _save_answer(context, status=409)
    except ItemLockedError as locked:
        # The round closed (or the item was locked by feedback) under the page: the change is not saved, and the
        # form shows the judgment as it stays, so what the page shows is what the round keeps.
        context |= {"state": "locked", "message": "; ".join(locked.messages), **_judgment_shown(locked.current)}
        return _save_answer(context, status=422)
    except (ValidationError, PermissionDenied) as error:
        # A refusal, said in the attribute; 401/403 are kept for "sign in again" (session gone, CSRF).
        message = "; ".join(error.messages) if isinstance(error, ValidationError) else str(error)
        context |= {"state": "refused", "message": message}
        return _save_answer(context, status=422)
    # A completed turn the save left short is no longer completed: the page says what it wants again.
    context |= {"state": "saved", "judgment": saved.judgment,
                "reopened_json": json.dumps(saved.reopened, ensure_ascii=False) if saved.reopened else ""}
    return _save_answer(context)


def _judgment_shown(current: Judgment | None) -> dict[str, Any]:
    """What a save's answer carries of the coder's judgment as the server has it, for the page to show in place of
    a change not saved (None: not coded, or gone)."""
    spans = [] if current is None else [{"start": s.start, "end": s.end, "subcategory": s.subcategory.slug}
                                        for s in current.spans.select_related("subcategory")]
    return {"judgment": current, "gone": current is None, "spans_json": json.dumps(spans)}


def _save_answer(context: dict[str, Any], *, status: int = 200) -> HttpResponse:
    """The autosave's answer, the turn page's ``save-result`` partial: rendered without the request's context
    (it shows none of it), so no context processor runs on every autosave."""
    return HttpResponse(get_template("annotation/turn.html#save-result").render(context), status=status)


@_signed_in_or_401
@require_POST
def complete(request: AuthedRequest, round_id: int, position: int) -> HttpResponse:
    """Complete the turn and go on to the coder's next one (or the queue). The next one is read before the
    completion's commit: a read after it that met an outage would answer 503 "Nothing was changed" for a turn that
    was completed (common.outage)."""
    assignment = get_object_or_404(
        selectors.coder_assignments(user=request.user).select_related("round"), round_id=round_id, position=position
    )
    following = (
        Assignment.objects.filter(round_id=round_id, coder=request.user, position__gt=position)
        .order_by("position").values_list("position", flat=True).first()
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
        target = (reverse("turn", args=[round_id, following]) if following is not None
                  else reverse("queue", args=[round_id]))
        if request.htmx:
            response = HttpResponse(status=204)
            response["HX-Redirect"] = target
            return response
        return redirect(target)
    return render(request, "annotation/turn.html#complete-result", {"check": check, "position": position,
                                                                     "round_id": round_id})


@_signed_in_or_401
@require_POST
def time_on_task(request: AuthedRequest, round_id: int, position: int) -> HttpResponse:
    assignment = get_object_or_404(selectors.coder_assignments(user=request.user), round_id=round_id,
                                   position=position)
    form = TimeForm(request.POST)
    if not form.is_valid():
        return HttpResponse(f"seconds {form.errors['seconds'][0]}", status=422, content_type="text/plain")
    try:
        services.assignment_time_add(assignment=assignment, by=request.user, seconds=form.cleaned_data["seconds"])
    except ValidationError as error:
        return HttpResponse("; ".join(error.messages), status=409, content_type="text/plain")
    return HttpResponse(status=204)


@_signed_in_or_401
@require_POST
def note(request: AuthedRequest, round_id: int, position: int) -> HttpResponse:
    """The coder's comment and flags on one item (for the admins' workshop and exports). Answers with the state to
    show beside them: "Saved", "Not saved: why" (422), or, when the note changed since the page had it (another
    tab), "Not saved" with the newer note for the page to show (409); 401 without a session, as the autosave."""
    assignment = get_object_or_404(selectors.coder_assignments(user=request.user).select_related("round__study"),
                                   round_id=round_id, position=position)
    form = AssignmentNoteForm(request.POST)
    if not form.is_valid():
        return _note_state(refused=error_text(form))
    try:
        services.assignment_note_save(assignment=assignment, by=request.user, comment=form.cleaned_data["comment"],
                                      flags=form.cleaned_data["flags"],
                                      base=(form.cleaned_data["base_comment"], form.cleaned_data["base_flags"]))
    except ValidationError as error:
        return _note_state(refused="; ".join(error.messages))
    except StaleNoteError as stale:
        return _note_state(stale=stale)
    return _note_state()


def _note_state(*, refused: str = "", stale: StaleNoteError | None = None) -> HttpResponse:
    if stale is not None:
        return HttpResponse(format_html(
            '<span class="state state-stale" data-state="stale" data-comment="{}" data-flags="{}">Not saved: changed '
            "in another tab or device — showing the newer note</span>", stale.comment, " ".join(stale.flags)),
            status=409)
    if refused:
        return HttpResponse(format_html('<span class="state state-refused" data-state="refused">Not saved: {}</span>',
                                        refused), status=422)
    return HttpResponse('<span class="state state-saved" data-state="saved">Saved</span>')


def coding_parts(*, study: Study, editable: bool) -> tuple[str, str]:
    """The parts of a study's turn pages that depend on its schema alone: each attribute's ``<template>``, the
    definitions and anchors, the subcategory palette (or, read-only, the subcategory names); and a digest of them.
    Rendered once per schema and process (``SchemaAttributes.fragments``). A turn page loads them with a script
    (``coding_parts_script``) named with the digest, which the browser keeps from one page to the next: each page
    then carries only its own turn (these parts were half of its bytes, compressed again on every page: issue
    34)."""
    schema = selectors.schema_attributes(study=study)
    key = f"coding-parts|{editable}"
    html = schema.fragments.get(key)
    if html is None:
        attributes, subcategories = selectors.coding_page_schema(study=study)
        html = render_to_string("annotation/_coding_parts.html", {
            "v": {"attributes": attributes, "subcategories": subcategories}, "editable": editable})
        schema.fragments[key] = html
        schema.fragments[f"{key}|digest"] = hashlib.sha256(html.encode()).hexdigest()[:16]
    return html, schema.fragments[f"{key}|digest"]


@_signed_in_or_401
@require_safe
def coding_parts_script(request: AuthedRequest, round_id: int) -> HttpResponse:
    """``coding_parts`` of the round's study for a coder of the round (``?editable=1``: with the palette), as a
    script that puts them into the page's ``#coding-parts``. A script, not a fetch: the page names it right after
    that element, so the parts are in place, from the browser's cache after the first page, before the page's
    modules run, as when they were part of the page. The browser keeps it for a year when the URL's digest
    (``v``) is that of the parts, so a changed schema is a new URL; under another digest, not at all."""
    mine = selectors.coder_assignments(user=request.user).filter(round_id=OuterRef("pk"))
    round_ = Round.objects.select_related("study__schema").filter(Exists(mine), pk=round_id).first()
    if round_ is None:
        raise Http404("no assignments for you in this round")
    html, digest = coding_parts(study=round_.study, editable=request.GET.get("editable") == "1")
    response = HttpResponse(f'document.getElementById("coding-parts").innerHTML = {json.dumps(html)};\n',
                            content_type="text/javascript; charset=utf-8")
    response["Cache-Control"] = ("private, max-age=31536000, immutable" if request.GET.get("v") == digest
                                 else "private, no-cache")
    return response


_UNDERLINE = {"solid": "solid", "dashed": "dashed", "dotted": "dotted", "double": "double"}


@require_safe
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
@require_safe
def judgments_file(request: AuthedRequest, slug: str, fmt: str) -> HttpResponseBase:
    """A study's judgments in the long format, for admins and researchers (the exports page links here)."""
    require_staff(request.user)
    study = selectors.studies_for_exports(user=request.user).filter(slug=slug).first()
    if study is None:
        raise Http404(f"no study {slug!r}")
    return judgments_download(request, study, fmt)


@login_required
@require_safe
def items_file(request: AuthedRequest, slug: str, fmt: str) -> StreamingHttpResponse:
    """A study's items as coded (time, completion, the coders' comments and flags), for admins and researchers."""
    require_staff(request.user)
    study = selectors.studies_for_exports(user=request.user).filter(slug=slug).first()
    if study is None:
        raise Http404(f"no study {slug!r}")
    return StreamingHttpResponse(
        item_export.WRITERS[fmt](study=study), content_type=long_format.CONTENT_TYPES[fmt],
        headers={"Content-Disposition": f'attachment; filename="{study.slug}-items.{fmt}"'},
    )


# --- study set-up (admins) -----------------------------------------------------------------------------------


def _admin(request: AuthedRequest) -> None:
    require_study_admin(request.user)


def _say(request: HttpRequest, error: ValidationError | RowErrors) -> None:
    for message in (error.summary().splitlines() if isinstance(error, RowErrors) else error.messages):
        messages.error(request, message)


@login_required
@require_http_methods(["GET", "HEAD", "POST"])
def study_create(request: AuthedRequest) -> HttpResponse:
    _admin(request)
    form = StudyForm(request.POST or None, initial={"schema": Schema.objects.filter(slug="cab-v1").first(),
                                                    "model_slots_text": "GPT, Claude, Gemini, Llama, Qwen"})
    study = form.create(by=request.user) if request.method == "POST" and form.is_valid() else None
    if study is not None:
        messages.success(request, f"Study {study.slug} created: upload its conversations, then add people.")
        return redirect("study-data", slug=study.slug)
    return render(request, "annotation/study_form.html", {"form": form})


@login_required
@require_http_methods(["GET", "HEAD", "POST"])
def study_settings(request: AuthedRequest, slug: str) -> HttpResponse:
    _admin(request)
    study = get_object_or_404(Study, slug=slug)
    form = StudySettingsForm(request.POST or None, instance=study)  # the service compares with the stored values
    if request.method == "POST" and form.is_valid():
        try:
            changed = services.study_settings_update(study=study, by=request.user, **form.cleaned_data)
        except ValidationError as error:  # another admin changed the same setting meanwhile
            _say(request, error)
            return render(request, "annotation/study_form.html", _settings_page(form, study))
        labels = [str(form.fields[name].label) for name in changed]
        messages.success(request, f"Settings of {study.slug} saved; changed: {', '.join(labels)}." if changed
                         else f"Settings of {study.slug}: nothing changed.")
        return redirect("study-dashboard", slug=slug)
    return render(request, "annotation/study_form.html", _settings_page(form, study))


def _settings_page(form: StudySettingsForm, study: Study) -> dict[str, Any]:
    return {"form": form, "study": study, "key_from_site_key": selectors.blinding_key_from_site_key(study=study)}


@login_required
@require_POST
def study_blinding_rotate(request: AuthedRequest, slug: str) -> HttpResponse:
    _admin(request)
    study = get_object_or_404(Study, slug=slug)
    try:
        services.study_blinding_key_rotate(study=study, by=request.user)
        messages.success(request, f"Study {study.slug} has a new blinding key: every reviewer's response handles and "
                                  "the order of each turn's responses changed.")
    except ValidationError as error:
        _say(request, error)
    return redirect("study-settings", slug=slug)


@login_required
@require_http_methods(["GET", "HEAD", "POST"])
def conversations_upload(request: AuthedRequest, slug: str) -> HttpResponse:
    _admin(request)
    study = get_object_or_404(Study, slug=slug)
    form = UploadForm(request.POST or None, request.FILES or None)
    errors: list[str] = []
    if request.method == "POST" and form.is_valid():
        try:
            summary = conversation_ingest.conversations_upload(stream=form.cleaned_data["file"], study=study,
                                                               model_slots=study.model_slots, by=request.user,
                                                               problems=conversation_check(study))
        except RowErrors as error:
            errors = error.summary(limit=200).splitlines()
        else:
            back = summary.turns_back_in_queues  # a new response to a turn coders had completed: README
            messages.success(request, f"{summary.conversations_created} conversations, {summary.turns_created} turns "
                                      f"and {summary.responses_created} responses imported; "
                                      f"{summary.conversations_unchanged} unchanged, "
                                      f"{summary.conversations_updated} updated."
                                      + (f" {back} completed turn(s) of coders went back to their queues, each with "
                                         "a new response to code." if back else ""))
            return redirect("study-data", slug=slug)
    return render(request, "annotation/upload.html", {
        "study": study, "form": form, "errors": errors,
        "topics": TOPICS, "kinds": Conversation.Kind.values, "complexities": Conversation.Complexity.values,
        "kind_help": ConversationIn().fields["kind"].help_text,
        "complexity_help": ConversationIn().fields["complexity"].help_text,
        "example": conversation_example(model_slots=study.model_slots),
        "max_size": size_said(settings.CONVERSATIONS_UPLOAD_MAX_SIZE),
    })


@login_required
@require_safe
def study_data(request: AuthedRequest, slug: str) -> HttpResponse:
    _admin(request)
    study = get_object_or_404(Study.objects.select_related("schema"), slug=slug)
    filters = StudyDataFilter(request.GET)
    page = selectors.study_conversations(study=study, **(filters.cleaned_data if filters.is_valid() else {}))
    return render(request, "annotation/study_data.html", {
        "study": study, "filters": filters, "page": page, "datasets": selectors.study_datasets(study=study)})


@login_required
@require_POST
def study_archive(request: AuthedRequest, slug: str) -> HttpResponse:
    _admin(request)
    study = get_object_or_404(Study, slug=slug)
    try:
        services.study_archive(study=study, by=request.user)
        messages.success(request, f"Study {study.slug} is archived; its data and history stay.")
    except ValidationError as error:
        _say(request, error)
    return redirect("study-dashboard", slug=slug)


@login_required
@require_POST
def member_add(request: AuthedRequest, slug: str) -> HttpResponse:
    _admin(request)
    study = get_object_or_404(Study, slug=slug)
    form = MemberForm(request.POST)
    if form.is_valid():
        try:
            member = services.study_member_add(study=study, user=form.cleaned_data["username"],
                                               role=form.cleaned_data["role"], by=request.user)
        except ValidationError as refused:  # an archived study
            messages.error(request, " ".join(refused.messages))
            return redirect("study-dashboard", slug=slug)
        messages.success(request, f"{member.user.get_username()} is a{'n' if member.role == 'expert' else ''} "
                                  f"{member.role} of {study.slug}" + (f" ({member.alias})." if member.alias else "."))
    else:
        for field, errors in form.errors.items():
            messages.error(request, f"{field}: {' '.join(str(e) for e in errors)}")
    return redirect("study-dashboard", slug=slug)


@login_required
@require_POST
def member_remove(request: AuthedRequest, slug: str, member_id: int) -> HttpResponse:
    _admin(request)
    member = get_object_or_404(StudyMember.objects.select_related("user", "study"), pk=member_id, study__slug=slug)
    try:
        services.study_member_remove(member=member, by=request.user)
        messages.success(request, f"{member.user.get_username()} is no longer a member of {slug}: their pages and "
                                  "saves stop now; their judgments stay.")
    except ValidationError as error:
        _say(request, error)
    return redirect("study-dashboard", slug=slug)
