"""The Django admin's annotation pages: what they refuse to change by hand (annotation/admin.py)."""

from __future__ import annotations

import threading
import time
from unittest import mock

import pytest
from django.test import Client
from django.urls import reverse

from annotation import admin as admin_pages
from annotation import services as annotation_services
from annotation.models import AttributeDefinition, ReviewerAlert, Round, Study, StudyMember
from tests.admin_form import form_fields
from tests.factories import (
    AssignmentFactory,
    JudgmentFactory,
    RoundFactory,
    RoundItemFactory,
    StudyFactory,
    StudyMemberFactory,
    TurnFactory,
    UserFactory,
)
from tests.form_fuzz import fingerprint
from tests.races import together

pytestmark = pytest.mark.django_db


def test_an_alert_is_neither_added_nor_resolved_by_hand(client, admin_user, reviewer):
    """Alerts are raised by the check items and resolved on the study's page (annotation.services.alert_resolve,
    audited); before, an add form posted empty answered 500 (the alert's figures are read-only there)."""
    alert = ReviewerAlert.objects.create(study=StudyFactory(), reviewer=reviewer, agreement=0.5, threshold=0.7,
                                         n_items=4)
    client.force_login(admin_user)
    before = fingerprint()
    assert client.post(reverse("admin:annotation_revieweralert_add")).status_code == 403
    change = reverse("admin:annotation_revieweralert_change", args=[alert.pk])
    assert client.post(change, {"resolved_at_0": "2026-01-01", "resolved_at_1": "12:00:00"}).status_code == 403
    assert fingerprint() == before
    assert client.get(change).status_code == 200  # still shown, read-only


def test_a_rounds_state_and_identity_change_only_through_the_studys_page(client, admin_user):
    """A round opens, closes and is reopened by the services (a reopening names its reason and locks the items
    compared with gold in feedback); its kind and number name its judgments. The Django admin shows them, and a
    change form posted with another status, kind or number changes none of them. Before, the study's round rows
    took any status: a closed calibration round set back to open had no reason recorded, no feedback lock, and its
    reviewers changed judgments they had been shown compared with gold."""
    round_ = RoundFactory(status=Round.Status.CLOSED)
    JudgmentFactory(round=round_)
    client.force_login(admin_user)
    study_page = reverse("admin:annotation_study_change", args=[round_.study_id])
    data = form_fields(client, study_page)
    assert data["rounds-0-id"] == str(round_.pk)
    before = fingerprint()
    client.post(study_page, data | {"rounds-0-status": "open"})
    client.post(study_page, data | {"rounds-0-number": "7"})
    round_page = reverse("admin:annotation_round_change", args=[round_.pk])
    for change in ({"number": "7"}, {"gold_pool": "on"}, {"status": "open"}):
        client.post(round_page, form_fields(client, round_page) | change)
    assert fingerprint() == before
    round_.refresh_from_db()
    assert (round_.status, round_.kind, round_.number, round_.gold_pool) == ("closed", "calibration", 1, False)


def test_an_opened_rounds_set_and_a_coders_items_are_not_changed_by_hand(client, admin_user):
    """A round's set is fixed once it opens, and an item's coder, turn and feedback lock name the judgments made on
    it: the admin refuses to move, remove or unlock them (an item is refused by its field, in the services'
    words). Before, an item taken out of a coded round, a turn added to it, an assignment moved to another coder or
    unlocked left judgments no page showed, or let a reviewer change what their feedback had compared with gold."""
    judgment = JudgmentFactory(round=RoundFactory(status=Round.Status.CLOSED))
    item = RoundItemFactory(round=judgment.round, turn=judgment.turn)
    assignment = AssignmentFactory(round=judgment.round, coder=judgment.coder, turn=judgment.turn,
                                   feedback_locked=True)
    other_turn, other_coder = TurnFactory(), UserFactory()
    client.force_login(admin_user)
    before = fingerprint()
    item_page = reverse("admin:annotation_rounditem_change", args=[item.pk])
    assert client.post(item_page, form_fields(client, item_page) | {"position": "9"}).status_code == 403
    assert client.post(reverse("admin:annotation_rounditem_delete", args=[item.pk]),
                       {"post": "yes"}).status_code == 403
    add = client.post(reverse("admin:annotation_rounditem_add"),
                      {"round": judgment.round_id, "turn": other_turn.pk, "position": "2"})
    assert "calibration-1 is no longer a draft: its items are fixed" in add.content.decode()
    assignment_page = reverse("admin:annotation_assignment_change", args=[assignment.pk])
    client.post(assignment_page, form_fields(client, assignment_page) | {
        "coder": str(other_coder.pk), "turn": str(other_turn.pk)})
    client.post(assignment_page, {k: v for k, v in form_fields(client, assignment_page).items()
                                  if k != "feedback_locked"})
    assert fingerprint() == before


