"""Blinding by construction: over 300 turns whose responses were ingested in model-slot order (so their ids follow
the slots), nothing a reviewer or an expert is shown — the turn page's ids, data attributes, hidden inputs and
script ids, the autosave fragments, the judgments API (fields, list order, cursors, timestamps), the feedback list —
ranks the responses in an order related to the model slot, and no response or judgment id appears anywhere. A
response is named only by its handle (annotation.selectors.response_handle, keyed by the study's blinding key),
which the server resolves within the coder's own assignment: someone else's handle, a forged one or an id saves
nothing. The study's key itself: tests/annotation/test_blinding_key.py."""

from __future__ import annotations

import base64
import hashlib
import html
import json
import re
import zlib
from collections import defaultdict
from collections.abc import Iterable
from urllib.parse import parse_qs, urlparse

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.db.models import F
from django.test import override_settings
from django.urls import reverse
from rest_framework.test import APIClient
from scipy.stats import rankdata, spearmanr

from access import roles
from access.services import user_ensure
from annotation import schema_document
from annotation import services as annotation_services
from annotation.models import Assignment, AttributeDefinition, Judgment, Round, RoundItem, Schema, Study
from annotation.selectors import response_by_handle, response_handle, responses_as_seen, turn_view
from api import services as api_services
from benchmark import conversation_ingest
from benchmark.models import ModelResponse, Turn
from calibration.selectors import reviewer_feedback
from tests.scenarios import MODELS, as_true, code_round, flip, truth

pytestmark = pytest.mark.django_db

TURNS = 300
SHARED = 40  # turns the expert and a second reviewer are also assigned
LIMIT = 0.1  # |Spearman ρ| of any identifier's rank against the model slot
RESPONSE_IDS_FROM = 7_000_000  # response and judgment ids far from any count, position or version on a page
JUDGMENT_IDS_FROM = 8_000_000
# A fixed study blinding key, so that the measured correlations are the same on every run: the one a study migrated
# from SECRET_KEY "blinding-test-key-0f3c9a" has (annotation migration 0016), which was this test's key before
# studies had their own, so the handles measured are the ones measured then.
KEY = hashlib.sha256(b"annotation.response-handle" + b"blinding-test-key-0f3c9a").hexdigest()


def _ids_from(model, start: int) -> None:
    """Make the next ids of ``model`` start above ``start``."""
    table = model._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute("SELECT setval(pg_get_serial_sequence(%s, 'id'), GREATEST(%s, COALESCE("
                       "pg_sequence_last_value(pg_get_serial_sequence(%s, 'id')::regclass), 0)))",
                       [table, start, table])


def _records() -> Iterable[tuple[int, dict]]:
    for n in range(TURNS):
        yield n + 1, {
            "dataset": "Blind", "conversation_id": f"blind-{n}", "kind": "single", "topic": "Anxiety",
            "complexity": "low", "turns": [{"index": 1, "client": f"Client text number {n}.", "responses": [
                {"model": m, "text": f"Reply {zlib.crc32(f'{n}/{m}'.encode()):08x}: what helps when it starts?"}
                for m in MODELS]}]}


def _small_schema() -> Schema:
    """cab-v1 cut to one attribute of each kind (a turn's, a response's with spans, a flag): every kind of form
    the turn page has, in pages quick enough to render three hundred of."""
    document = json.loads((schema_document.SCHEMA_DIR / "cab-v1.json").read_text(encoding="utf-8"))
    document = document | {"slug": "blind-v1", "name": "Blind", "indices": {},
                           "attributes": [a for a in document["attributes"] if a["code"] in ("U1", "AUR", "F1")]}
    return annotation_services.schema_install(document=document, by=None)


