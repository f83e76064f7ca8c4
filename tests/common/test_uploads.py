"""common.uploads: what Django keeps of an upload too large for memory (one byte past the largest limit of any path,
and the whole file's size), so that an upload of any size is refused by its size without filling the disk."""

from __future__ import annotations

import os

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import RequestFactory, override_settings

LIMITS = {"FILE_UPLOAD_MAX_MEMORY_SIZE": 0, "DATA_UPLOAD_MAX_MEMORY_SIZE": 1000,
          "CONVERSATIONS_UPLOAD_MAX_SIZE": 500, "ACCOUNTS_CSV_MAX_SIZE": 100}


@pytest.mark.parametrize(("size", "kept"), [(1001, 1001), (1000, 1000), (10, 10)])
def test_a_temporary_file_keeps_one_byte_past_the_largest_limit_and_says_the_whole_size(size, kept):
    with override_settings(**LIMITS):
        request = RequestFactory().post("/", {"file": SimpleUploadedFile("big.csv", b"x" * size)})
        upload = request.FILES["file"]
    try:
        assert upload.size == size
        assert os.path.getsize(upload.temporary_file_path()) == kept
        assert upload.read() == b"x" * size
    finally:
        upload.close()


def test_a_file_cut_past_the_largest_limit_says_its_size_and_cannot_be_read_as_if_whole():
    """300,000 bytes against limits of at most 1,000: the temporary file held 1,001 bytes and is gone, the size is
    the whole file's (a refusal names it), and reading it fails rather than giving the 1,001 bytes as the file."""
    with override_settings(**LIMITS):
        request = RequestFactory().post("/", {"file": SimpleUploadedFile("big.csv", b"x" * 300_000)})
        upload = request.FILES["file"]
    path = upload.temporary_file_path()
    assert upload.size == 300_000
    assert not os.path.exists(path)
    with pytest.raises(ValueError):
        upload.read()
