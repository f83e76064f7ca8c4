"""A history whose replies are under several model slots in a CARE study
(docs/care.md#a-history-under-several-model-slots): ingestion refuses one (docs/sessions.md), but a study archive
made before the rule restores it as archived.
The CARE section leaves such a history out, counts its judgments under ``care.input.dropped.several_slots``, names it
with its slots (``care.input.several_slots``) and says so in the report's warnings; the bundle carries the slots, and
recomputes byte for byte. Before, the section read the second slot's codes as the assistant's and counted the first
slot's as ``recoded``, without a word.

The study is the CARE demo imported under another slug from an archive to which a second history was added by hand:
the demo's history again, under another id, each turn with a reply under ``Other`` too, and the judge's codes of each
reply given to both replies (a different strategy for ``Other``'s)."""

from __future__ import annotations

import copy
import io
import json

import pytest
from django.core.management import call_command
from django.test import Client, override_settings
from django.urls import reverse

from access import roles
from access.services import user_ensure
from annotation.models import Study
from care import inputs as loader
from care.core.rows import DROPPED
from care.demo import CARE_DEMO_STUDY, care_demo_load
from study_archive.records import dumps
from tests.reports.test_bundle_kinds import _bundled, _recompute_without_django
from tests.study_archive.test_archive import checksummed, write

pytestmark = pytest.mark.django_db
MIXED = "care-demo-mixed"
COPY = "care-mixed"


@pytest.fixture(autouse=True)
def bundle_dir(tmp_path):
    with override_settings(BUNDLE_DIR=str(tmp_path / "bundles")):
        yield


def _with_a_mixed_history(text: str) -> tuple[list[str], int]:
    """The archive's lines with a second history whose replies are under two slots, coded as the first is, each
    record beside the one it copies; and how many judgments are on it."""
    lines: list[str] = []
    added = {"conversation": 0, "judgment": 0}
    for line in text.splitlines()[:-1]:
        record = json.loads(line)
        copies = []
        if record["type"] == "study":
            record["model_slots"] = [*record["model_slots"], "Other"]
        elif record["type"] == "conversation":
            mixed = {**copy.deepcopy(record), "external_id": MIXED}
            for turn in mixed["turns"]:
                turn["responses"] += [{**response, "model_slot": "Other", "text": "Another assistant's reply."}
                                      for response in turn["responses"]]
            copies.append(mixed)
        elif record["type"] == "judgment":
            twin = {**copy.deepcopy(record), "conversation": [record["conversation"][0], MIXED]}
            copies.append(twin)
            if record["response"]:
                other = {**copy.deepcopy(twin), "response": "Other"}
                if record["attribute"] == "strategy":  # another strategy: Other's reply is another assistant's
                    other["score"] = (record["score"] + 1) % 4
                copies.append(other)
        for made in copies:
            added[made["type"]] += 1
        lines += [dumps(record), *map(dumps, copies)]
    end = json.loads(text.splitlines()[-1])
    for kind, count in added.items():
        end["records"][kind] += count
    return checksummed([*lines, dumps(end)]), added["judgment"]


def test_a_history_under_two_slots_from_an_archive_is_left_out_counted_and_said(tmp_path):
    admin = user_ensure(username="demo-admin", role=roles.ADMIN)
    care_demo_load(admin=admin, reviewer=user_ensure(username="demo-reviewer", role=roles.REVIEWER),
                   expert=user_ensure(username="demo-expert", role=roles.EXPERT))
    out = io.StringIO()
    call_command("export_study", CARE_DEMO_STUDY, stdout=out)
    lines, on_mixed = _with_a_mixed_history(out.getvalue())
    call_command("import_study", str(write(tmp_path, lines)), "--as", COPY, stdout=io.StringIO())
    study = Study.objects.select_related("schema").get(slug=COPY)
    assert loader.care_rows(study=study).several_slots == {MIXED: ("Assistant", "Other")}

    files = _bundled(study)
    report = json.loads(files["report.json"])
    care = report["care"]
    demo = loader.care_section(study=Study.objects.get(slug=CARE_DEMO_STUDY), seed=report["parameters"]["seed"],
                               resamples=report["parameters"]["bootstrap"])
    # every figure is the demo's own history's: the mixed history is in none, not even under the first slot
    assert {key: value for key, value in care.items() if key != "input"} == {
        key: value for key, value in demo.items() if key != "input"}
    assert MIXED not in care["states"]
    assert care["input"] == {
        **demo["input"], "judgments": demo["input"]["judgments"] + on_mixed,
        "dropped": {**dict.fromkeys(DROPPED, 0), "several_slots": on_mixed},
        "several_slots": {MIXED: ["Assistant", "Other"]}}
    assert report["warnings"] == [{"section": "care", "message": (
        f"The CARE section leaves out 1 history whose replies are under several model slots: {MIXED} (Assistant, "
        "Other). A history's reply codes are read as one assistant's, so no figure takes them, and their judgments "
        f"are counted under care.input.dropped.several_slots ({on_mixed} judgments; "
        "docs/care.md#a-history-under-several-model-slots). Import each assistant's replies as a history of its own "
        "to measure them.")}]
    assert json.loads(files["run.json"])["care"]["several_slots"] == {MIXED: ["Assistant", "Other"]}
    done, recomputed = _recompute_without_django(files, tmp_path)
    assert done.returncode == 0, done.stderr
    assert recomputed == files["report.json"]

    client = Client()
    client.force_login(admin)
    timeline = client.get(reverse("reports-care-timeline", args=[COPY, MIXED]))
    assert timeline.status_code == 404
