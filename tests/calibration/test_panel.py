"""The panel-selection page (calibration/views.py ``panel``, ``panel_retain``; calibration/selectors.py
``panel_ranking``, ``panel_change``): it lists every reviewer of the study, with their retained state, shows the
figures of the report the exports page serves, and says what a change does before doing it — on the protocol study
(three reviewers and two experts; round 1 closed with its metric run, round 2 open)."""

from __future__ import annotations

import json
import re

import pytest
from django.template.defaultfilters import floatformat
from django.urls import reverse

from access import roles
from access.services import user_ensure
from annotation import services as annotation_services
from annotation.models import Judgment, StudyMember
from annotation.services import ChangedMeanwhile
from audit.models import AuditEvent
from calibration import selectors as calibration_selectors
from calibration import services as calibration_services
from tests import scenarios
from tests.factories import StudyFactory, StudyMemberFactory, UserFactory

pytestmark = pytest.mark.django_db

CLOSED_ROUNDS = 1  # for the protocol fixture: round 1 closed with its metric run, round 2 open and coded


def retained(study) -> dict[str, bool | None]:
    return dict(StudyMember.objects.filter(study=study, role="reviewer").values_list("user__username", "retained"))


def newcomer(protocol, name: str = "rev-new", *, retain: bool | None = None) -> StudyMember:
    """A reviewer who joined after the calibration rounds: the report has no figures of them."""
    user = user_ensure(username=name, role=roles.REVIEWER)
    member = annotation_services.study_member_add(study=protocol.study, user=user, role="reviewer",
                                                  by=protocol.admin)
    StudyMember.objects.filter(pk=member.pk).update(retained=retain)
    return member


def page_rows(client, protocol) -> list[dict]:
    client.force_login(protocol.admin)
    response = client.get(reverse("panel", args=[protocol.study.slug]))
    assert response.status_code == 200
    return response.context["ranking"]["rows"]


def post(client, protocol, **data):
    return client.post(reverse("panel-retain", args=[protocol.study.slug]), data)


def confirm(client, protocol, preview, **extra):
    """Post the confirmation form the preview page rendered (its hidden fields), with ``extra`` fields."""
    change = preview.context["change"]
    data = {"retain": change.retain, "k": change.k, "state": change.state, "confirm": "1",
            "reason": preview.context["reason"]} | extra
    return client.post(reverse("panel-retain", args=[protocol.study.slug]), data, follow=True)


# --- every reviewer listed -------------------------------------------------------------------------------------


def test_the_page_lists_a_reviewer_without_calibration_data(client, protocol):
    newcomer(protocol)
    rows = page_rows(client, protocol)
    assert [row["reviewer"] for row in rows] == ["rev-a", "rev-b", "rev-c", "rev-new"]
    new = rows[-1]
    assert new["member"] and not new["calibrated"] and new["rank"] is None
    html = client.get(reverse("panel", args=[protocol.study.slug])).content.decode()
    assert 'name="retain" value="rev-new"' in html
    assert "no calibration data" in html


def test_the_page_lists_every_reviewer_member_and_no_expert(client, protocol):
    newcomer(protocol)
    rows = page_rows(client, protocol)
    members = set(StudyMember.objects.filter(study=protocol.study, role="reviewer")
                  .values_list("user__username", flat=True))
    assert {row["reviewer"] for row in rows if row["member"]} == members
    assert not {"expert", "expert-2"} & {row["reviewer"] for row in rows}
    html = client.get(reverse("panel", args=[protocol.study.slug])).content.decode()
    assert "Experts (gold panel) are never ranked or retained: expert, expert-2." in html


def test_the_page_shows_each_reviewers_retained_state(client, protocol):
    newcomer(protocol, retain=True)
    StudyMember.objects.filter(study=protocol.study, user__username="rev-c").update(retained=False)
    rows = {row["reviewer"]: row for row in page_rows(client, protocol)}
    assert (rows["rev-a"]["retained"], rows["rev-c"]["retained"], rows["rev-new"]["retained"]) == (None, False, True)
    html = client.get(reverse("panel", args=[protocol.study.slug])).content.decode()
    assert html.count('<td class="retained-now">undecided</td>') == 2  # rev-a, rev-b
    assert rows["rev-new"]["preselect"] and not rows["rev-a"]["preselect"], "once a panel is chosen, it is ticked"


