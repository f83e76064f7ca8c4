"""Each study's blinding key (``Study.blinding_key``): the key of its reviewers' response handles and of the order
in which they see a turn's responses, in place of SECRET_KEY (issue 31 item 3).

Every way of creating a study gives it 32 random bytes of its own; two studies name the same response
differently for the same coder; a study migrated from SECRET_KEY-keyed handles (annotation migration 0016) keeps
exactly the handles it had; the key is rotated only between rounds (service, command, settings page), recorded
in the audit trail without the key; and the key appears on no page, export, API answer or audit event (a study
archive carries it, deliberately: tests/study_archive/test_archive.py round-trips it)."""

from __future__ import annotations

import hashlib
import importlib
import io
import json
import re

import pytest
from django.apps import apps as django_apps
from django.conf import settings
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.management import CommandError, call_command
from django.db import IntegrityError, transaction
from django.test import override_settings
from django.urls import reverse
from django.utils.crypto import salted_hmac

from annotation import services
from annotation.models import Assignment, Judgment, Round, RoundItem, Schema, Study
from annotation.selectors import response_by_handle, response_handle, turn_view
from audit.models import AuditEvent
from benchmark import conversation_ingest
from benchmark.demo import demo_records
from benchmark.models import ModelResponse, Turn
from tests import form_fuzz
from tests.factories import RoundFactory, StudyMemberFactory
from tests.scenarios import MODELS, as_true, code_round
from tests.study_archive.test_archive import checksummed

pytestmark = pytest.mark.django_db

KEY = re.compile(r"[0-9a-f]{64}")
migration_0016 = importlib.import_module("annotation.migrations.0016_study_blinding_key")


def old_handle(*, coder_id: int, turn_id: int, response_id: int) -> str:
    """A handle as response_handle made it before study keys: salted_hmac keyed from SECRET_KEY."""
    return salted_hmac("annotation.response-handle", f"{coder_id}:{turn_id}:{response_id}",
                       algorithm="sha256").hexdigest()[:16]


def handles_on_page(client, round_: Round, position: int) -> list[str]:
    page = client.get(reverse("turn", args=[round_.pk, position])).content.decode()
    return re.findall(r'<section class="unit response-card" data-response="([^"]+)"', page)


@pytest.fixture
def coded(admin_user, reviewer, expert):
    """The study ``keyed`` on the demo conversations: a calibration round of all four turns coded by the reviewer
    (open), the reviewer and the expert members."""
    conversation_ingest.conversations_import(rows=enumerate(demo_records(), start=1))
    study = services.study_create(slug="keyed", name="Keyed", schema=Schema.objects.get(slug="cab-v1"),
                                  model_slots=list(MODELS), by=admin_user)
    for user, role in ((reviewer, "reviewer"), (expert, "expert")):
        services.study_member_add(study=study, user=user, role=role, by=admin_user)
    round_ = Round.objects.create(study=study, kind="calibration", number=1, status="open")
    turns = list(Turn.objects.filter(index=1).order_by("conversation__external_id"))
    RoundItem.objects.bulk_create(RoundItem(round=round_, turn=t, position=p) for p, t in enumerate(turns, 1))
    services.assignments_ensure(round=round_, coder=reviewer, turns=turns, by=None)
    code_round(round_, reviewer, as_true)
    return Round.objects.select_related("study").get(pk=round_.pk)


def close(round_: Round) -> None:
    Round.objects.filter(pk=round_.pk).update(status="closed")
    round_.refresh_from_db()


# --- a key of its own -------------------------------------------------------------------------------------------


