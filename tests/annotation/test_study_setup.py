"""An admin sets a study up from the product: create it, upload its conversations (errors by line, nothing
written), see its data, add and remove members, archive it."""

from __future__ import annotations

import html
import json
import re

import pytest
from django.core.exceptions import ValidationError
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import override_settings
from django.urls import reverse
from django.utils.html import escape

from annotation import services
from annotation.forms import MemberForm
from annotation.models import Study, StudyMember
from audit.models import AuditEvent
from benchmark.demo import demo_records
from benchmark.models import TOPICS, Conversation

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


def test_the_upload_page_lists_the_allowed_values_and_an_example_record_that_imports(client, study):
    page = client.get(reverse("conversations-upload", args=["pilot"])).content.decode()
    for value in (*TOPICS, "single", "multi", "longitudinal", "high", "medium", "low", "GPT", "Claude"):
        assert f"<code>{escape(value)}</code>" in page, value
    example = re.search(r'<pre class="example-record">(.*?)</pre>', page, re.S).group(1)
    record = json.loads(html.unescape(example))
    assert [r["model"] for r in record["turns"][0]["responses"]] == ["GPT", "Claude"]
    # the example is a record the page accepts as it is
    done = client.post(reverse("conversations-upload", args=["pilot"]),
                       {"file": SimpleUploadedFile("c.jsonl", html.unescape(example).encode())}, follow=True)
    assert "1 conversations, 1 turns and 2 responses imported" in done.content.decode()
    assert Conversation.objects.get().topic == record["topic"]


@pytest.mark.parametrize(("field", "value", "allowed"), [
    ("topic", "Astrology", '"Depression", "Anxiety", "Counseling Fundamentals"'),
    ("kind", "sideways", '"single", "multi", "longitudinal"'),
    ("complexity", "extreme", '"high", "medium", "low"'),
])
def test_a_refused_value_is_named_with_the_allowed_ones_and_nothing_is_written(client, study, field, value, allowed):
    records = _two_model_records()
    records[2][field] = value
    page = client.post(reverse("conversations-upload", args=["pilot"]), {"file": _jsonl(records)}).content.decode()
    assert "Nothing was imported" in page
    assert escape(f'line 3: {field}: "{value}" is not a valid choice; allowed: {allowed}') in page
    assert not Conversation.objects.exists()


def test_a_file_over_the_pages_limit_is_refused_by_its_size_and_one_at_it_imports(client, study):
    content = "\n".join(json.dumps(r) for r in _two_model_records()).encode()
    with override_settings(CONVERSATIONS_UPLOAD_MAX_SIZE=len(content)):
        page = client.post(reverse("conversations-upload", args=["pilot"]),
                           {"file": SimpleUploadedFile("c.jsonl", content + b"\n")}).content.decode()
        assert f"at most {len(content):,} bytes here; this file is {len(content) + 1:,} bytes." in page
        assert "cab ingest conversations FILE" in page
        assert not Conversation.objects.exists()
        done = client.post(reverse("conversations-upload", args=["pilot"]),
                           {"file": SimpleUploadedFile("c.jsonl", content)}, follow=True).content.decode()
    assert "4 conversations" in done and Conversation.objects.count() == 4


def test_the_upload_page_says_its_limit(client, study):
    page = client.get(reverse("conversations-upload", args=["pilot"])).content.decode()
    assert "A file\n  may be up to 16 MiB (16,777,216 bytes)" in page


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
    assert StudyMember.objects.get(study=study, user=reviewer).alias == "R1", "their alias again"
    page = client.post(reverse("member-add", args=["pilot"]), {"username": "ghost", "role": "reviewer"},
                       follow=True).content.decode()
    assert "no account &#x27;ghost&#x27;" in page


@pytest.mark.parametrize("role", ["method", "reference"])
def test_a_person_is_never_added_as_a_method_or_a_reference(client, study, reviewer, role):
    """Methods and reference coders are accounts that never sign in (annotation.automated_coders): the study page's
    form adds people as reviewers or experts only, and the service refuses the other roles whoever calls it."""
    page = client.post(reverse("member-add", args=["pilot"]), {"username": reviewer.username, "role": role},
                       follow=True).content.decode()
    assert f"role: Select a valid choice. {role} is not one of the available choices." in page
    assert not StudyMember.objects.filter(study=study).exists()
    with pytest.raises(ValidationError) as raised:
        services.study_member_add(study=study, user=reviewer, role=role, by=None)
    assert "reviewer or expert" in raised.value.message_dict["role"][0]
    assert not StudyMember.objects.filter(study=study).exists()
    assert set(dict(MemberForm.base_fields["role"].choices)) == {"reviewer", "expert"}  # type: ignore[attr-defined]


