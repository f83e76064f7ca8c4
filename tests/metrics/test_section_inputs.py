"""Every section of a study's report reads what the study judged or labelled, whoever first ingested the material
(issue 29; ``annotation.selectors.conversations_of_study``, the README's study isolation rule), and says what it
left out.

A CARE study whose histories were loaded by ``import_conversations`` (no study) and coded by ``import_judgments
--study`` gets the care section of the same study ingested through itself; an LC8 study whose trajectories were
loaded the same way and labelled by ``import_session_labels --study`` gets the same lc8 section. Both go through the
commands' files (the imported studies made by ``create_study``, their coders registered by
``register_coder``). The report's main section reads the same conversations (``input``
equal)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.core.management import call_command

from access import roles
from access.services import user_ensure
from annotation import automated_coders, judgment_import, long_format, services, session_labels
from annotation.models import Schema, Study
from annotation.selectors import conversations_of_study
from benchmark import conversation_ingest
from benchmark.models import Conversation
from care import inputs as care_inputs
from care.demo import CARE_DEMO_FILE, CARE_DEMO_JUDGE, CARE_DEMO_JUDGE_FILE, CARE_DEMO_SLOT
from common.errors import jsonl_rows
from lc8 import inputs as lc8_inputs
from lc8.demo import lc8_demo_items, lc8_demo_predictions, lc8_demo_records
from lc8.synthetic import SLOT as LC8_SLOT
from metrics import runs
from metrics.parameters import DEFAULT_SEED, DEFAULT_TOP_K
from tests.care.test_inputs import few_histories_said, no_checklist_said

pytestmark = pytest.mark.django_db

HUMAN = "care-human"
HUMAN_CHANGES = {8: {"marker": "Settling", "strategy": "information"}, 12: {"marker": "Settling"}}
REFERENCE = "lc8-ref"
RATER = "lc8-rater"


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


# --- CARE ---------------------------------------------------------------------------------------------------------


def _care_files(folder: Path, *, slug: str, dataset: str) -> tuple[Path, Path]:
    """The CARE demo's history (in ``dataset``) and its judge's codes plus a human's turn codes (for ``slug``)."""
    history = json.loads(CARE_DEMO_FILE.read_text(encoding="utf-8")) | {"dataset": dataset}
    codes = []
    for line in CARE_DEMO_JUDGE_FILE.read_text(encoding="utf-8").splitlines():
        row = json.loads(line) | {"study": slug, "dataset": dataset}
        codes.append(row)
        if row["turn_index"] is not None:
            changed = HUMAN_CHANGES.get(row["turn_index"], {}).get(row["attribute"], row["score"])
            codes.append(row | {"reviewer": HUMAN, "role": "reviewer", "score": changed})
    return _jsonl(folder / f"{slug}-history.jsonl", [history]), _jsonl(folder / f"{slug}-codes.jsonl", codes)


def _study_made(slug: str, schema: str, slot: str, *, scripted: bool) -> Study:
    """The study, made through the service or (``scripted``) by ``create_study``."""
    if not scripted:
        return services.study_create(slug=slug, name=slug, schema=Schema.objects.get(slug=schema), model_slots=[slot],
                                     by=user_ensure(username="inputs-admin", role=roles.ADMIN))
    call_command("create_study", "--slug", slug, "--schema", schema, "--model-slot", slot, stdout=io.StringIO())
    return Study.objects.get(slug=slug)


def _register(study: Study, coders: list[dict], *, scripted: bool) -> None:
    """Each coder ({"method", "version", "prompt_id"} or {"reference"}) registered by ``register_coder`` (scripted)
    or through ``annotation.automated_coders``."""
    for coder in coders:
        if scripted:
            kind = ["--method", coder["method"], "--method-version", coder.get("version", ""),
                    "--prompt-id", coder.get("prompt_id", "")] if "method" in coder else ["--reference",
                                                                                         coder["reference"]]
            call_command("register_coder", "--study", study.slug, *kind, stdout=io.StringIO())
        elif "method" in coder:
            automated_coders.method_register(study=study, name=coder["method"], version=coder.get("version", ""),
                                             prompt_id=coder.get("prompt_id", ""), by=None)
        else:
            automated_coders.reference_register(study=study, name=coder["reference"], by=None)


CARE_CODERS = [{"method": CARE_DEMO_JUDGE, "version": "v1", "prompt_id": "care-judge"}]
LC8_CODERS = [{"reference": REFERENCE}] + [{"method": method, "version": "v1"}
                                           for method in sorted({m for m, _seed in lc8_demo_predictions()})]