def test_every_way_of_creating_a_study_gives_it_random_bytes_of_its_own(client, admin_user, as_token):
    schema = Schema.objects.get(slug="cab-v1")
    services.study_create(slug="by-service", name="s", schema=schema, model_slots=["GPT"], by=None)
    client.force_login(admin_user)
    page = client.post(reverse("study-create"), {"slug": "by-page", "name": "p", "description": "",
                                                 "schema": schema.pk, "model_slots_text": "GPT",
                                                 "check_threshold": "0.7", "check_min_items": "20"})
    assert page.status_code == 302, page.content.decode()[:2000]
    call_command("create_study", "--slug", "by-command", "--schema", "cab-v1", "--model-slot", "GPT",
                 stdout=io.StringIO())
    token = as_token(admin_user, scopes=["setup"])
    body = {"slug": "by-api", "schema": "cab-v1", "model_slots": ["GPT"]}
    chosen = token.post("/api/v1/studies/", body | {"blinding_key": "00" * 32}, format="json")
    assert chosen.status_code == 400 and "blinding_key: unknown field" in chosen.json()["detail"]  # the server makes it
    api = token.post("/api/v1/studies/", body, format="json")
    assert api.status_code == 201, api.content
    assert "blinding_key" not in api.json()
    call_command("generate_synthetic", "--conversations", "6", "--reviewers", "2", "--experts", "1", "--seed", "2",
                 "--calibration-rounds", "1", "--calibration-turns", "2", "--panel-size", "2", "--slug",
                 "by-synthetic", stdout=io.StringIO())
    call_command("load_demo", "--quiet")
    keys = dict(Study.objects.values_list("slug", "blinding_key"))
    assert {"by-service", "by-page", "by-command", "by-api", "by-synthetic", "demo"} <= set(keys)
    assert all(KEY.fullmatch(key) for key in keys.values()), keys
    assert len(set(keys.values())) == len(keys), "every study has its own key"
    derived = migration_0016.key_from_secret(settings.SECRET_KEY)
    assert derived not in keys.values(), "a new study's key owes nothing to SECRET_KEY"


def test_the_database_refuses_a_study_without_a_whole_key(coded):
    for bad in ("", "ab" * 31, "AB" * 32, "zz" * 32, "ab" * 31 + "a\n"):
        with pytest.raises(IntegrityError), transaction.atomic():
            Study.objects.filter(pk=coded.study_id).update(blinding_key=bad)


def test_two_studies_name_the_same_response_differently_for_the_same_coder(reviewer, response):
    first, second = RoundFactory(status="open"), RoundFactory(status="open")
    handles = set()
    for round_ in (first, second):
        StudyMemberFactory(study=round_.study, user=reviewer)
        handles.add(response_handle(study=round_.study, coder_id=reviewer.pk, turn_id=response.turn_id,
                                    response_id=response.pk))
    assert len(handles) == 2
    # A handle of one study's page names nothing in the other.
    for round_ in (first, second):
        other = next(h for h in handles if h != response_handle(study=round_.study, coder_id=reviewer.pk,
                                                                 turn_id=response.turn_id, response_id=response.pk))
        assert response_by_handle(study=round_.study, coder_id=reviewer.pk, turn=response.turn, handle=other) is None


def test_handles_do_not_change_with_secret_key(client, coded, reviewer):
    client.force_login(reviewer)
    before = handles_on_page(client, coded, 1)
    assert len(before) == len(MODELS)
    for key in ("a-wholly-different-secret-key-" + "q" * 30, "x" * 60):
        with override_settings(SECRET_KEY=key, SECRET_KEY_FALLBACKS=[]):
            client.force_login(reviewer)  # the session was signed with the other key
            assert handles_on_page(client, coded, 1) == before
            view = turn_view(round_id=coded.pk, user=reviewer, position=1)
            assert [card.handle for card in view.cards] == before


# --- studies from before: the migration --------------------------------------------------------------------------


