"""common.uploads: what Django keeps of an upload too large for memory (one byte past the largest limit of any path,
and the whole file's size), so that an upload of any size is refused by its size without filling the disk."""

from __future__ import annotations

import os

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import RequestFactory, override_settings

LIMITS = {"FILE_UPLOAD_MAX_MEMORY_SIZE": 0, "DATA_UPLOAD_MAX_MEMORY_SIZE": 1000,
          "CONVERSATIONS_UPLOAD_MAX_SIZE": 500, "ACCOUNTS_CSV_MAX_SIZE": 100}


@pytest.mark.parametrize(("size", "kept"), [(300_000, 1001), (1001, 1001), (1000, 1000), (10, 10)])
def test_a_temporary_file_keeps_one_byte_past_the_largest_limit_and_says_the_whole_size(size, kept):
    with override_settings(**LIMITS):
        request = RequestFactory().post("/", {"file": SimpleUploadedFile("big.csv", b"x" * size)})
        upload = request.FILES["file"]
    try:
        assert upload.size == size
        assert os.path.getsize(upload.temporary_file_path()) == kept
    finally:
        upload.close()
