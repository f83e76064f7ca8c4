"""Admins make and manage accounts from the product: one-time set-password links, CSV bulk add, roles,
deactivation; everyone else gets 403."""

from __future__ import annotations

import hashlib
import re
import time

import pytest
from django.contrib.auth import get_user_model
from django.contrib.messages import get_messages
from django.core.exceptions import ValidationError
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client, override_settings
from django.urls import reverse

from access.forms import AccountForm
from access.services import account_create, accounts_create_from_csv, roles_ensure, user_ensure
from audit.models import AuditEvent
from common.errors import RowErrors
from tests.conftest import sign_in
from tests.races import meet_at, together

pytestmark = pytest.mark.django_db
User = get_user_model()


def _link(page: str) -> str:
    match = re.search(r"http://testserver(/reset/[^/]+/[^/ \"]+/)", page)
    assert match, page
    return match.group(1)


def _links_shown(client) -> dict[str, str]:
    """The set-password links beside their accounts on the people page, by username."""
    page = client.get(reverse("people")).content.decode()
    return dict(re.findall(r"One-time set-password link for ([\w.@+-]+)\s*<input type=\"text\" readonly "
                           r"value=\"http://testserver(/reset/[^\"]+)\"", page))


def test_an_account_made_by_an_admin_sets_its_own_password_once(client, admin_user):
    client.force_login(admin_user)
    page = client.post(reverse("account-create"), {"username": "rita", "email": "rita@example.org",
                                                   "role": "reviewer"}, follow=True).content.decode()
    rita = User.objects.get(username="rita")
    assert not rita.has_usable_password() and list(rita.groups.values_list("name", flat=True)) == ["reviewer"]
    assert not rita.is_staff
    link = _link(page)
    client.logout()
    form = client.get(link, follow=True)
    assert b"Set your password" in form.content
    done = client.post(form.redirect_chain[-1][0] if form.redirect_chain else link,
                       {"new_password1": "a-long-Passphrase-42", "new_password2": "a-long-Passphrase-42"}, follow=True)
    assert b"Your password is set." in done.content
    assert sign_in(client, "rita", "a-long-Passphrase-42")
    client.logout()
    assert b"has been used or has expired" in client.get(link, follow=True).content
    assert AuditEvent.objects.filter(action="account.create", actor=admin_user, target="user:rita").exists()


def test_a_csv_of_accounts_is_all_or_nothing_with_line_numbers(client, admin_user):
    client.force_login(admin_user)
    bad = b"username,email,role\nann,ann@x.org,reviewer\nbob,bob@x.org,boss\nann,a2@x.org,expert\n"
    page = client.post(reverse("accounts-upload"), {"file": SimpleUploadedFile("p.csv", bad)},
                       follow=True).content.decode()
    assert "line 3: role: must be one of reviewer, expert, admin, researcher" in page
    assert "line 4: username: &#x27;ann&#x27; is also on line 2" in page
    assert not User.objects.filter(username__in=["ann", "bob"]).exists()
    good = b"username,email,role\nann,ann@x.org,reviewer\neve,eve@x.org,expert\n"
    page = client.post(reverse("accounts-upload"), {"file": SimpleUploadedFile("p.csv", good)},
                       follow=True).content.decode()
    assert page.count("/reset/") == 2 and set(_links_shown(client)) == {"ann", "eve"}
    assert User.objects.get(username="eve").groups.get().name == "expert"


def test_a_csv_of_accounts_over_the_limit_is_refused_by_its_size_and_one_at_it_is_read(client, admin_user):
    client.force_login(admin_user)
    content = b"username,email,role\nann,ann@x.org,reviewer\n"
    with override_settings(ACCOUNTS_CSV_MAX_SIZE=len(content)):
        page = client.post(reverse("accounts-upload"), {"file": SimpleUploadedFile("p.csv", content + b"\n")},
                           follow=True).content.decode()
        assert f"file: at most {len(content):,} bytes here; this file is {len(content) + 1:,} bytes." in page
        assert not User.objects.filter(username="ann").exists()
        client.post(reverse("accounts-upload"), {"file": SimpleUploadedFile("p.csv", content)})
    assert User.objects.filter(username="ann").exists()
    assert "up to 1 MiB (1,048,576 bytes)" in client.get(reverse("people")).content.decode()


