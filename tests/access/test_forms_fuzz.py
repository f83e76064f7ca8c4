"""The sign-in pages (the site's and the Django admin's), the people page's forms and the API token page fuzzed the
way schemathesis fuzzes the API (tests/form_fuzz.py): hostile values in every field, for the admin who may post
them and a reviewer who may not. Never a 5xx, and a refused post changes nothing."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from api.models import ApiToken
from tests import form_fuzz
from tests.conftest import sign_in
from tests.form_fuzz import drive, field_values, form_posts, said, sweep

pytestmark = pytest.mark.django_db
User = get_user_model()
PASSWORD = "pw-for-tests"  # noqa: S105 - the personas' test password


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.mark.parametrize("path", ["/login/", "/admin/login/"])
@pytest.mark.parametrize("username", ["u" * 151, "u" * 256, "u" * 100_000])
def test_a_username_longer_than_an_account_can_have_is_refused_not_a_500(client, reviewer, path, username):
    """Django's sign-in forms never checked the username's length: django-axes recorded the failed sign-in of a
    name over 255 characters in its 255-character column, and the page answered 500."""
    response = client.post(path, {"username": username, "password": "guess"})
    assert response.status_code == 200
    assert "Ensure this value has at most 150 characters" in str(response.context["form"].errors)
    assert "_auth_user_id" not in client.session
    assert sign_in(client, "reviewer", PASSWORD), "the account's own sign-in is not held up"


def test_the_sign_in_page_says_a_fields_own_refusal_and_never_whether_an_account_exists(client, reviewer):
    """The page said "didn't match" for every error: a name too long was never said to be too long."""
    page = client.post("/login/", {"username": "u" * 151, "password": "guess"}).content.decode()
    assert "Username: Ensure this value has at most 150 characters (it has 151)." in page
    assert "didn't match" not in page
    refusals = {name: re.findall(r'<p class="error">(.*?)</p>', client.post(
        "/login/", {"username": name, "password": "guess"}).content.decode()) for name in ("reviewer", "nobody")}
    assert refusals["reviewer"] == refusals["nobody"] == [
        "Your username and password didn't match. Please try again."]


def test_sign_in_never_fails_whatever_is_posted(client, reviewer):
    before = form_fuzz.fingerprint()
    for path in ("/login/", "/admin/login/", "/password-reset/"):
        drive(lambda body, path=path: client.post(path, body),
              form_posts([{"username": "reviewer", "password": "guess", "email": "reviewer@example.org"}],
                         {"username": field_values(["reviewer"]), "password": field_values(["guess"]),
                          "email": field_values(["reviewer@example.org"]), "next": field_values(["/", "//evil"])}),
              accepted=lambda response: False, examples=25)
    assert form_fuzz.fingerprint() == before


def _refused(response) -> bool:
    return response.status_code >= 400 or bool(said(response)[1])


def test_people_forms_never_fail_and_a_refused_post_changes_nothing(admin_user, reviewer, expert):
    admin = _client(admin_user)
    statuses = drive(lambda body: admin.post(reverse("account-create"), body),
                     form_posts([{"username": "newone", "email": "n@example.org", "role": "reviewer"},
                                 {"username": "reviewer", "email": "", "role": "expert"}],
                                {"username": field_values(["newone", "reviewer"]),
                                 "email": field_values(["", "n@example.org", "x" * 250 + "@example.org"]),
                                 "role": field_values(["reviewer", "admin", "researcher", "staff"])}),
                     accepted=lambda response: not _refused(response), examples=40)
    assert statuses.get("refused"), statuses
    for name, field in (("account-role", "role"), ("account-active", "active")):
        sweep(lambda body, name=name: admin.post(reverse(name, args=[expert.pk]), body),
              {field: "reviewer" if field == "role" else ""}, [field], accepted=lambda response: not _refused(response),
              values=form_fuzz.HOSTILE_SCALARS[:40])
    reviewer_client = _client(reviewer)
    before = form_fuzz.fingerprint()
    for user_id in (expert.pk, admin_user.pk, 0, 2**31, 2**63, 10**30):
        for name in ("account-role", "account-active", "account-password-link"):
            assert reviewer_client.post(reverse(name, args=[user_id]), {"role": "admin"}).status_code in (403, 404)
            if user_id > expert.pk + 10:
                assert admin.post(reverse(name, args=[user_id]), {"role": "admin"}).status_code == 404
    assert form_fuzz.fingerprint() == before


HEADER = b"username,email,role\n"
CSV_FILES = [
    ("empty", b"", "The submitted file is empty"),
    ("header only", HEADER, "the file lists no accounts"),
    ("binary", bytes(range(256)) * 40, "not UTF-8 text"),
    ("invalid UTF-8 in a cell", HEADER + b"r\xe9ta,,reviewer\n", "not UTF-8 text"),
    ("UTF-16", (HEADER + b"rita,,reviewer\n").decode().encode("utf-16"), "not UTF-8 text"),
    ("NUL in a cell", HEADER + b"ri\x00ta,,reviewer\n", "line 2: username"),
    ("NUL in the header", b"user\x00name,email,role\nrita,,reviewer\n", "line 1: header"),
    ("over 1 MiB", HEADER + b"rita,,reviewer\n" * 80_000,
     "at most 1 MiB (1,048,576 bytes) here; this file is 1,200,020 bytes."),
    ("a cell over the csv module's limit", HEADER + b'"' + b"x" * 200_000 + b'",,reviewer\n', "not valid CSV"),
    ("unterminated quote", HEADER + b'"rita,,reviewer\n', "line 2"),
    ("a username twice", HEADER + b"rita,,reviewer\nrita,,expert\n", "is also on line 2"),
    ("a column twice", b"username,email,role,username\nrita,,reviewer,rosa\n", "column 4: 'username' is also column 1"),
    ("a missing column", b"username,role\nrita,reviewer\n", "missing column(s) email"),
    ("an unknown role", HEADER + b"rita,,staff\n", "line 2: role"),
    ("an account that exists", HEADER + b"reviewer,,reviewer\n", "already has an account"),
]


@pytest.mark.parametrize(("label", "content", "said_"), CSV_FILES, ids=[label for label, _, _ in CSV_FILES])
def test_a_hostile_accounts_csv_is_refused_by_line_and_column_and_changes_nothing(admin_user, reviewer, label,
                                                                                  content, said_):
    admin = _client(admin_user)
    before = form_fuzz.fingerprint()
    users = User.objects.count()
    response = admin.post(reverse("accounts-upload"), {"file": SimpleUploadedFile("people.csv", content)})
    assert response.status_code == 302
    assert any(said_ in message for message in said(response)[1]), said(response)
    assert form_fuzz.fingerprint() == before and User.objects.count() == users


def test_an_accounts_csv_with_a_byte_order_mark_is_read(admin_user):
    response = _client(admin_user).post(reverse("accounts-upload"), {
        "file": SimpleUploadedFile("people.csv", b"\xef\xbb\xbf" + HEADER + b"rita,,reviewer\r\n")})
    assert response.status_code == 302 and not said(response)[1]
    assert User.objects.get(username="rita").groups.get().name == "reviewer"


def test_the_token_page_never_fails_and_a_refused_post_makes_no_token(admin_user, reviewer, study, other_study):
    for user in (admin_user, reviewer):
        client = _client(user)
        made = drive(lambda body, client=client: client.post(reverse("api-tokens"), body),
                     form_posts([{"name": "t", "scopes": ["read"], "expires_in_days": "30"},
                                 {"name": "t", "scopes": ["read", "ingest"], "study": str(study.pk)}],
                                {"name": field_values(["t"]), "scopes": field_values(["read", "setup", "import"]),
                                 "study": field_values([str(study.pk), str(other_study.pk)], form_fuzz.numbers()),
                                 "expires_in_days": field_values(["1", "30"], form_fuzz.numbers())}),
                     accepted=lambda response: b"Copy it now" in response.content, examples=30)
        assert made.get("refused"), made
    # A reviewer's study field offers their studies only: another study's id is refused, not a token for it.
    assert not ApiToken.objects.filter(user=reviewer, study=other_study).exists()
    token = ApiToken.objects.filter(user=admin_user).first()
    assert token is not None
    before = form_fuzz.fingerprint()
    for token_id in (token.pk, 0, 2**31, 10**30):
        assert _client(reviewer).post(reverse("api-token-revoke", args=[token_id])).status_code == 404
    assert form_fuzz.fingerprint() == before
