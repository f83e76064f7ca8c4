"""Study archive imports at once, on real PostgreSQL connections (tests/races.py): one archive imported twice at
once is imported once and the other refused by its slug; an archive whose slug another writer is creating waits for
it and is refused so; two imports at once in one process each keep the archived timestamps."""

from __future__ import annotations

import io
import threading
import time
from pathlib import Path
from unittest import mock

import pytest
from django.core.management import CommandError, call_command
from django.db import connection, transaction

from annotation import services as annotation_services
from annotation.models import Judgment, Schema, Study
from audit.models import AuditEvent
from study_archive.importer import _Importer
from tests.races import together
from tests.study_archive.test_archive import export, write


def _imported(path: Path, slug: str):
    def run() -> str:
        call_command("import_study", str(path), "--as", slug, stdout=io.StringIO())
        return slug

    return run


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_one_archive_imported_twice_at_once_is_imported_once_and_the_other_refused_by_its_slug(tmp_path):
    call_command("load_demo", "--quiet")
    path = write(tmp_path, export("demo"))

    answers = together(_imported(path, "copy"), _imported(path, "copy"))
    assert "copy" in answers, answers
    refused = [str(answer) for answer in answers if isinstance(answer, CommandError)]
    assert len(refused) == 1 and "a study 'copy' exists in this installation; import under another slug" in refused[0]
    assert Study.objects.filter(slug="copy").count() == 1
    assert AuditEvent.objects.filter(action="study.import").count() == 1


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_two_archives_imported_at_once_in_one_process_both_keep_what_they_hold(tmp_path):
    """An import keeps the archived timestamps by flipping flags the whole process shares (``_stored_timestamps``):
    two at once in one process each get them as they were, and the process's own saves their times after."""
    call_command("load_demo", "--quiet")
    path = write(tmp_path, export("demo"))

    # The second starts while the first is inside the flip, and would write its rows after the first is done.
    first_inside, first_done = threading.Event(), threading.Event()
    studies = _Importer._studies

    def held_studies(importer, batch):
        if importer.as_slug == "copy-a":
            first_inside.set()
        else:
            first_done.wait(10)
        return studies(importer, batch)

    def first() -> str:
        try:
            return _imported(path, "copy-a")()
        finally:
            first_done.set()

    def second() -> str:
        first_inside.wait(10)
        return _imported(path, "copy-b")()

    with mock.patch.object(_Importer, "_studies", held_studies):
        assert together(first, second) == ["copy-a", "copy-b"]
    def timestamps(slug: str) -> list:
        return sorted(Judgment.objects.filter(round__study__slug=slug).values_list("created_at", "updated_at"))

    assert timestamps("copy-a") == timestamps("copy-b") == timestamps("demo")
    assert not AuditEvent.objects.filter(at__isnull=True).exists()
    assert AuditEvent.objects.create(action="test", target="test").at is not None


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_an_archive_whose_slug_another_writer_is_creating_waits_and_is_refused_by_its_slug(tmp_path):
    call_command("load_demo", "--quiet")
    path = write(tmp_path, export("demo"))
    created, release = threading.Event(), threading.Event()

    def create() -> str:
        with transaction.atomic():
            annotation_services.study_create(slug="copy", name="copy", schema=Schema.objects.get(slug="cab-v1"),
                                             model_slots=["A"], by=None)
            created.set()
            release.wait(30)
        return "created"

    def import_once_created() -> str:
        created.wait(10)
        return _imported(path, "copy")()

    def release_once_the_import_waits() -> None:
        with connection.cursor() as cursor:
            for _ in range(200):
                cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                               "AND datname = current_database()")
                if cursor.fetchone()[0]:
                    break
                time.sleep(0.05)
        release.set()

    answers = together(create, import_once_created, release_once_the_import_waits)
    assert answers[0] == "created", answers
    assert isinstance(answers[1], CommandError), answers
    assert "a study 'copy' exists in this installation; import under another slug" in str(answers[1])
