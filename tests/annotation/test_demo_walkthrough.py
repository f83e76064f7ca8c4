"""The README's "Walk-through on the demo study", step by step, through the real pages with Django's test client:
each step finds the button or link the README names on the page it names, posts to that form's URL, and checks
what changed. If a page or a button is renamed, this test and the README have to change together."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from annotation.models import Assignment, Judgment, Round, StudyMember, WorkshopNote
from metrics import runs as metric_runs
from metrics.models import MetricRun

pytestmark = pytest.mark.django_db

README = Path(__file__).resolve().parents[2] / "README.md"
PASSWORD = "cab-demo"  # noqa: S105 - the demo's printed password
PANEL = ["demo-panel-1", "demo-panel-2", "demo-panel-3"]


def walkthrough() -> str:
    """The README section, from its heading to the next one, with its line breaks as spaces."""
    text = README.read_text(encoding="utf-8")
    start = text.index("## Walk-through on the demo study")
    end = text.find("\n## ", start + 1)
    return " ".join(text[start:end if end >= 0 else len(text)].split())


def sign_in(client: Client, username: str) -> None:
    client.post(reverse("logout"))
    response = client.post(reverse("login"), {"username": username, "password": PASSWORD})
    assert response.status_code == 302, f"{username} could not sign in"


def shows(response, *labels: str) -> str:
    """The page's HTML, after checking that it shows each label (a button, link or heading the README names)."""
    assert response.status_code == 200, response.status_code
    html = response.content.decode()
    for label in labels:
        assert label in html, f"the page does not show {label!r}"
    return html


def said(response) -> list[str]:
    """The messages the page answered with."""
    return [str(m) for m in response.context["messages"]]


def run_the_requested_metrics(study) -> MetricRun:
    """What the worker does with the run that closing requested (embedded, the request runs it after commit)."""
    run = MetricRun.objects.filter(study=study, trigger="round-closed").latest("pk")
    metric_runs.metric_run_execute(run_id=run.pk)
    run.refresh_from_db()
    assert run.status == MetricRun.Status.SUCCEEDED, run.error
    return run


def first_form(html: str, marker: str) -> dict[str, str]:
    """The hidden fields of the first form on the page whose opening tag has ``marker``."""
    form = re.search(rf"<form[^>]*{re.escape(marker)}[^>]*>(.*?)</form>", html, re.S)
    assert form, f"no form with {marker} on the page"
    return dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', form[1]))


def code_turn(client: Client, round_id: int, position: int) -> int:
    """Score every attribute of a turn 0 as its page does (each attribute form posts its attribute, its response's
    handle and the version it shows to the autosave URL), then complete the turn (confirming any warning). Returns
    how many attributes were saved."""
    html = shows(client.get(reverse("turn", args=[round_id, position])), "Complete turn")
    url = re.search(r'data-save-url="([^"]+)"', html)[1]
    assert url == reverse("judgment-save", args=[round_id, position])
    saves = 0
    for unit in re.findall(r'<section class="unit .*?</section>', html, re.S):
        handle = re.search(r'<section[^>]* data-response="([^"]+)"', unit)
        forms = re.findall(r'<form class="attr[^"]*" id="([^"]+)" data-code="([^"]+)" data-version="(\d+)"', unit)
        for form_id, code, version in forms:
            fields = {"form_id": form_id, "attribute": code, "version": version, "score": "0"}
            saved = client.post(url, fields | ({"response": handle[1]} if handle else {}))
            assert saved.status_code == 200 and 'data-state="saved"' in saved.content.decode(), saved.content
            saves += 1
    assert saves, "no attribute forms on the turn page"
    complete = client.post(reverse("turn-complete", args=[round_id, position]), {"confirm": "1"})
    assert complete.status_code == 302, complete.content
    return saves


def test_the_readme_names_every_page_and_button_the_walkthrough_uses():
    text = walkthrough()
    for name in ("demo-admin", "demo-reviewer", PASSWORD, "Gold consensus", "Record every unanimous item as gold",
                 "Close round", "Close calibration-1 anyway", "Workshop", "Save note", "Memo", "Panel selection",
                 "Review the change…", "Retain 4 reviewers", "Double-coded share",
                 "Hidden gold check conversations per reviewer", "Assign the main round to the retained panel",
                 "Open the main round (4 assignments)", "Start", "Complete turn", "Close main anyway", "Exports"):
        assert name in text, name


