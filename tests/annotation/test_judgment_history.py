"""A judgment's history (annotation.models.JudgmentRevision): every path that changes a judgment (autosave, gold,
import, synthetic data) keeps who, when, through which path and the value before and after, in the same
transaction; PostgreSQL refuses to delete a judgment or to change or delete its history (migration 0011) except
through the one audited purge (``services.judgments_purge``)."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, connection, transaction
from django.db.models import ProtectedError
from django.test.utils import CaptureQueriesContext

from annotation import judgment_import, services
from annotation.models import Judgment, JudgmentRevision, Span, Study
from annotation.services import SpanInput, StaleJudgmentError, judgment_value
from annotation.synthetic import SyntheticSpec, synthetic_generate
from audit.models import AuditEvent
from benchmark import conversation_ingest
from benchmark.demo import demo_records
from calibration import services as calibration_services
from tests.factories import JudgmentFactory, RoundItemFactory, StudyMemberFactory, UserFactory, attribute

pytestmark = pytest.mark.django_db

def history(judgment: Judgment) -> list[JudgmentRevision]:
    return list(JudgmentRevision.objects.filter(judgment=judgment).order_by("id"))


def value(score, *, instance_count=None, spans=(), note=""):
    return {"score": score, "instance_count": instance_count, "note": note, "spans": [list(s) for s in spans]}


# --- autosave ------------------------------------------------------------------------------------------------------


def test_each_autosave_keeps_who_when_and_the_value_before_and_after(round_, reviewer, response):
    aur = attribute("AUR")
    first = services.judgment_save(round=round_, by=reviewer, attribute=aur, response=response, score=1)
    second = services.judgment_save(round=round_, by=reviewer, attribute=aur, response=response, score=2,
                                    instance_count=1, spans=[SpanInput(0, 4, "assumes")],
                                    expected_version=first.version)
    created, changed = history(second)
    assert (created.version, created.changed_by, created.source) == (1, reviewer, "autosave")
    assert created.before is None and created.after == value(1)
    assert (changed.version, changed.changed_by, changed.source) == (2, reviewer, "autosave")
    assert changed.before == value(1)
    assert changed.after == value(2, instance_count=1, spans=[(0, 4, "assumes")])
    assert changed.at == second.updated_at and created.at == first.updated_at


def test_a_change_of_spans_alone_is_recorded_with_the_old_and_new_spans(round_, reviewer, response):
    aur = attribute("AUR")
    services.judgment_save(round=round_, by=reviewer, attribute=aur, response=response, score=2, instance_count=1,
                           spans=[SpanInput(5, 9, "assumes")])
    judgment = services.judgment_save(round=round_, by=reviewer, attribute=aur, response=response, score=2,
                                      instance_count=1, spans=[SpanInput(0, 4, "assumes")])
    last = history(judgment)[-1]
    assert last.before["spans"] == [[5, 9, "assumes"]] and last.after["spans"] == [[0, 4, "assumes"]]
    assert last.before["score"] == last.after["score"] == 2


def test_a_save_without_spans_keeps_them_in_the_value(round_, reviewer, response):
    aur = attribute("AUR")
    services.judgment_save(round=round_, by=reviewer, attribute=aur, response=response, score=1, instance_count=1,
                           spans=[SpanInput(0, 4, "assumes")])
    judgment = services.judgment_save(round=round_, by=reviewer, attribute=aur, response=response, score=2,
                                      instance_count=1)
    last = history(judgment)[-1]
    assert last.before == value(1, instance_count=1, spans=[(0, 4, "assumes")])
    assert last.after == value(2, instance_count=1, spans=[(0, 4, "assumes")])


def test_a_save_that_changes_nothing_bumps_the_version_but_keeps_no_revision(round_, reviewer, response):
    aur = attribute("AUR")
    for _ in range(2):
        judgment = services.judgment_save(round=round_, by=reviewer, attribute=aur, response=response, score=1,
                                          spans=[SpanInput(0, 4, "assumes")], instance_count=1)
    assert judgment.version == 2
    assert [r.version for r in history(judgment)] == [1]


def test_a_refused_save_keeps_no_revision(round_, reviewer, response):
    aur = attribute("AUR")
    saved = services.judgment_save(round=round_, by=reviewer, attribute=aur, response=response, score=1)
    services.judgment_save(round=round_, by=reviewer, attribute=aur, response=response, score=2,
                           expected_version=saved.version)
    with pytest.raises(StaleJudgmentError):
        services.judgment_save(round=round_, by=reviewer, attribute=aur, response=response, score=0,
                               expected_version=saved.version)
    assert [r.after["score"] for r in history(saved)] == [1, 2]


# --- gold -----------------------------------------------------------------------------------------------------------


def test_recording_gold_keeps_the_recorder_the_note_and_who_agreed(round_, admin_user, expert, response):
    RoundItemFactory(round=round_, turn=response.turn)
    aur = attribute("AUR")
    second = StudyMemberFactory(study=round_.study, role="expert", user=UserFactory(username="expert-2")).user
    services.judgment_save(round=round_, by=expert, attribute=aur, response=response, score=1)
    services.judgment_save(round=round_, by=second, attribute=aur, response=response, score=2)
    gold = calibration_services.gold_record(round=round_, by=admin_user, attribute=aur, turn=response.turn,
                                            response=response, score=1, agreed_by=[expert], expected_version=0)
    gold = calibration_services.gold_record(round=round_, by=admin_user, attribute=aur, turn=response.turn,
                                            response=response, score=2, note="decided in the workshop",
                                            agreed_by=[expert, second], expected_version=1)
    created, changed = history(gold)
    assert (created.source, created.changed_by, created.before) == ("gold", admin_user, None)
    assert created.after == value(1) | {"agreed_by": ["expert"]}
    assert changed.before == created.after and changed.version == 2 and changed.changed_by == admin_user
    assert changed.after == value(2, note="decided in the workshop") | {"agreed_by": ["expert", "expert-2"]}


def test_unanimous_gold_is_recorded_in_the_history_too(round_, admin_user, expert, response):
    RoundItemFactory(round=round_, turn=response.turn)
    aur = attribute("AUR")
    services.judgment_save(round=round_, by=expert, attribute=aur, response=response, score=2)
    assert calibration_services.gold_accept_unanimous(round=round_, by=admin_user) >= 1
    gold = Judgment.objects.get(round=round_, is_gold=True, attribute=aur, response=response)
    (revision,) = history(gold)
    assert (revision.source, revision.changed_by) == ("gold", admin_user)
    assert revision.after == value(2, note="unanimous") | {"agreed_by": ["expert"]}


# --- import and synthetic data --------------------------------------------------------------------------------------


def _row(**overrides):
    base = {"study": "imported", "round": "calibration-1", "reviewer": "alice", "is_gold": False,
            "dataset": "CounselChat", "conversation_id": "appendix-d-1", "turn_index": 1, "model": "GPT",
            "attribute": "AUR", "score": 1, "instance_count": 1,
            "spans": [{"start": 0, "end": 3, "subcategory": "assumes"}]}
    return base | overrides


def test_an_import_starts_the_history_of_every_judgment_it_creates(admin_user):
    conversation_ingest.conversations_import(rows=enumerate(demo_records(), start=1))
    rows = [_row(), _row(reviewer="bob", score=0, instance_count=0, spans=[]),
            _row(is_gold=True, reviewer="erin", score=2)]
    judgment_import.judgments_import(rows=enumerate(rows, start=1), study_slug="imported", by=admin_user,
                                     create_study=True)
    revisions = list(JudgmentRevision.objects.select_related("judgment__coder").order_by("judgment__coder__username"))
    assert [(r.judgment.coder.username, r.source, r.changed_by, r.version, r.before) for r in revisions] == [
        ("alice", "import", admin_user, 1, None), ("bob", "import", admin_user, 1, None),
        ("erin", "import", admin_user, 1, None)]
    assert [r.after for r in revisions] == [
        value(1, instance_count=1, spans=[(0, 3, "assumes")]), value(0, instance_count=0),
        value(2, instance_count=1, spans=[(0, 3, "assumes")]) | {"agreed_by": []}]


def test_an_import_writes_its_history_without_a_query_per_row(admin_user):
    """The same number of queries for one row as for five (the history goes in one COPY)."""
    conversation_ingest.conversations_import(rows=enumerate(demo_records(), start=1))
    judgment_import.judgments_import(rows=enumerate([_row(reviewer="warm-up")], start=1), study_slug="imported",
                                     by=admin_user, create_study=True)
    counted = {}
    for models in (["GPT"], ["GPT", "Claude", "Gemini", "Llama", "Qwen"]):
        coder = f"coder-{len(models)}"
        with CaptureQueriesContext(connection) as captured:
            judgment_import.judgments_import(rows=enumerate([_row(reviewer=coder, model=m) for m in models], start=1),
                                             study_slug="imported", by=admin_user)
        counted[len(models)] = len(captured.captured_queries)
        revisions = JudgmentRevision.objects.filter(judgment__coder__username=coder)
        assert sorted(r.judgment.response.model_slot for r in revisions) == sorted(models)
        assert {(r.source, r.changed_by, r.version, r.before) for r in revisions} == {("import", admin_user, 1, None)}
        assert all(r.after == value(1, instance_count=1, spans=[(0, 3, "assumes")]) for r in revisions)
    assert counted[1] == counted[5]


def judgment_values_now() -> dict[int, dict]:
    spans: dict[int, list] = {}
    for judgment_id, start, end, slug in Span.objects.values_list("judgment_id", "start", "end", "subcategory__slug"):
        spans.setdefault(judgment_id, []).append((start, end, slug))
    return {j.pk: judgment_value(j, spans=spans.get(j.pk, []), agreed_by=[u.username for u in j.agreed_by.all()])
            for j in Judgment.objects.prefetch_related("agreed_by")}


def test_synthetic_data_gives_every_judgment_a_history_ending_in_its_current_value(db):
    synthetic_generate(SyntheticSpec(conversations=2, models=2, reviewers=2, experts=1, seed=5, slug="syn-h"))
    now = judgment_values_now()
    assert len(now) > 50
    latest = {r.judgment_id: r for r in JudgmentRevision.objects.order_by("judgment_id", "id")}
    assert set(latest) == set(now)
    assert {pk: r.after for pk, r in latest.items()} == now
    assert {(r.source, r.changed_by_id, r.before) for r in latest.values()} == {("import", None, None)}


# --- never deleted: the database's guard (PostgreSQL) ------------------------------------------------------------


def refused(sql: str, params: list) -> str:
    """Run one statement in its own savepoint; the database error it raised (empty if it went through)."""
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(sql, params)
    except IntegrityError as error:
        return str(error)
    return ""


@pytest.fixture
def saved(round_, reviewer, response):
    aur = attribute("AUR")
    services.judgment_save(round=round_, by=reviewer, attribute=aur, response=response, score=1)
    return services.judgment_save(round=round_, by=reviewer, attribute=aur, response=response, score=2,
                                  instance_count=1, spans=[SpanInput(0, 4, "assumes")])


def test_the_database_refuses_to_delete_a_judgment(saved):
    message = refused("DELETE FROM annotation_judgment WHERE id = %s", [saved.pk])
    assert f"judgment {saved.pk}: judgments are never deleted" in message
    without_history = JudgmentFactory()
    with pytest.raises(IntegrityError, match="judgments are never deleted"), transaction.atomic():
        Judgment.objects.filter(pk=without_history.pk).delete()
    assert Judgment.objects.filter(pk__in=[saved.pk, without_history.pk]).count() == 2


def test_the_database_refuses_to_change_or_delete_history(saved):
    revision = history(saved)[0]
    assert "append-only: UPDATE" in refused(
        "UPDATE annotation_judgmentrevision SET after = '{}'::jsonb WHERE id = %s", [revision.pk])
    assert "append-only: DELETE" in refused("DELETE FROM annotation_judgmentrevision WHERE id = %s", [revision.pk])
    with pytest.raises(IntegrityError, match="append-only"), transaction.atomic():
        JudgmentRevision.objects.filter(pk=revision.pk).update(changed_by=None)
    revision.refresh_from_db()
    assert revision.after == value(1) and len(history(saved)) == 2


def test_even_a_purge_cannot_change_history(saved):
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT set_config('cab.purge', 'on', true)")
        assert "append-only: UPDATE" in refused("UPDATE annotation_judgmentrevision SET version = 9 "
                                                "WHERE judgment_id = %s", [saved.pk])
        cursor.execute("SELECT set_config('cab.purge', 'off', true)")


def test_a_purge_removes_judgments_spans_and_history_and_is_audited(saved, admin_user):
    assert services.judgments_purge(judgments=Judgment.objects.filter(pk=saved.pk), by=admin_user,
                                    reason="consent withdrawn") == 1
    assert not Judgment.objects.filter(pk=saved.pk).exists()
    assert not Span.objects.filter(judgment_id=saved.pk).exists()
    assert not JudgmentRevision.objects.filter(judgment_id=saved.pk).exists()
    event = AuditEvent.objects.get(action="judgments.purge")
    assert (event.actor, event.study_slug, event.data) == (admin_user, saved.round.study.slug,
                                                           {"n": 1, "reason": "consent withdrawn"})


def test_after_a_purge_the_guard_is_back_within_the_same_transaction(saved, round_, other_reviewer, response):
    other = services.judgment_save(round=round_, by=other_reviewer, attribute=attribute("AUR"), response=response,
                                   score=0)
    services.judgments_purge(judgments=Judgment.objects.filter(pk=saved.pk), by=None, reason="test")
    assert "judgments are never deleted" in refused("DELETE FROM annotation_judgment WHERE id = %s", [other.pk])


def test_a_purge_needs_a_reason_and_a_study_admin(saved, reviewer):
    from django.core.exceptions import PermissionDenied, ValidationError

    with pytest.raises(ValidationError, match="say why"):
        services.judgments_purge(judgments=Judgment.objects.all(), by=None, reason=" ")
    with pytest.raises(PermissionDenied):
        services.judgments_purge(judgments=Judgment.objects.all(), by=reviewer, reason="mine")
    assert Judgment.objects.filter(pk=saved.pk).exists()


def test_a_study_or_round_with_judgments_cannot_be_deleted(saved):
    with pytest.raises(ProtectedError), transaction.atomic():
        Study.objects.filter(pk=saved.round.study_id).delete()
    with pytest.raises(ProtectedError), transaction.atomic():
        saved.round.delete()
    assert Judgment.objects.filter(pk=saved.pk).exists()


def test_the_django_admin_shows_a_judgments_history_read_only(client, saved):
    from django.urls import reverse

    from tests.factories import UserFactory

    client.force_login(UserFactory(username="root", is_superuser=True, is_staff=True))
    page = client.get(reverse("admin:annotation_judgment_change", args=[saved.pk])).content.decode()
    assert "Judgment revisions" in page and page.count("turn page") == 2
    assert "[[0, 4, &quot;assumes&quot;]]" in page and 'name="revisions-0-source"' not in page