def test_no_queue_item_is_added_to_an_opened_round_and_no_opened_round_is_deleted(client, admin_user):
    """A coder's queue is given by the services (a calibration round's opening, the main round's assignment), and an
    opened round's queues are what its coders were given: the admin adds a queue item only to a draft round, refused
    by its field in the services' words, and deletes only a draft round without queues. Before, an assignment was
    added to a closed round, and an open round whose queues had no judgment yet was deleted with them."""
    closed = RoundFactory(status=Round.Status.CLOSED)
    opened = RoundFactory(study=closed.study, status=Round.Status.OPEN, number=2)
    AssignmentFactory(round=opened)
    draft = RoundFactory(study=closed.study, status=Round.Status.DRAFT, number=3)
    coder, turn = UserFactory(), TurnFactory()
    client.force_login(admin_user)
    before = fingerprint()
    add = reverse("admin:annotation_assignment_add")
    answer = client.post(add, form_fields(client, add) | {"round": str(closed.pk), "coder": str(coder.pk),
                                                    "turn": str(turn.pk), "position": "1"})
    assert "calibration-1 is no longer a draft: its queues are fixed" in answer.content.decode()
    assert client.post(reverse("admin:annotation_round_delete", args=[opened.pk]), {"post": "yes"}).status_code == 403
    changelist = client.post(reverse("admin:annotation_round_changelist"),
                             {"action": "delete_selected", "_selected_action": [opened.pk, closed.pk], "post": "yes"})
    assert changelist.status_code == 403
    assert fingerprint() == before
    assert client.post(reverse("admin:annotation_round_delete", args=[draft.pk]), {"post": "yes"}).status_code == 302
    assert not Round.objects.filter(pk=draft.pk).exists()


def test_a_members_role_alias_and_panel_place_are_not_changed_and_no_member_is_added_by_hand(client, admin_user):
    """A role is the member's, not the coding's: an expert's role set to reviewer in the admin had every one of their
    codings counted as a reviewer's, silently, and a member added there had no alias and skipped the study page's
    checks (a former member's role, an archived study). The admin now shows members and takes them off (through the
    service); the study page adds them."""
    judgment = JudgmentFactory()
    study = judgment.round.study
    member = StudyMember.objects.create(study=study, user=judgment.coder, role="expert")
    client.force_login(admin_user)
    member_page = reverse("admin:annotation_studymember_change", args=[member.pk])
    study_page = reverse("admin:annotation_study_change", args=[study.pk])
    before = fingerprint()
    client.post(member_page, {"study": study.pk, "user": member.user_id, "role": "reviewer", "alias": "R9",
                              "retained": "true"})
    study_form = form_fields(client, study_page)
    assert "members-0-role" not in study_form
    client.post(study_page, study_form | {"members-0-role": "reviewer", "members-0-alias": "R9",
                                          "members-TOTAL_FORMS": "2", "members-1-study": study.pk,
                                          "members-1-user": UserFactory().pk, "members-1-role": "reviewer"})
    assert client.post(reverse("admin:annotation_studymember_add"),
                       {"study": study.pk, "user": UserFactory().pk, "role": "reviewer"}).status_code == 403
    assert fingerprint() == before
    member.refresh_from_db()
    assert (member.role, member.alias, member.retained) == ("expert", "", None)
    assert StudyMember.objects.filter(study=study).count() == 1


# JSON the admin's forms read and PostgreSQL cannot store, with the words of the form's refusal.
UNSTORABLE_JSON = [
    ('["\\u0000"]', "contains a NUL or lone surrogate character"),
    ('{"a\\u0000": 1}', "contains a NUL or lone surrogate character"),
    ('["\\ud800"]', "contains a NUL or lone surrogate character"),
    ('{"GPT": NaN}', "holds NaN or Infinity"),
    ("[-Infinity]", "holds NaN or Infinity"),
    ("[1e999]", "holds NaN or Infinity"),
    ("[" * 5000 + "]" * 5000, "not valid JSON (nested too deeply)"),
    ("[" + "1" * 5000 + "]", "not valid JSON (a number too long)"),
]