def _care_study(slug: str, *, scripted: bool = False) -> Study:
    study = _study_made(slug, "care-v1", CARE_DEMO_SLOT, scripted=scripted)
    _register(study, CARE_CODERS, scripted=scripted)
    return study


@pytest.fixture(scope="module")
def care_studies(shared_state, tmp_path_factory):
    """(owned, imported): the same history and codes, ingested through the study, and by the commands without."""
    folder = tmp_path_factory.mktemp("care")
    with shared_state():
        owned = _care_study("care-owned")
        history, codes = _care_files(folder, slug="care-owned", dataset="CARE-owned")
        with history.open(encoding="utf-8") as stream:
            conversation_ingest.conversations_import(rows=list(jsonl_rows(stream)), study=owned)
        with codes.open(encoding="utf-8") as stream:
            judgment_import.judgments_import(rows=long_format.read_rows(stream, fmt="jsonl"),
                                             study_slug="care-owned", by=None)
        imported = _care_study("care-imported", scripted=True)
        history, codes = _care_files(folder, slug="care-imported", dataset="CARE-imported")
        call_command("import_conversations", str(history), stdout=io.StringIO())
        call_command("import_judgments", str(codes), "--study", "care-imported", stdout=io.StringIO())
        yield owned.pk, imported.pk


def _study(pk: int) -> Study:
    return Study.objects.select_related("schema").get(pk=pk)


def test_histories_imported_without_a_study_are_the_studys_that_coded_them(care_studies):
    owned, imported = (_study(pk) for pk in care_studies)
    assert Conversation.objects.get(dataset__name="CARE-imported").study_id is None  # nobody owns it
    assert list(conversations_of_study(study=imported).values_list("dataset__name", flat=True)) == ["CARE-imported"]
    mine = care_inputs.care_section(study=owned, seed=3, resamples=40)
    theirs = care_inputs.care_section(study=imported, seed=3, resamples=40)
    assert theirs == mine
    # not empty: the history's thirteen turns have states, the judge and the human are compared
    assert len(theirs["states"]["care-demo-1"]) == 13
    assert theirs["alignment"]["Assistant"]["n_action"] > 0
    assert theirs["validation"]["marker"][f"{HUMAN}|{CARE_DEMO_JUDGE}"]["n"] == 9
    assert theirs["reference"] == HUMAN
    # 108 judge codes and 90 human ones, all used; the human (the reference) coded no checklist of the history's two
    # quality sessions
    assert theirs["input"] == {"histories": 1, "judgments": 198, "used": 198,
                               "dropped": dict.fromkeys(care_inputs.DROPPED, 0), "no_horizon": {}, "stray_horizon": {},
                               "no_checklist": {"Assistant": 2}}


def test_the_report_and_metrics_report_of_the_imported_study(care_studies):
    owned, imported = (_study(pk) for pk in care_studies)
    out, err = io.StringIO(), io.StringIO()
    call_command("metrics_report", "--study", imported.slug, "--bootstrap", "20", stdout=out, stderr=err)
    report = json.loads(out.getvalue())
    expected = runs.report_build(study=owned, seed=DEFAULT_SEED, bootstrap=20, top_k=DEFAULT_TOP_K)
    assert report["care"] == expected["care"]
    # the main section reads the same judgments of the same history, in a dataset of another name (so the input's
    # fingerprint, which covers the dataset names, differs)
    read, owned_read = dict(report["input"]), dict(expected["input"])
    assert read.pop("fingerprint") != owned_read.pop("fingerprint")
    assert read == owned_read
    # no judgment left out; the one warning is of the quality sessions without the reference's checklist and of the
    # validation's intervals on the one history, the owned study's too
    said = no_checklist_said(HUMAN) + " " + few_histories_said(
        f"{HUMAN}|{CARE_DEMO_JUDGE} on crisis, marker, marker_direction, strategy, horizon (1 history)")
    assert report["warnings"] == expected["warnings"] == [{"section": "care", "message": said}]
    assert err.getvalue() == f"warning: {said}\n"


# --- LongCounsel-8 ------------------------------------------------------------------------------------------------


