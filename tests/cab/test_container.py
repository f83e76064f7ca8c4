"""The image and the compose file, checked by reading them (no Docker engine runs here): what the build context
leaves out, how the Dockerfile installs and starts the product, and that the compose file starts what exists."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest
import yaml
from django.conf import settings
from packaging.version import Version

from cab.version import VERSION

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = (ROOT / "Dockerfile").read_text()
NEVER_IN_THE_IMAGE = ["var/secret_key", "var/postgres/data/PG_VERSION", ".venv/bin/python", ".git/HEAD",
                      "tests/conftest.py", "annotation/__pycache__/models.cpython-311.pyc"]
IN_THE_IMAGE = ["manage.py", "pyproject.toml", "README.md", "LICENSE", "cab/settings.py", "annotation/models.py",
                "templates/base.html", "static/vendor/htmx.min.js", "scripts/serve", "gunicorn.conf.py",
                "requirements/base.lock"]


def _pattern(line: str) -> re.Pattern[str]:
    """A .dockerignore line as Docker reads it (Go's filepath.Match, with ** for any number of folders)."""
    parts = []
    for token in re.split(r"(\*\*/?|\*|\?)", line.strip("/")):
        parts.append({"**/": "(?:.*/)?", "**": ".*", "*": "[^/]*", "?": "[^/]"}.get(token, re.escape(token)))
    return re.compile("".join(parts))


def ignored(path: str) -> bool:
    """Whether the build context leaves ``path`` out: the last matching line wins, and a line matching a folder
    leaves out everything in it."""
    rules = [line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines()
             if line.strip() and not line.startswith("#")]
    prefixes = ["/".join(path.split("/")[:n]) for n in range(1, path.count("/") + 2)]
    left_out = False
    for rule in rules:
        negated, pattern = rule.startswith("!"), _pattern(rule.lstrip("!"))
        if any(pattern.fullmatch(prefix) for prefix in prefixes):
            left_out = not negated
    return left_out


@pytest.mark.parametrize("path", NEVER_IN_THE_IMAGE)
def test_the_build_context_leaves_out_this_checkouts_state_the_venv_git_and_the_tests(path):
    assert ignored(path), f"{path} would be copied into the image"


@pytest.mark.parametrize("path", IN_THE_IMAGE)
def test_the_build_context_keeps_the_product(path):
    assert (ROOT / path).exists() and not ignored(path), f"{path} would be missing from the image"


def test_the_matcher_reads_dockerignore_as_docker_does():
    assert _pattern("**/*.pyc").fullmatch("a/b/c.pyc") and _pattern("**/*.pyc").fullmatch("c.pyc")
    assert _pattern("var").fullmatch("var") and not _pattern("var").fullmatch("various")
    assert not _pattern("*.log").fullmatch("logs/x.txt")


def _instructions() -> list[tuple[str, str]]:
    joined = re.sub(r"\\\n\s*", " ", DOCKERFILE)
    return [(line.split(None, 1)[0].upper(), line.split(None, 1)[1] if " " in line else "")
            for line in joined.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def test_the_dockerfile_installs_the_code_once_collects_static_files_and_runs_unprivileged():
    steps = _instructions()
    runs = " ".join(arguments for instruction, arguments in steps if instruction == "RUN")
    installs = re.findall(r"pip install [^&]*?(?:-e )?\.(?=\s|$)", runs)
    assert len(installs) == 1, f"the project is installed {len(installs)} times: {installs}"
    assert installs[0].endswith("-e ."), "installed in place: one copy of the code, in /app (not also in site-packages)"
    assert "collectstatic" in runs
    users = [arguments for instruction, arguments in steps if instruction == "USER"]
    assert users and users[-1] not in ("root", "0"), "the image must not run as root"
    cmd = next(arguments for instruction, arguments in steps if instruction == "CMD")
    assert "scripts/serve" in cmd
    env = " ".join(arguments for instruction, arguments in steps if instruction in ("ENV", "ARG"))
    assert "SECRET_KEY" not in env, "no secret key is baked into the image"


def test_the_image_installs_the_locked_dependencies_with_their_hashes():
    runs = " ".join(arguments for instruction, arguments in _instructions() if instruction == "RUN")
    assert "pip install --no-cache-dir --require-hashes -r requirements/base.lock" in runs


def test_the_compose_file_starts_the_web_and_the_worker_through_the_images_entry_points():
    compose = (ROOT / "docker-compose.yml").read_text()
    assert '["scripts/serve", "web"]' in compose and '["scripts/serve", "worker"]' in compose
    serve = ROOT / "scripts" / "serve"
    assert os.access(serve, os.X_OK)
    assert "exec gunicorn" in serve.read_text() and "exec celery -A cab worker" in serve.read_text()


def test_one_version_string_for_the_package_and_the_api():
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert VERSION == declared == settings.SPECTACULAR_SETTINGS["VERSION"]


def test_unreleased_code_carries_a_development_version_past_every_release():
    """Code with changes under CHANGELOG's ``## Unreleased`` said ``0.2.0`` in every report's ``software.version``,
    the API schema and the image, the release it is not: with its commit beside it a reader had to know that the
    commit came after the release. Unreleased code carries the next version's development release (PEP 440,
    ``0.3.0.dev0``), later than every release CHANGELOG lists; released code, a version CHANGELOG lists."""
    changelog = (ROOT / "CHANGELOG.md").read_text()
    released = [Version(v) for v in re.findall(r"^## (\d+\.\d+\.\d+) ", changelog, re.MULTILINE)]
    assert released, "CHANGELOG.md lists the releases"
    version = Version(VERSION)
    if re.search(r"^## Unreleased$", changelog, re.MULTILINE):
        assert version.is_devrelease and version > max(released), (
            f"CHANGELOG.md has changes not released, which version {VERSION} does not say: the next version's "
            f".dev0 is the version of unreleased code")
        assert changelog.index("## Unreleased") < changelog.index(f"## {max(released)} "), "newest first"
    else:
        assert not version.is_devrelease and version == max(released), "CHANGELOG.md lists the current version"


def _compose_config(path: Path, **env: str) -> subprocess.CompletedProcess:
    """``docker-compose config`` (Debian's docker-compose, installed by scripts/system-deps.sh): it reads the file
    as Compose does, checks it against the Compose schema and fills in the variables, with no Docker engine."""
    assert shutil.which("docker-compose"), "docker-compose is missing: scripts/system-deps.sh installs it"
    clean = {key: value for key, value in os.environ.items() if key not in {"SECRET_KEY", "ALLOWED_HOSTS"}}
    return subprocess.run(["docker-compose", "-f", str(path), "--project-directory", str(ROOT), "config"],
                          capture_output=True, text=True, env=clean | env, timeout=60)


def test_docker_compose_config_accepts_the_compose_file():
    accepted = _compose_config(ROOT / "docker-compose.yml", SECRET_KEY="a-key-for-the-check")
    assert accepted.returncode == 0, accepted.stderr
    services = yaml.safe_load(accepted.stdout)["services"]
    assert {"web", "worker", "db", "redis"} <= set(services)
    assert services["web"]["environment"]["SECRET_KEY"] == "a-key-for-the-check"
    assert services["db"]["image"].startswith("postgres:"), "compose runs the oldest PostgreSQL the product supports"


def test_docker_compose_config_refuses_a_missing_secret_key_and_a_broken_file(tmp_path):
    refused = _compose_config(ROOT / "docker-compose.yml")
    assert refused.returncode != 0 and "set SECRET_KEY" in refused.stderr
    broken = tmp_path / "docker-compose.yml"
    broken.write_text((ROOT / "docker-compose.yml").read_text().replace("services:", "servces:", 1))
    assert _compose_config(broken, SECRET_KEY="x").returncode != 0
