"""Reading a study's material back with its texts (GET …/conversations/, GET …/responses/): what was ingested comes
back exactly, in both forms of a conversation; only the study's conversations and its model slots; admins and
researchers only (reviewers and experts read texts on their turn pages, blinded), a study-scoped token its study
only; a fixed number of queries a page."""

from __future__ import annotations

import pytest

from benchmark.demo import demo_records
from tests.factories import ConversationFactory, ModelResponseFactory, StudyFactory, TurnFactory, response_items

pytestmark = pytest.mark.django_db

CONVERSATIONS = "/api/v1/studies/cab-demo/conversations/"
RESPONSES = "/api/v1/studies/cab-demo/responses/"


def history(conversation_id="h1"):
    def turn(index, client):
        return {"index": index, "client": client, "responses": [{"model": "GPT", "text": f"reply {index} 😊 "}]}

    return {"dataset": "CARE-test", "conversation_id": conversation_id, "kind": "multi", "topic": "Anxiety",
            "sessions": [{"index": 1, "kind": "chat", "crisis_type": None, "turns": [turn(1, "Hi."), turn(2, "So?")]},
                         {"index": 2, "kind": "crisis", "crisis_type": "anxiety", "turns": [turn(3, "Help.")]}]}


@pytest.fixture
def ingested(ingester):
    answer = ingester.post(CONVERSATIONS, [*demo_records(), history()], format="json")
    assert answer.status_code == 200, answer.json()


def test_a_study_reads_back_the_conversations_it_ingested_text_for_text(ingested, researcher, as_token):
    api = as_token(researcher, scopes=["read"])
    page = api.get(CONVERSATIONS, {"dataset": "CounselChat", "conversation_id": "appendix-d-1"}).json()
    assert page["next"] is None and len(page["results"]) == 1
    sent = demo_records()[0]
    got = page["results"][0]
    assert {key: got[key] for key in ("dataset", "conversation_id", "kind", "topic", "complexity", "title")} == {
        key: sent[key] for key in ("dataset", "conversation_id", "kind", "topic", "complexity", "title")}
    assert got["sessions"] == []
    assert [(t["index"], t["session_index"], t["client"], t["therapist_reference"]) for t in got["turns"]] == [
        (t["index"], None, t["client"], t.get("therapist_reference") or "") for t in sent["turns"]]
    assert [[(r["model"], r["model_version"], r["text"]) for r in t["responses"]] for t in got["turns"]] == [
        sorted((r["model"], r.get("model_version", ""), r["text"]) for r in t["responses"]) for t in sent["turns"]]


def test_a_history_reads_back_with_its_sessions_and_each_turns_session(ingested, admin_user, as_token):
    got = as_token(admin_user).get(CONVERSATIONS, {"dataset": "CARE-test"}).json()["results"]
    assert len(got) == 1
    assert got[0]["sessions"] == [{"index": 1, "kind": "chat", "crisis_type": None},
                                  {"index": 2, "kind": "crisis", "crisis_type": "anxiety"}]
    assert [(t["index"], t["session_index"], t["client"]) for t in got[0]["turns"]] == [
        (1, 1, "Hi."), (2, 1, "So?"), (3, 2, "Help.")]
    assert got[0]["turns"][2]["responses"] == [{"model": "GPT", "model_version": "", "text": "reply 3 😊 "}]


def test_responses_read_back_as_they_are_ingested_filtered_and_paged(ingested, admin_user, as_token):
    api = as_token(admin_user)
    sent = [item for item in response_items() if item["conversation_id"] == "appendix-d-3"]
    got = api.get(RESPONSES, {"dataset": "CARE-Bench", "conversation_id": "appendix-d-3"}).json()["results"]
    assert sorted((r["turn_index"], r["model"], r["model_version"], r["text"]) for r in got) == sorted(
        (r["turn_index"], r["model"], r["model_version"], r["text"]) for r in sent)
    one = api.get(RESPONSES, {"conversation_id": "appendix-d-3", "turn_index": 2, "model": "GPT"}).json()["results"]
    assert len(one) == 1 and one[0]["dataset"] == "CARE-Bench"
    seen, url = [], RESPONSES + "?page_size=2"
    while url:
        page = api.get(url).json()
        seen += [r["text"] for r in page["results"]]
        url = page["next"]
    assert len(seen) == len(response_items()) + 3  # the demo's and the history's