@pytest.mark.parametrize(("text", "message"), UNSTORABLE_JSON, ids=[m + text[:12] for text, m in UNSTORABLE_JSON])
def test_json_the_database_cannot_store_is_refused_by_the_admins_forms(client, admin_user, text, message):
    """A schema's definition and an attribute's anchors (every JSON field the admin edits,
    annotation.admin.StorableJSONField): the form is shown again with the refusal and nothing is written. Before,
    Django's JSON field passed them on to PostgreSQL (or failed reading them, or writing them back into the page),
    and the page answered 500."""
    study = StudyFactory()
    attribute = AttributeDefinition.objects.filter(schema__slug="cab-v1").first()
    assert attribute is not None
    client.force_login(admin_user)
    before = fingerprint()
    for url, field in ((reverse("admin:annotation_schema_change", args=[study.schema_id]), "definition"),
                       (reverse("admin:annotation_attributedefinition_change", args=[attribute.pk]), "anchors")):
        response = client.post(url, form_fields(client, url) | {field: text})
        assert response.status_code == 200, (url, response.status_code)
        assert message in response.context["adminform"].form.errors.get(field, [""])[0], (url, field)
    assert fingerprint() == before


def test_an_archived_studys_members_are_not_taken_off_by_hand(client, admin_user):
    """The Django admin takes no member off an archived study, as the study page does not: a deletion (one, or the
    list's action) is refused in the service's words, nothing written. Before, the member was taken off, and a
    deletion the service refused (a member with session labels) was a 500."""
    study = StudyFactory(status=Study.Status.ARCHIVED, slug="ended")
    member = StudyMemberFactory(study=study, role=StudyMember.Role.REVIEWER, alias="R1")
    client.force_login(admin_user)
    before = fingerprint()
    refusal = "study &#x27;ended&#x27; is archived: its members no longer change"
    deleted = client.post(reverse("admin:annotation_studymember_delete", args=[member.pk]), {"post": "yes"},
                          follow=True)
    assert deleted.status_code == 200 and refusal in deleted.content.decode()
    listed = client.post(reverse("admin:annotation_studymember_changelist"),
                         {"action": "delete_selected", "_selected_action": [member.pk], "post": "yes"}, follow=True)
    assert listed.status_code == 200 and refusal in listed.content.decode()
    assert fingerprint() == before


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_an_item_added_by_hand_to_a_draft_round_is_in_before_the_round_opens(admin_user):
    """The admin's check that the round is a draft holds the round's lock until the item is written: a round opened
    meanwhile (its UPDATE) waits for the admin's commit, so its coders are given the set as it is then. Before, the
    round opened between the admin's check and its write, and the item went into an opened round's set."""
    round_ = RoundFactory(status=Round.Status.DRAFT)
    turn = TurnFactory()
    checked = threading.Event()
    written: list[float] = []
    original = admin_pages.RoundItemAdmin.save_model

    def held(self, request, obj, form, change):  # noqa: ANN001 - the admin's own signature
        checked.set()  # the form was checked: the round was a draft
        time.sleep(0.5)
        original(self, request, obj, form, change)
        written.append(time.monotonic())  # written, not yet committed

    def add():
        admin = Client()
        admin.force_login(admin_user)
        return admin.post(reverse("admin:annotation_rounditem_add"),
                          {"round": str(round_.pk), "turn": str(turn.pk), "position": "1"}).status_code

    def open_():
        assert checked.wait(timeout=30)
        annotation_services.round_open(round=Round.objects.select_related("study").get(pk=round_.pk), by=None)
        return time.monotonic()

    with mock.patch.object(admin_pages.RoundItemAdmin, "save_model", held):
        added, opened = together(add, open_)
    assert added == 302 and isinstance(opened, float), (added, opened)
    assert opened > written[0], "the round opened between the admin's check that it was a draft and its write"


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_draft_round_opened_while_its_deletion_is_confirmed_is_not_deleted(admin_user):
    """The admin asks whether a round may be deleted before its transaction, and again under the round's lock as it
    deletes it: a round opened in between is refused (403) and stays open. Before, the open round was deleted."""
    round_ = RoundFactory(status=Round.Status.DRAFT)
    asked = threading.Event()
    original = admin_pages.RoundAdmin.get_deleted_objects

    def held(self, objs, request):  # noqa: ANN001 - the admin's own signature
        asked.set()  # the permission was given: the round was a draft without queues
        time.sleep(0.5)
        return original(self, objs, request)

    def delete():
        admin = Client()
        admin.force_login(admin_user)
        return admin.post(reverse("admin:annotation_round_delete", args=[round_.pk]), {"post": "yes"}).status_code

    def open_():
        assert asked.wait(timeout=30)
        return annotation_services.round_open(round=Round.objects.select_related("study").get(pk=round_.pk), by=None)

    with mock.patch.object(admin_pages.RoundAdmin, "get_deleted_objects", held):
        deleted, opened = together(delete, open_)
    assert isinstance(opened, Round), opened
    assert deleted == 403
    assert Round.objects.get(pk=round_.pk).status == Round.Status.OPEN


