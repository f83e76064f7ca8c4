"""What the reviewer's pages cost does not depend on the length of their queue (issue 34): the turn page, an
autosave, the home page, the queue page and the API's rounds with the coder's progress each take the same number
of statements for a queue of 10 and a queue of 300, and no statement scans the queue; a reviewer's home page counts
no conversation of the study. The queue page is paged by position, links to where to resume, and its
progress is the whole queue's.

Every statement a page sends is explained (``EXPLAIN (FORMAT JSON)``) and fails the test when its plan reads
``annotation_assignment`` or ``annotation_judgment`` with a sequential scan or aggregates over either; the
statements that only read are also run (``EXPLAIN (ANALYZE, FORMAT JSON)``) and the rows each reads from those two
tables must stay under a bound far below the queue's length. The planner is left to choose as it would in
production (no ``enable_seqscan = off``): the tables are made big enough for that choice to mean something
(another 60 coders' queues of 300 in the same round, 9,000 of their judgments) and analysed, so a sequential scan
in a plan is what PostgreSQL would do at scale, not the cheap path through a table of a few hundred rows."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from access import roles
from access.services import user_ensure
from annotation import selectors
from annotation.models import Assignment, Judgment, QueueProgress, Round
from benchmark.models import Conversation, ModelResponse, Turn
from tests.factories import DatasetFactory, RoundFactory, StudyFactory, StudyMemberFactory, attribute

pytestmark = pytest.mark.django_db

SHORT, LONG = 10, 300  # the two queues measured
DONE = {SHORT: 7, LONG: 200}  # completed from the start of the queue, as a reviewer works through it
BACKGROUND_CODERS = 60  # other queues of LONG items in the same round, half of each completed and judged
BIG_TABLES = {"annotation_assignment", "annotation_judgment"}

# Session, user, assignment, and one statement for the rest: progress, earlier turns, responses, judgments with
# their spans (the schema is kept per process after the first page; tests/annotation/test_views_turn_page.py).
TURN_PAGE_QUERIES = 4
# Session, user, assignment; the round (shared lock) with the judgment (row lock); whether a reopening locked the
# item (a calibration round); the update with its history row; and SAVEPOINT / RELEASE, the service's transaction
# inside the test's. U1 has no span subcategories, so its spans are not read.
AUTOSAVE_QUERIES = 8
# Session, user, roles three times, open rounds with progress and where to resume, expert memberships, feedback
# rounds, studies, their rounds (tests/annotation/test_list_queries.py).
HOME_QUERIES = 10
# Session, user, the round with the queue's counters and the page links, the page's items with their turns.
QUEUE_QUERIES = 4
# The study list of the API's rounds (a coder's own progress): session, user, roles (who may see the study), the
# study, roles again (whose progress), the study's rounds with their item counts, the coder's queue counters.
ROUNDS_API_QUERIES = 7


def position(index: int) -> int:
    """The position of the queue's ``index``-th item (from 0): positions have gaps, as a re-made queue's do."""
    return 2 * index + 1


@pytest.fixture(scope="module")
def built(shared_state):
    with shared_state():
        study = StudyFactory(status="open")
        closed = RoundFactory(study=study, number=1, status="closed")
        open_ = RoundFactory(study=study, number=2, status="open")
        dataset = DatasetFactory()
        conversations = Conversation.objects.bulk_create(
            Conversation(dataset=dataset, external_id=f"cost-{i}", kind="multi", topic="Anxiety")
            for i in range(LONG // 5))
        turns = Turn.objects.bulk_create(Turn(conversation=c, index=i, client_text=f"Turn {i} of {c.external_id}.")
                                         for c in conversations for i in range(1, 6))
        ModelResponse.objects.bulk_create(ModelResponse(turn=t, model_slot=slot, text="That sounds hard to carry.")
                                          for t in turns for slot in ("GPT", "Claude"))
        reviewers = {size: user_ensure(username=f"queue-of-{size}", role=roles.REVIEWER) for size in (SHORT, LONG)}
        for user in reviewers.values():
            StudyMemberFactory(study=study, user=user, role="reviewer")
        others = get_user_model().objects.bulk_create(get_user_model()(username=f"background-{i}")
                                                      for i in range(BACKGROUND_CODERS))
        now = timezone.now()

        def queue(user, round_, size: int, done: int) -> list[Assignment]:
            return [Assignment(round=round_, coder=user, turn=t, position=position(i),
                               completed_at=now if i < done else None) for i, t in enumerate(turns[:size])]

        queues = [(reviewers[size], open_, size, DONE[size]) for size in (SHORT, LONG)]
        queues += [(user, open_, LONG, LONG // 2) for user in others]
        Assignment.objects.bulk_create([a for q in queues for a in queue(*q)], batch_size=5000)
        # A closed calibration round both reviewers coded in: the home page links to its feedback.
        Assignment.objects.bulk_create(a for size in (SHORT, LONG) for a in queue(reviewers[size], closed, size, size))
        u1 = attribute("U1")
        Judgment.objects.bulk_create(
            (Judgment(round=open_, coder=user, conversation_id=t.conversation_id, turn=t, attribute=u1, score=1)
             for user, _, _, done in queues for t in turns[:done]), batch_size=5000)
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE annotation_assignment; ANALYZE annotation_judgment; ANALYZE benchmark_turn")
            # The build's deferred foreign-key checks, made once here: left pending, they would be made again at the
            # end of every test (Django checks the constraints then, in the test's savepoint), a second each.
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE; SET CONSTRAINTS ALL DEFERRED")
        yield {"round": open_.pk, "study": study.slug,
               "reviewers": {size: user.pk for size, user in reviewers.items()}}


@pytest.fixture
def round_(built) -> Round:
    return Round.objects.get(pk=built["round"])


def signed_in(client, built, size: int):
    user = get_user_model().objects.get(pk=built["reviewers"][size])
    client.force_login(user)
    return user


# --- the four requests, each made ready outside the measured block and warmed up once (the session's first use, --
# the schema and the turn's responses kept per process)


def visited(size: int) -> int:
    """The item the turn page and the autosave are measured on: in the middle of the queue, completed, judged."""
    return position(DONE[size] // 2)


Request = Callable[[], Any]


def turn_page(client, round_: Round, size: int) -> Request:
    url = reverse("turn", args=[round_.pk, visited(size)])
    return lambda: client.get(url)


def autosave(client, round_: Round, size: int) -> Request:
    """A save of U1 (a turn attribute) on the visited item, against the judgment's current version."""
    assignment = Assignment.objects.get(round=round_, coder__username=f"queue-of-{size}", position=visited(size))
    version = Judgment.objects.get(round=round_, coder_id=assignment.coder_id, turn_id=assignment.turn_id,
                                   attribute__code="U1").version
    url = reverse("judgment-save", args=[round_.pk, visited(size)])
    return lambda: client.post(url, {"attribute": "U1", "score": str(version % 3), "version": str(version)})


