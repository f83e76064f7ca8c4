"""The web workers stay light: loading the WSGI application, the URL conf and every view it names never imports
the science stack, which only the Celery workers need (it took a web worker from 61 to 169 MiB)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCIENCE_STACK = ("numpy", "scipy", "sklearn", "matplotlib", "pandas")

# Run in a fresh interpreter: this test process has long imported all of it (the metrics tests need it).
PROBE = """
import json, sys
from cab.wsgi import application  # django.setup(): apps, admin autodiscovery, the Celery app
from django.urls import URLResolver, get_resolver

def walk(patterns):
    n = 0
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            n += walk(pattern.url_patterns)
        else:
            pattern.callback  # the view itself, as resolving a request to it does
            n += 1
    return n

views = walk(get_resolver().url_patterns)
print(json.dumps({"views": views, "loaded": sorted(m for m in SCIENCE if m in sys.modules)}))
"""


def test_web_worker_imports_no_science_stack():
    env = dict(os.environ, PYTHONPATH=str(ROOT), DJANGO_SETTINGS_MODULE="cab.settings", LOG_LEVEL="WARNING")
    run = subprocess.run([sys.executable, "-c", f"SCIENCE = {SCIENCE_STACK!r}\n{PROBE}"], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=120, check=False)
    assert run.returncode == 0, run.stderr
    answer = json.loads(run.stdout.strip().splitlines()[-1])
    assert answer["views"] > 50  # the walk reached every app's URLs
    assert answer["loaded"] == [], f"imported by the URL conf or its views: {answer['loaded']}"