@pytest.fixture(scope="module")
def built(shared_state):
    """The study ``blind``: 300 single-turn conversations, each turn's five responses ingested in the order of
    MODELS; an open calibration round of all of them, queued for a reviewer, and its first 40 also for an expert
    and a second reviewer; the reviewer's judgments on every unit created in bulk in model-slot order (their ids
    and timestamps follow the slots), and gold differing from every one of them."""
    with shared_state():
        _ids_from(ModelResponse, RESPONSE_IDS_FROM)
        _ids_from(Judgment, JUDGMENT_IDS_FROM)
        conversation_ingest.conversations_import(rows=_records())
        study = annotation_services.study_create(slug="blind", name="Blind", schema=_small_schema(),
                                                 model_slots=list(MODELS), by=None)
        Study.objects.filter(pk=study.pk).update(blinding_key=KEY)
        reviewer = user_ensure(username="blind-reviewer", role=roles.REVIEWER)
        second = user_ensure(username="blind-reviewer-2", role=roles.REVIEWER)
        expert = user_ensure(username="blind-expert", role=roles.EXPERT)
        for user, role in ((reviewer, "reviewer"), (second, "reviewer"), (expert, "expert")):
            annotation_services.study_member_add(study=study, user=user, role=role, by=None)
        round_ = Round.objects.create(study=study, kind="calibration", number=1, status="open")
        turns = list(Turn.objects.filter(conversation__dataset__name="Blind").order_by("conversation__external_id"))
        RoundItem.objects.bulk_create(RoundItem(round=round_, turn=t, position=p) for p, t in enumerate(turns, 1))
        annotation_services.assignments_ensure(round=round_, coder=reviewer, turns=turns, by=None)
        for user in (expert, second):
            annotation_services.assignments_ensure(round=round_, coder=user, turns=turns[:SHARED], by=None)
        code_round(round_, reviewer, as_true)  # bulk, each turn's responses in slot order
        Judgment.objects.bulk_create(
            Judgment(round=round_, coder=expert, is_gold=True, attribute=a, turn=r.turn, response=r,
                     conversation_id=r.turn.conversation_id, score=flip(a, truth(a, r.turn, r)))
            for r in ModelResponse.objects.filter(turn__in=turns).select_related("turn__conversation")
            for a in AttributeDefinition.objects.filter(schema=study.schema, unit="response"))
        yield {"round": round_.pk, "reviewer": reviewer.pk, "second": second.pk, "expert": expert.pk}


@pytest.fixture
def blind(db, built):
    users = get_user_model().objects.in_bulk([built["reviewer"], built["second"], built["expert"]])
    responses = {r.pk: r for r in ModelResponse.objects.filter(turn__conversation__dataset__name="Blind")}
    return {"round": Round.objects.select_related("study").get(pk=built["round"]),
            "reviewer": users[built["reviewer"]], "second": users[built["second"]], "expert": users[built["expert"]],
            "responses": responses, "judgment_ids": set(Judgment.objects.filter(round_id=built["round"])
                                                        .values_list("pk", flat=True))}


# --- measuring --------------------------------------------------------------------------------------------------

SLOT_INDEX = {m: i for i, m in enumerate(MODELS)}  # ingestion order
SLOT_NAME_RANK = {m: i for i, m in enumerate(sorted(MODELS))}  # the order of a sort by slot name
DIGITS = re.compile(r"(?<![0-9A-Za-z])\d+(?![0-9A-Za-z])")


def natural(value: str) -> tuple:
    """Sort key a leak-hunter would use: digit runs as numbers, the rest as text."""
    return tuple((0, int(part), "") if part.isdigit() else (1, 0, part) for part in re.split(r"(\d+)", value) if part)


class Ranks:
    """Pairs (rank of an identifier among a turn's responses, the response's model slot), per identifier family,
    pooled over turns (equal values share a rank); ``worst()`` is the largest |Spearman ρ| against the slot's
    ingestion index and against its name's place in the alphabet, of the families that vary at all."""

    def __init__(self) -> None:
        self.pairs: dict[str, list[tuple[float, ModelResponse]]] = defaultdict(list)

    def add(self, family: str, values: dict[ModelResponse, object]) -> None:
        """One turn's values of a family, by response."""
        keys = [natural(v) if isinstance(v, str) else (0, v, "") for v in values.values()]
        order = {k: i for i, k in enumerate(sorted(set(keys)))}
        for rank, response in zip(rankdata([order[k] for k in keys]), values, strict=True):
            self.pairs[family].append((float(rank), response))

    def worst(self) -> tuple[float, str, int]:
        result = (0.0, "", 0)
        for family, pairs in self.pairs.items():
            ranks = [r for r, _ in pairs]
            for slot_rank in (SLOT_INDEX, SLOT_NAME_RANK):
                if len(set(ranks)) == 1:
                    continue  # the same everywhere: not an identifier
                rho = abs(spearmanr(ranks, [slot_rank[resp.model_slot] for _, resp in pairs]).statistic)
                result = max(result, (float(rho), family, len(pairs)))
        return result


