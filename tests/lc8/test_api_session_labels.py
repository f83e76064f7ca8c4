"""Session labels over the REST API (docs/sessions.md#session-labels, issue 16 item 3): reference coders registered at
``references/``, methods at ``methods/``; ``POST session-labels/`` ingests many methods' predictions for several seeds
in one bulk, idempotent, all-or-nothing request, stored exactly; ``GET`` lists them for staff, filtered by coder, seed
and role; reviewers are refused."""

from __future__ import annotations

import copy
import json

import pytest

from annotation.models import SessionLabel
from tests.lc8.test_data import lc8_study, row

pytestmark = pytest.mark.django_db

BASE = "/api/v1/studies/lc8-test/"
LABELS = BASE + "session-labels/"


@pytest.fixture
def study():
    return lc8_study()


@pytest.fixture
def importer(admin_user, as_token, study):
    api = as_token(admin_user, scopes=["read", "import"], study=study)
    for name in ("m-a", "m-b"):
        assert api.post(BASE + "methods/", {"name": name, "version": "2026-11"}, format="json").status_code == 200
    reference = api.post(BASE + "references/", {"name": "controlled", "description": "controlled PHQ-8 state"},
                         format="json")
    assert reference.status_code == 200, reference.json()
    assert reference.json() == {"name": "controlled", "description": "controlled PHQ-8 state"}
    return api


def post(api, rows, **headers):
    return api.post(LABELS, {"rows": rows}, format="json", **headers)


def predictions() -> list[dict]:
    values = {"m-a": (7.123456789, 25.5, -0.3), "m-b": (3.0, 12.25, 0.1 + 0.2)}
    return [row(conversation=c, session=s, reviewer=name, seed=seed, score=values[name][seed] * s)
            for name in values for seed in range(3) for c in ("t1", "t2") for s in range(1, 6)]


def test_two_methods_three_seeds_in_one_request_stored_exactly_and_idempotently(importer, study):
    rows = predictions() + [row(conversation=c, session=s, reviewer="controlled", role="reference", score=2 * s)
                            for c in ("t1", "t2") for s in range(1, 6)]
    first = post(importer, rows)
    assert first.status_code == 200, first.json()
    assert first.json() == {"created": 70, "updated": 0, "unchanged": 0, "skipped": 0, "coders": {
        "m-a": {"created": 30, "updated": 0, "unchanged": 0}, "m-b": {"created": 30, "updated": 0, "unchanged": 0},
        "controlled": {"created": 10, "updated": 0, "unchanged": 0}}}
    values = {(label.coder.user.username, label.seed, label.session.conversation.external_id,
               label.session.index): label.value
              for label in SessionLabel.objects.select_related("coder__user", "session__conversation")}
    assert values[("m-a", 0, "t1", 1)] == 7.123456789
    assert values[("m-a", 1, "t2", 1)] == 25.5
    assert values[("m-a", 2, "t1", 1)] == -0.3
    assert values[("m-b", 2, "t1", 3)] == (0.1 + 0.2) * 3
    assert values[("controlled", None, "t2", 5)] == 10.0

    again = post(importer, copy.deepcopy(rows))
    assert (again.json()["created"], again.json()["updated"], again.json()["unchanged"]) == (0, 0, 70)
    rows[0]["score"] = 7.12345678901
    changed = post(importer, rows)
    assert (changed.json()["updated"], changed.json()["unchanged"]) == (1, 69)
    assert changed.json()["coders"]["m-a"] == {"created": 0, "updated": 1, "unchanged": 29}
    assert SessionLabel.objects.get(coder__user__username="m-a", seed=0, session__index=1,
                                    session__conversation__external_id="t1").value == 7.12345678901

    replay = post(importer, rows, HTTP_IDEMPOTENCY_KEY="lc8-1")
    assert post(importer, rows, HTTP_IDEMPOTENCY_KEY="lc8-1").json() == replay.json()