def test_the_demo_leaves_the_main_round_to_the_admin():
    call_command("load_demo", "--quiet")
    calibration = Round.objects.get(study__slug="demo", kind="calibration", number=1)
    assert calibration.status == "open" and calibration.items.count() == 2
    assert not Round.objects.filter(study__slug="demo", kind="main").exists()
    assert not Judgment.objects.filter(round__study__slug="demo", is_gold=True).exists(), "gold is the admin's"
    assert not StudyMember.objects.filter(study__slug="demo", retained__isnull=False).exists(), "nobody retained"
    done = Assignment.objects.filter(round=calibration, completed_at__isnull=False)
    assert sorted(set(done.values_list("coder__username", flat=True))) == ["demo-expert", *PANEL]
    assert not Judgment.objects.filter(coder__username="demo-reviewer").exists(), "demo-reviewer's set is theirs"


def test_the_walkthrough_runs_from_calibration_to_a_closed_main_round(client):
    call_command("load_demo", "--quiet")
    study_url = reverse("study-dashboard", args=["demo"])
    calibration = Round.objects.get(study__slug="demo", kind="calibration", number=1)
    study = calibration.study

    # 1. Sign in as demo-admin; the home page links to the study page.
    sign_in(client, "demo-admin")
    shows(client.get(reverse("home")), f'href="{study_url}"', "Demo: Appendix D examples")
    html = shows(client.get(study_url), "calibration-1", "Gold consensus", "Close round", "Panel selection",
                 "Assign the main round to the retained panel")
    assert "Open the main round" not in html, "there is no main round yet"

    # 2. Gold consensus: record every unanimous item (demo-expert is the whole gold panel, so all of them).
    consensus_url = reverse("consensus", args=[calibration.pk])
    shows(client.get(consensus_url), "0 of 160 items", "Record every unanimous item as gold")
    response = client.post(reverse("gold-accept-unanimous", args=[calibration.pk]), follow=True)
    assert said(response) == ["160 unanimous items recorded as gold."]
    assert Judgment.objects.filter(round=calibration, is_gold=True).count() == 160

    # 3. Close round: the page names demo-reviewer, who has not coded the set; close it anyway.
    close_url = reverse("round-close", args=["demo", calibration.pk])
    shows(client.post(close_url), "These coders have not finished", "demo-reviewer", "Close calibration-1 anyway")
    calibration.refresh_from_db()
    assert calibration.status == "open", "nothing closes before the confirmation"
    response = client.post(close_url, {"confirm": "1"}, follow=True)
    assert said(response)[0].startswith("calibration-1 closed and the workshop is open; metrics run"), said(response)
    calibration.refresh_from_db()
    assert calibration.status == "closed"
    run_the_requested_metrics(study)

    # 4. Workshop and memo: the items by disagreement with gold; a decision note; the memo.
    shows(client.get(study_url), "Workshop", "Memo")
    html = shows(client.get(reverse("workshop", args=[calibration.pk])), "Calibration workshop", "Save note")
    note = first_form(html, 'class="note"') | {"text": "Agreed: a hedge without a question scores 1."}
    response = client.post(reverse("workshop-note", args=[calibration.pk]), note, follow=True)
    assert any(m.startswith("Note saved") for m in said(response)), said(response)
    assert WorkshopNote.objects.filter(round=calibration).count() == 1
    shows(client.get(reverse("memo", args=[calibration.pk, "html"])), "Agreed: a hedge without a question scores 1.")

    # 5. Panel selection: the report ranks the illustrative panel; demo-reviewer has no calibration data. Keep the
    # ticked top k, tick demo-reviewer too, give the reason the override needs, review, retain.
    panel_url = reverse("panel", args=["demo"])
    html = shows(client.get(panel_url), "Panel selection", "no calibration data", "Review the change…")
    for name in PANEL:
        assert re.search(rf'value="{name}" checked', html), f"{name} is not preselected"
    assert not re.search(r'value="demo-reviewer" checked', html)
    reason = "demo-reviewer codes the main round in the walk-through"
    response = client.post(reverse("panel-retain", args=["demo"]),
                           {"retain": [*PANEL, "demo-reviewer"], "k": "6", "reason": reason})
    shows(response, "Retain this panel", "demo-reviewer", "Retain 4 reviewers")
    assert not StudyMember.objects.filter(study=study, retained=True).exists(), "nothing changes before confirming"
    state = response.context["change"].state
    response = client.post(reverse("panel-retain", args=["demo"]), {
        "retain": [*PANEL, "demo-reviewer"], "k": "6", "reason": reason, "confirm": "1", "state": state},
        follow=True)
    assert said(response)[0].startswith("Retained panel saved: demo-panel-1, demo-panel-2, demo-panel-3, demo-reviewer")
    assert sorted(StudyMember.objects.filter(study=study, retained=True).values_list("user__username", flat=True)) \
        == [*PANEL, "demo-reviewer"]

    # 6. Main round: every conversation double-coded, no hidden check conversations; then open it.
    response = client.post(reverse("main-round-assign", args=["demo"]),
                           {"overlap": "1", "check_items": "0", "seed": "0"}, follow=True)
    assert said(response) == ["4 assignments for 4 reviewers (2 double-coded conversations, 0 hidden check-item "
                              "turns)."]
    main = Round.objects.get(study=study, kind="main")
    assert main.status == "draft"
    assert Assignment.objects.filter(round=main, coder__username="demo-reviewer").count() == 1
    html = shows(response, "Open the main round (4 assignments)")
    assert reverse("round-open", args=["demo", main.pk]) in html
    response = client.post(reverse("round-open", args=["demo", main.pk]), follow=True)
    assert said(response) == ["main is open: the retained panel sees its queues."]
    main.refresh_from_db()
    assert main.status == "open"

    # 7. Sign in as demo-reviewer: the main round is on the home page; Start opens its turn; every change saves
    # at once (the autosave URL each attribute form posts to); Complete turn finishes it.
    sign_in(client, "demo-reviewer")
    turn_url = reverse("turn", args=[main.pk, 1])
    html = shows(client.get(reverse("home")), "Your work", "main", f'href="{turn_url}"', "Start")
    shows(client.get(reverse("queue", args=[main.pk])), "main")
    html = shows(client.get(turn_url), "Turn 1 of 1", "Response A", "Complete turn")
    assert "GPT" not in re.findall(r'<span class="label">([^<]*)</span>', html)[0], "responses are blinded"
    save_url = reverse("judgment-save", args=[main.pk, 1])
    assert f'data-save-url="{save_url}"' in html
    reviewer = get_user_model().objects.get(username="demo-reviewer")
    first = client.post(save_url, {"form_id": "t-U1", "attribute": "U1", "score": "1", "version": "0"})
    assert first.status_code == 200 and 'data-state="saved"' in first.content.decode()
    assert Judgment.objects.get(round=main, coder=reviewer, attribute__code="U1").score == 1
    assert code_turn(client, main.pk, 1) == 80
    assert Judgment.objects.filter(round=main, coder=reviewer).count() == 80
    assert Judgment.objects.get(round=main, coder=reviewer, attribute__code="U1").version == 2
    assert Assignment.objects.get(round=main, coder=reviewer).completed_at is not None

    # 8. Sign in as demo-admin again: Close round on the main round names the panel members who have not coded
    # (generated accounts nobody signs in as); close it anyway. The closing run's report is on Exports.
    sign_in(client, "demo-admin")
    close_url = reverse("round-close", args=["demo", main.pk])
    assert close_url in shows(client.get(study_url), "Close round").split("main", 1)[1]
    html = shows(client.post(close_url), "Close main anyway", *PANEL)
    assert "demo-reviewer" not in html, "demo-reviewer has finished"
    response = client.post(close_url, {"confirm": "1"}, follow=True)
    assert said(response)[0].startswith("main closed; metrics run"), said(response)
    main.refresh_from_db()
    assert main.status == "closed"
    run = run_the_requested_metrics(study)
    assert run.result["indices"]["ari"], "the report has the main round's indices"
    shows(client.get(reverse("exports")), reverse("export-report", args=["demo"]))
    assert client.get(reverse("export-report", args=["demo"])).status_code == 200

    # Loading the demo again changes none of it.
    call_command("load_demo", "--quiet")
    main.refresh_from_db()
    assert main.status == "closed" and Assignment.objects.filter(round=main).count() == 4
    assert not Round.objects.filter(study=study).exclude(pk__in=[calibration.pk, main.pk]).exists()


