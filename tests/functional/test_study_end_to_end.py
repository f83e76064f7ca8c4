"""A whole study run from the product alone, in real headless Chromium: from an empty install with one admin
account, through the pages only (no Django admin, no shell), an admin creates a study, uploads conversations,
creates three reviewers and two experts (who set their own passwords), runs calibration round 1 with the gold
consensus, feedback and a workshop, has the experts code a reserved gold pool (calibration round 2; a second
calibration round of everyone is tests/calibration/), selects the panel, assigns and opens the main round; the
reviewers code it — one of them badly enough to raise the check-item alert — and the admin closes it. Each kind of
page, the first time it is visited (so of the turns, the first one coded), is saved as a screenshot in
``test-artifacts/end-to-end/`` (one per kind, not per person or round: the same page again costs time and shows
nothing new)."""

from __future__ import annotations

import json
import re

import pytest
from django.contrib.auth import get_user_model

from access import roles
from access.services import user_ensure
from annotation.models import Assignment, Judgment, ReviewerAlert, Round, StudyMember
from metrics.models import MetricRun
from tests.browser import ARTIFACTS
from tests.celery_worker import celery_worker, wait_for

pytestmark = [pytest.mark.browser, pytest.mark.worker,
              pytest.mark.django_db(transaction=True, serialized_rollback=True)]

SHOTS = ARTIFACTS / "end-to-end"
MODELS = ["GPT", "Claude"]
REVIEWERS = ["rosa", "remy", "rhea"]  # rosa codes like the experts, remy nearly, rhea not at all
EXPERTS = ["elif", "ezra"]
PASSWORD = "a-long-Passphrase-42"  # noqa: S105 - set by each person on their one-time link


def conversations() -> str:
    """Ten single-turn conversations in two datasets and three topics, each answered by both models: two for each
    calibration round, the rest for the main round (three or more turns a reviewer, with a check item)."""
    rows = []
    for n in range(10):
        rows.append({"dataset": "CounselChat" if n % 2 else "PAIR", "conversation_id": f"c{n:02d}", "kind": "single",
                     "topic": ["Anxiety", "Sleep", "Grief and Loss"][n % 3], "complexity": "low",
                     "turns": [{"index": 1, "client": f"I have been struggling with this for weeks ({n}).",
                                "responses": [{"model": m, "text": f"{m} answers {n}: it sounds hard; what helps?"}
                                              for m in MODELS]}]})
    return "\n".join(json.dumps(row) for row in rows) + "\n"


class Visit:
    """The browser, with a numbered screenshot of each kind of page it lands on (the first of its kind)."""

    def __init__(self, page, base: str):
        self.page, self.base, self.count = page, base, 0
        self.shown: set[str] = set()
        SHOTS.mkdir(parents=True, exist_ok=True)
        for old in SHOTS.glob("*.png"):
            old.unlink()

    def shot(self, name: str) -> None:
        kind = re.sub(r"-?\d+|-(" + "|".join(["ada", *REVIEWERS, *EXPERTS]) + r")\b", "", name)
        if kind in self.shown:
            return
        self.shown.add(kind)
        self.count += 1
        self.page.screenshot(path=str(SHOTS / f"{self.count:03d}-{name}.png"), full_page=True)

    def go(self, path: str, name: str) -> None:
        self.page.goto(self.base + path)
        self.shot(name)

    def submit(self, button, name: str) -> None:
        with self.page.expect_navigation():
            button.click()
        self.shot(name)

    def said(self) -> str:
        return " ".join(self.page.locator(".messages, .message, .notice, .errorlist").all_inner_texts())

    def sign_in(self, username: str) -> None:
        self.page.context.clear_cookies()
        self.go("/login/", f"sign-in-{username}")
        self.page.fill("#id_username", username)
        self.page.fill("#id_password", PASSWORD)
        self.submit(self.page.locator("main button[type=submit]"), f"home-{username}")
        assert self.page.url == self.base + "/", self.page.url


def wait_saved(page) -> None:
    page.wait_for_selector("#global-state[data-state='saved']", timeout=30000)


