"""The upgrade from release 0.2.0 (README, "Upgrading"): a database at 0.2.0's migrations, with rows written by the
historical models of that state, migrated to the head, keeps its rows and gets what the data migrations promise:
0017's counters equal a count of the assignments (several rounds and coders, completed and not) and its triggers
keep them from then on; 0020 leaves 0.2.0's members as they are; 0021 gives an existing CARE or LongCounsel-8
study its kind's default settings; 0022 gives someone 0.2.0 took off a study (it deleted their membership row) the
role and place on the panel the audit trail says they had, so their judgments count as they did before.

The migrations run backwards from nothing to 0.2.0 in a database of this test's own on the test server (created
and dropped here), so the other tests of the worker keep the head schema whatever happens in this one."""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from django.contrib.contenttypes.models import ContentType
from django.db import connections
from django.db.migrations.executor import MigrationExecutor

from annotation import kinds, selectors
from annotation.models import Assignment, ConversationProgress, FormerStudyMember, QueueProgress, Study, StudyMember
from audit.models import AuditEvent

# The last migration of each app that changed at 0.2.0 (commit 90d194a); every other app is at its head there.
RELEASE_020 = {"annotation": "0016_study_blinding_key", "benchmark": "0005_response_turn_index_dropped"}
DONE = datetime(2026, 12, 1, tzinfo=UTC)

# Each test runs in a transaction of its own, on the upgraded database, rolled back after it (so the test database
# is set up for the worker before ``upgraded`` reads its name).
pytestmark = pytest.mark.django_db


@contextlib.contextmanager
def own_database(django_db_blocker) -> Iterator[None]:
    """The default connection on a fresh database of the same server for the block, then back on the test
    database (as pytest-django points it at its test database); the fresh database is dropped afterwards."""
    connection = connections["default"]
    test_name = connection.settings_dict["NAME"]
    name = f"{test_name}_upgrade"
    with django_db_blocker.unblock():
        with connection._nodb_cursor() as cursor:
            cursor.execute(f'DROP DATABASE IF EXISTS "{name}"')
            cursor.execute(f'CREATE DATABASE "{name}"')
        connection.close()
        connection.settings_dict["NAME"] = name
        ContentType.objects.clear_cache()
        try:
            yield
        finally:
            connection.close()
            connection.settings_dict["NAME"] = test_name
            ContentType.objects.clear_cache()
            with connection._nodb_cursor() as cursor:
                cursor.execute(f'DROP DATABASE IF EXISTS "{name}"')


def migrate(targets: list[tuple[str, str]]):
    """The default database migrated to ``targets``; the models of that state."""
    MigrationExecutor(connections["default"]).migrate(targets)
    return MigrationExecutor(connections["default"]).loader.project_state(targets).apps


def release_020_targets() -> list[tuple[str, str]]:
    leaves = MigrationExecutor(connections["default"]).loader.graph.leaf_nodes()
    return [(app, RELEASE_020.get(app, name)) for app, name in leaves]