def test_a_frozen_schema_and_its_parts_are_shown_read_only_and_refused_in_words(client, admin_user):
    """A schema is frozen once a study using it has been opened (the database refuses any change of it). Before,
    the admin offered its pages as forms: saving the schema, an attribute or a subcategory unchanged answered 500
    (the database's refusal), and so did adding a subcategory to it or deleting an attribute with "delete
    selected". Now its pages are read-only and say why, a part added to it is refused by its form, and "delete
    selected" names the frozen schema as what cannot be deleted."""
    StudyFactory(status="open")  # on cab-v1
    attribute = AttributeDefinition.objects.filter(schema__slug="cab-v1").order_by("position").first()
    subcategory = attribute.subcategories.first() or attribute.schema.subcategories.first()
    client.force_login(admin_user)
    before = fingerprint()
    for url in (reverse("admin:annotation_schema_change", args=[attribute.schema_id]),
                reverse("admin:annotation_attributedefinition_change", args=[attribute.pk]),
                reverse("admin:annotation_spansubcategory_change", args=[subcategory.pk])):
        page = client.get(url)
        text = page.content.decode()
        assert page.status_code == 200 and 'name="_save"' not in text, url
        assert "chema cab-v1 is frozen: a study using it has been opened, so it is shown read-only" in text, url
        assert client.post(url, form_fields(client, url)).status_code == 403, url
    add = reverse("admin:annotation_spansubcategory_add")
    refused = client.post(add, {"schema": attribute.schema_id, "attribute": attribute.pk, "slug": "by-hand",
                                "name": "By hand", "colour": "#123456", "style": "solid", "position": "9"})
    assert refused.status_code == 200
    assert refused.context["adminform"].form.non_field_errors() == [
        "schema cab-v1 is frozen: a study using it has been opened"]
    changelist = reverse("admin:annotation_attributedefinition_changelist")
    chosen = {"action": "delete_selected", "_selected_action": [attribute.pk]}
    confirm = client.post(changelist, chosen).content.decode()
    assert "schema cab-v1 is frozen: a study using it has been opened" in confirm
    assert client.post(changelist, chosen | {"post": "yes"}).status_code == 200
    assert fingerprint() == before


def test_a_study_is_shown_read_only_its_settings_and_state_changing_only_through_the_services(client, admin_user):
    """A study's slug, schema and model slots are what its data depends on, its state changes with its rounds and
    its archiving, its settings on its settings page (recorded). Before, the admin's study page changed any of them
    unrecorded: an open study set back to "setting up" unfroze its schema under its codings, its schema changed
    answered 500 (the database refuses it), and a study added there skipped the New study page's checks."""
    study = StudyFactory(status="open")
    client.force_login(admin_user)
    change = reverse("admin:annotation_study_change", args=[study.pk])
    page = client.get(change)
    text = page.content.decode()
    assert page.status_code == 200 and 'name="_save"' not in text
    assert f'settings change on <a href="/studies/{study.slug}/settings/">its settings page</a>, recorded' in text
    before = fingerprint()
    form = form_fields(client, change)
    for changed in ({}, {"status": "setup"}, {"schema": str(study.schema_id + 1)}, {"name": "renamed"}):
        assert client.post(change, form | changed).status_code == 403, changed
    assert client.post(reverse("admin:annotation_study_add"), {"slug": "by-hand", "name": "x"}).status_code == 403
    assert fingerprint() == before
    changelist = client.post(reverse("admin:annotation_study_changelist"),
                             {"action": "compute_metrics", "_selected_action": [study.pk]}, follow=True)
    assert "1 metric run(s) queued" in changelist.content.decode()  # the action stays