def ids_shown(text: str, ids: Iterable[int]) -> set[int]:
    return {int(d) for d in DIGITS.findall(text)} & set(ids)


CARD = re.compile(r'<section class="unit response-card".*?</section>', re.S)
ATTRIBUTE = re.compile(r'([A-Za-z_:][-A-Za-z0-9_:.]*)="([^"]*)"')
TEXT = re.compile(r'<script id="[^"]*" type="application/json">(.*?)</script>', re.S)


def cards(page: str, responses_by_text: dict[str, ModelResponse]) -> list[tuple[ModelResponse, list[tuple]]]:
    """Each response card of a turn page: its response (known by its text) and its attributes in page order."""
    out = []
    for chunk in CARD.findall(page):
        text = json.loads(TEXT.search(chunk).group(1))
        out.append((responses_by_text[text], [(n, html.unescape(v)) for n, v in ATTRIBUTE.findall(chunk)]))
    return out


def add_card_families(ranks: Ranks, page_cards: list[tuple[ModelResponse, list[tuple]]]) -> None:
    """Every attribute occurrence of the cards (the n-th ``id``, the n-th ``data-response``, …) is a family, and
    the card's place on the page is one too."""
    per_card = []
    for _, attributes in page_cards:
        seen: dict[str, int] = defaultdict(int)
        keyed = {}
        for name, value in attributes:
            keyed[f"{name}#{seen[name]}"] = value
            seen[name] += 1
        per_card.append(keyed)
    common = set.intersection(*(set(k) for k in per_card))
    for family in common:
        ranks.add(f"html {family}", {resp: keyed[family] for (resp, _), keyed in zip(page_cards, per_card,
                                                                                     strict=True)})
    ranks.add("html card position", {resp: place for place, (resp, _) in enumerate(page_cards)})


def api_client(user) -> APIClient:
    _, raw = api_services.api_token_create(user=user, name="blind", scopes=("read",), study=None, expires_at=None,
                                           by=None)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return client


def handles_on_page(client, round_: Round, position: int) -> list[str]:
    page = client.get(reverse("turn", args=[round_.pk, position])).content.decode()
    return re.findall(r'<section class="unit response-card" data-response="([^"]+)"', page)


# --- the tests --------------------------------------------------------------------------------------------------


def test_no_identifier_on_the_turn_pages_ranks_responses_by_model_slot_and_no_id_appears(client, blind):
    round_, responses = blind["round"], blind["responses"]
    by_text = {r.text: r for r in responses.values()}
    ranks, handles = Ranks(), defaultdict(dict)
    for who, turns in (("reviewer", TURNS), ("expert", SHARED), ("second", SHARED)):
        user = blind[who]
        client.force_login(user)
        queue = client.get(reverse("queue", args=[round_.pk])).content.decode()
        assert not ids_shown(queue, responses)
        for position in range(1, turns + 1):
            page = client.get(reverse("turn", args=[round_.pk, position])).content.decode()
            assert not ids_shown(page, responses), f"a response id on {who}'s page {position}"
            assert not ids_shown(page, blind["judgment_ids"]), f"a judgment id on {who}'s page {position}"
            page_cards = cards(page, by_text)
            assert len(page_cards) == len(MODELS)
            add_card_families(ranks, page_cards)
            for response, attributes in page_cards:
                handles[who][response.pk] = dict(attributes)["data-response"]
    rho, family, n = ranks.worst()
    # The turn page names each attribute once per response as data (its markup comes from one template per
    # attribute), so about thirty families per card are measured.
    assert n >= TURNS * len(MODELS) and len(ranks.pairs) > 25, "the pages were measured"
    assert rho < LIMIT, f"{family} ranks the responses by model slot (|ρ| = {rho:.3f} over {n})"
    # Each coder has their own handles: no two coders share one for the same response.
    shared = set(handles["expert"])
    for pair in (("reviewer", "expert"), ("reviewer", "second"), ("expert", "second")):
        assert all(handles[pair[0]][pk] != handles[pair[1]][pk] for pk in shared)
    # Stable: the same page again (a reload, another tab) names every response the same way.
    client.force_login(blind["reviewer"])
    first = handles_on_page(client, round_, 1)
    assert first == handles_on_page(client, round_, 1)
    assert set(first) == {handles["reviewer"][r.pk] for r in responses.values()
                          if r.turn_id == Assignment.objects.get(round=round_, coder=blind["reviewer"],
                                                                 position=1).turn_id}


