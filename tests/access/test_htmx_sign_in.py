"""An htmx request without a session gets 401 with why, not the sign-in page put inside the page
(``access.htmx_sign_in``); the same request without htmx is still redirected to sign in. In Chromium: a workshop
note sent after the session ended, or after the browser's cookies were cleared (a 403), says so where its state is
shown (``static/js/htmx-errors.js``), and the note stays in its box."""

from __future__ import annotations

import pytest
from django.contrib.sessions.models import Session
from django.urls import reverse

from access.htmx_sign_in import SESSION_ENDED
from annotation.models import WorkshopNote
from tests import scenarios
from tests.browser import ARTIFACTS, sign_in_as


@pytest.fixture
def synthetic(db):
    return scenarios.synthetic_calibrated_study()


def _workshop_item(page, live_server, synthetic, admin_user):
    """The admin on the workshop of the synthetic study's second round: the round and its first item."""
    sign_in_as(page, live_server, admin_user)
    round_ = synthetic.rounds.get(kind="calibration", number=2)
    page.goto(f"{live_server.url}/rounds/{round_.pk}/workshop/")
    return round_, page.locator(".workshop-item").first


@pytest.mark.django_db
def test_an_htmx_request_without_a_session_is_a_401_saying_why(client, synthetic):
    round_ = synthetic.rounds.get(kind="calibration", number=2)
    for method, url in (("post", reverse("workshop-note", args=[round_.pk])),
                        ("get", reverse("reports-runs", args=[synthetic.slug]))):
        htmx = getattr(client, method)(url, headers={"HX-Request": "true"})
        assert (htmx.status_code, htmx.content.decode()) == (401, SESSION_ENDED), url
        plain = getattr(client, method)(url)
        assert plain.status_code == 302 and plain["Location"].startswith(reverse("login")), url
    assert not WorkshopNote.objects.exists()


@pytest.mark.browser
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_workshop_note_sent_after_the_session_ended_says_so_and_stays(browser_page, live_server, synthetic,
                                                                      admin_user):
    page = browser_page
    round_, first = _workshop_item(page, live_server, synthetic, admin_user)
    Session.objects.all().delete()  # the session ends (signed out in another tab, or idle too long)
    first.locator("textarea").fill("Agreed: a hedge without a question is 1.")
    first.locator("button").click()
    first.locator(".not-sent").wait_for()
    first.screenshot(path=str(ARTIFACTS / "workshop-session-ended.png"))
    assert first.locator(".not-sent").inner_text() == SESSION_ENDED
    assert first.locator("textarea").input_value() == "Agreed: a hedge without a question is 1."
    assert "Sign in" not in first.inner_text(), "no sign-in page inside the note"
    assert not WorkshopNote.objects.filter(round=round_).exists()


@pytest.mark.browser
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_workshop_note_refused_for_its_form_token_says_so_and_stays(browser_page, live_server, synthetic,
                                                                    admin_user):
    """The browser's cookies cleared (its form token gone with them): Django's CSRF check answers 403 before the
    view; the note says it was not sent, and stays."""
    page = browser_page
    round_, first = _workshop_item(page, live_server, synthetic, admin_user)
    page.context.clear_cookies()
    first.locator("textarea").fill("Agreed: a hedge without a question is 1.")
    first.locator("button").click()
    first.locator(".not-sent").wait_for()
    assert first.locator(".not-sent").inner_text().startswith("Not sent: this page's sign-in is no longer valid")
    assert first.locator("textarea").input_value() == "Agreed: a hedge without a question is 1."
    assert not WorkshopNote.objects.filter(round=round_).exists()