def test_a_link_stays_beside_its_account_until_used_and_names_the_account(client, admin_user):
    client.force_login(admin_user)
    for name in ("rita", "sam"):
        client.post(reverse("account-create"), {"username": name, "email": f"{name}@example.org", "role": "reviewer"})
    shown = _links_shown(client)
    assert set(shown) == {"rita", "sam"}
    assert _links_shown(client) == shown, "the same link on every visit, not a new one"
    # the admin's session holds the account and the link's time stamp, never the token
    stored = str(client.session["password_links"])
    assert all(link.rstrip("/").rsplit("/", 1)[-1] not in stored for link in shown.values())
    # someone else (another admin, any other session) is never shown them
    other = Client()
    other.force_login(user_ensure(username="other-admin", role="admin"))
    assert _links_shown(other) == {}

    visitor = Client()
    form = visitor.get(shown["rita"], follow=True)
    assert "Account: <strong>rita</strong>" in form.content.decode()
    visitor.post(form.redirect_chain[-1][0], {"new_password1": "a-long-Passphrase-42",
                                             "new_password2": "a-long-Passphrase-42"})
    assert User.objects.get(username="rita").has_usable_password()
    assert _links_shown(client) == {"sam": shown["sam"]}, "a used link is no longer shown"


def test_a_new_link_replaces_the_old_one_and_an_expired_one_is_not_shown(client, admin_user, reviewer, settings):
    client.force_login(admin_user)
    client.post(reverse("account-password-link", args=[reviewer.pk]))
    first = _links_shown(client)["reviewer"]
    time.sleep(1)  # a token is stamped to the second
    client.post(reverse("account-password-link", args=[reviewer.pk]))
    second = _links_shown(client)["reviewer"]
    assert second != first
    assert b"has been used or has expired" in Client().get(first, follow=True).content
    settings.PASSWORD_RESET_TIMEOUT = 0
    time.sleep(1)
    assert _links_shown(client) == {}
    assert "password_links" in client.session and client.session["password_links"] == {}


def test_deactivating_stops_sign_in_and_keeps_the_account(client, admin_user, reviewer):
    client.force_login(admin_user)
    client.post(reverse("account-active", args=[reviewer.pk]))
    reviewer.refresh_from_db()
    assert not reviewer.is_active
    client.logout()
    assert not sign_in(client, "reviewer", "pw-for-tests")
    client.force_login(admin_user)
    client.post(reverse("account-active", args=[reviewer.pk]), {"active": "1"})
    assert sign_in(client, "reviewer", "pw-for-tests")


def test_an_admin_cannot_deactivate_themselves(client, admin_user):
    client.force_login(admin_user)
    page = client.post(reverse("account-active", args=[admin_user.pk]), follow=True).content.decode()
    assert "you cannot deactivate your own account" in page
    admin_user.refresh_from_db()
    assert admin_user.is_active


def test_setting_a_role_replaces_the_old_one_and_staff_follows(client, admin_user, reviewer):
    client.force_login(admin_user)
    client.post(reverse("account-role", args=[reviewer.pk]), {"role": "researcher"})
    reviewer.refresh_from_db()
    assert list(reviewer.groups.values_list("name", flat=True)) == ["researcher"] and reviewer.is_staff


def test_a_superusers_role_stays_admin_until_a_superuser_revokes_the_status(client, admin_user):
    """Superuser status is an admin's (access.services.superuser_problem): before, the people page made a superuser
    a reviewer, who then saw and changed every study's judgments and gold as a coder."""
    root = User.objects.create_superuser("root", "root@example.org", "pw-for-tests")
    root.groups.add(roles_ensure()["admin"])
    client.force_login(admin_user)
    page = client.post(reverse("account-role", args=[root.pk]), {"role": "reviewer"}, follow=True)
    assert page.status_code == 200
    assert ("root is a superuser, which is an admin&#x27;s status: a superuser revokes it in the Django admin first "
            "(recorded), then the role can change") in page.content.decode()
    assert list(root.groups.values_list("name", flat=True)) == ["admin"]
    assert not AuditEvent.objects.filter(action="account.role_set").exists()