def test_autosave_fragments_carry_no_id_and_saves_land_on_the_handled_response(client, blind):
    round_, reviewer, responses = blind["round"], blind["reviewer"], blind["responses"]
    client.force_login(reviewer)
    ranks = Ranks()
    aur = AttributeDefinition.objects.get(schema=round_.study.schema, code="AUR")
    spans = json.dumps([{"start": 0, "end": 5, "subcategory": "assumes"}])
    for position in range(1, 21):
        view = turn_view(round_id=round_.pk, user=reviewer, position=position)
        url = reverse("judgment-save", args=[round_.pk, position])
        saved, stale = {}, {}
        for card in sorted(view.cards, key=lambda c: SLOT_INDEX[c.response.model_slot]):  # in slot order
            version = card.judgments["AUR"].version
            data = {"form_id": f"r{card.handle}-AUR", "attribute": "AUR", "response": card.handle, "score": "1",
                    "instance_count": "1", "spans": spans}
            ok = client.post(url, data | {"version": str(version)}, HTTP_HX_REQUEST="true")
            assert ok.status_code == 200, ok.content
            again = client.post(url, data | {"version": str(version)}, HTTP_HX_REQUEST="true")
            assert again.status_code == 409  # that version is gone: the stale fragment with the newer value
            saved[card.response], stale[card.response] = ok.content.decode(), again.content.decode()
            judgment = Judgment.objects.get(round=round_, coder=reviewer, attribute=aur, response=card.response)
            assert (judgment.score, judgment.version) == (1, version + 1), "the save landed on that response"
        for name, bodies in (("saved", saved), ("stale", stale)):
            for body in bodies.values():
                assert not ids_shown(body, responses) and not ids_shown(body, blind["judgment_ids"]), body
            ranks.add(f"fragment {name} body", bodies)
    rho, family, _ = ranks.worst()
    assert rho < LIMIT, f"{family}: |ρ| = {rho:.3f}"


def test_the_judgments_api_shows_coders_handles_not_ids_in_no_order_of_the_slots(blind):
    round_, reviewer, responses = blind["round"], blind["reviewer"], blind["responses"]
    api = api_client(reviewer)
    rows, url = [], reverse("api-judgments", args=["blind"]) + "?page_size=997"
    while url:
        page = api.get(url)
        assert page.status_code == 200, page.content
        text = page.content.decode()
        assert not ids_shown(text, responses) and not ids_shown(text, blind["judgment_ids"])
        body = page.json()
        url = body["next"]
        if url:
            cursor = base64.b64decode(parse_qs(urlparse(url).query)["cursor"][0]).decode()
            assert not ids_shown(cursor, blind["judgment_ids"]), cursor
        rows += body["results"]
    assert len(rows) == Judgment.objects.filter(round=round_, coder=reviewer).count()
    assert len({(r["conversation_id"], r["attribute"], r["response"]) for r in rows}) == len(rows), "no repeats"
    forged = base64.b64encode(f"p={min(blind['judgment_ids'])}".encode()).decode()
    assert api.get(reverse("api-judgments", args=["blind"]), {"cursor": forged}).status_code == 404
    assert {r["id"] for r in rows} == {None} and {r["response_id"] for r in rows} == {None}
    assert {r["model"] for r in rows} == {None}
    # Each row's response is the handle of the reviewer's own page.
    truth_of = {response_handle(study=round_.study, coder_id=reviewer.pk, turn_id=r.turn_id, response_id=r.pk): r
                for r in responses.values()}
    ranks = Ranks()
    units: dict[tuple, dict[ModelResponse, dict]] = defaultdict(dict)
    for place, row in enumerate(rows):
        if row["response"] is not None:
            units[(row["conversation_id"], row["attribute"])][truth_of[row["response"]]] = row | {"place": place}
    assert len(units) > TURNS
    for unit in units.values():
        ranks.add("api response", {resp: row["response"] for resp, row in unit.items()})
        ranks.add("api list position", {resp: row["place"] for resp, row in unit.items()})
        ranks.add("api updated_at", {resp: row["updated_at"] for resp, row in unit.items()})
    rho, family, n = ranks.worst()
    assert n >= TURNS * len(MODELS)
    assert rho < LIMIT, f"{family}: |ρ| = {rho:.3f} over {n}"
    # The same judgments in id order (staff see ids) do follow the slots: the test would see a leak.
    staff = api_client(user_ensure(username="blind-researcher", role=roles.RESEARCHER))
    staff_rows = staff.get(reverse("api-judgments", args=["blind"]), {"page_size": 5000,
                                                                        "reviewer": reviewer.username}).json()
    leak = Ranks()
    by_unit: dict[tuple, dict[ModelResponse, int]] = defaultdict(dict)
    for row in staff_rows["results"]:
        if row["response_id"] is not None:
            by_unit[(row["conversation_id"], row["attribute"])][responses[row["response_id"]]] = row["id"]
    for unit_ids in by_unit.values():
        leak.add("judgment id", unit_ids)
    assert leak.worst()[0] > 0.9


