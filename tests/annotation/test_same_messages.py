"""Same messages from every judgment path: one bad judgment sent through the autosave, ``manage.py
import_judgments``, the import API and gold recording is reported with the identical rule text (annotation.rules).
The field may be named differently: the long format calls the unit column "model"."""

from __future__ import annotations

import html
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command
from django.urls import reverse
from rest_framework.test import APIClient

from access import roles
from access.services import user_ensure
from annotation.models import Judgment, Round, Span
from annotation.rules import judgment_problems
from annotation.selectors import response_handle
from api import services as api_services
from benchmark import conversation_ingest
from benchmark.demo import demo_records
from benchmark.models import ModelResponse
from calibration import services as calibration_services
from tests.factories import (
    AssignmentFactory,
    RoundFactory,
    RoundItemFactory,
    StudyFactory,
    StudyMemberFactory,
    attribute,
)

pytestmark = pytest.mark.django_db

SLUG = "same"
ACCENTED = " Comme au cafe\u0301."  # a letter and its combining accent, one character on the screen



@pytest.fixture
def paths(client, reviewer, tmp_path):
    """The demo conversations; a study whose open calibration round holds the first turn, queued for the signed-in
    reviewer; an admin with an import token. ``paths`` sends one judgment through every path."""
    conversation_ingest.conversations_import(rows=enumerate(demo_records(), start=1))
    admin = user_ensure(username="same-admin", role=roles.ADMIN)
    study = StudyFactory(slug=SLUG)
    StudyMemberFactory(study=study, user=reviewer, role="reviewer")
    round_ = RoundFactory(study=study, kind="calibration", number=1, status="open")
    gpt = ModelResponse.objects.select_related("turn__conversation__dataset").get(
        turn__conversation__external_id="appendix-d-1", model_slot="GPT")
    gpt.text += ACCENTED  # before the round holds it: its text is frozen from then on
    gpt.save(update_fields=["text"])
    RoundItemFactory(round=round_, turn=gpt.turn, position=1)
    AssignmentFactory(round=round_, coder=reviewer, turn=gpt.turn, position=1)
    client.force_login(reviewer)
    _, raw_token = api_services.api_token_create(user=admin, name="import", scopes=("import",), study=None,
                                                 expires_at=None, by=None)
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {raw_token}")
    handle = response_handle(study=study, coder_id=reviewer.pk, turn_id=gpt.turn_id, response_id=gpt.pk)
    return Paths(client=client, api=api, round=round_, admin=admin, gpt=gpt, handle=handle, tmp_path=tmp_path)


@dataclass
class Paths:
    client: Any
    api: APIClient
    round: Round
    admin: Any
    gpt: ModelResponse
    handle: str  # the reviewer's name for gpt on their turn page
    tmp_path: Path

    def autosave(self, *, code, score, model=True, instance_count=None, spans=None) -> str:
        data = {"form_id": "f", "attribute": code, "score": str(score), "version": "0"}
        if model:
            data["response"] = self.handle
        if instance_count is not None:
            data["instance_count"] = str(instance_count)
        if spans is not None:
            data["spans"] = json.dumps(spans)
        response = self.client.post(reverse("judgment-save", args=[self.round.pk, 1]), data)
        assert response.status_code == 422, response.content
        found = re.search(r"Not saved: (.*?)</span>", response.content.decode(), re.S)
        assert found, response.content
        return html.unescape(found.group(1))

    def row(self, *, code, score, model=True, instance_count=None, spans=None, round_name="calibration-1") -> dict:
        turn = self.gpt.turn
        return {"study": SLUG, "round": round_name, "reviewer": "reviewer", "is_gold": False,
                "dataset": turn.conversation.dataset.name, "conversation_id": turn.conversation.external_id,
                "turn_index": turn.index, "model": "GPT" if model else "", "attribute": code, "score": score,
                "instance_count": instance_count, "spans": spans or []}

    def command(self, **judgment) -> dict[str, str]:
        """{field: message} of the first line's errors, as import_judgments reports them."""
        path = self.tmp_path / "judgments.jsonl"
        path.write_text(json.dumps(self.row(**judgment)) + "\n", encoding="utf-8")
        with pytest.raises(CommandError) as caught:
            call_command("import_judgments", str(path), "--study", SLUG)
        return dict(re.findall(r"^line 1: ([^:]+): (.*)$", str(caught.value), re.M))

    def api_import(self, **judgment) -> dict[str, str]:
        body = (json.dumps(self.row(**judgment)) + "\n").encode()
        response = self.api.generic("POST", f"/api/v1/studies/{SLUG}/judgments/import/", body,
                                    content_type="application/x-ndjson")
        assert response.status_code == 400, (response.status_code, response.content)
        return {e["field"]: e["message"] for e in response.json()["errors"] if e["line"] == 1}

    def gold(self, *, code, score, model=True) -> dict[str, list[str]]:
        with pytest.raises(ValidationError) as caught:
            calibration_services.gold_record(round=self.round, by=self.admin, attribute=attribute(code),
                                             turn=self.gpt.turn, response=self.gpt if model else None, score=score)
        return caught.value.message_dict


def rule(code, *, score, model=True, instance_count=None, spans=(), text=None) -> dict[str, str]:
    """The reference: what annotation.rules says about the judgment (on a response with ``text``)."""
    a = attribute(code)
    return judgment_problems(
        attribute=a, score=score, score_required=True, has_turn=True, has_response=model,
        instance_count=instance_count, spans=[(s["start"], s["end"], s["subcategory"]) for s in spans],
        subcategories=[s.slug for s in a.subcategories.all()], text_length=None if text is None else len(text),
        text=text,
    )


