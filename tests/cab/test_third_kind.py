"""A third study kind is one package, one settings line and one schema file (docs/architecture.md#study-kinds):
the toy kind of ``tests/toykind``, registered by the test settings only (``tests/settings.py``), gets a part of the
coding page, a report section and a dashboard tab, and no file outside its package names it."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import pytest
from django.conf import settings
from django.urls import reverse

from annotation import services
from annotation.kinds import kind_of, kinds
from annotation.schema_document import builtin_path
from metrics import runs as metric_runs
from metrics import services as metric_services
from metrics.models import MetricRun
from reports import kind_pages
from tests.annotation.test_views import with_parts
from tests.factories import (
    AssignmentFactory,
    JudgmentFactory,
    ModelResponseFactory,
    RoundFactory,
    StudyFactory,
    StudyMemberFactory,
    TurnFactory,
    attribute,
)

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.django_db


@pytest.fixture
def toy(db, reviewer):
    """A study on the toy kind's schema, installed from the kind's own file: one turn with two responses, assigned
    to the reviewer, who coded T1 = 1 for GPT and 0 for Claude."""
    document = json.loads(builtin_path("toy-v1").read_text(encoding="utf-8"))
    study = StudyFactory(slug="toy-study", schema=services.schema_install(document=document),
                         model_slots=["GPT", "Claude"])
    StudyMemberFactory(study=study, user=reviewer, role="reviewer")
    round_ = RoundFactory(study=study)
    turn = TurnFactory()
    tally = attribute("T1", "toy-v1")
    for slot, score in (("GPT", 1), ("Claude", 0)):
        response = ModelResponseFactory(turn=turn, model_slot=slot)
        JudgmentFactory(round=round_, coder=reviewer, attribute=tally, response=response, score=score)
    AssignmentFactory(round=round_, coder=reviewer, turn=turn, position=1)
    return study, round_


def test_the_test_settings_add_the_kind_with_one_line_and_its_schema_ships_in_its_package(toy):
    study, _ = toy
    assert settings.STUDY_KINDS[-1] == "tests.toykind" and "toy" in kinds()
    assert kind_of(study).slug == "toy" and kind_of(study).block == {"tally": "T1"}
    assert builtin_path("toy-v1") == ROOT / "tests/toykind/schemas/toy-v1.json"


def test_the_kind_adds_its_part_to_the_coding_page(client, reviewer, toy):
    study, round_ = toy
    client.force_login(reviewer)
    page = client.get(reverse("turn", args=[round_.pk, 1]))
    assert page.status_code == 200
    html = with_parts(client, page)
    assert '<p class="toy-banner">Toy kind: tally T1 on every response.</p>' in html
    assert html.count('class="unit response-card"') == 2 and "Mentions a plan" in html  # the shared page's forms


def test_the_kind_computes_its_report_section_and_shows_it_on_its_own_tab(client, researcher, admin_user, toy):
    study, _ = toy
    run = metric_services.metric_run_request(study=study, by=admin_user, bootstrap=20)
    metric_runs.metric_run_execute(run_id=run.pk)
    run = MetricRun.objects.get(pk=run.pk)
    assert run.status == MetricRun.Status.SUCCEEDED, run.error
    assert run.result["toy"] == {"tally": "T1", "ones": {"Claude": 0, "GPT": 1}}
    assert [p.slug for p in kind_pages.pages_of(study)] == ["reliability", "toy"]
    client.force_login(researcher)
    overview = client.get(reverse("reports", args=[study.slug])).content.decode()
    nav = re.search(r'<nav class="report-nav" aria-label="Report pages">(.*?)</nav>', overview, re.S)
    assert nav is not None and "Toy tally" in nav.group(1) and "Atrophy risk" not in nav.group(1)
    tab = client.get(reverse("reports-page", args=[study.slug, "toy"]))
    assert tab.status_code == 200 and "Responses coded 1 on T1" in tab.content.decode()
    csv = client.get(reverse("reports-file", kwargs={"slug": study.slug, "page": "toy", "name": "tally",
                                                     "fmt": "csv"}))
    assert csv.status_code == 200
    assert sorted(b"".join(csv.streaming_content).decode().splitlines()[1:]) == ["Claude,0", "GPT,1"]
    assert client.get(reverse("reports-page", args=[study.slug, "risk"])).status_code == 404  # not its tab


def test_no_file_outside_the_package_names_the_toy_kind():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    roots = [*config["tool"]["importlinter"]["root_packages"], "templates", "static"]
    pattern = re.compile(r"toykind|\btoy\b", re.I)
    found = [f"{path.relative_to(ROOT)}" for root in roots for path in sorted((ROOT / root).rglob("*"))
             if path.is_file() and path.suffix in {".py", ".html", ".js", ".css", ".md", ".json"}
             and pattern.search(path.read_text(encoding="utf-8", errors="replace"))]
    assert found == []
