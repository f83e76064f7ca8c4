"""An admin sets a study up from the product: create it, upload its conversations (errors by line, nothing
written), see its data, add and remove members, archive it."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from annotation.models import Study, StudyMember
from benchmark.demo import demo_records
from benchmark.models import Conversation

pytestmark = pytest.mark.django_db

STUDY = {"slug": "pilot", "name": "Pilot", "description": "", "schema": "", "model_slots_text": "GPT, Claude",
         "show_therapist_reference": "on", "check_threshold": "0.7", "check_min_items": "20"}


@pytest.fixture
def study(client, admin_user):
    from annotation.models import Schema

    client.force_login(admin_user)
    response = client.post(reverse("study-create"), STUDY | {"schema": Schema.objects.get(slug="cab-v1").pk})
    assert response.status_code == 302, response.content.decode()[:2000]
    return Study.objects.get(slug="pilot")


def _jsonl(records) -> SimpleUploadedFile:
    return SimpleUploadedFile("c.jsonl", "\n".join(json.dumps(r) for r in records).encode())


def _two_model_records():
    records = demo_records()
    for record in records:
        for turn in record["turns"]:
            turn["responses"] = [r for r in turn["responses"] if r["model"] in ("GPT", "Claude")]
    return records


def test_a_study_is_created_in_set_up_with_its_settings(study):
    assert study.status == "setup" and study.model_slots == ["GPT", "Claude"] and study.check_threshold == 0.7


def test_bad_study_settings_are_named_and_nothing_is_created(client, admin_user):
    client.force_login(admin_user)
    page = client.post(reverse("study-create"), STUDY | {"slug": "new", "model_slots_text": "GPT, GPT",
                                                        "check_threshold": "3"}).content.decode()
    assert "is reserved" in page and "each model slot once" in page and "a share between 0 and 1" in page
    assert not Study.objects.exists()


def test_an_upload_with_errors_lists_them_by_line_and_writes_nothing(client, study):
    records = demo_records()  # five models' responses: three are not this study's slots
    records[1]["kind"] = "sideways"
    page = client.post(reverse("conversations-upload", args=["pilot"]), {"file": _jsonl(records)}).content.decode()
    assert "Nothing was imported" in page
    assert "line 2: kind:" in page and "is not one of this study&#x27;s model slots (GPT, Claude)" in page
    assert not Conversation.objects.exists()


def test_an_upload_imports_and_the_data_page_shows_it(client, study):
    page = client.post(reverse("conversations-upload", args=["pilot"]), {"file": _jsonl(_two_model_records())},
                       follow=True).content.decode()
    assert "4 conversations" in page and Conversation.objects.count() == 4
    data = client.get(reverse("study-data", args=["pilot"]) + "?kind=multi").content.decode()
    assert "CARE-Bench/appendix-d-" in data and "CounselChat/" not in data


def test_members_are_added_with_aliases_and_removed(client, study, reviewer, other_reviewer, expert):
    for user, role in ((reviewer, "reviewer"), (expert, "expert"), (other_reviewer, "reviewer")):
        client.post(reverse("member-add", args=["pilot"]), {"username": user.username, "role": role})
    aliases = dict(StudyMember.objects.filter(study=study).values_list("user__username", "alias"))
    assert aliases == {"reviewer": "R1", "expert": "", "other-reviewer": "R2"}
    member = StudyMember.objects.get(study=study, user=reviewer)
    client.post(reverse("member-remove", args=["pilot", member.pk]))
    assert not StudyMember.objects.filter(pk=member.pk).exists()
    client.post(reverse("member-add", args=["pilot"]), {"username": reviewer.username, "role": "reviewer"})
    assert StudyMember.objects.get(study=study, user=reviewer).alias == "R3"
    page = client.post(reverse("member-add", args=["pilot"]), {"username": "ghost", "role": "reviewer"},
                       follow=True).content.decode()
    assert "no account &#x27;ghost&#x27;" in page


def test_a_study_is_archived_only_with_no_round_open(client, study):
    from tests.factories import RoundFactory

    round_ = RoundFactory(study=study, status="open")
    page = client.post(reverse("study-archive", args=["pilot"]), follow=True).content.decode()
    assert "close the study&#x27;s open rounds first" in page and Study.objects.get(pk=study.pk).status == "setup"
    round_.status = "closed"
    round_.save()
    client.post(reverse("study-archive", args=["pilot"]))
    assert Study.objects.get(pk=study.pk).status == "archived"


def test_set_up_pages_are_for_admins_only(client, researcher, reviewer):
    for user in (researcher, reviewer):
        client.force_login(user)
        assert client.get(reverse("study-create")).status_code == 403
        assert client.post(reverse("study-create"), STUDY).status_code == 403
    assert not Study.objects.exists()