def test_a_reviewer_the_report_ranks_who_left_the_study_is_listed_but_not_retainable(client, protocol):
    StudyMember.objects.filter(study=protocol.study, user__username="rev-b").delete()
    rows = {row["reviewer"]: row for row in page_rows(client, protocol)}
    assert not rows["rev-b"]["member"] and rows["rev-b"]["rank"] == 2
    html = client.get(reverse("panel", args=[protocol.study.slug])).content.decode()
    assert 'value="rev-b"' not in html and "no longer a reviewer of this study" in html
    assert calibration_selectors.panel_top(ranking=calibration_selectors.panel_ranking(study=protocol.study),
                                           k=2) == ["rev-a"]


def test_without_a_report_every_reviewer_is_listed_unranked(client, admin_user):
    study = StudyFactory()
    for name in ("zed", "amy"):
        StudyMemberFactory(study=study, user=UserFactory(username=name), role="reviewer")
    StudyMemberFactory(study=study, user=UserFactory(username="gold"), role="expert")
    client.force_login(admin_user)
    response = client.get(reverse("panel", args=[study.slug]))
    assert [row["reviewer"] for row in response.context["ranking"]["rows"]] == ["amy", "zed"]
    assert "No metrics report yet" in response.content.decode()
    preview = client.post(reverse("panel-retain", args=[study.slug]), {"retain": ["amy"]})
    assert "give the reason" in preview.content.decode(), "no ranking to follow: a reason is needed"


# --- what a change does, before it is done ---------------------------------------------------------------------


def test_the_first_post_changes_nothing_and_names_who_changes(client, protocol):
    StudyMember.objects.filter(study=protocol.study, user__username__in=["rev-a", "rev-c"]).update(retained=True)
    newcomer(protocol)
    before = retained(protocol.study)
    client.force_login(protocol.admin)
    preview = post(client, protocol, retain=["rev-a", "rev-b"], k="2")
    assert preview.status_code == 200 and retained(protocol.study) == before, "nothing changes before confirming"
    change = preview.context["change"]
    assert (change.becomes_retained, change.stops_retained, change.stays_retained, change.decided_out) == (
        ["rev-b"], ["rev-c"], ["rev-a"], ["rev-new"])
    html = preview.content.decode()
    assert '<tr class="becomes-retained"><th>Become retained</th><td>rev-b</td></tr>' in html
    assert '<tr class="stops-retained"><th>Stop being retained</th><td>rev-c</td></tr>' in html
    assert '<td>rev-new</td>' in html
    assert "This selection is the top 2 of the ranking." in html
    assert "gives queues to the retained panel only" in html


def test_retaining_from_the_page_never_silently_unretains_a_member(client, protocol):
    """Every reviewer whose state the confirmation changes was named on it: here a reviewer who was retained and
    whom the page lists without calibration data (the old page did not list them, and un-retained them)."""
    newcomer(protocol, retain=True)
    StudyMember.objects.filter(study=protocol.study, user__username="rev-a").update(retained=True)
    client.force_login(protocol.admin)
    preview = post(client, protocol, retain=["rev-a", "rev-b"], k="2")
    assert "rev-new" in preview.context["change"].stops_retained
    done = confirm(client, protocol, preview)
    assert retained(protocol.study) == {"rev-a": True, "rev-b": True, "rev-c": False, "rev-new": False}
    assert "Retained panel saved: rev-a, rev-b. Now retained: rev-b. No longer retained: rev-new." in \
        done.content.decode()
    event = AuditEvent.objects.get(study_slug=protocol.study.slug, action="panel.retain")
    assert event.data["added"] == ["rev-b"] and event.data["removed"] == ["rev-new"]


def test_a_confirmation_made_before_someone_joined_is_shown_again_not_applied(client, protocol):
    client.force_login(protocol.admin)
    preview = post(client, protocol, retain=["rev-a", "rev-b"], k="2")
    newcomer(protocol, retain=True)  # joins (already retained) between the preview and the confirmation
    again = confirm(client, protocol, preview)
    assert retained(protocol.study)["rev-new"] is True, "nothing changed"
    assert "changed since you reviewed this change" in again.content.decode()
    assert again.context["change"].stops_retained == ["rev-new"]
    confirm(client, protocol, again)
    assert retained(protocol.study)["rev-new"] is False


