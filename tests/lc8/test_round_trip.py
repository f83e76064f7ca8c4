"""An LC8 study's long-format file back in ONE step (docs/sessions.md#long-format-exports, issue 16):
``import_judgments`` (and the judgments import API) takes the judgments and, in the same transaction, the session labels
written after them (methods' predictions per seed, reference labels): all or nothing across both, every error of both by
its line, the labels stored bit for bit; the CSV and the JSON Lines file alike."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command

from annotation import automated_coders, judgment_import, long_format
from annotation.models import Judgment, Schema, SessionLabel, Study
from annotation.session_labels import session_labels_import
from common.errors import RowErrors
from tests.factories import StudyFactory
from tests.lc8.test_data import DATASET, lc8_study, row

pytestmark = pytest.mark.django_db

# Two methods x two seeds: floats that only survive if nothing rounds them.
PREDICTIONS = {"m-a": (7.123456789, -0.3), "m-b": (0.1 + 0.2, -1e-9)}
RATER = "rater-1"


def coders_register(study: Study) -> None:
    for name in PREDICTIONS:
        automated_coders.method_register(study=study, name=name, version="2026-11", by=None)
    automated_coders.reference_register(study=study, name="controlled", description="controlled PHQ-8 state", by=None)


def judgment_line(study: Study, conversation: str, session: int, attribute: str, score: int) -> dict:
    return {"study": study.slug, "round": "main", "reviewer": RATER, "is_gold": False, "dataset": DATASET,
            "conversation_id": conversation, "turn_index": None, "model": None, "attribute": attribute,
            "score": score, "instance_count": None, "spans": [], "role": "reviewer", "session_index": session}


def lc8_full_study(slug: str = "lc8-trip") -> Study:
    """Two five-session trajectories with reference labels (total and an item), two methods' predictions for two
    seeds each, and a human rater's session judgments (items PHQ1, PHQ2) in a closed main round."""
    study = lc8_study(slug)
    coders_register(study)
    labels = [row(conversation=c, session=s, reviewer=name, seed=seed,
                  score=value if s == 1 else value + s * 1.0000001)
              for name, values in PREDICTIONS.items() for seed, value in enumerate(values)
              for c in ("t1", "t2") for s in range(1, 6)]
    labels += [row(conversation=c, session=s, reviewer="controlled", role="reference", attribute=code, score=score)
               for c in ("t1", "t2") for s in range(1, 6)
               for code, score in (("PHQ_TOTAL", 2 * s + (c == "t2")), ("PHQ1", s % 4))]
    session_labels_import(study=study, rows=labels, by=None)
    judgments = [judgment_line(study, c, s, code, (s + n) % 4)
                 for c in ("t1", "t2") for s in range(1, 6) for n, code in enumerate(("PHQ1", "PHQ2"))]
    judgment_import.judgments_import(rows=enumerate(judgments, start=1), study_slug=study.slug, by=None)
    return study


def label_rows(study: Study) -> dict[tuple, str]:
    """Each session label by its natural key, its value as the float's exact hex (the sign of zero included)."""
    return {tuple(key): value.hex() for *key, value in SessionLabel.objects.filter(study=study).values_list(
        "coder__user__username", "coder__role", "seed", "session__conversation__dataset__name",
        "session__conversation__external_id", "session__index", "attribute__code", "value")}


def judgment_rows(study: Study) -> set[tuple]:
    return set(Judgment.objects.filter(round__study=study).values_list(
        "round__kind", "round__number", "coder__username", "is_gold", "attribute__code",
        "conversation__external_id", "session__index", "turn_id", "response_id", "score", "instance_count"))


def export(study: Study, fmt: str, slug: str | None = None) -> str:
    """The study's long-format file (``slug``: as written for another study, e.g. a fresh installation's)."""
    text = "".join(long_format.WRITERS[fmt](study=study))
    if slug is None:
        return text
    if fmt == "jsonl":
        return "".join(json.dumps(json.loads(line) | {"study": slug}) + "\n" for line in text.splitlines())
    header, *lines = text.splitlines(keepends=True)
    assert header.startswith("study,")
    return header + "".join(slug + line[len(study.slug):] for line in lines)