def code_queue(visit: Visit, value_for) -> int:
    """From the home page, code every turn of the first round listed as a practised reviewer does, by keyboard
    alone: focus on the first attribute, then for each its score's digit (``value_for(code)``; "top" is the top of
    its scale) and ArrowDown; then Complete turn (confirming its warnings), until the queue is done. Returns how
    many turns. The first turn coded is saved as a screenshot (mouse coding is tests/functional/)."""
    page = visit.page
    page.locator("a.resume").first.click()
    page.wait_for_url(re.compile(r"/turns/\d+/$"))
    done = 0
    while re.search(r"/turns/\d+/$", page.url):
        if not done:
            visit.shot("turn")
        forms = page.locator("form.attr")
        scales = forms.evaluate_all("""forms => forms.map(form => [form.dataset.code,
            Array.from(form.querySelectorAll('input[name="score"]')).map(radio => radio.value).pop()])""")
        forms.first.locator('input[name="score"]').first.focus()
        for n, (code, top) in enumerate(scales):
            value = value_for(code)
            page.keyboard.press(top if value == "top" else value)
            if n + 1 < len(scales):
                page.keyboard.press("ArrowDown")
        wait_saved(page)
        assert forms.evaluate_all("""forms => forms.filter(form =>
            !form.querySelector('input[name="score"]:checked')).length""") == 0, "a score was not set"
        here = page.url
        page.click("#complete-turn")
        confirm = page.locator("#complete-result button")
        for _ in range(300):  # on to the next turn at once, or first the warnings to confirm
            if page.url != here:
                break
            if confirm.count() and confirm.first.is_visible():
                if not done:
                    visit.shot("turn-warnings")
                confirm.first.click()
                page.wait_for_url(lambda url, here=here: url != here)
                break
            page.wait_for_timeout(100)
        assert page.url != here, "Complete turn did not move on"
        done += 1
    visit.shot("queue-done")
    return done


def all_zero(code: str) -> str:
    return "0"


def nearly(code: str) -> str:
    return "1" if code in {"AUR", "TD"} else "0"


def highest(code: str) -> str:
    return "top"  # the top of each attribute's scale


@pytest.fixture
def worker():
    """A real Celery worker computes the metric runs that closing rounds request (the panel reads their ranking)."""
    with celery_worker() as process:
        yield process


