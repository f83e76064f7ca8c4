"""Production settings pass Django's deployment checks, and HTTPS can be switched off from the environment for a
deployment that terminates TLS elsewhere."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PRODUCTION = {
    "DJANGO_ENV": "production",
    "SECRET_KEY": "x" * 20 + "a-long-random-production-secret-" + "y" * 20,
    "ALLOWED_HOSTS": "cab.example.org",
    "DATABASE_URL": "postgres://cab:cab@db.invalid:5432/cab",
    "REDIS_URL": "redis://redis.invalid:6379/0",
    "STATIC_ROOT": "/tmp/cab-deploy-check-static",  # noqa: S108 - never written by `check`
}


def check_deploy(**extra: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL", "DEBUG"}}
    return subprocess.run([sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
                          cwd=ROOT, env={**env, **PRODUCTION, **extra}, capture_output=True, text=True, timeout=120)


def test_production_settings_pass_check_deploy():
    result = check_deploy()
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_https_settings_come_from_the_environment():
    result = check_deploy(SECURE_SSL_REDIRECT="0", SECURE_HSTS_SECONDS="0")
    assert result.returncode != 0
    assert "security.W008" in result.stdout + result.stderr and "security.W004" in result.stdout + result.stderr


def test_a_weak_secret_key_stops_production_saying_which_rule():
    for key, rule in [("change-me", "it has 9 characters (at least 50 are needed)"),
                      ("ab" * 40, "it has 2 distinct characters (at least 5 are needed)"),
                      ("django-insecure-" + "k3y" * 20, "it starts with django-insecure-")]:
        result = check_deploy(SECRET_KEY=key)
        said = result.stdout + result.stderr
        assert result.returncode != 0 and f"SECRET_KEY is too weak for production: {rule}" in said, said[-2000:]
        assert "Traceback" not in said
    weak_fallback = check_deploy(SECRET_KEY_FALLBACKS="old")
    assert weak_fallback.returncode != 0 and "SECRET_KEY_FALLBACKS is too weak" in weak_fallback.stderr
