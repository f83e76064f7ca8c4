"""Byte ranges of a resumable download (api/downloads.py; docs/bundle.md#getting-one): which range a Range header
asks for, clipped to the file; what is ignored (the whole file); what cannot be satisfied (416)."""

from __future__ import annotations

import pytest

from api.downloads import Unsatisfiable, byte_range


@pytest.mark.parametrize(("header", "size", "chosen"), [
    (None, 100, None),
    ("", 100, None),
    ("bytes=0-", 100, (0, 99)),
    ("bytes=10-19", 100, (10, 19)),
    ("bytes=90-500", 100, (90, 99)),  # clipped to the file
    ("bytes=-10", 100, (90, 99)),  # the last ten bytes
    ("bytes=-500", 100, (0, 99)),  # more than the file: all of it
    ("Bytes = 5 - 6", 100, (5, 6)),  # the unit is case-insensitive, spaces allowed
    ("bytes=9-3", 100, None),  # last before first: not a range, ignored
    ("bytes=0-1,5-6", 100, None),  # several ranges: the whole file
    ("items=0-1", 100, None),
    ("bytes=-", 100, None),
    ("bytes=x-3", 100, None),
])
def test_a_range_header_selects_one_clipped_range_or_the_whole_file(header, size, chosen):
    assert byte_range(header, size) == chosen


@pytest.mark.parametrize(("header", "size"), [("bytes=100-", 100), ("bytes=150-200", 100), ("bytes=-0", 100),
                                              ("bytes=0-", 0), ("bytes=-5", 0)])
def test_a_range_past_the_end_cannot_be_satisfied(header, size):
    with pytest.raises(Unsatisfiable):
        byte_range(header, size)
