"""The HTML form endpoints of annotation/views.py fuzzed the way schemathesis fuzzes the API: the reviewer's
autosave, complete, time on task and item note, and the admin's new study, study settings, members, archive and
conversation upload get hostile field values (huge and negative numbers, floats, Infinity/NaN, NUL bytes, long
strings, nested JSON, wrong types, missing and repeated fields; tests/form_fuzz.py). Never a 5xx, and a refused post
changes nothing."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.test import Client
from django.urls import reverse
from hypothesis import strategies as st

from annotation import selectors
from annotation.models import Assignment, Judgment, Round, SpanSubcategory, StudyMember
from tests import form_fuzz
from tests.form_fuzz import drive, field_values, form_posts, said, sweep

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def demo_round_id(shared_state):
    with shared_state():
        call_command("load_demo", "--quiet")
        yield Round.objects.get(study__slug="demo", kind="calibration", number=1).pk


@pytest.fixture
def demo(db, demo_round_id) -> Round:
    return Round.objects.select_related("study__schema").get(pk=demo_round_id)


def signed_in(username: str) -> Client:
    from django.contrib.auth import get_user_model

    client = Client()
    client.force_login(get_user_model().objects.get(username=username))
    return client


def _valid_saves(assignment: Assignment, handles: list[str]) -> list[dict]:
    """One valid autosave per attribute (and response), with a span where the attribute takes spans."""
    bodies = []
    for attribute in assignment.round.study.schema.attributes.prefetch_related("subcategories"):
        slugs = [s.slug for s in attribute.subcategories.all()]
        for handle in handles if attribute.unit == "response" else [""]:
            body = {"form_id": "f1", "attribute": attribute.code, "response": handle,
                    "score": str(attribute.scale_max), "version": CURRENT}
            if attribute.has_instance_count:
                body["instance_count"] = "1"
            if slugs:
                body["spans"] = json.dumps([{"start": 0, "end": 4, "subcategory": slugs[0]}])
            bodies.append(body)
    return bodies


CURRENT = "(the judgment's current version)"


def test_autosave_never_fails_and_a_refused_save_changes_nothing(demo):
    assignment = Assignment.objects.select_related("turn", "round__study__schema").get(
        round=demo, coder__username="demo-reviewer", position=1)
    by_handle = {selectors.response_handle(study=assignment.round.study, coder_id=assignment.coder_id,
                                           turn_id=assignment.turn_id, response_id=r.pk): r.pk
                 for r in assignment.turn.responses.all()}
    handles = list(by_handle)
    codes = list(demo.study.schema.attributes.values_list("code", flat=True))
    subcategories = list(SpanSubcategory.objects.filter(schema=demo.study.schema).values_list("slug", flat=True))
    client = signed_in("demo-reviewer")
    url = reverse("judgment-save", args=[demo.pk, 1])

    def post(body: dict):
        if body.get("version") == CURRENT:  # a save from an up-to-date page
            judgment = Judgment.objects.filter(round=demo, coder=assignment.coder, is_gold=False, turn=assignment.turn,
                                               attribute__code=body.get("attribute"),
                                               response_id=by_handle.get(body.get("response", ""))).first()
            body["version"] = str(judgment.version if judgment else 0)
        return client.post(url, body)

    bodies = form_posts(_valid_saves(assignment, handles), {
        "form_id": field_values(),
        "attribute": field_values(codes),
        "response": field_values(handles),
        "score": field_values(["0", "1", "2", "3", "4", "5"], form_fuzz.numbers()),
        "instance_count": field_values(["0", "1", "2"], form_fuzz.numbers()),
        "spans": field_values(["[]"], form_fuzz.span_lists(subcategories)),
        "version": field_values(["0", "1", "2"], form_fuzz.numbers()),
    })
    statuses = drive(post, bodies, accepted=lambda r: r.status_code == 200, examples=60)
    counted = next(body for body in _valid_saves(assignment, handles) if "instance_count" in body and "spans" in body)
    sweep(post, counted, ["score", "instance_count", "version", "response"], accepted=lambda r: r.status_code == 200)
    # 401: a body whose stray ``coder`` names another account than the signed-in one (a page another account
    # opened: annotation.views._page_of_another_account); it changes nothing, as every refusal.
    assert {code for code in statuses if isinstance(code, int)} <= {200, 401, 409, 422}, statuses
    assert statuses.get("accepted") and statuses.get("refused"), statuses


def test_complete_and_time_on_task_never_fail_and_refusals_change_nothing(demo):
    client = signed_in("demo-reviewer")
    complete = drive(lambda body: client.post(reverse("turn-complete", args=[demo.pk, 2]), body),
                     form_posts([{}, {"confirm": "on"}], {"confirm": field_values(["on", "true", "1"])}),
                     accepted=lambda r: r.status_code in (204, 302), examples=30)
    assert complete.get("refused"), complete  # position 2 is not coded yet
    time = drive(lambda body: client.post(reverse("turn-time", args=[demo.pk, 1]), body),
                 form_posts([{"seconds": "5"}], {"seconds": field_values(["1", "5", "120"], form_fuzz.numbers())}),
                 accepted=lambda r: r.status_code == 204, examples=40)
    assert time.get("accepted") and time.get("refused"), time
    sweep(lambda body: client.post(reverse("turn-time", args=[demo.pk, 1]), body), {"seconds": "5"}, ["seconds"],
          accepted=lambda r: r.status_code == 204)


@pytest.mark.parametrize("name", ["judgment-save", "turn-complete", "turn-time"])
@pytest.mark.parametrize("position", [0, 2**31, 10**20, 10**30])
def test_reviewer_endpoints_with_out_of_range_ids_are_404(demo, name, position):
    client = signed_in("demo-reviewer")
    before = form_fuzz.fingerprint()
    assert client.post(reverse(name, args=[position, 1]), {"seconds": "5"}).status_code == 404
    assert client.post(reverse(name, args=[demo.pk, position]), {"seconds": "5"}).status_code == 404
    assert form_fuzz.fingerprint() == before


def _admin_said_done(response) -> bool:
    return bool(said(response)[0])


def test_study_settings_never_fail_and_a_refused_change_changes_nothing(demo):
    client = signed_in("demo-admin")
    url = reverse("study-settings", args=[demo.study.slug])
    valid = {"name": "Renamed", "description": "about", "show_model_names": "", "show_therapist_reference": "on",
             "check_threshold": "0.7", "check_min_items": "3", "experts_see_consensus": "on"}
    bodies = form_posts([valid, {**valid, "name": "Demo", "show_model_names": "on"}], {
        "name": field_values(["Demo", "Renamed"]),
        "description": field_values(["", "about"]),
        "show_model_names": field_values(["on", ""]),
        "show_therapist_reference": field_values(["on", ""]),
        "check_threshold": field_values(["0.5", "1", "0"], form_fuzz.numbers()),
        "check_min_items": field_values(["1", "3"], form_fuzz.numbers()),
        "experts_see_consensus": field_values(["on", ""]),
    })
    statuses = drive(lambda body: client.post(url, body), bodies, accepted=_admin_said_done, examples=50)
    sweep(lambda body: client.post(url, body), valid, ["check_threshold", "check_min_items"], accepted=_admin_said_done)
    assert statuses.get("accepted") and statuses.get("refused"), statuses


def test_member_add_remove_and_archive_never_fail_and_refusals_change_nothing(demo):
    client = signed_in("demo-admin")
    slug = demo.study.slug
    usernames = ["demo-reviewer", "demo-expert", "demo-researcher", "demo-admin", "demo-panel-1", "nobody"]
    drive(lambda body: client.post(reverse("member-add", args=[slug]), body),
          form_posts([{"username": name, "role": role} for name in usernames for role in ("reviewer", "expert")],
                     {"username": field_values(usernames),
                      "role": field_values(["reviewer", "expert", "admin"])}),
          accepted=_admin_said_done, examples=40)
    members = list(StudyMember.objects.filter(study=demo.study).values_list("pk", flat=True))
    ids = st.sampled_from([*members, 0, 2**31, 10**20])
    drive(lambda body: client.post(f"/studies/{body.get('slug', slug)}/members/{body['id']}/remove", {}),
          st.fixed_dictionaries({"id": ids}, optional={"slug": st.sampled_from(["other", "x" * 300])}),
          accepted=_admin_said_done, examples=20)
    before = form_fuzz.fingerprint()
    response = client.post(reverse("study-archive", args=[slug]), {"status": "archived"})
    assert response.status_code == 302 and said(response)[1]  # calibration-1 is open: refused
    assert form_fuzz.fingerprint() == before


@pytest.mark.parametrize(("label", "content"), form_fuzz.hostile_conversation_files(),
                         ids=[label for label, _ in form_fuzz.hostile_conversation_files()])
def test_a_hostile_conversation_upload_is_refused_or_imported_never_a_500(demo, label, content):
    client = signed_in("demo-admin")
    before = form_fuzz.fingerprint()
    response = client.post(reverse("conversations-upload", args=[demo.study.slug]),
                           {"file": SimpleUploadedFile("c.jsonl", content)})
    assert response.status_code in (200, 302)
    if response.status_code == 200:  # the page again, with the errors
        assert form_fuzz.fingerprint() == before
        assert b'role="alert"' in response.content or b'class="error"' in response.content, label


@pytest.mark.parametrize("charset", ["utf-16", "utf-32", "x-unknown", "latin-1"])
def test_a_form_posted_in_another_charset_is_never_a_500(demo, charset):
    client = signed_in("demo-reviewer")
    before = form_fuzz.fingerprint()
    for name in ("judgment-save", "turn-time", "turn-complete"):
        body = "seconds=5&attribute=U1&score=1".encode("utf-16")  # sent as is: the bytes need not match the charset
        response = client.generic("POST", reverse(name, args=[demo.pk, 1]), body,
                                  content_type=f"application/x-www-form-urlencoded; charset={charset}")
        assert response.status_code < 500, (name, response.status_code)
    assert form_fuzz.fingerprint() == before


def test_item_note_never_fails_and_a_refused_one_changes_nothing(demo):
    """The coder's comment and flags on an item (annotation.views.note): 200 "Saved", 422 "Not saved: why" or 409
    "Not saved: changed in another tab" (a base note that is not the stored one)."""
    client = signed_in("demo-reviewer")
    url = reverse("turn-note", args=[demo.pk, 1])
    flags = field_values(["unsure", "discuss"], st.sampled_from(["x" * 101, "\x00", "unsure"]))
    statuses = drive(lambda body: client.post(url, body),
                     form_posts([{"comment": "look again", "flags": ["unsure"]}, {"comment": "", "flags": []}],
                                {"comment": field_values(["", "why"]), "flags": flags,
                                 "base_comment": field_values(["", "look again"]), "base_flags": flags}),
                     accepted=lambda response: response.status_code == 200, examples=40)
    # 401: a stray ``coder`` naming another account, as for the autosave.
    assert {code for code in statuses if isinstance(code, int)} <= {200, 401, 409, 422}, statuses
    assert statuses.get("accepted") and statuses.get("refused"), statuses


def test_study_create_never_fails_and_a_refused_one_changes_nothing(demo):
    client = signed_in("demo-admin")
    schemas = [str(pk) for pk in demo.study.schema.__class__.objects.values_list("pk", flat=True)]
    slugs = iter(f"fuzz-{n}" for n in range(1000))

    def post(body: dict):
        if body.get("slug") == "(new)":
            body["slug"] = next(slugs)
        return client.post(reverse("study-create"), body)

    valid = {"slug": "(new)", "name": "Fuzz", "description": "", "schema": schemas[0],
             "model_slots_text": "GPT, Claude", "check_threshold": "0.7", "check_min_items": "3"}
    statuses = drive(post, form_posts([valid, {**valid, "show_model_names": "on", "session_order": "blinded"}], {
        "slug": field_values(["(new)", "demo", "new"], st.sampled_from([s for s, _ in form_fuzz.REFUSED_SLUGS])),
        "name": field_values(["Fuzz"]), "description": field_values(["", "about"]),
        "schema": field_values(schemas, form_fuzz.numbers()),
        "model_slots_text": field_values(["GPT", "GPT, GPT", " , ", "x" * 51]),
        "check_threshold": field_values(["0", "1", "0.5"], form_fuzz.numbers()),
        "check_min_items": field_values(["1", "3"], form_fuzz.numbers()),
        "method_labels": field_values(["blinded", "named"]), "session_order": field_values(["shown", "blinded"]),
    }), accepted=lambda response: response.status_code == 302, examples=40)
    assert statuses.get("accepted") and statuses.get("refused"), statuses
    assert signed_in("demo-reviewer").post(reverse("study-create"), valid | {"slug": "fuzz-x"}).status_code == 403
