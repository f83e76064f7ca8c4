"""The admin's calibration actions (calibration/views.py) fuzzed the way schemathesis fuzzes the API: creating,
sampling, opening, closing and reopening rounds, recording gold, workshop notes, the panel, the main-round
assignment, accepting unanimous gold and resolving alerts get hostile field values (tests/form_fuzz.py), starting
from valid posts. Never a 5xx, and a post the page does not report as done changes nothing in the database."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from annotation.models import ReviewerAlert
from benchmark.models import ModelResponse
from calibration import selectors
from tests.factories import StudyFactory
from tests.form_fuzz import drive, field_values, fingerprint, form_posts, numbers, said, sweep

CLOSED_ROUNDS = 1  # calibration-1 closed (its workshop open), calibration-2 open and coded, without gold

pytestmark = pytest.mark.django_db


def _done(response) -> bool:
    return bool(said(response)[0])


def _admin(protocol) -> Client:
    client = Client()
    client.force_login(protocol.admin)
    return client


def _items(round_) -> list[dict]:
    """Valid (attribute, turn, response) fields of some items of the round's set."""
    items = []
    for item in selectors.consensus_items(round=round_)[:6]:
        items.append({"attribute": item.attribute.code, "turn": str(item.turn.pk),
                      "response": str(item.response.pk) if item.response else ""})
    return items


def _item_fields(round_) -> dict:
    turns = [str(pk) for pk in round_.items.values_list("turn_id", flat=True)]
    responses = [str(pk) for pk in ModelResponse.objects.filter(turn__round_items__round=round_)
                 .values_list("pk", flat=True)[:5]]
    return {"attribute": field_values(["U1", "U2", "R1"]), "turn": field_values(turns, numbers()),
            "response": field_values(responses, numbers())}


@pytest.mark.parametrize("which", [1, 2])
def test_gold_record_never_fails_and_a_refused_one_changes_nothing(protocol, which):
    round_ = protocol.round(which)
    experts = [user.username for user in protocol.experts]
    valid = [item | {"score": "1", "agreed": experts, "note": "n", "version": "", "reason": "a reason"}
             for item in _items(round_)]
    bodies = form_posts(valid, _item_fields(round_) | {
        "score": field_values(["0", "1", "2", "3"], numbers()), "agreed": field_values(experts),
        "note": field_values([""]), "version": field_values(["0", "1"], numbers()), "reason": field_values(["", "why"]),
        "back": field_values(["?show=all&page=2"]), "item": field_values(["1-2-U1"]),
    })
    client = _admin(protocol)
    outcome = drive(lambda body: client.post(reverse("gold-record", args=[round_.pk]), body), bodies,
                    accepted=_done, examples=30)
    assert outcome.get("accepted") and outcome.get("refused"), outcome
    sweep(lambda body: client.post(reverse("gold-record", args=[round_.pk]), body), valid[0],
          ["turn", "response", "score", "version"], accepted=_done)


def test_workshop_note_never_fails_and_a_refused_one_changes_nothing(protocol):
    round_ = protocol.round(1)
    bodies = form_posts([item | {"text": "look again"} for item in _items(round_)],
                        _item_fields(round_) | {"text": field_values(["", "note"])})
    client = _admin(protocol)
    outcome = drive(lambda body: client.post(reverse("workshop-note", args=[round_.pk]), body), bodies,
                    accepted=_done, examples=30)
    assert outcome.get("accepted") and outcome.get("refused"), outcome


