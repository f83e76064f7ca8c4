"""Someone taken off a study loses access, and their judgments stay what they were: an expert's own codings stay
an expert's, a method's labels a method's, a retained reviewer stays on the panel, in the report and in both
export writers; their alias is never given to anyone else; added again in the role they had, they are what they
were (alias, place on the panel); in another role what they are now, unless they coded, which is then refused.
The study's export of their judgments imports back into it unchanged, and leaves them off it."""

from __future__ import annotations

import io

import pytest
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.urls import reverse

from annotation import automated_coders, judgment_import, long_format, services
from annotation.models import FormerStudyMember, Judgment, Round, SessionLabel, Study, StudyMember
from benchmark.models import Session
from calibration.services import panel_retain
from common.errors import RowErrors
from metrics import runs
from tests.factories import ConversationFactory, StudyFactory, StudyMemberFactory, UserFactory, attribute

pytestmark = pytest.mark.django_db

SLUG = "syn"
EXPERT = f"{SLUG}-e1"
REVIEWERS = {f"{SLUG}-r{i:02d}" for i in range(1, 5)}


@pytest.fixture
def study() -> Study:
    call_command("generate_synthetic", "--conversations", "12", "--reviewers", "4", "--seed", "3",
                 "--calibration-turns", "3", "--slug", SLUG, "--agreement", "0.6")
    return Study.objects.get(slug=SLUG)


def _remove(study: Study, username: str, admin_user) -> None:  # noqa: ANN001
    services.study_member_remove(member=StudyMember.objects.get(study=study, user__username=username), by=admin_user)


def _report(study: Study) -> dict:
    report = runs.report_build(study=study, bootstrap=20)
    return {key: report[key] for key in ("calibration", "indices")} | {"parameters": report["parameters"]}


def _roles(study: Study, username: str) -> tuple[set[str], set[str]]:
    """The role of the coder's own rows in the Python writer's rows and in the CSV the export writes."""
    rows = {row["role"] for row in long_format.judgment_rows(study=study)
            if row["reviewer"] == username and not row["is_gold"]}
    text = "".join(long_format.WRITERS["csv"](study=study))
    written = {row["role"] for _, row in long_format.read_rows(io.StringIO(text, newline=""), fmt="csv")
               if row["reviewer"] == username and row["is_gold"] == "false"}
    return rows, written


def test_a_removed_expert_stays_an_expert_in_the_report_and_the_exports(study, admin_user):
    before = _report(study)
    assert _roles(study, EXPERT) == ({"expert"}, {"expert"})
    _remove(study, EXPERT, admin_user)
    assert not StudyMember.objects.filter(study=study, user__username=EXPERT).exists()  # no access any more
    assert _report(study) == before
    assert set(before["calibration"]["reviewers"]) == REVIEWERS
    assert _roles(study, EXPERT) == ({"expert"}, {"expert"})


def test_a_removed_retained_reviewer_stays_on_the_panel_and_a_removed_method_a_method(study, admin_user):
    retained = StudyMember.objects.filter(study=study, retained=True).order_by("user__username").first()
    assert retained is not None
    automated_coders.method_register(study=study, name="llm-judge", version="v1", by=None)
    rows = [row | {"reviewer": "llm-judge", "role": "method"} for row in long_format.judgment_rows(study=study)
            if row["reviewer"] == f"{SLUG}-r02" and not row["is_gold"]]
    judgment_import.judgments_import(rows=enumerate(rows, 1), study_slug=SLUG, by=None)
    before = _report(study)
    assert retained.user.username in before["parameters"]["panel"]
    _remove(study, retained.user.username, admin_user)
    _remove(study, "llm-judge", admin_user)
    assert _report(study) == before
    assert _roles(study, "llm-judge") == ({"method"}, {"method"})


