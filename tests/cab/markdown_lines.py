"""The lines of a Markdown page with where each is: a fenced block's opening or closing line, a line inside one, or
text; for the tests that read the docs (``test_self_contained``, ``test_doc_names``)."""

from __future__ import annotations

import re
from collections.abc import Iterator

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
MARKER, INSIDE, TEXT = "marker", "inside", "text"


def fenced(lines: list[str]) -> Iterator[tuple[int, str, str]]:
    """(index, line, MARKER / INSIDE / TEXT) for each line. A block closes on a fence of the character it opened
    with; any line that looks like a fence is a MARKER (neither text nor a line of the block)."""
    fence = None
    for index, line in enumerate(lines):
        opening = FENCE.match(line)
        if opening:
            marker = opening.group(1)
            if fence is None:
                fence = marker[0] * 3
            elif marker.startswith(fence):
                fence = None
            yield index, line, MARKER
        else:
            yield index, line, INSIDE if fence is not None else TEXT
