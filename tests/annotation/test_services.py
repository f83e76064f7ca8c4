"""Annotation services (annotation/services.py): judgment saves refuse what the rules forbid with the message the
user sees (tests/annotation/test_models.py has the database's side); state transitions are compare-and-set, so
acting on a page that went stale answers "changed meanwhile, reload" and changes nothing; check items raise one
alert at a time."""

from __future__ import annotations

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.utils import timezone

from annotation import selectors, services
from annotation.models import Assignment, Judgment, ReviewerAlert, Round, Span
from annotation.services import ChangedMeanwhile, SpanInput, StaleJudgmentError
from audit.models import AuditEvent
from tests.factories import ModelResponseFactory, RoundFactory, StudyFactory, StudyMemberFactory, attribute

pytestmark = pytest.mark.django_db


# --- judgments -------------------------------------------------------------------------------------------------


def test_saving_the_same_unit_twice_updates_one_judgment(round_, reviewer, response):
    aur = attribute("AUR")
    first = services.judgment_save(round=round_, by=reviewer, attribute=aur, response=response, score=1)
    second = services.judgment_save(round=round_, by=reviewer, attribute=aur, response=response, score=2)
    assert first.pk == second.pk
    assert Judgment.objects.filter(round=round_, coder=reviewer).count() == 1
    assert second.score == 2 and second.version == 2


def test_a_first_save_writes_the_judgment_and_its_history_as_the_orm_would(round_, reviewer, response):
    """The first save of a unit inserts the judgment and its history's first row in one statement written in the
    service (issue 34): the same rows as ``Judgment.objects.create`` and ``JudgmentRevision.objects.create``."""
    from django.utils import timezone

    from annotation.models import JudgmentRevision

    aur = attribute("AUR")
    started = timezone.now()
    saved = services.judgment_save(round=round_, by=reviewer, attribute=aur, response=response, score=1,
                                   instance_count=1, spans=[SpanInput(0, 4, aur.subcategories.first().slug)])
    stored = Judgment.objects.get()
    columns = [f.attname for f in Judgment._meta.concrete_fields]
    assert {c: getattr(saved, c) for c in columns} == {c: getattr(stored, c) for c in columns}
    assert not saved._state.adding and saved.pk == stored.pk
    orm = Judgment(round=round_, coder=reviewer, attribute=aur, conversation_id=response.turn.conversation_id,
                   turn=response.turn, response=response, score=1, instance_count=1)
    kept = {"id", "created_at", "updated_at"}
    assert {c: getattr(stored, c) for c in columns if c not in kept} == {
        c: getattr(orm, c) for c in columns if c not in kept}
    assert started <= stored.created_at <= stored.updated_at <= timezone.now()
    revision = JudgmentRevision.objects.get()
    assert (revision.judgment_id, revision.version, revision.changed_by_id, revision.source, revision.at,
            revision.before) == (stored.pk, 1, reviewer.pk, "autosave", stored.updated_at, None)
    assert revision.after == services.judgment_value(stored, spans=stored.spans.values_list(
        "start", "end", "subcategory__slug"))
    assert revision.after["spans"] == [[0, 4, aur.subcategories.first().slug]]


def test_two_coders_may_judge_the_same_unit(round_, reviewer, other_reviewer, response):
    for coder in (reviewer, other_reviewer):
        services.judgment_save(round=round_, by=coder, attribute=attribute("AUR"), response=response, score=1)
    assert Judgment.objects.filter(response=response).count() == 2


def test_stale_save_is_refused_and_shows_the_newer_value(round_, reviewer, response):
    aur = attribute("AUR")
    saved = services.judgment_save(round=round_, by=reviewer, attribute=aur, response=response, score=1)
    services.judgment_save(round=round_, by=reviewer, attribute=aur, response=response, score=2,
                           expected_version=saved.version)
    with pytest.raises(StaleJudgmentError, match=r"changed elsewhere \(now 2, version 2\)") as caught:
        services.judgment_save(round=round_, by=reviewer, attribute=aur, response=response, score=0,
                               expected_version=saved.version)
    assert caught.value.current.score == 2
    assert Judgment.objects.get(pk=saved.pk).score == 2


@pytest.mark.parametrize(("code", "score", "message"), [
    ("AUR", 3, "AUR: score 3 is outside the scale 0–2"),
    ("F1", 2, "F1: score 2 is outside the scale 0–1"),
    ("TD", -1, "TD: score -1 is outside the scale 0–2"),
])
def test_score_outside_the_scale_is_refused_with_the_scale(round_, reviewer, response, code, score, message):
    with pytest.raises(ValidationError, match=message):
        services.judgment_save(round=round_, by=reviewer, attribute=attribute(code), response=response, score=score)
    assert not Judgment.objects.exists()