def _lc8_files(folder: Path, *, slug: str, dataset: str) -> tuple[Path, Path, Path]:
    """The LC8 demo's eight trajectories (in ``dataset``); the reference's items and two methods' totals per seed
    (session labels); a rater's items on the first two trajectories (judgments of the main round)."""
    block = Schema.objects.get(slug="lc8-v1").definition["lc8"]
    records = [record | {"dataset": dataset} for record in lc8_demo_records()]
    items = lc8_demo_items()
    labels, codes = [], []
    for t, record in enumerate(records):
        for s in range(items.shape[1]):
            where = {"dataset": dataset, "conversation_id": record["conversation_id"], "session_index": s + 1}
            for code, score in zip(block["items"], items[t, s].tolist(), strict=True):
                labels.append(where | {"attribute": code, "score": score, "reviewer": REFERENCE, "role": "reference"})
                if t < 2:
                    codes.append(where | {"study": slug, "round": "main", "reviewer": RATER, "role": "reviewer",
                                          "is_gold": False, "turn_index": None, "model": None, "attribute": code,
                                          "score": max(score - (s % 2), 0), "spans": [], "instance_count": None})
            for (method, seed), values in lc8_demo_predictions().items():
                labels.append(where | {"attribute": block["total"], "score": float(values[t, s]), "reviewer": method,
                                       "role": "method", "seed": seed})
    return (_jsonl(folder / f"{slug}-trajectories.jsonl", records), _jsonl(folder / f"{slug}-labels.jsonl", labels),
            _jsonl(folder / f"{slug}-codes.jsonl", codes))


def _lc8_study(slug: str, *, scripted: bool = False) -> Study:
    study = _study_made(slug, "lc8-v1", LC8_SLOT, scripted=scripted)
    _register(study, LC8_CODERS, scripted=scripted)
    return study


@pytest.fixture(scope="module")
def lc8_studies(shared_state, tmp_path_factory):
    """(owned, imported): the same trajectories, labels and codes, through the study, and by the commands without."""
    folder = tmp_path_factory.mktemp("lc8")
    with shared_state():
        owned = _lc8_study("lc8-owned")
        trajectories, labels, codes = _lc8_files(folder, slug="lc8-owned", dataset="LC8-owned")
        with trajectories.open(encoding="utf-8") as stream:
            conversation_ingest.conversations_import(rows=list(jsonl_rows(stream)), study=owned)
        with labels.open(encoding="utf-8") as stream:
            session_labels.session_labels_import(study=owned, rows=session_labels.read_file_rows(stream, fmt="jsonl"),
                                                 by=None, numbered=True, typed=True)
        with codes.open(encoding="utf-8") as stream:
            judgment_import.judgments_import(rows=long_format.read_rows(stream, fmt="jsonl"), study_slug="lc8-owned",
                                             by=None, typed=True)
        imported = _lc8_study("lc8-imported", scripted=True)
        trajectories, labels, codes = _lc8_files(folder, slug="lc8-imported", dataset="LC8-imported")
        call_command("import_conversations", str(trajectories), stdout=io.StringIO())
        call_command("import_session_labels", str(labels), "--study", "lc8-imported", stdout=io.StringIO())
        call_command("import_judgments", str(codes), "--study", "lc8-imported", stdout=io.StringIO())
        yield owned.pk, imported.pk


def test_trajectories_imported_without_a_study_are_the_studys_that_labelled_them(lc8_studies):
    owned, imported = (_study(pk) for pk in lc8_studies)
    assert not Conversation.objects.filter(dataset__name="LC8-imported", study__isnull=False).exists()
    assert len(lc8_inputs.trajectory_names(study=imported)) == 8
    mine = lc8_inputs.lc8_section(study=owned, seed=1, resamples=30)
    theirs = lc8_inputs.lc8_section(study=imported, seed=1, resamples=30)
    assert "unavailable" not in theirs
    assert theirs == mine
    # not empty: eight reference trajectories, both methods' three seeds and the rater measured
    assert sum(theirs["reference_types"].values()) == 8
    assert sorted(theirs["coders"]) == sorted({method for method, _ in lc8_demo_predictions()} | {RATER})
    assert theirs["coders"][RATER]["n_trajectories"] == 2
    # 8 × 5 sessions: 8 reference items each, 2 methods × 3 seeds of totals; the rater's 2 × 5 × 8 items
    assert theirs["input"] == {
        "trajectories": 8, "labels": 40 * 8 + 40 * 6, "labels_used": 40 * 8 + 40 * 6,
        "labels_dropped": dict.fromkeys(lc8_inputs.LABELS_DROPPED, 0),
        "judgments": 80, "used": 80, "dropped": dict.fromkeys(lc8_inputs.JUDGMENTS_DROPPED, 0)}
