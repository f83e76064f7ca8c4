"""Text a user typed, made safe to stand in a Markdown document (the calibration memo): the characters Markdown or
its inline HTML read as syntax are backslash-escaped (CommonMark renders an escaped character as itself), so a note
can neither inject HTML (``<script>``, ``&…;``) nor emphasis, code, links or tables, nor start a heading, list or
rule; a line break continues the same list item and paragraph (blank lines are dropped) instead of ending it.
Other punctuation stays as typed, so the file still reads well as plain text."""

from __future__ import annotations

import re

_INLINE = re.compile(r"([\\`*_{}\[\]<>#|!~&])")
_MARKER = re.compile(r"^([-+=])")  # a list item, a setext heading's rule
_NUMBERED = re.compile(r"^(\d+)([.)])")  # an ordered list item


def md_text(value: object) -> str:
    text = str(value).replace("\r\n", "\n").replace("\r", "\n")
    lines = [_NUMBERED.sub(r"\1\\\2", _MARKER.sub(r"\\\1", _INLINE.sub(r"\\\1", line.strip())))
             for line in text.split("\n") if line.strip()]  # a blank line would end the paragraph
    return "\n  ".join(lines)