def test_a_reviewer_who_codes_calibration_first_is_ranked_and_retained_without_a_reason(client):
    """The README's variation: demo-reviewer codes calibration-1 before the admin closes it."""
    call_command("load_demo", "--quiet")
    calibration = Round.objects.get(study__slug="demo", kind="calibration", number=1)
    sign_in(client, "demo-reviewer")
    shows(client.get(reverse("home")), "calibration-1", "Start")
    assert [code_turn(client, calibration.pk, position) for position in (1, 2)] == [80, 80]

    sign_in(client, "demo-admin")
    assert said(client.post(reverse("gold-accept-unanimous", args=[calibration.pk]), follow=True)) == [
        "160 unanimous items recorded as gold."]
    response = client.post(reverse("round-close", args=["demo", calibration.pk]), follow=True)
    assert said(response)[0].startswith("calibration-1 closed"), "nobody is unfinished: no confirmation"
    run_the_requested_metrics(calibration.study)
    html = shows(client.get(reverse("panel", args=["demo"])))
    assert "no calibration data" not in html
    for name in [*PANEL, "demo-reviewer"]:
        assert re.search(rf'value="{name}" checked', html), f"{name} is not preselected"
    response = client.post(reverse("panel-retain", args=["demo"]), {"retain": [*PANEL, "demo-reviewer"], "k": "6"})
    change = response.context["change"]
    assert not change.overridden, "the top k needs no reason"
    response = client.post(reverse("panel-retain", args=["demo"]), {
        "retain": [*PANEL, "demo-reviewer"], "k": "6", "confirm": "1", "state": change.state}, follow=True)
    assert said(response)[0].startswith("Retained panel saved")

    sign_in(client, "demo-reviewer")
    feedback_url = reverse("feedback", args=[calibration.pk])
    shows(client.get(reverse("home")), f'href="{feedback_url}"')
    shows(client.get(feedback_url), "Your feedback")