def test_other_reviewer_facing_api_answers_carry_no_id(blind):
    api = api_client(blind["reviewer"])
    for name, args in (("api-studies", []), ("api-study", ["blind"]), ("api-rounds", ["blind"]),
                       ("api-assignments", ["blind", "calibration-1"])):
        answer = api.get(reverse(name, args=args))
        assert answer.status_code == 200
        assert not ids_shown(answer.content.decode(), blind["responses"])
    for fmt in ("csv", "jsonl"):
        assert api.get(reverse("api-export-judgments", args=["blind", fmt])).status_code in (403, 404)


def test_feedback_lists_a_turns_differences_in_no_order_of_the_slots(client, blind):
    round_, reviewer = blind["round"], blind["reviewer"]
    Round.objects.filter(pk=round_.pk).update(status="closed")
    round_.refresh_from_db()
    client.force_login(reviewer)
    page = client.get(reverse("feedback", args=[round_.pk]))
    assert page.status_code == 200 and 'class="difference"' in page.content.decode()
    assert not ids_shown(page.content.decode(), blind["responses"]), "a difference's anchor named the response's id"
    # Each item is named by its place in the reviewer's queue, not by its turn's id (which rises along a conversation,
    # so it would date the turn where the session order is blinded), and listed in that order.
    # (The reviewer's queue here in the reverse of the turns' order, as a blinded session order may give it.)
    queue = Assignment.objects.filter(round=round_, coder=reviewer)
    last = queue.count()
    queue.update(position=F("position") + 1000)
    queue.update(position=last + 1001 - F("position"))
    places = dict(queue.values_list("turn_id", "position"))
    page = client.get(reverse("feedback", args=[round_.pk])).content.decode()
    differences = reviewer_feedback(round=round_, user=reviewer).differences
    shown = [places[d["turn"].pk] for d in differences]
    anchored = [int(n) for n in re.findall(r'<tbody id="item-(\d+)-', page)]  # the page's first page of them
    assert anchored and anchored == shown[:len(anchored)]
    for code in {d["attribute"].code for d in differences}:
        listed = [places[d["turn"].pk] for d in differences if d["attribute"].code == code]
        assert listed == sorted(listed), f"{code}: not in the reviewer's queue order"
    assert len(differences) == TURNS * len(MODELS) * 2
    ranks = Ranks()
    units: dict[tuple, dict[ModelResponse, int]] = defaultdict(dict)
    for place, d in enumerate(differences):
        units[(d["turn"].pk, d["attribute"].code)][d["response"]] = place
    for unit in units.values():
        ranks.add("feedback position", unit)
    rho, family, _ = ranks.worst()
    assert rho < LIMIT, f"{family}: |ρ| = {rho:.3f}"


