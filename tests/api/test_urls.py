"""The interactive API docs page (api/urls.py, /api/docs/) is served from our own static files and runs under the
site's CSP: no inline script or style, no foreign origin. (tests/functional/test_api_docs.py loads it in Chromium.)"""

from __future__ import annotations

import re


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
