"""Session labels go in by four paths: ``POST …/session-labels/`` (rows), ``manage.py import_session_labels``, and,
inside a long-format export, ``manage.py import_judgments`` and ``POST …/judgments/import/``. The same rows are
refused by each with the same (row, field, why), and nothing is written. Before, a NUL or lone surrogate was "at most
200 characters, no NUL or lone surrogate character" by the first two and "contains a NUL or lone surrogate
character" by the other two."""

from __future__ import annotations

import pytest

from annotation.models import SessionLabel
from tests.lc8.label_paths import label_paths
from tests.lc8.test_data import row, stored
from tests.lc8.test_data import study as study  # noqa: F401, PLC0414 - the fixture

pytestmark = pytest.mark.django_db

WRONG = [
    row(dataset="LC8\x00test"),
    row(conversation="t\ud800"),
    row(reviewer="m-a\x00"),
    row(attribute="PHQ\x001"),
    row(dataset=7),
    row(conversation="t" * 201),
    row(reviewer="controlled", role="reference", attribute="PHQ1", score=4),
    row(session=6),
]


@pytest.fixture
def paths(study, tmp_path, admin_user, as_token):  # noqa: F811 - the fixture
    return label_paths(study, WRONG, as_token(admin_user, scopes=["import"]), tmp_path)


def test_wrong_labels_are_refused_alike_by_every_path(paths, study):  # noqa: F811 - the fixture
    said = {path: refuse() for path, refuse in paths.items()}
    first = next(iter(said.values()))
    assert len(first) == len(WRONG), first
    assert all(errors == first for errors in said.values()), "\n\n".join(
        f"{path}:\n" + "\n".join(map(str, errors)) for path, errors in said.items())
    assert not SessionLabel.objects.exists() and not stored(study)