def test_a_migrated_study_keeps_the_handles_secret_key_gave_it(client, coded, reviewer):
    """Migration 0016 stores the key salted_hmac derived from SECRET_KEY: every handle, the turn page's order and
    a save from a page opened before the upgrade stay as they were; SECRET_KEY no longer matters afterwards."""
    site_key = "the-site-secret-key-before-the-upgrade-" + "k7" * 10
    responses = list(ModelResponse.objects.filter(turn__round_items__round=coded).order_by("pk"))
    with override_settings(SECRET_KEY=site_key):
        before = {r.pk: old_handle(coder_id=reviewer.pk, turn_id=r.turn_id, response_id=r.pk) for r in responses}
        migration_0016.forward(django_apps, None)
    study = Study.objects.get(pk=coded.study_id)
    assert study.blinding_key == hashlib.sha256(b"annotation.response-handle" + site_key.encode()).hexdigest()
    assert {r.pk: response_handle(study=study, coder_id=reviewer.pk, turn_id=r.turn_id, response_id=r.pk)
            for r in responses} == before
    # Many coders, turns and responses, not only these.
    with override_settings(SECRET_KEY=site_key):
        for coder_id, turn_id, response_id in ((1, 1, 1), (7, 2_000_000, 9), (2**31 - 1, 5, 2**31 - 2)):
            assert response_handle(study=study, coder_id=coder_id, turn_id=turn_id,
                                   response_id=response_id) == old_handle(coder_id=coder_id, turn_id=turn_id,
                                                                          response_id=response_id)
    # The page shows the old handles, in their order, and a save by an old handle lands on its response.
    client.force_login(reviewer)
    turn = Assignment.objects.get(round=coded, coder=reviewer, position=1).turn
    of_turn = sorted((r for r in responses if r.turn_id == turn.pk), key=lambda r: before[r.pk])
    assert handles_on_page(client, coded, 1) == [before[r.pk] for r in of_turn]
    target = of_turn[-1]
    saved = client.post(reverse("judgment-save", args=[coded.pk, 1]), {
        "attribute": "AUR", "response": before[target.pk], "score": "2", "version": "1"})
    assert saved.status_code == 200, saved.content
    assert Judgment.objects.get(round=coded, coder=reviewer, response=target, attribute__code="AUR").score == 2


# --- rotation ----------------------------------------------------------------------------------------------------


def test_rotation_is_refused_while_a_round_is_open_and_changes_nothing(coded, admin_user):
    before = form_fuzz.fingerprint()
    with pytest.raises(ValidationError, match="only between rounds: close calibration-1 first"):
        services.study_blinding_key_rotate(study=coded.study, by=admin_user)
    assert form_fuzz.fingerprint() == before
    with pytest.raises(CommandError, match="only between rounds: close calibration-1 first"):
        call_command("rotate_blinding_key", "keyed", stdout=io.StringIO())
    assert form_fuzz.fingerprint() == before


def test_rotation_between_rounds_changes_every_handle_and_records_no_key(coded, admin_user, reviewer):
    study = coded.study
    old_key = study.blinding_key
    responses = list(ModelResponse.objects.filter(turn__round_items__round=coded))
    old = {r.pk: response_handle(study=study, coder_id=reviewer.pk, turn_id=r.turn_id, response_id=r.pk)
           for r in responses}
    close(coded)
    services.study_blinding_key_rotate(study=study, by=admin_user)
    assert KEY.fullmatch(study.blinding_key) and study.blinding_key != old_key
    assert Study.objects.get(pk=study.pk).blinding_key == study.blinding_key
    new = {r.pk: response_handle(study=study, coder_id=reviewer.pk, turn_id=r.turn_id, response_id=r.pk)
           for r in responses}
    assert all(new[pk] != old[pk] for pk in old)
    for response in responses:  # an old page's handle names nothing now
        assert response_by_handle(study=study, coder_id=reviewer.pk, turn=response.turn, handle=old[response.pk]) \
            is None
    event = AuditEvent.objects.get(action="study.blinding_rotate")
    assert (event.actor, event.study_id, event.study_slug, event.target, event.data) == (
        admin_user, study.pk, "keyed", "study:keyed", {})
    # The command does the same, as the system.
    out = io.StringIO()
    call_command("rotate_blinding_key", "keyed", stdout=out)
    assert "keyed has a new blinding key" in out.getvalue()
    third = Study.objects.get(pk=study.pk).blinding_key
    assert KEY.fullmatch(third) and third not in (old_key, study.blinding_key)
    assert list(AuditEvent.objects.filter(action="study.blinding_rotate").order_by("pk")
                .values_list("actor", flat=True)) == [admin_user.pk, None]
    with pytest.raises(CommandError, match="no study with slug 'nope'"):
        call_command("rotate_blinding_key", "nope")


