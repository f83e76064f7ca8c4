"""Real headless Chromium (Debian's) driven by Playwright, against pytest-django's live server."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

CHROMIUM = os.environ.get("CAB_CHROMIUM", "/usr/bin/chromium")
ARTIFACTS = Path(__file__).resolve().parent.parent / "test-artifacts"
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync",
]


@pytest.fixture
def browser_page(live_server, monkeypatch):
    # Playwright's sync API runs an event loop in this thread; the ORM calls the test makes are still
    # synchronous and run between browser steps.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        context = browser.new_context(viewport={"width": 1400, "height": 900})
        page = context.new_page()
        errors: list[str] = []
        page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.console_errors = errors
        yield page
        context.close()
        browser.close()


def login(page, live_server, username: str, password: str = "cab-demo") -> None:  # noqa: S107
    page.goto(f"{live_server.url}/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("button[type=submit]")
    page.wait_for_url(f"{live_server.url}/")


def another_device(page, live_server, username: str = "demo-reviewer",
                   password: str = "cab-demo") -> object:  # noqa: S107
    """A page of another browser context than ``page``'s (another device: no cookies, no tab to tell of a save, as
    tabs of one browser tell each other), signed in as ``username``."""
    other = page.context.browser.new_context(viewport={"width": 1400, "height": 900}).new_page()
    login(other, live_server, username, password)
    return other


def sign_in_as(page, live_server, user, password: str = "pw-for-tests") -> None:  # noqa: S107
    """Sign ``user`` (an account made by a fixture, without a known password) in, with a password given here."""
    user.set_password(password)
    user.save()
    login(page, live_server, user.username, password)


def select_text(page, response_handle: str, needle: str, occurrence: int = 0) -> None:
    """Select ``needle`` inside a response text (named by its ``data-response`` handle) with real mouse drag, from
    the first to the last character."""
    box = page.evaluate(
        """([id, needle, occurrence]) => {
            const el = document.querySelector(`.response-text[data-response="${id}"]`);
            el.scrollIntoView({block: "center"});
            const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
            let whole = "", nodes = [];
            while (walker.nextNode()) {
                nodes.push([walker.currentNode, whole.length]);
                whole += walker.currentNode.data;
            }
            let at = -1;
            for (let i = 0; i <= occurrence; i++) at = whole.indexOf(needle, at + 1);
            if (at < 0) throw new Error("not found: " + needle);
            function point(index) {
                for (const [node, base] of nodes) {
                    if (index >= base && index < base + node.data.length) return [node, index - base];
                }
            }
            function rectOf(index, length) {
                const [node, offset] = point(index);
                const r = document.createRange();
                r.setStart(node, offset); r.setEnd(node, offset + length);
                return r.getClientRects()[0];
            }
            const firstLength = needle.codePointAt(0) > 0xffff ? 2 : 1;
            const last = needle.length - ([...needle].pop().length);
            const a = rectOf(at, firstLength), b = rectOf(at + last, needle.length - last);
            return {x1: a.left + 1, y1: a.top + a.height / 2, x2: b.right - 1, y2: b.top + b.height / 2};
        }""",
        [response_handle, needle, occurrence],
    )
    page.mouse.move(box["x1"], box["y1"])
    page.mouse.down()
    page.mouse.move((box["x1"] + box["x2"]) / 2, box["y2"], steps=4)
    page.mouse.move(box["x2"], box["y2"], steps=4)
    page.mouse.up()


def demo_turn_with_text(*, client: str, gpt: str, others: str) -> tuple:
    """The demo study (``load_demo``), plus a conversation ``tricky`` whose GPT response is ``gpt`` (the other models'
    are ``others`` with the model's name put in), assigned to the demo reviewer in the open first calibration round:
    (round, reviewer, turn)."""
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    from annotation import services
    from annotation.models import Round
    from benchmark import conversation_ingest
    from benchmark.models import Turn

    call_command("load_demo", "--quiet")
    conversation_ingest.conversations_import(rows=[(1, {
        "dataset": "CounselChat", "conversation_id": "tricky", "kind": "single", "topic": "Anxiety",
        "complexity": "low", "turns": [{"index": 1, "client": client, "responses": [
            {"model": m, "text": gpt if m == "GPT" else others.format(model=m)}
            for m in ("GPT", "Claude", "Gemini", "Llama", "Qwen")]}],
    })])
    round_ = Round.objects.get(study__slug="demo", kind="calibration", number=1)
    reviewer = get_user_model().objects.get(username="demo-reviewer")
    Round.objects.filter(pk=round_.pk).update(status="draft")
    round_.refresh_from_db()
    turn = Turn.objects.get(conversation__external_id="tricky")
    services.assignments_ensure(round=round_, coder=reviewer, turns=[turn], by=None)
    Round.objects.filter(pk=round_.pk).update(status="open")
    return round_, reviewer, turn