def import_file(tmp_path, text: str, fmt: str, slug: str) -> str:
    path = tmp_path / f"lc8.{fmt}"
    path.write_text(text, encoding="utf-8")
    out = io.StringIO()
    call_command("import_judgments", str(path), "--study", slug, "--create-study", stdout=out)
    return out.getvalue()


def fresh_study(slug: str = "lc8-fresh", *, registered: bool = True) -> Study:
    study = StudyFactory(slug=slug, schema=Schema.objects.get(slug="lc8-v1"), model_slots=["Counselor"])
    if registered:
        coders_register(study)
    return study


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_an_lc8_export_imports_back_into_its_study_unchanged_in_one_step(tmp_path, fmt):
    study = lc8_full_study()
    labels, judgments = label_rows(study), judgment_rows(study)
    assert len(labels) == 2 * 2 * 10 + 2 * 10 and len(judgments) == 20
    text = export(study, fmt)
    out = import_file(tmp_path, text, fmt, study.slug)
    assert "0 judgments and 0 spans imported" in out and "20 unchanged" in out
    assert "session labels: 0 created, 0 updated, 60 unchanged" in out
    assert label_rows(study) == labels and judgment_rows(study) == judgments


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_an_lc8_export_imports_into_a_fresh_study_with_its_coders_registered_row_for_row(tmp_path, fmt):
    study = lc8_full_study()
    fresh = fresh_study()
    out = import_file(tmp_path, export(study, fmt, slug=fresh.slug), fmt, fresh.slug)
    assert "20 judgments and 0 spans imported into existing study 'lc8-fresh'" in out
    assert "session labels: 60 created, 0 updated, 0 unchanged" in out
    assert label_rows(fresh) == label_rows(study)
    assert SessionLabel.objects.get(study=fresh, coder__user__username="m-a", seed=0, attribute__code="PHQ_TOTAL",
                                    session__conversation__external_id="t1", session__index=1).value == 7.123456789
    assert label_rows(fresh)[("m-b", "method", 1, DATASET, "t2", 1, "PHQ_TOTAL")] == (-1e-9).hex()
    assert {r[2:] for r in judgment_rows(fresh)} == {r[2:] for r in judgment_rows(study)}
    # And the fresh study writes the same file as the first one (but for its slug).
    assert export(fresh, fmt, slug=study.slug) == export(study, fmt)


def test_a_file_with_a_bad_judgment_and_a_bad_label_reports_both_by_line_and_writes_nothing(tmp_path):
    study = lc8_full_study()
    fresh = fresh_study()
    lines = [json.loads(line) for line in export(study, "jsonl", slug=fresh.slug).splitlines()]
    judgment_at = next(n for n, line in enumerate(lines, start=1) if line["round"] == "main" and n > 3)
    label_at = next(n for n, line in enumerate(lines, start=1) if line["role"] == "reference" and n > 45)
    lines[judgment_at - 1]["score"] = 7  # PHQ items are 0–3
    lines[label_at - 1]["score"] = 2.5  # a reference label is a whole number
    path = tmp_path / "bad.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    with pytest.raises(CommandError) as refused:
        call_command("import_judgments", str(path), "--study", fresh.slug, "--create-study", stdout=io.StringIO())
    message = str(refused.value)
    assert "2 error(s), nothing was changed" in message
    assert f"line {judgment_at}: score:" in message
    assert f"line {label_at}: score: {lines[label_at - 1]['attribute']}: a reference label is a whole number" in message
    assert not SessionLabel.objects.filter(study=fresh).exists()
    assert not Judgment.objects.filter(round__study=fresh).exists()
    assert not fresh.rounds.exists()