def test_only_study_admins_rotate(client, coded, reviewer, researcher):
    close(coded)
    key = coded.study.blinding_key
    for user in (reviewer, researcher):
        with pytest.raises(PermissionDenied):
            services.study_blinding_key_rotate(study=coded.study, by=user)
        client.force_login(user)
        assert client.post(reverse("study-blinding-rotate", args=["keyed"])).status_code == 403
    assert Study.objects.get(pk=coded.study_id).blinding_key == key
    assert not AuditEvent.objects.filter(action="study.blinding_rotate").exists()


def test_the_settings_page_rotates_between_rounds_and_says_why_not_during_one(client, coded, admin_user):
    client.force_login(admin_user)
    settings_url = reverse("study-settings", args=["keyed"])
    assert b"Rotate the blinding key" in client.get(settings_url).content
    key = coded.study.blinding_key
    refused = client.post(reverse("study-blinding-rotate", args=["keyed"]), follow=True)
    assert refused.redirect_chain == [(settings_url, 302)]
    assert "the blinding key changes only between rounds: close calibration-1 first" in refused.content.decode()
    assert Study.objects.get(pk=coded.study_id).blinding_key == key
    close(coded)
    rotated = client.post(reverse("study-blinding-rotate", args=["keyed"]), follow=True)
    assert "Study keyed has a new blinding key" in rotated.content.decode()
    assert Study.objects.get(pk=coded.study_id).blinding_key != key
    assert client.get(reverse("study-blinding-rotate", args=["keyed"])).status_code == 405


def test_the_settings_page_asks_to_rotate_a_key_still_derived_from_secret_key(client, coded, admin_user):
    client.force_login(admin_user)
    settings_url = reverse("study-settings", args=["keyed"])
    assert b'id="blinding-key-derived"' not in client.get(settings_url).content, "a random key needs no rotation"
    site_key = "the-site-secret-key-before-the-upgrade-" + "k7" * 10
    with override_settings(SECRET_KEY=site_key):
        migration_0016.forward(django_apps, None)
        client.force_login(admin_user)  # a session is signed with SECRET_KEY
        assert b'id="blinding-key-derived"' in client.get(settings_url).content
    with override_settings(SECRET_KEY="a-newer-site-key-" + "z9" * 30, SECRET_KEY_FALLBACKS=[site_key]):
        client.force_login(admin_user)
        assert b'id="blinding-key-derived"' in client.get(settings_url).content, "derived from a fallback key too"
    close(coded)
    client.force_login(admin_user)
    client.post(reverse("study-blinding-rotate", args=["keyed"]))
    with override_settings(SECRET_KEY=site_key):
        client.force_login(admin_user)
        assert b'id="blinding-key-derived"' not in client.get(settings_url).content


# --- study archives: the key goes with the study ----------------------------------------------------------------


def archive_lines(slug: str) -> list[str]:
    out = io.StringIO()
    call_command("export_study", slug, stdout=out)
    return out.getvalue().splitlines()


def with_study_record(lines: list[str], change) -> list[str]:
    records = [json.loads(line) for line in lines]
    for record in records:
        if record["type"] == "study":
            change(record)
    return checksummed([json.dumps(record) for record in records])  # the archive's checksum made again


