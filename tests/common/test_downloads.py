"""Resumable downloads (common.downloads) as the judgment exports answer them, on the API and on the exports page:
a strong ETag that is the SHA-256 of the bytes, one byte range answered with 206, If-Range that sends the whole file
when the file changed, 416 for a range outside the file, and every other Range form answered with the whole file."""

from __future__ import annotations

import hashlib
import io

import pytest
from django.core.management import call_command
from django.core.signals import request_finished
from django.db import close_old_connections

from access import roles
from access.services import user_ensure
from annotation import long_format
from annotation.models import Judgment, Study
from api import services as api_services
from common.downloads import Spooled, Unsatisfiable, resumable, wanted_range

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def study_id(shared_state):
    with shared_state():
        call_command("generate_synthetic", "--conversations", "4", "--reviewers", "2", "--calibration-turns", "1",
                     "--slug", "ranges", stdout=io.StringIO())
        yield Study.objects.get(slug="ranges").pk


@pytest.fixture
def study(study_id, db):
    return Study.objects.get(pk=study_id)


def body(answer) -> bytes:
    return b"".join(answer.streaming_content)


@pytest.fixture(params=["api", "page"])
def fetch(request, client, study):
    admin = user_ensure(username="ranges-admin", role=roles.ADMIN)
    if request.param == "api":
        _, token = api_services.api_token_create(user=admin, name="ranges", by=None, scopes=["read"])
        url, headers = f"/api/v1/studies/{study.slug}/exports/judgments.csv", {"Authorization": f"Bearer {token}"}
    else:
        client.force_login(admin)
        url, headers = f"/exports/{study.slug}/judgments.csv", {}
    return lambda **more: client.get(url, headers={**headers, **more})


def test_ranges_resume_the_same_file_and_only_the_same_file(fetch, study):
    whole = "".join(long_format.WRITERS["csv"](study=study)).encode()
    size, etag = len(whole), f'"sha256-{hashlib.sha256(whole).hexdigest()}"'
    assert size > 1000

    answer = fetch()
    assert answer.status_code == 200 and body(answer) == whole
    assert (answer["ETag"], answer["Accept-Ranges"], answer["Content-Length"]) == (etag, "bytes", str(size))
    assert answer["Content-Disposition"] == 'attachment; filename="ranges-judgments.csv"'

    for asked, first, last in (("bytes=100-", 100, size - 1), ("bytes=10-19", 10, 19), ("bytes=-50", size - 50,
                                                                                         size - 1),
                               (f"bytes=0-{size + 99}", 0, size - 1)):
        answer = fetch(Range=asked, **{"If-Range": etag})
        assert answer.status_code == 206, asked
        assert answer["Content-Range"] == f"bytes {first}-{last}/{size}"
        assert body(answer) == whole[first:last + 1] and answer["Content-Length"] == str(last - first + 1)

    # Without If-Range a range is answered too (a client that checks nothing asked for it).
    assert body(fetch(Range="bytes=5-9")) == whole[5:10]
    # The file changed since the client began (another ETag): the whole file, 200.
    answer = fetch(Range="bytes=100-", **{"If-Range": '"sha256-' + "0" * 64 + '"'})
    assert answer.status_code == 200 and body(answer) == whole
    # Outside the file: 416 saying the file's length; with a stale If-Range, the whole new file instead.
    answer = fetch(Range=f"bytes={size}-", **{"If-Range": etag})
    assert answer.status_code == 416 and answer["Content-Range"] == f"bytes */{size}"
    assert str(size) in answer.json()["detail"].replace(",", "")
    assert fetch(Range=f"bytes={size}-", **{"If-Range": '"other"'}).status_code == 200
    # Several ranges, or a form this does not read: the whole file (RFC 9110 lets a server ignore Range).
    for asked in ("bytes=0-1,5-6", "items=0-5", "bytes=9-2", "bytes=-"):
        answer = fetch(Range=asked)
        assert answer.status_code == 200 and body(answer) == whole, asked


def test_a_change_to_the_judgments_changes_the_etag(fetch, study):
    before = fetch()["ETag"]
    judgment = Judgment.objects.filter(score__isnull=False, round__study=study).first()
    Judgment.objects.filter(pk=judgment.pk).update(score=(judgment.score + 1) % 3)
    assert fetch()["ETag"] != before