def test_people_pages_are_for_admins_only(client, reviewer, researcher):
    for user in (reviewer, researcher):
        client.force_login(user)
        assert client.get(reverse("people")).status_code == 403
        assert client.post(reverse("account-create"), {"username": "x", "role": "admin"}).status_code == 403
    assert not User.objects.filter(username="x").exists()


# --- bad input on the people pages: a row error (line, field, why) or a form error, never a 500, nothing written ---

_LONG_EMAIL = "a" * 64 + "@" + ".".join(["b" * 59] * 4) + ".org"  # valid syntax, 308 characters: over varchar(254)


_TOO_LARGE = ("line 3: line: not valid CSV (field larger than field limit (131072)); the lines from here on were "
              "not read")
_TOO_LONG = "line 3: email: Ensure this value has at most 254 characters (it has 308)"


@pytest.mark.parametrize(("third_line", "expected"), [
    (f"bob,{_LONG_EMAIL},reviewer".encode(), _TOO_LONG),
    (b"bob,not-an-email,reviewer", "line 3: email: Enter a valid email address."),
    (b"bob,bob\x00@x.org,reviewer", "line 3: email: Null characters are not allowed."),
    (b"bob,bob@x.org,reviewer,\x00", "line 3: column 4: Null characters are not allowed."),
    (b"b\x00b,bob@x.org,reviewer", "line 3: username: Null characters are not allowed."),
    (b'"' + b"x" * 140_000 + b'"', _TOO_LARGE),
    (b'"' + b"x" * 140_000, _TOO_LARGE),
], ids=["email-too-long", "email-invalid", "nul-in-email", "nul-in-extra-cell", "nul-in-username",
        "csv-field-too-large", "csv-unterminated-quote"])
def test_a_bad_csv_row_is_a_row_error_and_nothing_is_made(client, admin_user, third_line, expected):
    client.force_login(admin_user)
    data = b"username,email,role\nalice,a@e.org,reviewer\n" + third_line + b"\n"
    response = client.post(reverse("accounts-upload"), {"file": SimpleUploadedFile("p.csv", data)}, follow=True)
    assert response.status_code == 200
    assert expected in response.content.decode().replace("&#x27;", "'")
    assert not User.objects.filter(username__in=["alice", "bob"]).exists()
    assert not AuditEvent.objects.filter(action="account.create").exists()


def test_a_csv_that_is_not_csv_from_its_first_line_is_a_row_error(admin_user):
    with pytest.raises(RowErrors) as raised:
        accounts_create_from_csv(text='"' + "x" * 140_000 + '"\n', by=admin_user)
    assert [(e.row, e.field) for e in raised.value.errors] == [(1, "line")]
    assert "field larger than field limit" in raised.value.errors[0].message


def test_every_bad_row_of_a_csv_is_listed_by_the_line_it_starts_on(admin_user):
    text = ('username,email,role\nann,ann@x.org,reviewer\nbob,not-an-email,reviewer\ncid,,expert\n"d\nee",,expert\n'
            f'dee,{_LONG_EMAIL},expert\nfay,fay@x.org,"{"x" * 140_000}"\ngus,not-read,reviewer\n')
    with pytest.raises(RowErrors) as raised:
        accounts_create_from_csv(text=text, by=admin_user)
    assert [(e.row, e.field) for e in raised.value.errors] == [(3, "email"), (5, "username"), (7, "email"), (8, "line")]
    assert not User.objects.filter(username__in=["ann", "bob", "cid", "dee", "fay"]).exists()