@pytest.mark.slow(90)
def test_an_admin_runs_a_whole_study_from_the_pages(browser_page, live_server, worker, tmp_path):
    page = browser_page
    visit = Visit(page, live_server.url)
    user_ensure(username="ada", role=roles.ADMIN, password=PASSWORD)  # the install's one admin account

    # --- the study and its material -------------------------------------------------------------------------
    visit.sign_in("ada")
    page.click("text=New study")
    page.wait_for_url(re.compile(r"/studies/new/$"))
    visit.shot("new-study")
    page.fill("#id_slug", "e2e")
    page.fill("#id_name", "End to end")
    page.fill("#id_model_slots_text", ", ".join(MODELS))
    page.fill("#id_check_threshold", "0.9")
    page.fill("#id_check_min_items", "1")
    page.check("#id_experts_see_consensus")
    visit.submit(page.locator("main button[type=submit]"), "study-created")
    visit.go("/studies/e2e/conversations/upload", "upload")
    upload = tmp_path / "conversations.jsonl"
    upload.write_text(conversations())
    page.set_input_files("input[type=file]", str(upload))
    visit.submit(page.locator("main form button[type=submit]"), "study-data")
    assert "10 conversations, 10 turns and 20 responses imported" in visit.said()

    # --- people: accounts with one-time links, then study roles ----------------------------------------------
    for name in REVIEWERS + EXPERTS:
        visit.go("/people/", "people")
        page.fill("section.card input[name=username]", name)
        page.fill("section.card input[name=email]", f"{name}@example.org")
        page.select_option("section.card select[name=role]", "reviewer" if name in REVIEWERS else "expert")
        visit.submit(page.locator("section.card button", has_text="Create account"), f"account-{name}")
        assert f"One-time set-password link for {name}: beside the account below" in visit.said()
    # every link stays beside its account until it is used, and Copy puts it on the clipboard
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_server.url)
    visit.go("/people/", "people-links")
    links = {}
    for name in REVIEWERS + EXPERTS:
        field = page.locator(f"#password-link-{get_user_model().objects.get(username=name).pk}")
        row = page.locator("tr.password-link", has=field)
        links[name] = row.locator("input").input_value()
        assert re.fullmatch(re.escape(live_server.url) + r"/reset/[^/]+/[^/]+/", links[name]), links[name]
        row.locator("button.copy").click()
        row.locator(".copy-state", has_text="Copied").wait_for()
        assert page.evaluate("navigator.clipboard.readText()") == links[name]
    for number, name in enumerate(REVIEWERS + EXPERTS):
        visit.go("/studies/e2e/", "study")
        # the account field offers the reviewer and expert accounts not in the study yet
        offered = page.eval_on_selector("form[action$='/members/add'] input[name=username]",
                                        "input => Array.from(input.list.options).map(option => option.value)")
        assert offered == sorted((REVIEWERS + EXPERTS)[number:]), offered
        page.fill("form[action$='/members/add'] input[name=username]", name)
        page.select_option("form[action$='/members/add'] select[name=role]",
                           "reviewer" if name in REVIEWERS else "expert")
        visit.submit(page.locator("form[action$='/members/add'] button"), f"member-{name}")
    assert StudyMember.objects.filter(study__slug="e2e").count() == 5
    for name, link in links.items():
        page.context.clear_cookies()
        page.goto(link)
        visit.shot(f"set-password-{name}")
        assert f"Account: {name}." in page.inner_text("main")
        page.fill("input[name=new_password1]", PASSWORD)
        page.fill("input[name=new_password2]", PASSWORD)
        visit.submit(page.locator("main button[type=submit]"), f"password-set-{name}")
        assert "Your password is set." in page.content()

    # --- calibration rounds 1 and 2, then the reserved gold pool ---------------------------------------------
    def calibration_round(number: int, *, pool: bool = False) -> Round:
        visit.sign_in("ada")
        visit.go("/studies/e2e/", "study")
        if pool:
            page.check("input[name=gold_pool]")
        visit.submit(page.locator("button", has_text=f"New calibration round ({number})"), f"round-{number}-new")
        page.fill(f"tr:has-text('calibration-{number}') input[name=n]", "2")
        page.fill(f"tr:has-text('calibration-{number}') input[name=seed]", str(number))
        visit.submit(page.locator(f"tr:has-text('calibration-{number}') button", has_text="Build set"),
                     f"round-{number}-set")
        visit.submit(page.locator(f"tr:has-text('calibration-{number}') button", has_text="Open round"),
                     f"round-{number}-open")
        round_ = Round.objects.get(study__slug="e2e", kind="calibration", number=number)
        assert round_.status == "open", visit.said()
        coders = EXPERTS if pool else EXPERTS + REVIEWERS
        for name, value_for in zip(coders, [all_zero, all_zero, all_zero, nearly, highest], strict=False):
            visit.sign_in(name)
            assert code_queue(visit, value_for) == 2
        visit.sign_in("ada")
        visit.go(f"/rounds/{round_.pk}/consensus/", f"round-{number}-consensus")
        visit.submit(page.locator("button", has_text="Record every unanimous item as gold"), f"round-{number}-gold")
        assert re.match(r"(\d+) of \1 items have a gold value", page.locator("main p.muted").first.inner_text())
        visit.go("/studies/e2e/", "study")
        visit.submit(page.locator(f"tr:has-text('calibration-{number}') button", has_text="Close round"),
                     f"round-{number}-closed")
        assert f"calibration-{number} closed" in visit.said()
        visit.go(f"/rounds/{round_.pk}/workshop/", f"round-{number}-workshop")
        return round_

    first = calibration_round(1)
    visit.sign_in("remy")
    visit.go(f"/rounds/{first.pk}/feedback/", "feedback-remy")
    visit.sign_in("elif")
    page.locator("a.consensus-link").first.click()
    visit.shot("expert-consensus")
    calibration_round(2, pool=True)

    # --- the panel and the main round -----------------------------------------------------------------------
    wait_for(lambda: not MetricRun.objects.filter(study__slug="e2e", status__in=["queued", "running"]).exists(),
             timeout=240)
    assert not MetricRun.objects.filter(study__slug="e2e", status="failed").exists()
    visit.sign_in("ada")
    visit.go("/studies/e2e/panel/?k=2", "panel")
    assert "Figures of metrics run" in page.content()
    for name in REVIEWERS:
        box = page.locator(f"input[name=retain][value={name}]")
        box.check() if name in ("rosa", "remy") else box.uncheck()
    visit.submit(page.locator("button", has_text="Review the change"), "panel-confirm")
    visit.submit(page.locator("button", has_text=re.compile(r"^Retain \d")), "panel-retained")
    assert set(StudyMember.objects.filter(study__slug="e2e", retained=True)
               .values_list("user__username", flat=True)) == {"rosa", "remy"}
    visit.go("/studies/e2e/", "study")
    page.fill("input[name=overlap]", "0")
    page.fill("input[name=check_items]", "1")
    visit.submit(page.locator("button", has_text="Assign the main round"), "main-assigned")
    visit.submit(page.locator("button", has_text="Open the main round"), "main-open")
    main = Round.objects.get(study__slug="e2e", kind="main")
    assert main.status == "open" and Assignment.objects.filter(round=main, is_check_item=True).count() == 2

    visit.sign_in("rosa")
    assert code_queue(visit, all_zero) >= 3
    visit.sign_in("remy")
    assert code_queue(visit, highest) >= 3  # the hidden check conversation too, far from its gold

    visit.sign_in("ada")
    visit.go("/studies/e2e/", "study-with-alert")
    assert ReviewerAlert.objects.filter(study__slug="e2e", reviewer__username="remy", resolved_at__isnull=True).exists()
    assert "remy" in page.locator("section.alerts").inner_text()
    assert not ReviewerAlert.objects.filter(reviewer__username="rosa").exists()
    visit.submit(page.locator("tr:has-text('main') button", has_text="Close round"), "main-closed")
    assert "main closed" in visit.said()
    main.refresh_from_db()
    assert main.status == "closed"
    assert Judgment.objects.filter(round=main, is_gold=False).values("coder").distinct().count() == 2
    assert not page.console_errors, page.console_errors