def test_an_archive_carries_the_key_and_an_older_one_gets_a_new_key(coded, reviewer, tmp_path):
    """The key is the study's state: a study restored where its material and people are keeps its handles. An
    archive written before studies had keys imports with a key of its own; a malformed key is refused by line."""
    study = coded.study
    lines = archive_lines("keyed")
    assert [json.loads(line)["blinding_key"] for line in lines if json.loads(line)["type"] == "study"] == [
        study.blinding_key]
    path = tmp_path / "keyed.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    call_command("import_study", str(path), "--as", "keyed-copy", stdout=io.StringIO())
    copy = Study.objects.get(slug="keyed-copy")
    assert copy.blinding_key == study.blinding_key
    response = ModelResponse.objects.filter(turn__round_items__round=coded).first()
    assert response_handle(study=copy, coder_id=reviewer.pk, turn_id=response.turn_id, response_id=response.pk) == \
        response_handle(study=study, coder_id=reviewer.pk, turn_id=response.turn_id, response_id=response.pk)

    path.write_text("\n".join(with_study_record(lines, lambda r: r.pop("blinding_key"))) + "\n", encoding="utf-8")
    call_command("import_study", str(path), "--as", "keyed-older", stdout=io.StringIO())
    older = Study.objects.get(slug="keyed-older").blinding_key
    assert KEY.fullmatch(older) and older != study.blinding_key

    path.write_text("\n".join(with_study_record(lines, lambda r: r.update(blinding_key="not-hex"))) + "\n",
                    encoding="utf-8")
    with pytest.raises(CommandError, match=r"line \d+ \(study\): study blinding_key: must be 64 lowercase "
                                           r"hexadecimal digits"):
        call_command("import_study", str(path), "--as", "keyed-bad", stdout=io.StringIO())
    assert not Study.objects.filter(slug="keyed-bad").exists()


# --- never shown -------------------------------------------------------------------------------------------------


def test_the_key_appears_on_no_page_export_api_answer_or_audit_event(client, coded, admin_user, reviewer,
                                                                      researcher, as_token):
    keys = [coded.study.blinding_key]
    close(coded)
    services.study_blinding_key_rotate(study=coded.study, by=admin_user)
    keys.append(Study.objects.get(pk=coded.study_id).blinding_key)
    Round.objects.filter(pk=coded.pk).update(status="open")
    texts: dict[str, str] = {}

    def fetch(name: str, answer) -> None:
        assert answer.status_code == 200, (name, answer.status_code)
        body = b"".join(answer.streaming_content) if answer.streaming else answer.content
        texts[name] = body.decode()

    client.force_login(reviewer)
    fetch("queue", client.get(reverse("queue", args=[coded.pk])))
    fetch("turn page", client.get(reverse("turn", args=[coded.pk, 1])))
    reviewer_api = as_token(reviewer)
    for name, args in (("api-study", ["keyed"]), ("api-studies", []), ("api-judgments", ["keyed"]),
                       ("api-rounds", ["keyed"]), ("api-assignments", ["keyed", "calibration-1"])):
        fetch(f"reviewer {name}", reviewer_api.get(reverse(name, args=args)))
    for user in (admin_user, researcher):
        client.force_login(user)
        for fmt in ("csv", "jsonl"):
            fetch(f"{user} judgments.{fmt}", client.get(reverse("export-judgments", args=["keyed", fmt])))
            fetch(f"{user} items.{fmt}", client.get(reverse("export-items", args=["keyed", fmt])))
        fetch(f"{user} exports", client.get(reverse("exports")))
        api = as_token(user)
        for name, args in (("api-study", ["keyed"]), ("api-studies", []), ("api-judgments", ["keyed"]),
                           ("api-rounds", ["keyed"]), ("api-export-judgments", ["keyed", "csv"]),
                           ("api-export-judgments", ["keyed", "jsonl"])):
            fetch(f"{user} {name} {args}", api.get(reverse(name, args=args)))
    client.force_login(admin_user)
    fetch("dashboard", client.get(reverse("study-dashboard", args=["keyed"])))
    fetch("settings page", client.get(reverse("study-settings", args=["keyed"])))
    fetch("data page", client.get(reverse("study-data", args=["keyed"])))
    fetch("django admin", client.get(reverse("admin:annotation_study_change", args=[coded.study_id])))
    texts["audit"] = json.dumps([[e.action, e.target, e.study_slug, e.data]
                                 for e in AuditEvent.objects.filter(study_id=coded.study_id)])
    assert "study.blinding_rotate" in texts["audit"]
    assert texts[f"{admin_user} judgments.csv"].count("\n") > len(MODELS) * 4, "the exports hold the judgments"
    for name, text in texts.items():
        for key in keys:
            assert key not in text.lower(), f"the key is on the {name}"
