"""Hidden check items test the reviewer: they are gold conversations the reviewer was never given (a reserved gold
pool that only the experts coded), queued where any conversation of their topic would be, and nothing a reviewer
can see — the queue, the turn page, the API — differs because an item is a check item."""

from __future__ import annotations

import re

import pytest

from annotation.models import Assignment, Round
from calibration import services as calibration_services
from tests import scenarios

pytestmark = pytest.mark.django_db

CLOSED_ROUNDS = 1  # the protocol fixture: round 1 closed, round 2 open and coded
POOL = 3


@pytest.fixture
def main(protocol) -> Round:
    """Round 2 decided and closed, a reserved pool of four conversations decided, rev-a and rev-b retained and the
    main round (two check conversations per queue) open."""
    scenarios.calibration_round_gold(protocol, protocol.round(2))
    scenarios.calibration_round_close(protocol, protocol.round(2))
    scenarios.gold_pool_done(protocol, POOL, n=4)
    calibration_services.panel_retain(study=protocol.study, by=protocol.admin, usernames=["rev-a", "rev-b"], k=2,
                                      reason="the two the tests follow")
    calibration_services.main_round_assign(study=protocol.study, by=protocol.admin, check_items=2, seed=1)
    main = Round.objects.get(study=protocol.study, kind="main")
    return calibration_services.round_open(round=main, by=protocol.admin)


CSRF = re.compile(r'(csrfmiddlewaretoken" value="|name="csrf-token" content="|"X-CSRFToken": ")[^"]+')


def seen_by(client, api, main: Round, positions: list[int]) -> list[str]:
    """Everything the reviewer is sent about their queue and the given items (CSRF tokens, which change with every
    response, taken out)."""
    pages = [client.get(f"/rounds/{main.pk}/"), *(client.get(f"/rounds/{main.pk}/turns/{p}/") for p in positions)]
    for page in pages:
        assert page.status_code == 200
    url = f"/api/v1/studies/{main.study.slug}/rounds/main/assignments/"
    return [*(CSRF.sub(r"\1-", page.content.decode()) for page in pages), api.get(url).content.decode()]


def test_nothing_a_reviewer_is_sent_tells_a_check_item_apart(client, as_token, protocol, main):
    reviewer = protocol.reviewers[0]
    client.force_login(reviewer)
    api = as_token(reviewer)
    queue = Assignment.objects.filter(round=main, coder=reviewer)
    check = queue.filter(is_check_item=True).first()
    regular = queue.filter(is_check_item=False).first()
    assert check is not None and regular is not None
    before = seen_by(client, api, main, [check.position, regular.position])
    # The same queue with the two items' roles swapped: if any output depended on the flag, it would change.
    Assignment.objects.filter(pk=check.pk).update(is_check_item=False)
    Assignment.objects.filter(pk=regular.pk).update(is_check_item=True)
    after = seen_by(client, api, main, [check.position, regular.position])
    assert before == after
    api_text = before[-1].replace(" ", "")
    assert '"is_check_item":true' not in api_text and '"is_check_item":false' not in api_text


def test_check_conversations_are_whole_and_were_never_given_to_the_reviewer(protocol, main):
    pool = set(protocol.round(POOL).items.values_list("turn__conversation_id", flat=True))
    for reviewer in protocol.reviewers[:2]:
        seen = set(Assignment.objects.filter(round__kind="calibration", coder=reviewer)
                   .values_list("turn__conversation_id", flat=True))
        checks = Assignment.objects.filter(round=main, coder=reviewer, is_check_item=True).select_related("turn")
        conversations = {a.turn.conversation_id for a in checks}
        assert len(conversations) == 2 and conversations <= pool and not conversations & seen
        for conversation in conversations:  # every turn of it, one after another
            mine = sorted((a.position, a.turn.index) for a in checks if a.turn.conversation_id == conversation)
            assert [i for _, i in mine] == list(range(1, len(mine) + 1))
            assert [p for p, _ in mine] == list(range(mine[0][0], mine[0][0] + len(mine)))