def test_round_actions_never_fail_and_refusals_change_nothing(protocol):
    client = _admin(protocol)
    slug = protocol.study.slug
    drive(lambda body: client.post(reverse("round-create", args=[slug]), body),
          form_posts([{"number": "3"}, {"number": "4", "gold_pool": "on"}],
                     {"number": field_values(["3", "4", "1"], numbers()), "gold_pool": field_values(["on"])}),
          accepted=_done, examples=30)
    sweep(lambda body: client.post(reverse("round-create", args=[slug]), body), {"number": "5"}, ["number"],
          accepted=_done)
    draft = protocol.study.rounds.filter(status="draft").order_by("number").first()
    assert draft is not None
    drive(lambda body: client.post(reverse("round-sample", args=[slug, draft.pk]), body),
          form_posts([{"n": "2", "seed": "1"}, {}],
                     {"n": field_values(["1", "2"], numbers()), "seed": field_values(["0"], numbers())}),
          accepted=_done, examples=30)
    sweep(lambda body: client.post(reverse("round-sample", args=[slug, draft.pk]), body), {"n": "2", "seed": "1"},
          ["n", "seed"], accepted=_done)
    drive(lambda body: client.post(reverse("round-refs", args=[slug, draft.pk]), body),
          form_posts([{"refs": "Fuzz/x#1"}], {"refs": field_values(["", "a/b#1\na/b#1", "a/b#0"])}),
          accepted=_done, examples=20)
    for round_ in (protocol.round(1), protocol.round(2), draft):
        for name, valid, hostile in (
            ("round-open", [{"allow_parallel": "on"}, {}], {"allow_parallel": field_values(["on"])}),
            ("round-reopen", [{"reason": "a reason"}], {"reason": field_values(["", "why"])}),
            ("round-close", [{"confirm": "on"}, {}], {"confirm": field_values(["on"])}),
        ):
            drive(lambda body, name=name, round_=round_: client.post(reverse(name, args=[slug, round_.pk]), body),
                  form_posts(valid, hostile), accepted=_done, examples=8)


def test_panel_and_main_round_never_fail_and_refusals_change_nothing(protocol):
    client = _admin(protocol)
    slug = protocol.study.slug
    reviewers = [user.username for user in protocol.reviewers]
    state = selectors.panel_state(retained=dict.fromkeys(reviewers))
    drive(lambda body: client.post(reverse("panel-retain", args=[slug]), body),
          form_posts([{"retain": reviewers[:2], "k": "2", "reason": "why", "confirm": "on", "state": state},
                      {"retain": reviewers, "k": "3"}],
                     {"retain": field_values(reviewers), "k": field_values(["1", "3"], numbers()),
                      "reason": field_values(["", "r"]), "confirm": field_values(["on"]),
                      "state": field_values([state])}),
          accepted=_done, examples=40)
    drive(lambda body: client.post(reverse("main-round-assign", args=[slug]), body),
          form_posts([{"overlap": "0.2", "check_items": "1", "seed": "3"}, {}],
                     {"overlap": field_values(["0", "1", "0.5"]), "check_items": field_values(["0", "2"], numbers()),
                      "seed": field_values(["0", "4294967295", "4294967296"], numbers())}),
          accepted=_done, examples=30)
    sweep(lambda body: client.post(reverse("main-round-assign", args=[slug]), body),
          {"overlap": "0.2", "check_items": "1", "seed": "3"}, ["overlap", "check_items", "seed"], accepted=_done)


def test_accept_unanimous_and_alerts_never_fail_and_another_studys_alert_is_404(protocol):
    client = _admin(protocol)
    round_ = protocol.round(2)
    drive(lambda body: client.post(reverse("gold-accept-unanimous", args=[round_.pk]), body),
          form_posts([{"back": "?show=differ&page=2", "item": "1-2-U1"}, {}],
                     {"back": field_values(["?page=99999999999999999999", "?show=\x00"]),
                      "item": field_values(["1-2-U1"]), "following": field_values(["3-4-R1"])}),
          accepted=_done, examples=15)
    other = StudyFactory()
    alert = ReviewerAlert.objects.create(study=other, reviewer=protocol.reviewers[0], agreement=0.5, threshold=0.7,
                                         n_items=4)
    before = fingerprint()
    for alert_id in (alert.pk, 0, 2**31, 10**30):
        assert client.post(reverse("alert-resolve", args=[protocol.study.slug, alert_id])).status_code == 404
    assert fingerprint() == before