def test_only_the_studys_conversations_and_model_slots_are_read(ingested, admin_user, as_token, study):
    elsewhere = ConversationFactory(dataset__name="CounselChat", external_id="someone-elses", study=StudyFactory())
    ModelResponseFactory(turn=TurnFactory(conversation=elsewhere, index=1), model_slot="GPT")
    mine = ConversationFactory(dataset__name="CounselChat", external_id="mine", study=study)
    ModelResponseFactory(turn=TurnFactory(conversation=mine, index=1), model_slot="NotStudied", text="hidden")
    api = as_token(admin_user)
    ids = {c["conversation_id"] for c in api.get(CONVERSATIONS, {"page_size": 1000}).json()["results"]}
    assert "mine" in ids and "someone-elses" not in ids
    mine_read = api.get(CONVERSATIONS, {"conversation_id": "mine"}).json()["results"][0]
    assert mine_read["turns"][0]["responses"] == []
    texts = [r["text"] for r in api.get(RESPONSES, {"page_size": 5000}).json()["results"]]
    assert "hidden" not in texts
    assert api.get(RESPONSES, {"conversation_id": "someone-elses"}).json()["results"] == []


def test_reviewers_and_experts_cannot_read_texts_through_the_api(ingested, reviewer, expert, study, as_token):
    from tests.factories import StudyMemberFactory

    StudyMemberFactory(study=study, user=expert, role="expert")
    for user in (reviewer, expert):
        for url in (CONVERSATIONS, RESPONSES):
            answer = as_token(user, scopes=["read"]).get(url)
            assert answer.status_code == 403, (user.username, url)
            assert answer.json()["detail"] == "Your role does not allow this."


def test_a_token_limited_to_another_study_reads_nothing_here(ingested, admin_user, as_token, other_study):
    api = as_token(admin_user, scopes=["read"], study=other_study)
    for url in (CONVERSATIONS, RESPONSES):
        answer = api.get(url)
        assert answer.status_code == 403
        assert "limited to study 'other-study'" in answer.json()["detail"]
    assert as_token(admin_user, scopes=["ingest"]).get(CONVERSATIONS).status_code == 403  # ingest is not read


def test_a_bad_filter_is_a_400_naming_it(ingested, admin_user, as_token):
    api = as_token(admin_user)
    answer = api.get(RESPONSES, {"turn_index": "first"})
    assert answer.status_code == 400
    assert answer.json()["fields"] == {"turn_index": ["A valid integer is required."]}
    answer = api.get(CONVERSATIONS, {"kind": "several"})
    assert answer.json()["fields"] == {"kind": ['"several" is not a valid choice.']}
    assert api.get(CONVERSATIONS, {"dataset": ["a", "b"]}).json()["fields"] == {"dataset": ["give this parameter "
                                                                                           "once"]}


def test_a_page_of_conversations_takes_the_same_queries_whatever_its_size(ingested, admin_user, as_token,
                                                                       django_assert_num_queries):
    api = as_token(admin_user)
    api.get(CONVERSATIONS, {"page_size": 1})  # the token's last use is written once a while: not in the counts
    # the token, its account's permissions (2) and roles, the study, then a page: conversations, sessions, turns,
    # responses
    with django_assert_num_queries(9) as one:
        assert len(api.get(CONVERSATIONS, {"page_size": 1}).json()["results"]) == 1
    with django_assert_num_queries(len(one)):
        assert len(api.get(CONVERSATIONS, {"page_size": 100}).json()["results"]) == len(demo_records()) + 1