def test_a_removed_reviewers_alias_is_never_given_again_and_adding_them_back_makes_them_what_they_are_now(
        study, admin_user):
    leaving = StudyMember.objects.filter(study=study, role="reviewer").order_by("-alias").first()
    _remove(study, leaving.user.username, admin_user)
    newcomer = services.study_member_add(study=study, user=UserFactory(), role="reviewer", by=admin_user)
    assert newcomer.alias != leaving.alias
    assert newcomer.alias not in set(StudyMember.objects.filter(study=study).exclude(pk=newcomer.pk)
                                     .values_list("alias", flat=True))
    _remove(study, newcomer.user.username, admin_user)  # no codings: added back in any role, they are that
    services.study_member_add(study=study, user=newcomer.user, role="expert", by=admin_user)
    assert not FormerStudyMember.objects.filter(study=study, user=newcomer.user).exists()
    back = StudyMember.objects.get(study=study, user=newcomer.user)
    assert (back.role, back.alias) == ("expert", "")


@pytest.mark.parametrize("was, now", [("reviewer", "expert"), ("expert", "reviewer")])
def test_a_former_coder_is_not_added_back_in_another_role_that_would_change_their_codings(study, admin_user, was,
                                                                                           now):
    """Codings carry no role of their own: an expert added back as a reviewer had their codings counted as a
    reviewer's, and a reviewer added back as an expert left the panel's figures for the gold panel's, in every report
    and export, silently. Now that is refused, naming the codings; the role they had takes them back."""
    leaving = StudyMember.objects.filter(study=study, role=was).order_by("alias").first()
    username = leaving.user.username
    codings = Judgment.objects.filter(round__study=study, coder=leaving.user, is_gold=False).count()
    assert codings
    _remove(study, username, admin_user)
    before = _report(study), _roles(study, username)
    with pytest.raises(ValidationError) as refused:
        services.study_member_add(study=study, user=leaving.user, role=now, by=admin_user)
    assert f"{username} coded {codings} items in this study as {was}" in str(refused.value)
    assert not StudyMember.objects.filter(study=study, user=leaving.user).exists()
    assert FormerStudyMember.objects.get(study=study, user=leaving.user).role == was
    assert (_report(study), _roles(study, username)) == before
    services.study_member_add(study=study, user=leaving.user, role=was, by=admin_user)
    assert StudyMember.objects.get(study=study, user=leaving.user).role == was


def test_a_removed_coders_judgments_all_stay(study, admin_user):
    before = Judgment.objects.filter(round__study=study, coder__username=EXPERT).count()
    assert before and Round.objects.filter(study=study).exists()
    _remove(study, EXPERT, admin_user)
    assert Judgment.objects.filter(round__study=study, coder__username=EXPERT).count() == before


def test_deleting_a_member_in_the_django_admin_takes_them_off_as_the_study_page_does(client, study, admin_user):
    member = StudyMember.objects.get(study=study, user__username=EXPERT)
    client.force_login(admin_user)
    answer = client.post(reverse("admin:annotation_studymember_delete", args=[member.pk]), {"post": "yes"})
    assert answer.status_code == 302
    assert not StudyMember.objects.filter(pk=member.pk).exists()
    assert FormerStudyMember.objects.filter(study=study, user=member.user, role="expert").exists()
    assert _roles(study, EXPERT)[0] == {"expert"}


def test_a_member_with_session_labels_is_not_taken_off_and_the_page_says_why(client, admin_user):
    """A method's or reference's session labels point at its membership (they cannot outlive it): taking it off is
    refused by name, with the count, and the study page says so (before: a 500, ProtectedError)."""
    study = StudyFactory()
    member = StudyMemberFactory(study=study, role=StudyMember.Role.METHOD, user=UserFactory(username="judge-1"))
    history = ConversationFactory(kind="longitudinal", complexity=None)
    session = Session.objects.create(conversation=history, index=1, kind="chat")
    SessionLabel.objects.create(study=study, coder=member, seed=None, session=session, attribute=attribute("U1"),
                                value=1.5)
    with pytest.raises(ValidationError, match="judge-1 has 1 session label in this study"):
        services.study_member_remove(member=member, by=admin_user)
    client.force_login(admin_user)
    answer = client.post(reverse("member-remove", args=[study.slug, member.pk]), follow=True)
    assert answer.status_code == 200
    assert "judge-1 has 1 session label in this study" in answer.content.decode()
    assert StudyMember.objects.filter(pk=member.pk).exists()
    assert not FormerStudyMember.objects.filter(study=study).exists()