@pytest.mark.parametrize("asked", [{}, {"HTTP_RANGE": "bytes=2-4"}])
def test_a_download_closed_unread_closes_its_file(rf, asked):
    """A ``HEAD`` (whose body is never read) or a client gone before the first byte: closing the response closes
    the spooled file then, not whenever it is collected."""
    spooled = Spooled([b"0123456789"])
    response = resumable(rf.head("/file.csv", **asked), spooled, content_type="text/csv", filename="file.csv")
    assert response["Content-Length"] == ("3" if asked else "10") and not spooled.file.closed
    request_finished.disconnect(close_old_connections)  # as the test client does: the test's connection stays
    try:
        response.close()
    finally:
        request_finished.connect(close_old_connections)
    assert spooled.file.closed


def test_the_range_header_forms():
    assert wanted_range(None, 10) is None and wanted_range("", 10) is None
    assert wanted_range("bytes=0-", 10) == (0, 9) and wanted_range("bytes=9-", 10) == (9, 9)
    assert wanted_range("bytes=-3", 10) == (7, 9) and wanted_range("bytes=-30", 10) == (0, 9)
    assert wanted_range("bytes = 2 - 4", 10) == (2, 4)
    for outside in ("bytes=10-", "bytes=-0", "bytes=10-20"):
        with pytest.raises(Unsatisfiable):
            wanted_range(outside, 10)
    with pytest.raises(Unsatisfiable):
        wanted_range("bytes=0-", 0)  # nothing can be sent of an empty file


def test_every_answer_states_the_digest_of_the_whole_file_the_software_and_the_export_time(fetch, study):
    """docs/metrics.md#provenance: ``Repr-Digest`` (RFC 9530) is the SHA-256 of exactly the rows sent, the ETag's
    bytes in base64, on a part too; ``CAB-Software`` the server's version and commit; ``CAB-Exported`` the time."""
    import base64
    import json
    from datetime import UTC, datetime, timedelta

    from django.conf import settings

    whole = "".join(long_format.WRITERS["csv"](study=study)).encode()
    digest = hashlib.sha256(whole)
    answer = fetch()
    assert answer["Repr-Digest"] == f"sha-256=:{base64.b64encode(digest.digest()).decode()}:"
    assert answer["ETag"] == f'"sha256-{digest.hexdigest()}"'  # the same bytes, hex
    assert json.loads(answer["CAB-Software"]) == {"version": settings.CAB_VERSION, "commit": settings.CAB_COMMIT}
    exported = datetime.strptime(answer["CAB-Exported"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    assert abs(datetime.now(UTC) - exported) < timedelta(minutes=5)
    part = fetch(Range="bytes=10-19", If_Range=answer["ETag"])
    assert part.status_code == 206 and part["Repr-Digest"] == answer["Repr-Digest"]  # the whole file's, not the part's
    assert "CAB-Software" in part and "CAB-Exported" in part
    assert body(part) == whole[10:20]


def test_a_browser_that_accepts_gzip_gets_the_file_as_it_is_and_resumes_it(fetch, study):
    """A browser asks for the exports page's download with ``Accept-Encoding: gzip``: the page compression gzipped it
    (a 206 too, so its bytes were no range of the file), dropped its length and made its ETag weak, which ``If-Range``
    never matches (RFC 9110 §13.1.5): a resumed download came whole again. A file that answers byte ranges is now sent
    as it is, on the pages as on the API: the same bytes, length and strong ETag, and a resume gets the rest."""
    whole = "".join(long_format.WRITERS["csv"](study=study)).encode()
    etag = f'"sha256-{hashlib.sha256(whole).hexdigest()}"'
    browser = {"Accept-Encoding": "gzip, deflate, br, zstd"}
    answer = fetch(**browser)
    assert answer.status_code == 200 and "Content-Encoding" not in answer
    assert (answer["ETag"], answer["Content-Length"]) == (etag, str(len(whole))) and body(answer) == whole
    answer = fetch(Range="bytes=100-", **{"If-Range": answer["ETag"]}, **browser)
    assert answer.status_code == 206 and "Content-Encoding" not in answer
    assert answer["Content-Range"] == f"bytes 100-{len(whole) - 1}/{len(whole)}" and body(answer) == whole[100:]