def test_an_opened_rounds_queue_items_and_a_gold_values_who_agreed_are_not_changed_by_hand(client, admin_user):
    """A coder's queue item in an opened round was what they were given: before, the admin moved it (its position:
    the coder's open page then named another item), deleted it, and changed the coder's own comment and flags,
    unrecorded; and a gold judgment's "who agreed" was changed past its rule (a reviewer named as agreeing), with no
    version or history. Now those pages are read-only (403 on a post), nothing changed. In a draft round, nobody given
    anything yet, a queue item still moves, and the coder's words stay read-only there too."""
    judgment = JudgmentFactory(round=RoundFactory(status=Round.Status.OPEN), is_gold=True, score=1)
    assignment = AssignmentFactory(round=judgment.round, coder=UserFactory(), turn=judgment.turn, comment="mine")
    reviewer = UserFactory()
    client.force_login(admin_user)
    before = fingerprint()
    page = reverse("admin:annotation_assignment_change", args=[assignment.pk])
    assert 'name="_save"' not in client.get(page).content.decode()
    for changed in ({"position": "9"}, {"comment": "the admin's words"}, {"flags": "[]"}):
        assert client.post(page, form_fields(client, page) | changed).status_code == 403, changed
    assert client.post(reverse("admin:annotation_assignment_delete", args=[assignment.pk]),
                       {"post": "yes"}).status_code == 403
    gold = reverse("admin:annotation_judgment_change", args=[judgment.pk])
    assert client.post(gold, form_fields(client, gold) | {"agreed_by": str(reviewer.pk)}).status_code == 403
    assert fingerprint() == before

    draft = AssignmentFactory(round=RoundFactory(status=Round.Status.DRAFT), comment="theirs")
    page = reverse("admin:annotation_assignment_change", args=[draft.pk])
    assert 'name="comment"' not in client.get(page).content.decode()
    assert client.post(page, form_fields(client, page) | {"position": "7", "comment": "x"}).status_code == 302
    draft.refresh_from_db()
    assert (draft.position, draft.comment) == (7, "theirs")


def test_a_schema_definition_with_unusable_uiri_bands_is_refused_by_the_admin(client, admin_user):
    """The metric runs band UIRI by the schema's ``indices.uiri.bands``: the admin refuses bands they could not use,
    in an install's words, and writes nothing (a run of the study would have failed on them)."""
    import json

    study = StudyFactory()
    client.force_login(admin_user)
    url = reverse("admin:annotation_schema_change", args=[study.schema_id])
    definition = json.loads(form_fields(client, url)["definition"])
    definition["indices"]["uiri"]["bands"][0]["below"] = 0.9
    before = fingerprint()
    response = client.post(url, form_fields(client, url) | {"definition": json.dumps(definition)})
    assert response.status_code == 200
    assert response.context["adminform"].form.errors["definition"] == [
        "indices.uiri.bands: the bounds must rise from 0 to 1 (docs/metrics.md#uiri)"]
    assert fingerprint() == before


@pytest.mark.parametrize(("indices", "messages"), [
    ({"trajectories": {"flat_slope": 2}},
     ["indices.trajectories.flat_slope: must be a number from 0 to 1 (docs/metrics.md#multi-turn-trajectories)"]),
    ({"coupling": {"min_abs_rho": -0.2, "max_q": "0.05"}},
     ["indices.coupling.min_abs_rho: must be a number from 0 to 1 (docs/metrics.md#input-response-coupling)",
      "indices.coupling.max_q: must be a number above 0 and at most 1 (docs/metrics.md#input-response-coupling)"]),
    ({"uiri": [1]}, ["indices.uiri: must be an object (docs/metrics.md#uiri)"]),
])
def test_a_schema_definition_with_unusable_report_thresholds_is_refused_by_the_admin(client, admin_user, indices,
                                                                                     messages):
    """The metric runs read the trajectories' flat slope and the coupling's thresholds from the schema's indices
    block: the admin refuses values they could not use, in an install's words, and writes nothing."""
    import json

    study = StudyFactory()
    client.force_login(admin_user)
    url = reverse("admin:annotation_schema_change", args=[study.schema_id])
    definition = json.loads(form_fields(client, url)["definition"])
    definition["indices"] |= indices
    before = fingerprint()
    response = client.post(url, form_fields(client, url) | {"definition": json.dumps(definition)})
    assert response.status_code == 200
    assert response.context["adminform"].form.errors["definition"] == messages
    assert fingerprint() == before


