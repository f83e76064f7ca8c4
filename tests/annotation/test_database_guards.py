"""Every data-protection rule of the data model, at both layers: the service refuses with the message the user
sees, and the database refuses even when the service is bypassed."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from annotation import services
from annotation.models import AttributeDefinition, Judgment, Schema, Span
from annotation.services import SpanInput, StaleJudgmentError
from tests.factories import (
    JudgmentFactory,
    ModelResponseFactory,
    RoundFactory,
    SpanFactory,
    StudyFactory,
    TurnFactory,
    attribute,
)

pytestmark = pytest.mark.django_db


def _db_refuses(match: str):
    """The database raises an IntegrityError whose message contains ``match``; the transaction is rolled back."""
    return pytest.raises(IntegrityError, match=match)


@pytest.fixture
def response():
    return ModelResponseFactory(model_slot="GPT", text="Have you tried naming the worry? Ça va 😊 — okay.")


@pytest.fixture
def round_(db):
    return RoundFactory(study=StudyFactory(status="open"))


# --- one judgment per (round, coder, unit, attribute) ---------------------------------------------------------


def test_saving_the_same_unit_twice_updates_one_judgment(round_, reviewer, response):
    aur = attribute("AUR")
    first = services.judgment_save(round=round_, by=reviewer, attribute=aur, response=response, score=1)
    second = services.judgment_save(round=round_, by=reviewer, attribute=aur, response=response, score=2)
    assert first.pk == second.pk
    assert Judgment.objects.filter(round=round_, coder=reviewer).count() == 1
    assert second.score == 2 and second.version == 2


@pytest.mark.parametrize("code", ["AUR", "U1"])
def test_database_refuses_a_second_judgment_of_the_same_unit(round_, reviewer, response, code):
    attr = attribute(code)
    unit = {"response": response} if attr.unit == "response" else {"response": None}
    JudgmentFactory(round=round_, coder=reviewer, attribute=attr, turn=response.turn, score=1, **unit)
    with _db_refuses("judgment_unique"), transaction.atomic():
        JudgmentFactory(round=round_, coder=reviewer, attribute=attr, turn=response.turn, score=0, **unit)


def test_two_coders_may_judge_the_same_unit(round_, reviewer, other_reviewer, response):
    for coder in (reviewer, other_reviewer):
        services.judgment_save(round=round_, by=coder, attribute=attribute("AUR"), response=response, score=1)
    assert Judgment.objects.filter(response=response).count() == 2


def test_database_refuses_a_second_gold_judgment_of_a_unit(round_, expert, admin_user, response):
    JudgmentFactory(round=round_, coder=expert, is_gold=True, response=response)
    with _db_refuses("gold_unique_response_unit"), transaction.atomic():
        JudgmentFactory(round=round_, coder=admin_user, is_gold=True, response=response)


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


# --- one response per (turn, model slot) ----------------------------------------------------------------------


def test_database_refuses_a_second_response_for_a_model_slot(response):
    with _db_refuses("response_unique_model_slot"), transaction.atomic():
        ModelResponseFactory(turn=response.turn, model_slot="GPT")


# --- response text is immutable once judged -------------------------------------------------------------------


def test_unjudged_response_text_can_be_corrected(response):
    response.text = "A corrected text."
    response.save()
    response.refresh_from_db()
    assert response.text == "A corrected text."


def test_database_refuses_to_change_judged_response_text(round_, reviewer, response):
    services.judgment_save(round=round_, by=reviewer, attribute=attribute("AUR"), response=response, score=1)
    response.text = "Rewritten after judging."
    with _db_refuses("cannot change once the response has judgments"), transaction.atomic():
        response.save()
    response.refresh_from_db()
    assert response.text.startswith("Have you tried")


# --- schema frozen once a study using it is open --------------------------------------------------------------


def test_schema_can_change_while_no_study_using_it_is_open(db):
    StudyFactory(status="setup")
    aur = attribute("AUR")
    aur.definition = "Edited during set-up."
    aur.save()
    assert AttributeDefinition.objects.get(pk=aur.pk).definition == "Edited during set-up."


def test_database_refuses_to_change_a_frozen_schema(round_):
    aur = attribute("AUR")
    aur.scale_max = 3
    with _db_refuses("frozen, a study using it is open"), transaction.atomic():
        aur.save()
    with _db_refuses("frozen"), transaction.atomic():
        aur.subcategories.first().delete()
    with _db_refuses("frozen"), transaction.atomic():
        Schema.objects.filter(slug="cab-v1").update(name="renamed")


def test_installing_over_a_frozen_schema_is_refused(round_):
    from annotation import schema_document

    document = schema_document.load_builtin("cab-v1").definition | {
        "attributes": [{"code": "X1", "name": "x", "group": "user", "scale": {"min": 0, "max": 1, "level": "nominal"},
                        "bucket": {"0": 0, "1": 1}}]
    }
    document["indices"] = {}
    with pytest.raises(ValidationError, match="schema cab-v1 is frozen: a study using it is open"):
        services.schema_install(document=document, by=None)


def test_database_refuses_to_swap_the_schema_of_an_open_study(round_):
    other = Schema.objects.create(slug="other", name="Other", definition={})
    study = round_.study
    study.schema = other
    with _db_refuses("the schema cannot change once the study is open"), transaction.atomic():
        study.save()


# --- scores inside the attribute's scale ----------------------------------------------------------------------


@pytest.mark.parametrize(("code", "score", "message"), [
    ("AUR", 3, "AUR: score 3 is outside the scale 0–2"),
    ("F1", 2, "F1: score 2 is outside the scale 0–1"),
    ("TD", -1, "TD: score -1 is outside the scale 0–2"),
])
def test_score_outside_the_scale_is_refused_with_the_scale(round_, reviewer, response, code, score, message):
    with pytest.raises(ValidationError, match=message):
        services.judgment_save(round=round_, by=reviewer, attribute=attribute(code), response=response, score=score)
    assert not Judgment.objects.exists()


def test_database_refuses_a_score_outside_the_scale(round_, reviewer, response):
    with _db_refuses("score 5 is outside the scale 0–2 of attribute AUR"), transaction.atomic():
        JudgmentFactory(round=round_, coder=reviewer, response=response, score=5)


def test_database_refuses_a_judgment_on_the_wrong_unit(round_, reviewer, response):
    with _db_refuses("attribute U1 is coded once per turn"), transaction.atomic():
        JudgmentFactory(round=round_, coder=reviewer, attribute=attribute("U1"), response=response)
    with pytest.raises(ValidationError, match="U1 is coded once per turn"):
        services.judgment_save(round=round_, by=reviewer, attribute=attribute("U1"), response=response, score=1)


def test_database_refuses_a_response_of_another_turn(round_, reviewer, response):
    elsewhere = TurnFactory()
    with _db_refuses("is not part of turn"), transaction.atomic():
        JudgmentFactory(round=round_, coder=reviewer, response=response, turn=elsewhere,
                        conversation=elsewhere.conversation)


# --- spans inside the text and of the judgment's own attribute ------------------------------------------------


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


def test_database_refuses_spans_outside_the_text_or_of_another_attribute(round_, reviewer, response):
    judgment = JudgmentFactory(round=round_, coder=reviewer, response=response)
    length = len(response.text)
    with _db_refuses(rf"span: \[0, {length + 1}\) is outside the response text \({length} characters\)"), \
            transaction.atomic():
        SpanFactory(judgment=judgment, start=0, end=length + 1)
    directive = attribute("TD").subcategories.get(slug="directive")
    with _db_refuses("belongs to another attribute"), transaction.atomic():
        SpanFactory(judgment=judgment, subcategory=directive)
    with _db_refuses("span_not_empty"), transaction.atomic():
        SpanFactory(judgment=judgment, start=4, end=4)
    SpanFactory(judgment=judgment, start=length - 1, end=length)
    assert judgment.spans.count() == 1


def test_instance_count_only_where_the_schema_has_one(round_, reviewer, response):
    with pytest.raises(ValidationError, match="F1 takes no instance count"):
        services.judgment_save(round=round_, by=reviewer, attribute=attribute("F1"), response=response, score=1,
                               instance_count=2)