def studies_of_020(apps) -> dict:
    """A 0.2.0 database's rows, by that state's models: a default study with a closed calibration round and an
    open main round (three coders, some items completed), a CARE and an LC8 study with members in each role."""
    User = apps.get_model("auth", "User")
    Schema, Study, StudyMember = (apps.get_model("annotation", name) for name in ("Schema", "Study", "StudyMember"))
    Round, Assignment = apps.get_model("annotation", "Round"), apps.get_model("annotation", "Assignment")
    Dataset, Conversation, Turn = (apps.get_model("benchmark", name) for name in ("Dataset", "Conversation", "Turn"))
    users = {name: User.objects.create(username=name)
             for name in ("ana", "ben", "cleo", "dev", "eve", "fay", "gus", "judge")}
    dataset = Dataset.objects.create(name="upgrade-020")
    turns = []
    for number, size in enumerate((3, 1, 2), start=1):
        conversation = Conversation.objects.create(dataset=dataset, external_id=f"c{number}", kind="multi",
                                                   topic="Anxiety")
        turns += [Turn.objects.create(conversation=conversation, index=index, client_text=f"turn {index}")
                  for index in range(1, size + 1)]
    studies = {slug: Study.objects.create(slug=slug, name=slug, schema=Schema.objects.get(slug=schema),
                                          model_slots=["GPT"])
               for slug, schema in (("plain", "cab-v1"), ("care", "care-v1"), ("lc8", "lc8-v1"))}
    members = [("plain", "ana", "reviewer", "R1", True), ("plain", "ben", "reviewer", "R2", False),
               ("plain", "cleo", "expert", "", None), ("care", "ana", "reviewer", "R1", None),
               ("care", "judge", "method", "", None), ("lc8", "ben", "reviewer", "R1", None),
               ("lc8", "judge", "reference", "", None)]
    for slug, name, role, alias, retained in members:
        StudyMember.objects.create(study=studies[slug], user=users[name], role=role, alias=alias, retained=retained)
    calibration = Round.objects.create(study=studies["plain"], kind="calibration", number=1, status="closed")
    main = Round.objects.create(study=studies["plain"], kind="main", number=1, status="open")
    care_main = Round.objects.create(study=studies["care"], kind="main", number=1, status="open")
    # (round, coder, turns, how many of them completed); dev (a retained reviewer), eve (an expert) and gus (a
    # reviewer never retained) coded and were taken off the study.
    queues = [(calibration, "ana", turns[:4], 4), (calibration, "ben", turns[:4], 2),
              (calibration, "cleo", turns[:4], 0), (calibration, "eve", turns[:2], 2),
              (calibration, "gus", turns[:1], 1), (main, "ana", turns[2:], 1),
              (main, "ben", turns, 6), (main, "dev", turns[:3], 3), (care_main, "ana", turns[3:], 0)]
    for round_, coder, queue, completed in queues:
        Assignment.objects.bulk_create(
            Assignment(round=round_, coder=users[coder], turn=turn, position=position,
                       completed_at=DONE if position <= completed else None)
            for position, turn in enumerate(queue, start=1))
    audit_trail_of_020(apps, study=studies["plain"])
    return {"members": {(slug, name, role, alias, retained) for slug, name, role, alias, retained in members},
            "queues": Counter({(r.pk, users[c].pk): len(q) for r, c, q, _ in queues}),
            "completed": Counter({(r.pk, users[c].pk): n for r, c, _, n in queues}),
            "by_conversation": Counter((r.pk, users[c].pk, t.conversation_id) for r, c, q, _ in queues for t in q),
            "done_by_conversation": Counter((r.pk, users[c].pk, t.conversation_id) for r, c, q, n in queues
                                            for position, t in enumerate(q, start=1) if position <= n),
            "main": main.pk}


def audit_trail_of_020(apps, *, study) -> None:
    """What 0.2.0's audit trail says of the study's members: the panel retained (twice: the second time after dev
    was taken off, which says nothing of dev), and five removals (0.2.0 deleted the member's row and recorded the
    role): dev, eve and gus, who coded; fay, who never coded there; ana, who was added back and is a member."""
    AuditEvent = apps.get_model("audit", "AuditEvent")

    def event(action: str, target: str, **data) -> None:
        AuditEvent.objects.create(action=action, study_id=study.pk, study_slug=study.slug, target=target, data=data)

    event("panel.retain", f"study:{study.slug}", retained=["ana", "dev"])
    event("member.remove", "user:dev", role="reviewer")
    event("member.remove", "user:eve", role="expert")
    event("member.remove", "user:gus", role="reviewer")
    event("member.remove", "user:fay", role="expert")
    event("member.remove", "user:ana", role="reviewer")
    event("member.add", "user:ana", role="reviewer")
    event("member.remove", "user:nobody", role="reviewer")
    event("panel.retain", f"study:{study.slug}", retained=["ana", "ben"])


@pytest.fixture(scope="module")
def upgraded(django_db_setup, django_db_blocker) -> Iterator[dict]:
    """A 0.2.0 database with ``studies_of_020``'s rows, migrated to the head; what was written."""
    with own_database(django_db_blocker):
        head = MigrationExecutor(connections["default"]).loader.graph.leaf_nodes()
        written = studies_of_020(migrate(release_020_targets()))
        written["columns"] = table_columns()
        migrate(head)
        yield written


def table_columns() -> dict[tuple[str, str], tuple[bool, bool]]:
    """Each column of the database's tables: (table, column) → (nullable, has a database default)."""
    with connections["default"].cursor() as cursor:
        cursor.execute("SELECT table_name, column_name, is_nullable = 'YES', column_default IS NOT NULL "
                       "FROM information_schema.columns WHERE table_schema = 'public'")
        return {(table, column): (nullable, default) for table, column, nullable, default in cursor.fetchall()}