@pytest.fixture
def nothing_written():
    yield
    assert not Judgment.objects.exists()
    assert not Span.objects.exists()


def test_a_score_off_the_scale_reads_the_same_on_every_path(paths, nothing_written):
    message = "U1: score 7 is outside the scale 0–2"
    assert rule("U1", score=7, model=False) == {"score": message}
    assert paths.autosave(code="U1", score=7, model=False) == message
    assert paths.command(code="U1", score=7, model=False) == {"score": message}
    assert paths.api_import(code="U1", score=7, model=False) == {"score": message}
    assert paths.gold(code="U1", score=7, model=False) == {"score": [message]}


def test_a_response_attribute_without_a_response_reads_the_same_on_every_path(paths, nothing_written):
    message = "AUR is coded once per model response: a model response is required"
    assert rule("AUR", score=1, model=False) == {"unit": message}
    assert paths.autosave(code="AUR", score=1, model=False) == message
    assert paths.command(code="AUR", score=1, model=False) == {"model": message}  # the long format's unit column
    assert paths.api_import(code="AUR", score=1, model=False) == {"model": message}
    assert paths.gold(code="AUR", score=1, model=False) == {"unit": [message]}


def test_an_unknown_span_subcategory_reads_the_same_on_every_path(paths, nothing_written):
    spans = [{"start": 0, "end": 4, "subcategory": "directive"}]
    message = "AUR: subcategory 'directive' is not one of this attribute's (assumes, explores)"
    assert rule("AUR", score=1, spans=spans, text=paths.gpt.text) == {"spans[0]": message}
    assert paths.autosave(code="AUR", score=1, spans=spans) == message
    assert paths.command(code="AUR", score=1, spans=spans) == {"spans[0]": message}
    assert paths.api_import(code="AUR", score=1, spans=spans) == {"spans[0]": message}


def test_a_span_outside_the_response_text_reads_the_same_on_every_path(paths, nothing_written):
    length = len(paths.gpt.text)
    spans = [{"start": 2, "end": length + 1, "subcategory": "assumes"}]
    message = f"AUR: span [2, {length + 1}) is outside the response text (0–{length} characters)"
    assert rule("AUR", score=1, spans=spans, text=paths.gpt.text) == {"spans[0]": message}
    assert paths.autosave(code="AUR", score=1, spans=spans) == message
    assert paths.command(code="AUR", score=1, spans=spans) == {"spans[0]": message}
    assert paths.api_import(code="AUR", score=1, spans=spans) == {"spans[0]": message}


def test_a_span_that_would_cut_a_character_in_two_reads_the_same_on_every_path(paths, nothing_written):
    text = paths.gpt.text
    accent = text.index("\u0301")
    spans = [{"start": text.index("Comme"), "end": accent, "subcategory": "assumes"}]
    message = (f"AUR: span [{spans[0]['start']}, {accent}): offset {accent} falls inside 'e\u0301' (e + U+0301); a "
               "span starts and ends between whole characters as the reader sees them (a letter with its accents, a "
               "whole emoji or flag, a CRLF)")
    assert rule("AUR", score=1, spans=spans, text=text) == {"spans[0]": message}
    assert paths.autosave(code="AUR", score=1, spans=spans) == message
    assert paths.command(code="AUR", score=1, spans=spans) == {"spans[0]": message}
    assert paths.api_import(code="AUR", score=1, spans=spans) == {"spans[0]": message}


def test_a_negative_instance_count_reads_the_same_on_every_path(paths, nothing_written):
    message = "AUR: instance count must be a whole number from 0 to 2147483647"
    assert rule("AUR", score=1, instance_count=-1) == {"instance_count": message}
    assert paths.autosave(code="AUR", score=1, instance_count=-1) == message
    assert paths.command(code="AUR", score=1, instance_count=-1) == {"instance_count": message}
    assert paths.api_import(code="AUR", score=1, instance_count=-1) == {"instance_count": message}


def test_an_instance_count_too_large_for_the_column_reads_the_same_on_every_path(paths, nothing_written):
    message = "AUR: instance count must be a whole number from 0 to 2147483647"
    assert rule("AUR", score=1, instance_count=2**31) == {"instance_count": message}
    assert {
        "autosave": paths.autosave(code="AUR", score=1, instance_count=2**31),
        "command": paths.command(code="AUR", score=1, instance_count=2**31).get("instance_count"),
        "api": paths.api_import(code="AUR", score=1, instance_count=2**31).get("instance_count"),
    } == dict.fromkeys(("autosave", "command", "api"), message)


def test_a_gold_value_with_a_wrong_unit_and_score_reports_both_like_the_rules(paths, nothing_written):
    assert paths.gold(code="U1", score=-3, model=True) == {
        key: [value] for key, value in rule("U1", score=-3, model=True).items()}


@pytest.mark.parametrize("round_name", ["main\n", "calibration-1\n"])
def test_a_round_name_with_a_trailing_newline_is_a_row_error_on_both_import_paths(paths, nothing_written,
                                                                                 round_name):
    """Not a crash (ValueError → traceback / 500), and not a second spelling of an existing round."""
    message = f"{round_name!r} is not calibration-N or main"
    assert paths.command(code="U1", score=1, model=False, round_name=round_name) == {"round": message}
    assert paths.api_import(code="U1", score=1, model=False, round_name=round_name) == {"round": message}