def test_adding_a_member_offers_the_reviewer_and_expert_accounts_not_in_the_study(client, study, reviewer,
                                                                                   other_reviewer, expert, researcher):
    client.post(reverse("member-add", args=["pilot"]), {"username": reviewer.username, "role": "reviewer"})
    page = client.get(reverse("study-dashboard", args=["pilot"])).content.decode()
    assert 'list="known-accounts"' in page
    offered = re.search(r'<datalist id="known-accounts">(.*?)</datalist>', page, re.S).group(1)
    assert re.findall(r'<option value="([^"]+)">(\w+)</option>', offered) == [("expert", "expert"),
                                                                              ("other-reviewer", "reviewer")]
    other_reviewer.is_active = False
    other_reviewer.save()
    page = client.get(reverse("study-dashboard", args=["pilot"])).content.decode()
    assert "other-reviewer" not in re.search(r'<datalist id="known-accounts">(.*?)</datalist>', page, re.S).group(1)


def test_build_set_shows_the_turns_available_and_defaults_to_what_fits(client, study):
    client.post(reverse("conversations-upload", args=["pilot"]), {"file": _jsonl(_two_model_records())})
    client.post(reverse("round-create", args=["pilot"]), {"number": 1})
    page = client.get(reverse("study-dashboard", args=["pilot"])).content.decode()
    # four turns have responses of the study's models (the multi-turn conversation's context turn has none)
    assert '<input type="number" name="n" value="4" min="1" max="4" class="small"> turns</label>' in page
    assert "of 4 available" in page
    round_ = study.rounds.get(kind="calibration", number=1)
    client.post(reverse("round-sample", args=["pilot", round_.pk]), {"n": 4, "seed": 0})
    assert round_.items.count() == 4
    client.post(reverse("round-create", args=["pilot"]), {"number": 2})
    page = client.get(reverse("study-dashboard", args=["pilot"])).content.decode()
    first, second = (page[page.index(f"<td>calibration-{n}</td>"):] for n in (1, 2))
    second = second[:second.index("</tr>")]
    assert "No turn is available for a set" in second and 'name="n"' not in second
    # calibration-1, still a draft, may draw its set again from its own turns
    assert "of 4 available" in first[:first.index("</tr>")]


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


def test_an_archived_study_takes_no_new_member_and_says_so(client, study, admin_user, reviewer, researcher):
    """The page's form and the service: a new member of an archived study is refused in words, nothing written (a
    500 before the page caught it); someone already a member is still answered as before (a demo loaded again)."""
    services.study_member_add(study=study, user=reviewer, role=StudyMember.Role.REVIEWER, by=admin_user)
    services.study_archive(study=study, by=admin_user)
    dashboard = client.get(reverse("study-dashboard", args=["pilot"])).content.decode()
    assert "its members no longer change" in dashboard and reverse("member-add", args=["pilot"]) not in dashboard
    before = (list(StudyMember.objects.values_list("pk", "role", "alias")), AuditEvent.objects.count())
    page = client.post(reverse("member-add", args=["pilot"]), {"username": researcher.username, "role": "expert"},
                       follow=True)
    assert page.status_code == 200
    assert "study &#x27;pilot&#x27; is archived: its members no longer change" in page.content.decode()
    with pytest.raises(ValidationError, match="study 'pilot' is archived: its members no longer change: nobody is "
                                              "added"):
        services.study_member_add(study=study, user=researcher, role=StudyMember.Role.REVIEWER, by=admin_user)
    again = services.study_member_add(study=study, user=reviewer, role=StudyMember.Role.REVIEWER, by=admin_user)
    assert (again.role, again.alias) == (StudyMember.Role.REVIEWER, "R1")
    assert (list(StudyMember.objects.values_list("pk", "role", "alias")), AuditEvent.objects.count()) == before


def test_the_upload_page_of_a_study_naming_no_model_slots_says_any_model_may_come(client, study):
    """A study without model slots takes a response under any model's name (``rules``): the page says so, where it
    said "the study's model slots ()"."""
    page = client.get(reverse("conversations-upload", args=["pilot"])).content.decode()
    assert "the study's model slots (GPT, Claude)" in page
    Study.objects.filter(pk=study.pk).update(model_slots=[])
    page = client.get(reverse("conversations-upload", args=["pilot"])).content.decode()
    assert "model slots ()" not in page
    assert "The study names no model slots: a response may come under any model's name." in page