def test_the_queue_counters_equal_the_assignments_of_every_round_and_coder(upgraded):
    queues = {(p.round_id, p.coder_id): (p.total, p.done) for p in QueueProgress.objects.all()}
    assert queues == {key: (total, upgraded["completed"][key]) for key, total in upgraded["queues"].items()}
    conversations = {(p.round_id, p.coder_id, p.conversation_id): (p.total, p.done)
                     for p in ConversationProgress.objects.all()}
    assert conversations == {key: (total, upgraded["done_by_conversation"][key])
                             for key, total in upgraded["by_conversation"].items()}
    assert {done for _, done in queues.values()} >= {0, 1} and any(total == done for total, done in queues.values())


def test_the_triggers_keep_the_counters_after_the_upgrade(upgraded):
    undone = Assignment.objects.filter(round_id=upgraded["main"], completed_at__isnull=True).order_by("pk").first()
    before = QueueProgress.objects.get(round_id=undone.round_id, coder_id=undone.coder_id)
    Assignment.objects.filter(pk=undone.pk).update(completed_at=DONE)
    after = QueueProgress.objects.get(round_id=undone.round_id, coder_id=undone.coder_id)
    assert (after.total, after.done) == (before.total, before.done + 1)


def test_members_of_020_studies_stay_members(upgraded):
    members = {(m.study.slug, m.user.username, m.role, m.alias, m.retained)
               for m in StudyMember.objects.select_related("study", "user")}
    assert members == upgraded["members"]


def test_someone_020_took_off_gets_the_role_and_panel_place_the_audit_trail_says(upgraded):
    formers = {(f.study.slug, f.user.username, f.role, f.alias, f.retained)
               for f in FormerStudyMember.objects.select_related("study", "user")}
    # dev was on the panel when taken off (the later retention does not name him); gus never was; eve an expert;
    # fay coded nothing there, ana is a member again, "nobody" is no account: none of them is restored.
    assert formers == {("plain", "dev", "reviewer", "", True), ("plain", "eve", "expert", "", None),
                       ("plain", "gus", "reviewer", "", False)}
    coders = {coder.username: (coder.role, coder.retained, coder.member) for coder in
              selectors.study_coders(study=Study.objects.get(slug="plain"))}
    assert coders == {"ana": ("reviewer", True, True), "ben": ("reviewer", False, True),
                      "cleo": ("expert", None, True), "dev": ("reviewer", True, False),
                      "eve": ("expert", None, False), "gus": ("reviewer", False, False)}
    removed = AuditEvent.objects.get(action="member.remove", target="user:eve").at
    assert FormerStudyMember.objects.get(user__username="eve").removed_at == removed


@pytest.mark.parametrize("slug", ["plain", "care", "lc8"])
def test_an_existing_study_gets_its_kinds_default_settings(upgraded, slug):
    study = Study.objects.select_related("schema").get(slug=slug)
    assert study.kind_settings == {}
    kind = kinds.kind_of(study)
    assert kind.slug == {"plain": kinds.DEFAULT.slug}.get(slug, slug)
    assert {s.name: kinds.setting_value(study, s) for s in kind.settings} == {s.name: s.default for s in kind.settings}
    if slug == "care":
        assert {s.name for s in kind.settings} >= {"quality_scope"}


def test_a_020_process_can_still_write_every_table_it_knows(upgraded):
    """A column the upgrade adds to a table 0.2.0 had is nullable or has a database default, so an INSERT by 0.2.0's
    code (which names only the columns it knows) still works on the migrated database, should an old process be
    left running (README "Upgrading", step 2): 0021's ``kind_settings`` had none until 0024."""
    tables = {table for table, _ in upgraded["columns"]}
    added = {key: shape for key, shape in table_columns().items()
             if key[0] in tables and key not in upgraded["columns"]}
    assert ("annotation_study", "kind_settings") in added
    assert {key for key, (nullable, default) in added.items() if not (nullable or default)} == set()
    plain = Study.objects.get(slug="plain")
    with connections["default"].cursor() as cursor:
        known = [column for table, column in upgraded["columns"] if table == "annotation_study" and column != "id"]
        values = ["'made-by-020'" if column == "slug" else column for column in known]
        # the columns' names come from the catalogue, not from input
        statement = f"INSERT INTO annotation_study ({', '.join(known)}) SELECT {', '.join(values)} "  # noqa: S608
        cursor.execute(statement + "FROM annotation_study WHERE id = %s RETURNING id", [plain.pk])
        [(made,)] = cursor.fetchall()
    assert Study.objects.get(pk=made).kind_settings == {}