def test_wrong_rows_are_refused_row_by_row_and_nothing_is_written(importer):
    rows = [
        row(session=7),
        row(attribute="PHQ_9"),
        row(score="7.5"),
        row(score=True),
        row(reviewer="controlled", role="reference", score=12, seed=3),
        row(reviewer="gpt-unregistered"),
        row(reviewer="controlled", role="reference", attribute="PHQ1", score=1.5),
        row(reviewer="controlled", role="reference", attribute="PHQ1", score=4),
        row(),
    ]
    response = post(importer, rows)
    assert response.status_code == 400
    body = response.json()
    assert body["error_count"] == 8
    assert body["errors"] == [
        {"index": 0, "field": "session_index", "message": "LC8-test/t1 has no session 7"},
        {"index": 1, "field": "attribute", "message": "'PHQ_9' is not an attribute of this study's schema"},
        {"index": 2, "field": "score", "message": "must be a JSON number, not a string"},
        {"index": 3, "field": "score", "message": "must be a number, not true/false"},
        {"index": 4, "field": "seed", "message": "reference labels have no seed: leave it empty"},
        {"index": 5, "field": "reviewer", "message": "gpt-unregistered is not a registered method coder of this "
                                                     "study (register it first: POST "
                                                     "/api/v1/studies/lc8-test/methods/)"},
        {"index": 6, "field": "score", "message": "PHQ1: a reference label is a whole number from 0 to 3, got 1.5"},
        {"index": 7, "field": "score", "message": "PHQ1: a reference label is a whole number from 0 to 3, got 4.0"},
    ]
    assert not SessionLabel.objects.exists()


def test_nan_is_refused_even_when_a_client_sends_it(importer):
    text = json.dumps({"rows": [row(score=float("nan"))]})
    response = importer.generic("POST", LABELS, text, content_type="application/json")
    assert response.status_code == 400
    assert response.json()["errors"] == [{"index": 0, "field": "score", "message": "must be a finite number, got nan"}]


@pytest.mark.parametrize(("body", "status"), [
    ([row()], 400),
    ({"rows": "nope"}, 400),
    ({}, 400),
])
def test_the_body_is_an_object_with_a_list_of_rows(importer, body, status):
    response = importer.post(LABELS, body, format="json")
    assert response.status_code == status
    assert "rows" in json.dumps(response.json())
    assert not SessionLabel.objects.exists()


def test_labels_are_listed_for_staff_filtered_by_coder_seed_and_role(importer, researcher, as_token, study):
    post(importer, predictions() + [row(reviewer="controlled", role="reference", score=12)])
    everything = importer.get(LABELS)
    assert everything.status_code == 200
    assert len(everything.json()["results"]) == 61
    one = importer.get(LABELS, {"coder": "m-b", "seed": 2})
    results = one.json()["results"]
    assert len(results) == 10 and {(r["reviewer"], r["seed"], r["role"]) for r in results} == {("m-b", 2, "method")}
    reference = importer.get(LABELS, {"role": "reference"}).json()["results"]
    assert [(r["reviewer"], r["seed"], r["score"], r["session_index"], r["attribute"]) for r in reference] == [
        ("controlled", None, 12.0, 1, "PHQ_TOTAL")]
    first = importer.get(LABELS, {"coder": "m-a", "seed": 0, "page_size": 1}).json()
    assert first["results"][0]["score"] == 7.123456789 and first["next"]
    reader = as_token(researcher, scopes=["read"])
    assert reader.get(LABELS, {"role": "method"}).status_code == 200
    assert importer.get(LABELS, {"role": "people"}).status_code == 400
    assert importer.get(LABELS, {"seed": "x"}).status_code == 400


def test_reviewers_never_reach_session_labels_or_register_coders(study, reviewer, as_token):
    api = as_token(reviewer)
    assert api.get(LABELS).status_code in (403, 404)
    assert post(api, [row()]).status_code in (403, 404)
    assert api.post(BASE + "references/", {"name": "x"}, format="json").status_code in (403, 404)
    assert api.get(BASE + "references/").status_code in (403, 404)
    assert not SessionLabel.objects.exists()


def test_a_read_token_cannot_import(admin_user, as_token, study):
    api = as_token(admin_user, scopes=["read"])
    assert post(api, [row()]).status_code == 403


def test_a_reference_name_is_text_and_a_person_cannot_be_one(importer, admin_user):
    assert importer.post(BASE + "references/", {"name": 42}, format="json").status_code == 400
    person = importer.post(BASE + "references/", {"name": admin_user.username}, format="json")
    assert person.status_code == 400 and "is a person's account" in json.dumps(person.json())
    method = importer.post(BASE + "references/", {"name": "m-a"}, format="json")
    assert method.status_code == 400 and "not a reference coder" in json.dumps(method.json())
    assert [r["name"] for r in importer.get(BASE + "references/").json()] == ["controlled"]


def test_text_postgresql_cannot_store_is_refused_before_any_query(importer):
    text = json.dumps({"rows": [row(conversation="t\ud800"), row(dataset="LC8\x00")]})
    response = importer.generic("POST", LABELS, text, content_type="application/json")
    assert response.status_code == 400
    assert [(e["index"], e["field"]) for e in response.json()["errors"]] == [(0, "conversation_id"), (1, "dataset")]