def test_a_handle_saves_only_within_the_coders_own_assignment(client, blind):
    """Someone else's handle for the same response, the coder's own handle from another turn, a forged handle and
    the response's id are all refused, and nothing is written."""
    round_, reviewer, expert = blind["round"], blind["reviewer"], blind["expert"]
    turn = Assignment.objects.get(round=round_, coder=reviewer, position=1).turn
    target = ModelResponse.objects.filter(turn=turn).first()
    other_turn = Assignment.objects.get(round=round_, coder=reviewer, position=2).turn
    elsewhere = ModelResponse.objects.filter(turn=other_turn).first()
    study = round_.study
    refused = {
        "the expert's handle": response_handle(study=study, coder_id=expert.pk, turn_id=turn.pk,
                                               response_id=target.pk),
        "another turn's handle": response_handle(study=study, coder_id=reviewer.pk, turn_id=other_turn.pk,
                                                 response_id=elsewhere.pk),
        "the same response under another turn": response_handle(study=study, coder_id=reviewer.pk,
                                                                turn_id=other_turn.pk, response_id=target.pk),
        "the handle under another study's key": response_handle(study=Study(slug="other", blinding_key="ab" * 32),
                                                                coder_id=reviewer.pk, turn_id=turn.pk,
                                                                response_id=target.pk),
        "a forged handle": "0123456789abcdef",
        "the response id": str(target.pk),
    }
    before = list(Judgment.objects.filter(round=round_).values_list("pk", "score", "version").order_by("pk"))
    client.force_login(reviewer)
    for what, handle in refused.items():
        answer = client.post(reverse("judgment-save", args=[round_.pk, 1]), {
            "attribute": "AUR", "response": handle, "score": "2", "version": "1"})
        assert answer.status_code == 422, what
        assert b"not part of this turn" in answer.content, what
    # The expert's own handle is refused on the reviewer's turn and the reviewer's on the expert's page.
    client.force_login(expert)
    mine = response_handle(study=study, coder_id=reviewer.pk, turn_id=turn.pk, response_id=target.pk)
    expert_position = Assignment.objects.get(round=round_, coder=expert, turn=turn).position
    answer = client.post(reverse("judgment-save", args=[round_.pk, expert_position]), {
        "attribute": "AUR", "response": mine, "score": "2", "version": "0"})
    assert answer.status_code == 422
    assert list(Judgment.objects.filter(round=round_).values_list("pk", "score", "version").order_by("pk")) == before


def test_handles_and_the_api_order_stay_when_secret_key_changes(client, blind):
    """SECRET_KEY no longer keys anything a reviewer sees: rotating it (with no fallback) leaves the turn page's
    handles and order, the saves of a page opened before, and the judgments API's order and cursors as they were."""
    round_, reviewer = blind["round"], blind["reviewer"]
    turn = Assignment.objects.get(round=round_, coder=reviewer, position=1).turn
    target = ModelResponse.objects.filter(turn=turn).last()
    client.force_login(reviewer)
    api = api_client(reviewer)

    def seen() -> tuple:
        page = handles_on_page(client, round_, 1)
        listed = api.get(reverse("api-judgments", args=["blind"]), {"page_size": 50}).json()
        return page, [row["response"] for row in listed["results"]], listed["next"]

    before = seen()
    old = response_handle(study=round_.study, coder_id=reviewer.pk, turn_id=turn.pk, response_id=target.pk)
    assert old in before[0]
    with override_settings(SECRET_KEY="another-secret-key-" + "x" * 40, SECRET_KEY_FALLBACKS=[]):
        client.force_login(reviewer)  # the session was signed with the old key
        assert seen() == before
        assert response_by_handle(study=round_.study, coder_id=reviewer.pk, turn=turn, handle=old) == target


def test_the_presentation_order_needs_the_studys_key(blind):
    """The order a reviewer sees is not a function of public ids alone: another key, another order."""
    round_, reviewer = blind["round"], blind["reviewer"]
    turns = list(Turn.objects.filter(assignments__round=round_, assignments__coder=reviewer)[:20])
    by_turn = defaultdict(list)
    for response in ModelResponse.objects.filter(turn__in=turns):
        by_turn[response.turn_id].append(response)

    def orders(study: Study) -> list[list[str]]:
        return [[r.model_slot for r, _ in responses_as_seen(study=study, coder_id=reviewer.pk, turn_id=t,
                                                            responses=rs)] for t, rs in by_turn.items()]

    here = orders(round_.study)
    another = Study(slug=round_.study.slug, blinding_key=hashlib.sha256(b"another study").hexdigest())
    there = orders(another)
    assert sum(a != b for a, b in zip(here, there, strict=True)) > len(turns) // 2
    with override_settings(SECRET_KEY="another-installation"):
        assert orders(round_.study) == here