def test_a_schema_definition_whose_ari_clusters_are_not_the_attributes_is_refused_by_the_admin(client, admin_user):
    """ARI averages the clusters of the schema's response-level attributes with a risk encoding: a definition
    listing others under ``indices.ari.clusters`` is refused in an install's words, and nothing is saved."""
    import json

    study = StudyFactory()
    client.force_login(admin_user)
    url = reverse("admin:annotation_schema_change", args=[study.schema_id])
    definition = json.loads(form_fields(client, url)["definition"])
    definition["indices"]["ari"] = {"clusters": ["D", "E", "R"]}
    before = fingerprint()
    response = client.post(url, form_fields(client, url) | {"definition": json.dumps(definition)})
    assert response.status_code == 200
    assert response.context["adminform"].form.errors["definition"] == [
        "indices.ari.clusters: leaves out F; ARI is the mean of the clusters of the response-level attributes with a "
        "risk encoding (D, E, R, F), and the list must name exactly those (docs/metrics.md#risk-clusters-and-ari)"]
    assert fingerprint() == before


def test_an_attribute_moved_to_a_cluster_the_ari_list_does_not_name_is_refused_by_the_admin(client, admin_user):
    """An attribute's cluster is what ARI averages: moving a risk-encoded response attribute to a cluster that
    ``indices.ari.clusters`` does not list would make the report's clusters differ from the schema's; refused on the
    cluster, nothing saved."""
    study = StudyFactory()
    client.force_login(admin_user)
    attribute = AttributeDefinition.objects.filter(schema=study.schema, unit="response", risk__isnull=False,
                                                   cluster="F").order_by("position").last()
    url = reverse("admin:annotation_attributedefinition_change", args=[attribute.pk])
    before = fingerprint()
    response = client.post(url, form_fields(client, url) | {"cluster": "X"})
    assert response.status_code == 200
    [error] = response.context["adminform"].form.errors["cluster"]
    assert error.startswith("indices.ari.clusters: leaves out X; ARI is the mean of the clusters of the "
                            "response-level attributes with a risk encoding (")
    assert fingerprint() == before


def test_a_schema_definition_whose_indices_are_not_an_object_is_refused_by_the_admin(client, admin_user):
    """Before, a list in place of the indices block was a server error (AttributeError) on save."""
    import json

    study = StudyFactory()
    client.force_login(admin_user)
    url = reverse("admin:annotation_schema_change", args=[study.schema_id])
    definition = json.loads(form_fields(client, url)["definition"]) | {"indices": [1]}
    before = fingerprint()
    response = client.post(url, form_fields(client, url) | {"definition": json.dumps(definition)})
    assert response.status_code == 200
    assert response.context["adminform"].form.errors["definition"] == ["indices: must be an object (docs/schema.md)"]
    assert fingerprint() == before


def test_deleting_the_last_attribute_of_an_ari_cluster_is_refused_by_the_admin(client, admin_user):
    """Deleting the response-level attributes with a risk encoding of a cluster the schema's ``indices.ari.clusters``
    lists would leave the list naming a cluster ARI no longer averages: refused with the reason on the delete page
    and on "delete selected", as an edit is, and nothing is deleted. Deleting one of several keeps the list right."""
    study = StudyFactory()
    client.force_login(admin_user)
    risky = list(AttributeDefinition.objects.filter(schema=study.schema, unit="response", risk__isnull=False,
                                                    cluster="F").order_by("position"))
    assert len(risky) > 1
    codes = ", ".join(sorted(a.code for a in risky))
    reason = (f"schema {study.schema.slug}, deleting {codes}: indices.ari.clusters: lists F, which no response-level "
              "attribute with a risk encoding has; ARI is the mean of the clusters of the response-level attributes "
              "with a risk encoding (D, E, R), and the list must name exactly those "
              "(docs/metrics.md#risk-clusters-and-ari)")
    before = fingerprint()
    answer = client.post(reverse("admin:annotation_attributedefinition_changelist"),
                         {"action": "delete_selected", "_selected_action": [a.pk for a in risky], "post": "yes"})
    assert answer.status_code == 200
    assert reason in answer.content.decode()
    assert fingerprint() == before
    # One at a time, down to the last: the last is refused on its own delete page.
    for attribute in risky[:-1]:
        url = reverse("admin:annotation_attributedefinition_delete", args=[attribute.pk])
        assert client.post(url, {"post": "yes"}).status_code == 302
    last = risky[-1]
    before = fingerprint()
    answer = client.post(reverse("admin:annotation_attributedefinition_delete", args=[last.pk]), {"post": "yes"})
    assert answer.status_code == 200
    assert reason.replace(codes, last.code) in answer.content.decode()
    assert fingerprint() == before
    assert AttributeDefinition.objects.filter(pk=last.pk).exists()