def test_the_service_refuses_a_change_confirmed_on_an_older_state(protocol):
    shown = calibration_selectors.panel_change(study=protocol.study, usernames=["rev-a"], k=1,
                                               ranking=calibration_selectors.panel_ranking(study=protocol.study))
    StudyMember.objects.filter(study=protocol.study, user__username="rev-c").update(retained=True)
    with pytest.raises(ChangedMeanwhile):
        calibration_services.panel_retain(study=protocol.study, by=protocol.admin, usernames=["rev-a"], k=1,
                                          expected_state=shown.state)
    assert retained(protocol.study) == {"rev-a": None, "rev-b": None, "rev-c": True}


def test_a_selection_off_the_top_k_asks_for_the_reason_before_confirming(client, protocol):
    client.force_login(protocol.admin)
    preview = post(client, protocol, retain=["rev-a", "rev-c"], k="2")
    html = preview.content.decode()
    assert "This selection is not the top 2: it adds rev-c and leaves out rev-b." in html
    assert "give the reason" in html and 'name="reason" value="" class="reason" maxlength="1000" required' in html
    refused = confirm(client, protocol, preview)
    assert "give the reason, it is recorded" in refused.content.decode()
    assert set(retained(protocol.study).values()) == {None}, "refused: nothing changed"
    confirm(client, protocol, preview, reason="rev-b is away for the main round")
    assert retained(protocol.study) == {"rev-a": True, "rev-b": False, "rev-c": True}
    assert AuditEvent.objects.get(action="panel.retain", study_slug=protocol.study.slug).data["overridden"] is True


def test_with_main_round_queues_the_confirmation_says_they_are_not_reassigned(client, protocol):
    calibration_services.panel_retain(study=protocol.study, by=protocol.admin, usernames=["rev-a", "rev-b"], k=2)
    calibration_services.main_round_assign(study=protocol.study, by=protocol.admin, overlap=0.5, seed=3)
    client.force_login(protocol.admin)
    preview = post(client, protocol, retain=["rev-a", "rev-c"], k="2", reason="rev-b left")
    html = preview.content.decode()
    queues = dict(preview.context["change"].main_queues)
    assert set(queues) == {"rev-a", "rev-b"} and all(n > 0 for n in queues.values())
    assert "Changing the panel does not reassign them" in html
    assert "Retained without a queue, rev-c gets no main-round work." in html
    assert "Not retained but queued, rev-b keeps their turns and can still code them;" in html
    # … which is what main-round assignment does: it refuses a main round that already has assignments
    confirm(client, protocol, preview)
    with pytest.raises(Exception, match="already has assignments"):
        calibration_services.main_round_assign(study=protocol.study, by=protocol.admin)


def test_an_empty_selection_is_refused_with_a_message(client, protocol):
    client.force_login(protocol.admin)
    response = client.post(reverse("panel-retain", args=[protocol.study.slug]), {"k": "2"}, follow=True)
    assert "tick at least one reviewer to retain" in response.content.decode()


def test_only_study_admins_may_preview_or_retain(client, protocol, reviewer):
    client.force_login(reviewer)
    assert post(client, protocol, retain=["rev-a"], k="1", confirm="1").status_code == 403
    assert set(retained(protocol.study).values()) == {None}


# --- the report's figures ----------------------------------------------------------------------------------------