def home_page(client, round_: Round, size: int) -> Request:
    return lambda: client.get(reverse("home"))


def queue_page(client, round_: Round, size: int) -> Request:
    """The middle of the queue: a page with a page before it, one after it and a last one."""
    url = reverse("queue", args=[round_.pk])
    return lambda: client.get(url, {"start": str(position(size // 2))})


def rounds_api(client, round_: Round, size: int) -> Request:
    """The API's rounds of the study with the coder's own progress (``rounds_progress``)."""
    url = reverse("api-rounds", args=[round_.study.slug])
    return lambda: client.get(url)


PAGES = {"turn": (turn_page, TURN_PAGE_QUERIES), "autosave": (autosave, AUTOSAVE_QUERIES),
         "home": (home_page, HOME_QUERIES), "queue": (queue_page, QUEUE_QUERIES),
         "rounds API": (rounds_api, ROUNDS_API_QUERIES)}


def measured(client, round_: Round, size: int, page: str) -> list[str]:
    """The statements of the page's request, after a first request that fills what is kept between requests."""
    ready = PAGES[page][0]
    assert ready(client, round_, size)().status_code == 200
    request = ready(client, round_, size)
    with CaptureQueriesContext(connection) as captured:
        answer = request()
    assert answer.status_code == 200 and (page != "autosave" or b'data-state="saved"' in answer.content)
    return [q["sql"] for q in captured.captured_queries]


@pytest.mark.parametrize("page", list(PAGES))
def test_a_page_takes_the_same_statements_for_a_queue_of_10_and_of_300(client, built, round_, page):
    counts = {}
    for size in (SHORT, LONG):
        signed_in(client, built, size)
        counts[size] = len(measured(client, round_, size, page))
    assert counts == {SHORT: PAGES[page][1], LONG: PAGES[page][1]}


# --- no statement scans the queue ----------------------------------------------------------------------------------


def plan(sql: str, *, run: bool = False) -> dict:
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN (FORMAT JSON{', ANALYZE' if run else ''}) {sql}")
        (found,) = cursor.fetchone()
    return (json.loads(found) if isinstance(found, str) else found)[0]["Plan"]


def nodes(node: dict) -> Iterator[dict]:
    """A plan node and every node beneath it, subplans and init plans included."""
    yield node
    for child in node.get("Plans", []):
        yield from nodes(child)


def scans_the_queue(node: dict) -> list[str]:
    """What in the plan reads one of the big tables whole: a sequential scan, or an aggregate over it."""
    found = []
    for each in nodes(node):
        if each["Node Type"] == "Seq Scan" and each.get("Relation Name") in BIG_TABLES:
            found.append(f"Seq Scan on {each['Relation Name']}")
        if each["Node Type"] == "Aggregate":
            under = {n.get("Relation Name") for n in nodes(each)} & BIG_TABLES
            found += [f"Aggregate over {table}" for table in sorted(under)]
    return found


def rows_read(node: dict) -> int:
    """Rows an executed plan read from the big tables: returned or filtered out, over every loop."""
    return sum((n["Actual Rows"] + n.get("Rows Removed by Filter", 0) + n.get("Rows Removed by Index Recheck", 0))
               * n["Actual Loops"] for n in nodes(node) if n.get("Relation Name") in BIG_TABLES)


# A page of the queue reads its items (one more than a page), and the probes for where the previous and the last
# pages start read up to a page of index entries each; every other page reads a handful of rows. The queue page is
# measured with pages of 20 so that a page's reads stay far from the queue's 300.
PAGE_FOR_COST = 20
READ_BOUND = {"turn": 10, "autosave": 10, "home": 10, "queue": 3 * (PAGE_FOR_COST + 1), "rounds API": 0}
# The pages that read assignments or judgments at all (by index); the rounds API reads only the queue counters.
READS_THE_QUEUE = {"turn", "autosave", "home", "queue"}


@pytest.mark.parametrize("page", list(PAGES))
def test_no_statement_of_a_page_scans_the_queue(client, built, round_, page, monkeypatch):
    monkeypatch.setattr(selectors, "QUEUE_PAGE", PAGE_FOR_COST)
    signed_in(client, built, LONG)
    statements = [s for s in measured(client, round_, LONG, page) if not s.startswith(("SAVEPOINT", "RELEASE"))]
    reads = any(table in s for s in statements for table in BIG_TABLES)
    assert reads == (page in READS_THE_QUEUE), "the page reads the queue or judgments where it must, and only there"
    for sql in statements:
        assert not scans_the_queue(plan(sql)), (scans_the_queue(plan(sql)), sql)
        if sql.lstrip().upper().startswith("SELECT"):  # only reads are run; writes are explained only
            assert rows_read(plan(sql, run=True)) <= READ_BOUND[page], sql


# --- the queue page: paged by position, with the whole queue's progress and where to resume ---------------------


def shown_positions(answer) -> list[int]:
    return [int(p) for p in re.findall(r'<td><a href="/rounds/\d+/turns/(\d+)/">', answer.content.decode())]


def test_the_queue_page_shows_a_page_at_a_time_from_a_position(client, built, round_, monkeypatch):
    monkeypatch.setattr(selectors, "QUEUE_PAGE", 40)
    signed_in(client, built, LONG)
    url = reverse("queue", args=[round_.pk])
    first = client.get(url)
    page = first.context["page"]
    assert (page.total, page.done, page.resume) == (LONG, DONE[LONG], position(DONE[LONG]))
    assert shown_positions(first) == [position(i) for i in range(40)]
    assert (page.previous, page.next, page.last) == (None, position(40), position(LONG - 40))
    assert f"{DONE[LONG]} of {LONG} turns done" in first.content.decode()
    assert f'href="/rounds/{round_.pk}/turns/{position(DONE[LONG])}/">Resume at #{position(DONE[LONG])}' in \
        first.content.decode()
    # From a position in a gap: the page starts at the next item; the previous page is the 40 items before it.
    middle = client.get(url, {"start": str(position(100) - 1)})
    assert shown_positions(middle) == [position(i) for i in range(100, 140)]
    assert (middle.context["page"].previous, middle.context["page"].next) == (position(60), position(140))
    # Near the start the previous page is the queue's first; the last page is a whole page and has no next.
    assert client.get(url, {"start": str(position(10))}).context["page"].previous == position(0)
    last = client.get(url, {"start": str(position(LONG - 40))})
    assert shown_positions(last) == [position(i) for i in range(LONG - 40, LONG)]
    assert last.context["page"].next is None
    # Past the end: an empty page that leads back; not a position: the queue's start.
    beyond = client.get(url, {"start": "100000"})
    assert beyond.status_code == 200 and shown_positions(beyond) == []
    assert "back to the start of the queue" in beyond.content.decode()
    assert shown_positions(client.get(url, {"start": "soon"})) == shown_positions(first)


def test_a_short_queue_is_one_page_and_a_finished_one_is_reviewed_from_its_start(client, built, round_):
    user = signed_in(client, built, SHORT)
    url = reverse("queue", args=[round_.pk])
    answer = client.get(url)
    assert shown_positions(answer) == [position(i) for i in range(SHORT)]
    assert 'aria-label="Pages of the queue"' not in answer.content.decode()
    Assignment.objects.filter(round=round_, coder=user).update(completed_at=timezone.now())
    finished = client.get(url)
    assert (finished.context["page"].done, finished.context["page"].resume) == (SHORT, position(0))
    assert "Resume at" not in finished.content.decode()
    assert f'href="/rounds/{round_.pk}/turns/{position(0)}/">Review from #{position(0)}</a>' in \
        finished.content.decode()
    # a finished queue is offered for review, not "Resume" (nothing is left to resume)
    home = client.get(reverse("home")).content.decode()
    assert f'href="/rounds/{round_.pk}/turns/{position(0)}/">Review</a>' in home
    assert ">Resume</a>" not in home


def test_the_home_page_resumes_at_the_first_item_still_to_do(client, built, round_):
    user = signed_in(client, built, LONG)
    # An item near the start left undone, one past it completed: resume at the first not completed, by position.
    Assignment.objects.filter(round=round_, coder=user, position=position(3)).update(completed_at=None)
    row = next(r for r in selectors.coder_rounds(user=user) if r["round_id"] == round_.pk)
    counters = QueueProgress.objects.get(round=round_, coder=user)
    assert (row["total"], row["done"], row["resume"]) == (counters.total, counters.done, position(3))
    assert (counters.total, counters.done) == (LONG, DONE[LONG] - 1)
    assert f'href="/rounds/{round_.pk}/turns/{position(3)}/">Resume</a>' in client.get(reverse("home")).content.decode()


# --- the home page's list of studies ---------------------------------------------------------------------------


def test_a_reviewers_home_page_counts_no_conversations_of_the_study(client, built, round_):
    """How many conversations a study's rounds hold is counted over every round item of the study: researchers'
    information. A reviewer's home page lists their studies without it, and none of its statements reads the
    round items."""
    signed_in(client, built, LONG)
    statements = measured(client, round_, LONG, "home")
    assert not [sql for sql in statements if "annotation_rounditem" in sql]
    answer = client.get(reverse("home")).content.decode()
    assert round_.study.name in answer and "<th>Conversations</th>" not in answer


def test_a_researchers_home_page_still_counts_the_conversations_of_each_study(client, built, round_):
    client.force_login(user_ensure(username="cost-researcher", role=roles.RESEARCHER))
    answer = client.get(reverse("home"))
    assert "<th>Conversations</th>" in answer.content.decode()
    listed = {study.slug: study.conversation_count for study in answer.context["studies"]}
    assert listed[built["study"]] == 0  # no round of the study holds an item


# --- progress for the API and the round's page, from the counters ------------------------------------------------


def test_the_rounds_api_gives_a_coder_their_own_progress_from_the_counters(client, built, round_):
    user = signed_in(client, built, LONG)
    rows = {row["name"]: row for row in client.get(reverse("api-rounds", args=[built["study"]])).json()}
    counters = QueueProgress.objects.get(round=round_, coder=user)
    assert rows[round_.name]["progress"] == [{"reviewer": user.username, "assigned": counters.total,
                                              "completed": counters.done}]
    assert (rows[round_.name]["assigned"], rows[round_.name]["completed"]) == (LONG, DONE[LONG])
