"""Session labels go in by four paths: ``POST …/session-labels/`` (rows), ``manage.py import_session_labels``, and,
inside a long-format export, ``manage.py import_judgments`` and ``POST …/judgments/import/``. The same rows are
refused by each with the same (row, field, why), and nothing is written. Before, a NUL or lone surrogate was "at most
200 characters, no NUL or lone surrogate character" by the first two and "contains a NUL or lone surrogate
character" by the other two."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command

from annotation import automated_coders, services
from annotation.models import SessionLabel, Study
from tests.lc8.label_paths import label_paths
from tests.lc8.test_data import lc8_study, row, stored
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


RIGHT = [row(session=s, score=float(s)) for s in range(1, 6)]


def _sent(path: str, study, api, folder) -> None:  # noqa: ANN001 - the fixtures' objects
    """``RIGHT`` sent to ``study`` by the path named, which takes them."""
    text = "".join(json.dumps(r) + "\n" for r in RIGHT)
    if path in ("import_session_labels", "import_judgments"):
        (folder / "labels.jsonl").write_text(text, encoding="utf-8")
        call_command(path, str(folder / "labels.jsonl"), "--study", study.slug, stdout=io.StringIO())
        return
    answer = (api.post(f"/api/v1/studies/{study.slug}/session-labels/", {"rows": RIGHT}, format="json")
              if path == "the session labels API" else
              api.generic("POST", f"/api/v1/studies/{study.slug}/judgments/import/", text.encode(),
                          content_type="application/x-ndjson"))
    assert answer.status_code == 200, answer.content


PATHS = ("the session labels API", "import_session_labels", "import_judgments", "the judgments import API")


@pytest.mark.parametrize("path", PATHS)
def test_labels_imported_into_a_study_in_set_up_open_it_as_judgments_do(path, tmp_path, admin_user, as_token):
    """An import of coded data opens a study in set-up, whichever path it took and whatever it holds
    (``annotation.services.study_opens``, as opening its first round does): its schema is frozen from then on, since
    what was coded names its attributes. Before, judgments opened it and session labels (by any path, or a judgments
    file holding labels only) left it in set-up, its schema still open to change under the labels. A refused import
    leaves it as it was."""
    study = lc8_study(slug=f"setup-{PATHS.index(path)}")
    automated_coders.method_register(study=study, name="m-a", version="1", by=None)
    api = as_token(admin_user, scopes=["import"])
    assert study.status == Study.Status.SETUP
    refuse = label_paths(study, WRONG, api, tmp_path)[path]
    assert refuse()
    study.refresh_from_db()
    assert study.status == Study.Status.SETUP and not services.schema_is_frozen(schema=study.schema)

    _sent(path, study, api, tmp_path)
    study.refresh_from_db()
    assert study.status == Study.Status.OPEN and services.schema_is_frozen(schema=study.schema)
    assert len(stored(study)) == len(RIGHT)