def test_the_account_service_refuses_a_bad_email_whoever_calls_it(admin_user):
    for email in (_LONG_EMAIL, "not-an-email", "a\x00@x.org"):
        with pytest.raises(ValidationError) as raised:
            account_create(username="rita", email=email, role="reviewer", by=admin_user)
        assert list(raised.value.message_dict) == ["email"]
    assert not User.objects.filter(username="rita").exists()


def test_the_single_account_form_allows_the_emails_an_account_can_hold(client, admin_user):
    """Django's EmailField takes up to 320 characters by default; User.email holds 254."""
    form = AccountForm({"username": "rita", "email": _LONG_EMAIL, "role": "reviewer"})
    assert not form.is_valid()
    assert form.errors["email"] == ["Ensure this value has at most 254 characters (it has 308)."]
    client.force_login(admin_user)
    response = client.post(reverse("account-create"), {"username": "rita", "email": _LONG_EMAIL, "role": "reviewer"},
                           follow=True)
    assert "email: Ensure this value has at most 254 characters (it has 308)." in response.content.decode()
    assert not User.objects.filter(username="rita").exists()
    longest = "a" * 64 + "@" + ".".join(["b" * 61] * 3) + ".org"
    assert len(longest) == 254 and AccountForm({"username": "rita", "email": longest, "role": "reviewer"}).is_valid()


def _sent_at_once(admin, post):
    """``post(client)`` by two signed-in admins at once, both past the page's check before either writes (real
    connections, tests/races.py); their answers."""
    def send():
        client = Client(raise_request_exception=False)
        client.force_login(admin)
        return post(client)

    with meet_at(type(User.objects), "create"):
        return together(send, send)


def _said(response) -> list[str]:
    """The messages a redirect carries to the page (read from its request: the test client's ``context`` is
    recorded by a signal every thread's client hears)."""
    return [message.message for message in get_messages(response.wsgi_request)]


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
@pytest.mark.parametrize("path", ["csv", "form"])
def test_the_same_account_sent_twice_at_once_is_made_once_and_the_other_told_it_exists(path):
    admin = user_ensure(username="study-admin", role="admin")
    if path == "csv":
        def post(client):
            csv_file = SimpleUploadedFile("p.csv", b"username,email,role\nann,ann@x.org,reviewer\n")
            return client.post(reverse("accounts-upload"), {"file": csv_file})
        refusal = "line 2: username: 'ann' already has an account"
    else:
        def post(client):
            return client.post(reverse("account-create"), {"username": "ann", "email": "ann@x.org",
                                                           "role": "reviewer"})
        refusal = "username: 'ann' already has an account"

    answers = _sent_at_once(admin, post)
    assert [answer.status_code for answer in answers] == [302, 302], answers
    assert User.objects.filter(username="ann").count() == 1
    refused = [answer for answer in answers if any(refusal in message for message in _said(answer))]
    assert len(refused) == 1, [_said(answer) for answer in answers]
    assert AuditEvent.objects.filter(action="account.create").count() == 1


@pytest.mark.parametrize("coder", ["method", "reference"])
def test_an_automated_coders_account_is_never_made_able_to_sign_in_from_the_people_page(client, admin_user, coder):
    """A study's method or reference coder is an account that never signs in: inactive, no password, no role
    (annotation.automated_coders). The people page listed it as any person's, with *Reactivate* ("they can sign
    in"), *New set-password link* and a role (shown as "reviewer", which it never was) to set: each now refused
    with the reason, nothing changed, and the page offers none of them for it."""
    from annotation import automated_coders
    from tests.factories import StudyFactory

    study = StudyFactory(slug="coders")
    register = automated_coders.method_register if coder == "method" else automated_coders.reference_register
    judge = register(study=study, name="judge-1", by=admin_user).user
    client.force_login(admin_user)
    for action, body in (("account-active", {"active": "1"}), ("account-password-link", {}),
                         ("account-role", {"role": "reviewer"})):
        page = client.post(reverse(action, args=[judge.pk]), body, follow=True).content.decode()
        assert "judge-1 is an automated coder&#x27;s account" in page, action
    judge.refresh_from_db()
    assert (judge.is_active, judge.has_usable_password(), judge.groups.count()) == (False, False, 0)
    assert _links_shown(client) == {}
    row = re.search(rf'<tr id="account-{judge.pk}">(.*?)</tr>', client.get(reverse("people")).content.decode(),
                    re.S).group(1)
    assert "<form" not in row and "automated coder" in row