def test_the_page_shows_the_figures_of_the_report_the_exports_page_serves(client, protocol):
    client.force_login(protocol.admin)
    download = client.get(reverse("export-report", args=[protocol.study.slug]))
    report = json.loads(download.content)
    page = client.get(reverse("panel", args=[protocol.study.slug]))
    ranking = page.context["ranking"]
    assert f"run{ranking['run'].pk}.json" in download["Content-Disposition"], "the same run"
    cal = report["calibration"]
    last = cal["panel_ranking"]["round"]
    assert ranking["round"] == last == "calibration-1"
    ranked = [row for row in ranking["rows"] if row["ranked"]]
    assert [(r["reviewer"], r["rank"], r["bucketed"]) for r in ranked] == [
        (r["reviewer"], r["rank"], r["bucketed"]) for r in cal["panel_ranking"]["ranking"]]
    for row in ranked:
        entry = cal["reviewers"][row["reviewer"]][last]
        assert (row["kappa_user"], row["kappa_response"], row["kappa_flags"], row["bias"], row["n_items"]) == (
            entry["kappa_user"], entry["kappa_response"], entry["kappa_flags"], entry["bias"], entry["n_items"])
        assert row["top_k"] == {k: shares[row["reviewer"]] for k, shares in cal["bootstrap"]["top_k"].items()}
    assert ranking["pairwise_mean"] == cal["pairwise_mean"][last]
    assert ranking["suggested"] == cal["panel_ranking"]["suggested_panel"]
    assert calibration_selectors.panel_top(ranking=ranking, k=cal["panel_ranking"]["panel_size"]) == \
        cal["panel_ranking"]["suggested_panel"], "the page's top k is the report's suggested panel"
    # The run's panel size is 6 and the report ranks 3 reviewers: the page's top k is all three, and says so.
    size = cal["panel_ranking"]["panel_size"]
    assert (size, len(ranked)) == (6, 3)
    assert page.context["k"] == 3
    html = page.content.decode()
    assert "k = 6 is capped at 3: the report ranks 3 reviewers" in html
    assert "The report suggests the top 3:" in html and "The report suggests the top 6" not in html
    assert f"Figures of metrics run {ranking['run'].pk}" in html
    assert f"over {cal['bootstrap']['resamples']} bootstrap resamples of that round's 3 turns (seed" in html
    # the round's gold covers an item of each of its turns: no turn is drawn for nothing, and the page says no more
    assert ranking["bootstrap"]["n_clusters"] == ranking["bootstrap"]["n_turns"] == 3
    # Top-4/5/6 shares of 3 reviewers are 1.00 for everyone: not shown, and the page says why.
    assert sorted(cal["bootstrap"]["top_k"], key=int) == ["4", "5", "6"]
    assert page.context["shown_ks"] == []
    assert "Top-4 / 5 / 6 shares are not shown: with 3 ranked reviewers" in html
    for row in ranked:
        assert f"<td>{floatformat(row['bucketed'], '-3')} <span" in html
        # A band beside each of the three κ values, the report's band of each.
        cells = re.search(rf'data-reviewer="{row["reviewer"]}">.*?<td class="kappas">(.*?)</td>', html, re.S)
        assert cells is not None, row["reviewer"]
        bands = re.findall(r'<span class="muted small">([^<]*)</span>', cells.group(1))
        entry = cal["reviewers"][row["reviewer"]][last]
        assert bands == [entry["kappa_bands"].get(key) or "no band"
                         for key in ("kappa_user", "kappa_response", "kappa_flags")], row["reviewer"]


def test_the_page_says_how_few_of_the_rounds_turns_hold_an_item_with_gold(client, protocol):
    """Round 2, coded by everyone, gets gold on the items of its first turn alone and closes (its metric run): its
    bootstrap draws the round's 3 turns, but only the turns with gold on an item a reviewer coded move a resample
    (``calibration.bootstrap.n_clusters_by_round``, docs/metrics.md#bootstrap-selection-stability), and the page
    gives that count beside the turns."""
    round_ = protocol.round(2)
    items = calibration_selectors.consensus_items(round=round_)
    expert = protocol.experts[0]
    for item in items:
        if item.turn == items[0].turn:
            calibration_services.gold_record(round=round_, by=protocol.admin, attribute=item.attribute,
                                             turn=item.turn, response=item.response,
                                             score=item.expert_scores[expert.username], agreed_by=[expert])
    scenarios.calibration_round_close(protocol, round_)
    # from the rows: the turns of the round's gold on an item (turn, response, attribute) one of its reviewers coded
    reviewers = [user.username for user in protocol.reviewers]
    coded = set(Judgment.objects.filter(round=round_, is_gold=False, coder__username__in=reviewers)
                .values_list("turn_id", "response_id", "attribute_id"))
    with_gold = {turn for turn, response, attribute in Judgment.objects.filter(round=round_, is_gold=True)
                 .values_list("turn_id", "response_id", "attribute_id") if (turn, response, attribute) in coded}
    n_turns = round_.items.count()
    assert (len(with_gold), n_turns) == (1, 3)
    client.force_login(protocol.admin)
    page = client.get(reverse("panel", args=[protocol.study.slug]))
    ranking = page.context["ranking"]
    assert ranking["round"] == round_.name
    assert (ranking["bootstrap"]["n_turns"], ranking["bootstrap"]["n_clusters"]) == (n_turns, len(with_gold))
    assert (f"bootstrap resamples of that round's {n_turns} turns, only {len(with_gold)} of which hold an item with "
            "gold (the others add nothing to a resample) (seed") in page.content.decode()