def test_spans_are_stored_as_character_offsets(round_, reviewer, response):
    start = response.text.index("😊")
    judgment = services.judgment_save(
        round=round_, by=reviewer, attribute=attribute("AUR"), response=response, score=2, instance_count=1,
        spans=[SpanInput(start, len(response.text), "assumes")],
    )
    span = judgment.spans.get()
    assert response.text[span.start:span.end] == "😊 — okay."


def test_span_outside_the_text_is_refused_with_the_text_length(round_, reviewer, response):
    length = len(response.text)
    with pytest.raises(ValidationError, match=rf"span \[3, {length + 1}\) is outside the response text \(0–{length}"):
        services.judgment_save(round=round_, by=reviewer, attribute=attribute("AUR"), response=response, score=1,
                               spans=[SpanInput(3, length + 1, "assumes")])
    assert not Judgment.objects.exists() and not Span.objects.exists()


def test_span_of_another_attributes_subcategory_is_refused(round_, reviewer, response):
    with pytest.raises(ValidationError, match="subcategory 'directive' is not one of this attribute's"):
        services.judgment_save(round=round_, by=reviewer, attribute=attribute("AUR"), response=response, score=1,
                               spans=[SpanInput(0, 4, "directive")])


def test_a_span_stored_before_the_character_rule_stays_through_later_saves(round_, reviewer):
    """A span that cuts a character in two, stored before spans were checked against the characters, is kept when
    the page sends it again with a new score; a new such span is refused and nothing changes."""
    response = ModelResponseFactory(model_slot="GPT", text="Un cafe\u0301 noir.")
    aur, accent = attribute("AUR"), response.text.index("\u0301")
    judgment = services.judgment_save(round=round_, by=reviewer, attribute=aur, response=response, score=1)
    Span.objects.create(judgment=judgment, subcategory=aur.subcategories.get(slug="assumes"), start=3, end=accent)
    old = SpanInput(3, accent, "assumes")
    saved = services.judgment_save(round=round_, by=reviewer, attribute=aur, response=response, score=2, spans=[old])
    assert saved.score == 2 and list(saved.spans.values_list("start", "end")) == [(3, accent)]
    with pytest.raises(ValidationError, match=rf"span \[3, {accent}\): offset {accent} falls inside 'e\u0301'"):
        services.judgment_save(round=round_, by=reviewer, attribute=aur, response=response, score=0,
                               spans=[old, SpanInput(3, accent, "explores")])
    judgment.refresh_from_db()
    assert judgment.score == 2 and list(judgment.spans.values_list("start", "end", "subcategory__slug")) == [
        (3, accent, "assumes")]


def test_instance_count_only_where_the_schema_has_one(round_, reviewer, response):
    with pytest.raises(ValidationError, match="F1 takes no instance count"):
        services.judgment_save(round=round_, by=reviewer, attribute=attribute("F1"), response=response, score=1,
                               instance_count=2)


# --- schemas ---------------------------------------------------------------------------------------------------


def test_installing_over_a_frozen_schema_is_refused(round_):
    from annotation import schema_document

    document = schema_document.load_builtin("cab-v1").definition | {
        "attributes": [{"code": "X1", "name": "x", "group": "user", "scale": {"min": 0, "max": 1, "level": "nominal"},
                        "bucket": {"0": 0, "1": 1}}]
    }
    document["indices"] = {}
    with pytest.raises(ValidationError, match="schema cab-v1 is frozen: a study using it is open"):
        services.schema_install(document=document, by=None)


# --- round and alert transitions -------------------------------------------------------------------------------


def test_closing_from_a_stale_page_says_changed_meanwhile(admin_user):
    round_ = RoundFactory()
    stale = Round.objects.get(pk=round_.pk)
    services.round_close(round=round_, by=admin_user)
    with pytest.raises(ChangedMeanwhile, match="changed meanwhile; reload"):
        services.round_close(round=stale, by=admin_user)
    assert AuditEvent.objects.filter(action="round.close").count() == 1


def test_closing_a_closed_round_says_it_is_closed(admin_user):
    round_ = RoundFactory(status="closed")
    with pytest.raises(ValidationError, match="calibration-1 is closed, not open"):
        services.round_close(round=round_, by=admin_user)


def test_reopening_is_for_admins_with_a_reason(admin_user, reviewer):
    round_ = RoundFactory(status="closed")
    with pytest.raises(PermissionDenied):
        services.round_reopen(round=round_, by=reviewer, reason="because")
    with pytest.raises(ValidationError, match="say why"):
        services.round_reopen(round=round_, by=admin_user, reason="  ")
    services.round_reopen(round=round_, by=admin_user, reason="lost codings")
    assert Round.objects.get(pk=round_.pk).status == "open"
    assert AuditEvent.objects.get(action="round.reopen").data == {"reason": "lost codings", "turns_back_in_queues": 0}