def test_assigning_with_the_forms_defaults_names_the_retained_reviewers_left_without_turns(client):
    """The demo's two conversations for four retained reviewers, assigned with the form as it comes (a tenth
    double-coded): two reviewers get no turns, and a main round is assigned once. The message said only "2
    assignments for 2 reviewers"; it now names the retained reviewers left without turns, and why."""
    from calibration import services as calibration_services

    call_command("load_demo", "--quiet")
    admin = get_user_model().objects.get(username="demo-admin")
    study = Round.objects.get(study__slug="demo", kind="calibration").study
    calibration_services.panel_retain(study=study, by=admin, usernames=[*PANEL, "demo-reviewer"], k=4,
                                      reason="the walk-through")
    sign_in(client, "demo-admin")
    response = client.post(reverse("main-round-assign", args=["demo"]),
                           {"overlap": "0.1", "check_items": "0", "seed": "0"}, follow=True)
    idle = sorted({*PANEL, "demo-reviewer"} - set(Assignment.objects.filter(round__study=study, round__kind="main")
                                                     .values_list("coder__username", flat=True)))
    assert len(idle) == 2
    assert said(response) == [
        "2 assignments for 2 reviewers (0 double-coded conversations, 0 hidden check-item turns). "
        f"{idle[0]} and {idle[1]} are retained but got no turns: there are fewer conversations to give than "
        "retained reviewers (a double-coded share of 1 gives each conversation to two); a main round's queues are "
        "made once."]
