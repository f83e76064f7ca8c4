"""The demo data (annotation/demo.py, ``load_demo``): the real examples, one account per role, loaded
idempotently."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.db import connection
from django.db.models import Count

from annotation.models import Assignment, Judgment, QueueProgress, Round, Study
from benchmark.models import Conversation, ModelResponse, Turn

pytestmark = pytest.mark.django_db


def snapshot():
    return (Conversation.objects.count(), Turn.objects.count(), ModelResponse.objects.count(), Study.objects.count(),
            Round.objects.count(), Assignment.objects.count(), Judgment.objects.count(),
            get_user_model().objects.count())


def test_load_demo_loads_the_real_examples_with_one_account_per_role(capsys):
    call_command("load_demo")
    out = capsys.readouterr().out
    assert Conversation.objects.filter(external_id__startswith="appendix-d-").count() == 4
    assert ModelResponse.objects.count() == 20
    study = Study.objects.get(slug="demo")
    assert study.schema.slug == "cab-v1" and study.status == "open"
    calibration = study.rounds.get(kind="calibration", number=1)
    assert calibration.status == "open" and calibration.items.count() == 2
    assert not study.rounds.filter(kind="main").exists(), "the main round is the admin's to assign and open"
    for username in ("demo-reviewer", "demo-expert", "demo-admin", "demo-researcher"):
        assert username in out
        assert get_user_model().objects.get(username=username).check_password("cab-demo")
    assert Assignment.objects.filter(round=calibration, coder__username="demo-reviewer").count() == 2
    reviewer = get_user_model().objects.get(username="demo-reviewer")
    assert not reviewer.is_staff, "reviewers never get the admin: it would unblind them"
    assert set(reviewer.groups.values_list("name", flat=True)) == {"reviewer"}


def test_load_demo_again_says_what_the_demo_holds_now_not_that_it_was_created(capsys):
    call_command("load_demo", "--url", "http://127.0.0.1:8123/")
    first = capsys.readouterr().out
    assert "Demo study 'Demo: Appendix D examples' created: 4 conversations, 20 model responses." in first
    assert "calibration-1 is open" in first and "Open http://127.0.0.1:8123/ (the study: /studies/demo/" in first
    # the admin takes the demo further: the round closes and gold is recorded (as the walk-through does)
    study = Study.objects.get(slug="demo")
    calibration = study.rounds.get(kind="calibration", number=1)
    Round.objects.filter(pk=calibration.pk).update(status="closed")
    judgments = Judgment.objects.filter(round=calibration).count()
    call_command("load_demo")
    again = capsys.readouterr().out
    assert "created" not in again and "calibration-1 is open" not in again
    assert ("Demo study 'Demo: Appendix D examples' already present, left as it is: 2 conversations in use, "
            f"{judgments} judgments (0 gold); rounds: calibration-1 closed.") in again
    # no --url: the command cannot know the port the server will take, so it names no address of its own
    assert "Open the address ./scripts/run (or manage.py runserver) prints (the study: /studies/demo/" in again
    assert "8000" not in again


def test_load_demo_again_says_how_to_empty_the_database_it_runs_on(capsys, monkeypatch, tmp_path):
    """Before, it always said to delete var/postgres: no help where CAB_VAR_DIR moved the embedded server's folder,
    or with a PostgreSQL of one's own (DATABASE_URL)."""
    call_command("load_demo", "--quiet")
    call_command("load_demo")
    own = capsys.readouterr().out
    assert (f"To start the walk-through again, stop the server, drop and create the database "
            f"{connection.settings_dict['NAME']} (DATABASE_URL) and run ./scripts/run") in own
    elsewhere = tmp_path / "var-elsewhere" / "postgres"  # the embedded server's folder under CAB_VAR_DIR
    monkeypatch.setitem(connection.settings_dict, "EMBEDDED_ROOT", str(elsewhere))
    call_command("load_demo")
    embedded = capsys.readouterr().out
    assert f"To start the walk-through again, stop the server, delete {elsewhere} and run ./scripts/run" in embedded
    assert "var/postgres" not in own + embedded


def test_load_demo_twice_changes_nothing():
    call_command("load_demo", "--quiet")
    first = snapshot()
    call_command("load_demo", "--quiet")
    assert snapshot() == first


def test_demo_multi_turn_conversation_keeps_its_context_turn():
    call_command("load_demo", "--quiet")
    care = Conversation.objects.get(dataset__name="CARE-Bench")
    assert care.kind == "multi" and care.complexity is None
    assert list(care.turns.annotate(n=Count("responses")).order_by("index").values_list("index", "n")) == [
        (1, 0), (2, 5)]


def test_load_demo_refuses_in_production_in_a_line_and_loads_nothing(settings):
    """The compose file runs in production; the README once told its users to load the demo there, and the command
    answered with a traceback. Its printed passwords keep it out of production: a line says so and where to try it."""
    settings.PRODUCTION = True
    with pytest.raises(CommandError, match=r"not loaded in production; the demo runs on \./scripts/run"):
        call_command("load_demo", "--quiet")
    assert (Study.objects.count(), get_user_model().objects.filter(username__startswith="demo-").count()) == (0, 0)


@pytest.mark.parametrize("slug", ["care-demo", "lc8-demo"])
def test_a_kind_demo_main_round_holds_as_items_what_it_assigns_and_its_pages_count_them(client, as_token, slug):
    """A kind's demo sets its main round's items as every round's are set (``round_items_set``, while a draft), and
    as the main round's assignment makes them: the turns its coders were given (CARE: the turns from the crisis on;
    LC8: every turn of the sessions, each given as its session keyed by its first turn), so the study page, the
    reports overview and the API count them, and the queue counters are untouched."""
    call_command("load_demo", "--care", "--lc8", "--quiet")
    main = Round.objects.get(study__slug=slug, kind="main")
    items = list(main.items.order_by("position").values_list("position", "turn_id"))
    assert [position for position, _ in items] == list(range(1, len(items) + 1))
    item_turns = {turn for _, turn in items}
    assert len(item_turns) == len(items) > 0
    coders = set(Assignment.objects.filter(round=main).values_list("coder__username", flat=True))
    assert sorted(coders) == ["demo-expert", "demo-reviewer"]
    session_rated = slug == "lc8-demo"
    for username in coders:
        given = Assignment.objects.filter(round=main, coder__username=username)
        if session_rated:  # a session each, keyed by its first turn: every turn of those sessions is an item
            sessions = set(given.values_list("turn__session_id", flat=True))
            assert given.count() == len(sessions)
            assert set(Turn.objects.filter(session_id__in=sessions).values_list("pk", flat=True)) == item_turns
        else:
            assert sorted(given.values_list("turn_id", flat=True)) == sorted(item_turns), username
    per_coder = Assignment.objects.filter(round=main, coder__username="demo-reviewer").count()
    queues = QueueProgress.objects.filter(round=main).values_list("total", "done")
    assert sorted(queues) == [(per_coder, 0)] * 2

    admin = get_user_model().objects.get(username="demo-admin")
    client.force_login(admin)
    page = client.get(f"/studies/{slug}/").content.decode()
    assert f"<td>main</td>\n      <td>Open</td>\n      <td>{len(items)}</td>" in page
    overview = client.get(f"/studies/{slug}/reports/").content.decode()
    assert f"<td>main</td><td>open</td><td>{len(items)}</td>" in overview
    rounds = as_token(admin).get(f"/api/v1/studies/{slug}/rounds/").json()
    main_out = next(r for r in rounds if r["name"] == "main")
    assert main_out["n_items"] == len(items) and main_out["assigned"] == 2 * per_coder