def _memberships(study: Study) -> tuple[list, list]:
    return (list(StudyMember.objects.filter(study=study).order_by("pk").values_list("user__username", "role", "alias")),
            list(FormerStudyMember.objects.filter(study=study).order_by("pk")
                 .values_list("user__username", "role", "alias")))


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_the_export_of_a_removed_coders_judgments_imports_back_unchanged_and_leaves_them_off(study, admin_user,
                                                                                           fmt):
    automated_coders.method_register(study=study, name="llm-judge", version="v1", by=None)
    rows = [row | {"reviewer": "llm-judge", "role": "method"} for row in long_format.judgment_rows(study=study)
            if row["reviewer"] == f"{SLUG}-r02" and not row["is_gold"]]
    judgment_import.judgments_import(rows=enumerate(rows, 1), study_slug=SLUG, by=None)
    reviewer = StudyMember.objects.filter(study=study, role="reviewer").order_by("alias").first()
    for username in (reviewer.user.username, EXPERT, "llm-judge"):
        _remove(study, username, admin_user)
    before = _memberships(study), list(Judgment.objects.order_by("pk").values_list("pk", "version", "updated_at"))
    text = "".join(long_format.WRITERS[fmt](study=study))
    summary = judgment_import.judgments_import(rows=long_format.read_rows(io.StringIO(text, newline=""), fmt=fmt),
                                               study_slug=SLUG, by=admin_user, typed=fmt == "jsonl")
    assert (summary.judgments_created, summary.judgments_unchanged) == (0, len(before[1]))
    assert (_memberships(study), list(Judgment.objects.order_by("pk").values_list("pk", "version", "updated_at"))) \
        == before
    assert {name for name, _, _ in before[0][1]} == {reviewer.user.username, EXPERT, "llm-judge"}


def test_an_import_giving_a_removed_coder_another_role_is_refused_by_its_line(study, admin_user):
    _remove(study, EXPERT, admin_user)
    rows = [row | {"role": "reviewer"} for row in long_format.judgment_rows(study=study)
            if row["reviewer"] == EXPERT and not row["is_gold"]][:1]
    with pytest.raises(RowErrors) as refused:
        judgment_import.judgments_import(rows=enumerate(rows, 1), study_slug=SLUG, by=admin_user)
    assert [(e.row, e.field) for e in refused.value.errors] == [(1, "role")]
    assert "was taken off the study as expert" in refused.value.errors[0].message
    assert not StudyMember.objects.filter(study=study, user__username=EXPERT).exists()


def test_a_retained_reviewer_added_back_as_a_reviewer_is_again_what_they_were(study, admin_user):
    """A reviewer taken off mid-round and added back in the same role gets their alias and their place on the panel
    back: the workshop names their codings as before, and the report's panel and main-round figures do not change.
    Before, they came back undecided (``retained`` None) under a new alias: the report dropped them from the panel
    while their main-round queue was still theirs to code."""
    member = StudyMember.objects.filter(study=study, role="reviewer", retained=True).order_by("alias").first()
    before = _report(study)
    assert member.user.username in before["parameters"]["panel"]
    _remove(study, member.user.username, admin_user)
    services.study_member_add(study=study, user=UserFactory(), role="reviewer", by=admin_user)  # a newcomer between
    back = services.study_member_add(study=study, user=member.user, role="reviewer", by=admin_user)
    assert (back.alias, back.retained) == (member.alias, True)
    assert not FormerStudyMember.objects.filter(study=study, user=member.user).exists()
    assert _report(study) == before


def test_a_reviewer_taken_off_from_a_page_read_before_the_panel_changed_keeps_the_panel_as_it_is_now(
        study, admin_user):
    """The removal records the member as they are when it runs, not as the page that asked for it read them: a
    reviewer taken off the panel meanwhile is a former reviewer off the panel; before, the stale page's ``retained``
    put them back on it, in every report."""
    page_read = StudyMember.objects.filter(study=study, role="reviewer", retained=True).order_by("alias").first()
    others = StudyMember.objects.filter(study=study, role="reviewer").exclude(pk=page_read.pk)
    panel_retain(study=study, by=admin_user, usernames=[m.user.username for m in others], reason="another admin's")
    services.study_member_remove(member=page_read, by=admin_user)
    former = FormerStudyMember.objects.get(study=study, user=page_read.user)
    assert (former.role, former.alias, former.retained) == ("reviewer", page_read.alias, False)
