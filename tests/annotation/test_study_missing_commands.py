"""Every command given a study's slug that no study has refuses it in the same words, exit status 1, nothing written
(``common.commands.study_missing``); before, ``import_session_labels`` said "no study 'nope'" where the others said
"no study with slug 'nope'", ``register_coder`` "--study: no study 'nope'", and ``import_judgments`` created the
study (now only with ``--create-study``)."""

from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command

from access import roles
from access.services import user_ensure
from annotation.long_format import COLUMNS
from tests import form_fuzz

pytestmark = pytest.mark.django_db

COMMANDS = {
    "export_judgments": ["--study", "nope"],
    "export_bundle": ["nope", "{folder}"],
    "export_study": ["nope"],
    "metrics_report": ["--study", "nope", "--bootstrap", "10"],
    "rotate_blinding_key": ["nope"],
    "create_api_token": ["--user", "study-missing-admin", "--scope", "read", "--study", "nope"],
    "import_session_labels": ["{folder}/labels.csv", "--study", "nope"],
    "import_judgments": ["{folder}/judgments.csv", "--study", "nope"],  # without --create-study
    "register_coder": ["--study", "nope", "--method", "judge-a"],
}


@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_study_no_study_has_is_refused_in_the_same_words_by_every_command(command, tmp_path):
    user_ensure(username="study-missing-admin", role=roles.ADMIN)
    (tmp_path / "labels.csv").write_text("study,reviewer\n")
    (tmp_path / "judgments.csv").write_text(",".join(COLUMNS) + "\n")  # a file an import would take
    before = form_fuzz.fingerprint()
    with pytest.raises(CommandError) as refused:
        call_command(command, *(a.format(folder=tmp_path) for a in COMMANDS[command]), stdout=io.StringIO(),
                     stderr=io.StringIO())
    assert (str(refused.value), refused.value.returncode) == ("no study with slug 'nope'", 1)
    assert form_fuzz.fingerprint() == before
