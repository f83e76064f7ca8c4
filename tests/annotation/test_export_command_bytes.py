"""``manage.py export_judgments`` run from a shell writes the download's bytes (UTF-8) whatever the encoding of its
standard output (a shell whose locale is Latin-1, ``PYTHONIOENCODING``): the file the command writes re-imports as
the download does. Before, it wrote through the text layer of standard output, so a Latin-1 terminal's redirect gave
a coder ``zoë`` as one byte (a file ``import_judgments`` refuses as "not UTF-8 text"), and a name beyond Latin-1 a
UnicodeEncodeError traceback halfway through the file."""

from __future__ import annotations

import subprocess
import sys

import pytest
from django.conf import settings

from access import roles
from access.services import user_ensure
from annotation import long_format
from tests.celery_worker import process_env
from tests.factories import JudgmentFactory, RoundFactory, StudyFactory

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
@pytest.mark.parametrize("encoding", ["latin-1", "ascii"])
def test_the_command_writes_the_downloads_utf8_bytes_whatever_its_outputs_encoding(fmt, encoding):
    study = StudyFactory(slug="bytes")
    round_ = RoundFactory(study=study, kind="main", number=1, status="closed")
    for name in ("zoë", "jürgen", "дарья"):  # Latin-1, then beyond it
        JudgmentFactory(round=round_, coder=user_ensure(username=name, role=roles.REVIEWER))
    download = "".join(long_format.WRITERS[fmt](study=study)).encode()
    done = subprocess.run([sys.executable, "manage.py", "export_judgments", "--study", "bytes", "--format", fmt],
                          cwd=settings.BASE_DIR, env=process_env({"PYTHONIOENCODING": encoding, "CAB_PROGRESS": "0"}),
                          capture_output=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-2000:]
    assert done.stdout == download


def test_the_study_archive_written_to_standard_output_is_utf8_whatever_its_encoding():
    """``export_study STUDY`` (to standard output) wrote through the same text layer: a traceback on a Latin-1 shell
    for a coder's name beyond Latin-1."""
    study = StudyFactory(slug="bytes")
    round_ = RoundFactory(study=study, kind="main", number=1, status="closed")
    JudgmentFactory(round=round_, coder=user_ensure(username="дарья", role=roles.REVIEWER))
    done = subprocess.run([sys.executable, "manage.py", "export_study", "bytes"], cwd=settings.BASE_DIR,
                          env=process_env({"PYTHONIOENCODING": "latin-1", "CAB_PROGRESS": "0"}), capture_output=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-2000:]
    assert '"дарья"' in done.stdout.decode("utf-8")