def test_a_bad_label_alone_also_stops_the_judgments(tmp_path):
    study = lc8_full_study()
    fresh = fresh_study()
    lines = export(study, "csv", slug=fresh.slug).splitlines(keepends=True)
    last = lines[-1].split(",")
    assert "method" in last or "reference" in last
    lines.append(lines[-1])  # the same label twice
    path = tmp_path / "twice.csv"
    path.write_text("".join(lines), encoding="utf-8")
    with pytest.raises(CommandError, match=rf"line {len(lines)}: attribute: a second label of .* \(first on line "
                                           rf"{len(lines) - 1}\)"):
        call_command("import_judgments", str(path), "--study", fresh.slug, "--create-study", stdout=io.StringIO())
    assert not Judgment.objects.filter(round__study=fresh).exists()
    assert not SessionLabel.objects.filter(study=fresh).exists()


def test_unregistered_coders_are_named_as_such(tmp_path):
    study = lc8_full_study()
    fresh = fresh_study(registered=False)
    with pytest.raises(RowErrors) as refused:
        judgment_import.judgments_import(
            rows=long_format.read_rows(io.StringIO(export(study, "jsonl", slug=fresh.slug)), fmt="jsonl"),
            study_slug=fresh.slug, by=None)
    messages = {e.message for e in refused.value.errors}
    assert ("m-a is not a registered method coder of this study (register it first: "
            "POST /api/v1/studies/lc8-fresh/methods/)") in messages
    assert ('controlled is not a registered reference coder of this study (register it first: '
            'POST /api/v1/studies/lc8-fresh/methods/ with "role": "reference")') in messages
    assert not Judgment.objects.filter(round__study=fresh).exists()


def test_labels_for_a_study_that_does_not_exist_are_refused_clearly():
    study = lc8_full_study()
    text = export(study, "jsonl", slug="nowhere")
    with pytest.raises(RowErrors) as refused:
        judgment_import.judgments_import(rows=long_format.read_rows(io.StringIO(text), fmt="jsonl"),
                                         study_slug="nowhere", by=None, create_study=True)
    first_label = next(n for n, line in enumerate(text.splitlines(), start=1) if json.loads(line)["round"] == "")
    assert [(e.row, e.field, e.message.split(":")[0]) for e in refused.value.errors
            if "session labels" in e.message] == [(first_label, "reviewer", "study 'nowhere' does not exist")]
    assert not Study.objects.filter(slug="nowhere").exists()


def test_a_json_number_sent_as_text_is_refused_in_a_json_file_and_read_in_a_csv_file(tmp_path):
    study = lc8_full_study()
    fresh = fresh_study()
    lines = [json.loads(line) for line in export(study, "jsonl", slug=fresh.slug).splitlines()]
    lines[-1]["score"] = str(lines[-1]["score"])
    with pytest.raises(RowErrors) as refused:
        judgment_import.judgments_import(rows=enumerate(lines, start=1), study_slug=fresh.slug, by=None, typed=True)
    assert [(e.row, e.field, e.message) for e in refused.value.errors] == [
        (len(lines), "score", "must be a JSON number, not a string")]


def test_the_judgments_import_api_takes_the_whole_csv_file(admin_user, as_token):
    study = lc8_full_study()
    fresh = fresh_study()
    api = as_token(admin_user, scopes=["read", "import"], study=fresh)
    response = api.generic("POST", f"/api/v1/studies/{fresh.slug}/judgments/import/",
                           export(study, "csv", slug=fresh.slug).encode(), content_type="text/csv")
    assert response.status_code == 200, response.content
    assert label_rows(fresh) == label_rows(study)
    assert len(judgment_rows(fresh)) == 20


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_a_negative_zero_and_a_zero_keep_their_signs_through_the_file(tmp_path, fmt):
    study = lc8_study("lc8-zero")
    coders_register(study)
    session_labels_import(study=study, rows=[row(seed=1, score=-0.0),
                                             row(reviewer="controlled", role="reference", score=0.0)], by=None)
    fresh = fresh_study()
    import_file(tmp_path, export(study, fmt, slug=fresh.slug), fmt, fresh.slug)
    assert label_rows(fresh) == label_rows(study)
    assert sorted(label_rows(fresh).values()) == ["-0x0.0p+0", "0x0.0p+0"]