def test_a_superuser_without_a_role_is_a_persons_account_on_the_people_page(client, admin_user):
    """A superuser that 0.2.0's ``createsuperuser`` made holds no role (an upgraded installation's first admin): the
    people page lists it as a person's, whose role can be set (as ``superuser_problem`` asks: "make them an admin on
    the people page first") and who can be given a set-password link. Before, every account without a role was
    taken for an automated coder's: the page offered nothing for it and refused the role and the link."""
    first = User.objects.create_superuser("first-admin", "first@example.org", "an old password")
    assert first.groups.count() == 0
    client.force_login(admin_user)
    row = re.search(rf'<tr id="account-{first.pk}">(.*?)</tr>', client.get(reverse("people")).content.decode(),
                    re.S).group(1)
    assert "automated coder" not in row and "<form" in row
    page = client.post(reverse("account-role", args=[first.pk]), {"role": "admin"}, follow=True).content.decode()
    assert "automated coder" not in page
    assert list(first.groups.values_list("name", flat=True)) == ["admin"]
    client.post(reverse("account-password-link", args=[first.pk]), follow=True)
    assert list(_links_shown(client)) == ["first-admin"]



MANY = 400  # accounts in one CSV


def many_accounts(n: int = MANY) -> tuple[list[str], SimpleUploadedFile]:
    """``n`` usernames that do not compress away (hex digests: about 7 kB, 3 kB compressed, where a messages cookie
    holds 2 kB), in file order, and their CSV."""
    names = [f"r-{hashlib.sha256(str(k).encode()).hexdigest()[:16]}" for k in range(n)]
    rows = "".join(f"{name},,reviewer\n" for name in names)
    return names, SimpleUploadedFile("people.csv", f"username,email,role\n{rows}".encode(), content_type="text/csv")


def test_a_csv_of_many_accounts_is_said_briefly_and_its_links_are_all_on_the_page(client, admin_user):
    """The message after a CSV names a count and the first three accounts, whatever their number, and is carried in
    the messages cookie: before, it named every account, so past a few dozen it spilled out of the cookie into the
    admin's session row (Django's fallback storage), growing with the file. Every link stays on the page."""
    client.force_login(admin_user)
    names, csv = many_accounts()
    answer = client.post(reverse("accounts-upload"), {"file": csv})
    assert answer.status_code == 302, answer.content[-300:]
    assert "_messages" not in client.session, "the message spilled into the session"
    assert answer.cookies["messages"].value
    (said,) = [m.message for m in get_messages(answer.wsgi_request)]
    assert said == (f"One-time set-password links for {MANY} accounts ({names[0]}, {names[1]}, {names[2]} and "
                    f"{MANY - 3} more): beside each account below until it is used or expires. Copy each and send it "
                    "to its person.")
    page = client.get(reverse("people")).content.decode()
    assert f"One-time set-password links for {MANY} accounts" in page
    assert set(_links_shown(client)) == set(names) == set(User.objects.filter(username__startswith="r-")
                                                           .values_list("username", flat=True))


def test_a_csv_of_a_few_accounts_names_each(client, admin_user):
    client.force_login(admin_user)
    csv = SimpleUploadedFile("p.csv", b"username,email,role\nann,,reviewer\nbob,,expert\n", content_type="text/csv")
    answer = client.post(reverse("accounts-upload"), {"file": csv})
    assert [m.message for m in get_messages(answer.wsgi_request)] == [
        "One-time set-password links for 2 accounts (ann and bob): beside each account below until it is used or "
        "expires. Copy each and send it to its person."]