def test_a_top_k_below_the_number_of_reviewers_is_kept_and_its_shares_shown(client, protocol):
    client.force_login(protocol.admin)
    page = client.get(reverse("panel", args=[protocol.study.slug]), {"k": 2})
    assert page.context["k"] == 2
    html = page.content.decode()
    assert "is capped at" not in html
    assert "Top-2 share" not in html  # the report's bootstrap counted tops 4, 5 and 6 only
    assert 'id="hidden-shares"' in html


# --- why a reviewer is unranked ----------------------------------------------------------------------------------


def test_each_unranked_reviewer_is_said_why_in_the_report_and_on_the_page(client, admin_user):
    """The ranking is of the last calibration round: carol coded round 1 only, dave coded round 2 where none of his
    items has gold, eve coded nothing (joined since). The report's ``panel_ranking.unranked`` names the first two
    with why, and the page says why of each row without a rank: before, dave's row read "—" with (0 items) and no
    reason, and the report listed carol nowhere in its ranking nor said why."""
    from metrics.core.report import AttributeSpec, ReportParams, build_report
    from tests.factories import MetricRunFactory
    from tests.metrics.core._tables import judgment_table

    ra = AttributeSpec("RA", "response", "D", (0, 1, 2), "ordinal", {0: 0, 1: 0, 2: 2}, {0: 1.0, 1: 0.5, 2: 0.0},
                       False, "response")
    rows = []
    for name, coders in (("calibration-1", ("ann", "bob", "carol")), ("calibration-2", ("ann", "bob"))):
        for i in range(4):
            rows.append((name, "gold", True, "DS", f"{name}-c{i}", 1, "M1", "RA", i % 3))
            rows += [(name, coder, False, "DS", f"{name}-c{i}", 1, "M1", "RA", (i + n) % 3)
                     for n, coder in enumerate(coders)]
    rows.append(("calibration-2", "dave", False, "DS", "calibration-2-no-gold", 1, "M1", "RA", 1))
    report = build_report(attributes=(ra,), judgments=judgment_table(rows), params=ReportParams(bootstrap=10))
    ranking = report["calibration"]["panel_ranking"]
    assert {row["reviewer"] for row in ranking["ranking"] if row["rank"] is not None} == {"ann", "bob"}
    assert ranking["unranked"] == {"carol": "not_in_round", "dave": "no_gold"}

    study = StudyFactory(slug="unranked")
    for name in ("ann", "bob", "carol", "dave", "eve"):
        StudyMemberFactory(study=study, user=UserFactory(username=name), role="reviewer")
    run = MetricRunFactory(study=study, status="succeeded", result=report, parameters={})
    client.force_login(admin_user)
    response = client.get(reverse("panel", args=[study.slug]))
    assert response.status_code == 200
    rows_by_name = {row["reviewer"]: row for row in response.context["ranking"]["rows"]}
    assert {name: row["unranked"] for name, row in rows_by_name.items()} == {
        "ann": None, "bob": None, "carol": "not_in_round", "dave": "no_gold", "eve": "no_data"}
    html = response.content.decode()

    def row_html(name: str) -> str:
        return re.search(rf'<tr [^>]*data-reviewer="{name}">(.*?)</tr>', html, re.S).group(1)

    assert "not ranked: none of the items they coded in calibration-2 has a gold value" in row_html("dave")
    assert "not ranked: no codings in calibration-2, the round the ranking is of" in row_html("carol")
    assert f"not ranked: no calibration data in run {run.pk}" in row_html("eve")
    assert "not ranked" not in row_html("ann") + row_html("bob")