def test_resolving_an_alert_twice_says_changed_meanwhile(admin_user, reviewer):
    alert = ReviewerAlert.objects.create(study=StudyFactory(), reviewer=reviewer, agreement=0.5, threshold=0.7,
                                         n_items=20)
    stale = ReviewerAlert.objects.get(pk=alert.pk)
    services.alert_resolve(alert=alert, by=admin_user)
    with pytest.raises(ChangedMeanwhile):
        services.alert_resolve(alert=stale, by=admin_user)


# --- check items -----------------------------------------------------------------------------------------------


def test_check_item_agreement_below_threshold_alerts_the_admin(admin_user, reviewer):
    study = StudyFactory(status="open", check_min_items=2, check_threshold=0.75)
    StudyMemberFactory(study=study, user=reviewer, role="reviewer")
    cal = RoundFactory(study=study, kind="calibration", number=1, status="closed")
    main = RoundFactory(study=study, kind="main", number=1, status="open")
    response = ModelResponseFactory()
    for code, gold, mine in (("AUR", 2, 0), ("TD", 1, 0), ("FIX", 1, 1)):
        Judgment.objects.create(round=cal, coder=admin_user, is_gold=True, attribute=attribute(code),
                                turn=response.turn, response=response,
                                conversation_id=response.turn.conversation_id, score=gold)
        services.judgment_save(round=main, by=reviewer, attribute=attribute(code), response=response, score=mine)
    Assignment.objects.create(round=main, coder=reviewer, turn=response.turn, position=1, is_check_item=True,
                              completed_at=timezone.now())
    alert = services.check_alert_update(study=study, user=reviewer)
    assert alert is not None and alert.n_items == 3 and abs(alert.agreement - 1 / 3) < 1e-12
    assert services.check_alert_update(study=study, user=reviewer) is None, "one open alert at a time"
    services.alert_resolve(alert=alert, by=admin_user)
    services.judgment_save(round=main, by=reviewer, attribute=attribute("TD"), response=response, score=1)
    second = services.check_alert_update(study=study, user=reviewer)
    assert second is not None and abs(second.agreement - 2 / 3) < 1e-12, "2 of 3 is still below 0.75"
    services.alert_resolve(alert=second, by=admin_user)
    services.judgment_save(round=main, by=reviewer, attribute=attribute("AUR"), response=response, score=2)
    assert selectors.check_agreement(study=study, user=reviewer) == (1.0, 3)
    assert services.check_alert_update(study=study, user=reviewer) is None, "at or above the threshold: no alert"


@pytest.mark.parametrize(("bands", "message"), [
    ([{"code": "low", "below": 0.6}, {"code": "medium", "below": 0.3}, {"code": "high", "below": None}],
     "indices.uiri.bands: the bounds must rise from 0 to 1"),
    ([{"code": "low", "below": 0.3}, {"code": "high", "below": None}],
     "indices.uiri.bands: give low, medium and high in this order"),
    ([{"code": "low", "below": 0.3}, {"code": "medium", "below": "0.6"}, {"code": "high", "below": None}],
     "indices.uiri.bands: medium's below must be a number"),
    ([{"code": "low", "below": 0.3}, {"code": "medium", "below": 0.6}, {"code": "high", "below": 1.0}],
     "indices.uiri.bands: high's below must be null"),
])
def test_a_schema_with_unusable_uiri_bands_is_refused_and_installs_nothing(bands, message):
    import json

    from annotation import schema_document
    from annotation.models import Schema

    document = json.loads(schema_document.builtin_path("cab-v1").read_text(encoding="utf-8"))
    document["slug"] = "cab-bad-bands"
    document["indices"]["uiri"]["bands"] = bands
    with pytest.raises(schema_document.SchemaDocumentError) as refused:
        services.schema_install(document=document, by=None)
    assert refused.value.errors == [message + " (docs/metrics.md#uiri)"]
    assert not Schema.objects.filter(slug="cab-bad-bands").exists()


