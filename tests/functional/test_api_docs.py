"""The interactive API docs (/api/docs/) in a real headless Chromium: every operation renders, under the site's
CSP (no violation), with nothing loaded from a foreign origin."""

from __future__ import annotations

import os

import pytest

from tests.browser import CHROMIUM


@pytest.mark.browser
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_docs_page_renders_every_operation_in_chromium_without_csp_violations(live_server, monkeypatch):
    if not os.path.exists(CHROMIUM):
        pytest.fail(f"no Chromium at {CHROMIUM}; scripts/system-deps.sh installs it")
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page()
        problems: list[str] = []
        foreign: list[str] = []
        page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda error: problems.append(str(error)))
        page.on("request", lambda r: foreign.append(r.url) if not r.url.startswith(live_server.url) else None)
        page.goto(f"{live_server.url}/api/docs/")
        page.wait_for_selector(".opblock", timeout=20_000)
        operations = page.locator(".opblock").count()
        title = page.locator(".info .title").inner_text()
        browser.close()
    assert operations >= 15
    assert "Cognitive Atrophy Bench API" in title
    assert problems == []  # a CSP violation is reported here as a console error
    assert foreign == []
