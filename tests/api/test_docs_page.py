"""The interactive API docs (/api/docs/) are served from our own static files and run under the site's CSP: no
inline script or style, no foreign origin — checked in the HTML, and in a real headless Chromium."""

from __future__ import annotations

import os
import re

import pytest

CHROMIUM = os.environ.get("CAB_CHROMIUM", "/usr/bin/chromium")


def test_docs_page_has_no_inline_script_or_style_and_loads_only_local_files(client):
    response = client.get("/api/docs/")
    assert response.status_code == 200
    html = response.content.decode()
    assert "script-src 'self'" in response["Content-Security-Policy"]
    scripts = re.findall(r"<script([^>]*)>(.*?)</script>", html, re.S)
    assert len(scripts) == 3
    assert all('src="' in attributes and not body.strip() for attributes, body in scripts)
    assert "<style" not in html
    sources = re.findall(r'(?:src|href)="([^"]+)"', html)
    assert all(source.startswith("/") for source in sources), sources
    assert any("drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js" in source for source in sources)
    init = client.get("/api/docs/?script=")
    assert init.status_code == 200 and init["Content-Type"].startswith("application/javascript")
    assert "/api/schema/" in init.content.decode()


def test_schema_is_public_openapi_3_with_bearer_auth(client):
    response = client.get("/api/schema/", HTTP_ACCEPT="application/json")
    assert response.status_code == 200
    schema = response.json()
    assert schema["openapi"].startswith("3.")
    assert schema["components"]["securitySchemes"]["ApiToken"] == {
        "type": "http", "scheme": "bearer",
        "description": "An API token from `manage.py create_api_token` (shown once, stored hashed)."}
    assert "/api/v1/studies/{slug}/responses/" in schema["paths"]


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