@pytest.mark.parametrize(("indices", "messages"), [
    ({"trajectories": {"flat_slope": -0.01}},
     ["indices.trajectories.flat_slope: must be a number from 0 to 1 (docs/metrics.md#multi-turn-trajectories)"]),
    ({"trajectories": {"flat_slope": "0.01"}},
     ["indices.trajectories.flat_slope: must be a number from 0 to 1 (docs/metrics.md#multi-turn-trajectories)"]),
    ({"trajectories": {"flat_slop": 0.01}},
     ["indices.trajectories: unknown keys flat_slop; it may give flat_slope "
      "(docs/metrics.md#multi-turn-trajectories)"]),
    ({"trajectories": 0.01}, ["indices.trajectories: must be an object (docs/metrics.md#multi-turn-trajectories)"]),
    ({"coupling": {"min_abs_rho": 1.5, "max_q": 0}},
     ["indices.coupling.min_abs_rho: must be a number from 0 to 1 (docs/metrics.md#input-response-coupling)",
      "indices.coupling.max_q: must be a number above 0 and at most 1 (docs/metrics.md#input-response-coupling)"]),
    ({"coupling": {"max_q": True}},
     ["indices.coupling.max_q: must be a number above 0 and at most 1 (docs/metrics.md#input-response-coupling)"]),
    ({"uiri": ["U1"]}, ["indices.uiri: must be an object (docs/metrics.md#uiri)"]),
])
def test_a_schema_with_unusable_report_thresholds_is_refused_and_installs_nothing(indices, messages):
    """The metric runs read the trajectories' flat slope and the coupling's thresholds from the schema's indices
    block (docs/schema.md): a value they could not use is refused by name, and a misspelt key is not silently the
    default."""
    import json

    from annotation import schema_document
    from annotation.models import Schema

    document = json.loads(schema_document.builtin_path("cab-v1").read_text(encoding="utf-8"))
    document["slug"] = "cab-bad-thresholds"
    document["indices"] = document["indices"] | indices
    with pytest.raises(schema_document.SchemaDocumentError) as refused:
        services.schema_install(document=document, by=None)
    assert refused.value.errors == messages
    assert not Schema.objects.filter(slug="cab-bad-thresholds").exists()


ARI_WHY = ("ARI is the mean of the clusters of the response-level attributes with a risk encoding (D, E, R, F), and "
           "the list must name exactly those (docs/metrics.md#risk-clusters-and-ari)")


@pytest.mark.parametrize(("ari", "message"), [
    ({"clusters": ["D", "E", "R", "F", "X"]},
     f"indices.ari.clusters: lists X, which no response-level attribute with a risk encoding has; {ARI_WHY}"),
    ({"clusters": ["D", "E"]}, f"indices.ari.clusters: leaves out R, F; {ARI_WHY}"),
    ({"clusters": ["D", "E", "R", "Q"]},
     f"indices.ari.clusters: lists Q, which no response-level attribute with a risk encoding has and leaves out F; "
     f"{ARI_WHY}"),
    ({"clusters": "DERF"}, "indices.ari.clusters: must be a list of cluster codes (docs/schema.md)"),
    (["D"], "indices.ari: must be an object (docs/schema.md)"),
])
def test_a_schema_whose_ari_clusters_are_not_the_attributes_is_refused_and_installs_nothing(ari, message):
    """ARI is the mean of the clusters of the response-level attributes with a risk encoding, never of
    ``indices.ari.clusters``: a list naming others would say one thing while the report does another, so it is
    refused by its difference, and nothing is installed."""
    import json

    from annotation import schema_document
    from annotation.models import Schema

    document = json.loads(schema_document.builtin_path("cab-v1").read_text(encoding="utf-8"))
    document["slug"] = "cab-bad-ari"
    document["indices"]["ari"] = ari
    with pytest.raises(schema_document.SchemaDocumentError) as refused:
        services.schema_install(document=document, by=None)
    assert refused.value.errors == [message]
    assert not Schema.objects.filter(slug="cab-bad-ari").exists()


def test_a_schema_whose_ari_clusters_are_the_attributes_in_another_order_or_absent_installs():
    """The list is a set (the report's order is the attributes'); a schema may also leave it out."""
    import json

    from annotation import schema_document

    document = json.loads(schema_document.builtin_path("cab-v1").read_text(encoding="utf-8"))
    document["slug"] = "cab-ari-reordered"
    document["indices"]["ari"] = {"clusters": ["F", "R", "E", "D"]}
    assert services.schema_install(document=document, by=None).slug == "cab-ari-reordered"
    del document["indices"]["ari"]
    document["slug"] = "cab-ari-absent"
    assert services.schema_install(document=document, by=None).slug == "cab-ari-absent"


def test_a_schema_whose_indices_are_not_an_object_is_refused_and_installs_nothing():
    """Before, a list in place of the indices block failed inside the validation (AttributeError), not as a refusal."""
    import json

    from annotation import schema_document
    from annotation.models import Schema

    document = json.loads(schema_document.builtin_path("cab-v1").read_text(encoding="utf-8"))
    document |= {"slug": "cab-bad-indices", "indices": [document["indices"]]}
    with pytest.raises(schema_document.SchemaDocumentError) as refused:
        services.schema_install(document=document, by=None)
    assert refused.value.errors == ["indices: must be an object (docs/schema.md)"]
    assert not Schema.objects.filter(slug="cab-bad-indices").exists()
