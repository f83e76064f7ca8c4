"""A metric run's parameters (metrics/parameters.py) are refused in the same words by every path that takes them:
the reports overview's form, ``POST …/metric-runs/`` and ``manage.py metrics_report`` (which names the option as it
is spelt, ``--top-k``), nothing started. Before, the page and the API each said it in their framework's words
("Ensure this value is greater than or equal to 1.", "A valid integer is required.", "Enter a whole number."), and
the command named an option ``--top_k`` it does not have."""

from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from metrics.models import MetricRun

pytestmark = pytest.mark.django_db

WRONG = [("bootstrap", 0), ("bootstrap", 100_001), ("seed", -1), ("seed", 2**32), ("top_k", 0), ("top_k", 51)]
NOT_WHOLE = [("bootstrap", "many"), ("seed", 1.5), ("top_k", "")]


@pytest.fixture
def paths(client, admin_user, as_token, study):
    client.force_login(admin_user)
    api = as_token(admin_user, scopes=["metrics"])

    def page(name, value) -> str:
        form = {"bootstrap": 1000, "seed": 0, "top_k": 6, name: value}
        answer = client.post(reverse("metric-run-start", args=[study.slug]), form, follow=True)
        [said] = [str(message) for message in answer.context["messages"]]
        assert said.startswith(f"Not started: {name} "), said
        return said.removeprefix(f"Not started: {name} ")

    def api_post(name, value) -> str:
        answer = api.post(f"/api/v1/studies/{study.slug}/metric-runs/", {name: value}, format="json")
        assert answer.status_code == 400, answer.content
        return " ".join(answer.json()["fields"][name])

    def command(name, value) -> str:
        option = "--" + name.replace("_", "-")
        with pytest.raises(CommandError) as refused:
            call_command("metrics_report", "--study", study.slug, option, str(value), stdout=io.StringIO())
        said = str(refused.value)
        assert said.startswith(f"{option} "), said
        return said.removeprefix(f"{option} ")

    return {"the reports overview": page, "the API": api_post, "metrics_report": command}


@pytest.mark.parametrize(("name", "value"), WRONG)
def test_a_parameter_out_of_its_range_is_refused_alike_by_every_path(paths, name, value):
    said = {path: refuse(name, value) for path, refuse in paths.items()}
    assert len(set(said.values())) == 1, said
    assert next(iter(said.values())).startswith("must be a whole number from ")
    assert not MetricRun.objects.exists()


@pytest.mark.parametrize(("name", "value"), NOT_WHOLE)
def test_a_parameter_that_is_no_whole_number_is_refused_alike_by_the_page_and_the_api(paths, name, value):
    """(The command's options are read by argparse, which refuses what is not a whole number before anything.)"""
    said = {path: paths[path](name, value) for path in ("the reports overview", "the API")}
    assert len(set(said.values())) == 1, said
    assert not MetricRun.objects.exists()
