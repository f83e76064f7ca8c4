"""``common.markdown.md_text``: whatever a user typed, rendered by a CommonMark renderer (markdown-it-py) from the
list item it stands in, is one list item showing exactly that text: no HTML of its own, no emphasis, link, code,
heading, table or new list."""

from __future__ import annotations

import html
import re

from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from common.markdown import md_text

RENDER = MarkdownIt("commonmark").enable("table").enable("strikethrough")
HOSTILE = ["<script>alert(1)</script>", "**bold** _it_ `code` ~~gone~~", "[a link](http://evil.example)",
           "# heading", "- a list\n- another", "1. one\n2) two", "a | table\n--- | ---", "&lt;b&gt; &amp; &#x3C;",
           "line one\n\n\nline four", "back\\slash \\*", "![img](x.png)", "===", "+ plus", "<!-- comment -->"]


def rendered_item(text: str) -> str:
    """The HTML of a one-item list whose item is ``text`` after md_text, with the list's own tags checked and
    taken off."""
    out = RENDER.render(f"- **where**: {md_text(text)} _(who)_\n")
    match = re.fullmatch(r"<ul>\n<li><strong>where</strong>: (.*) <em>\(who\)</em></li>\n</ul>\n", out, re.DOTALL)
    assert match, out
    return match.group(1)


def test_hostile_notes_are_shown_as_typed():
    for text in HOSTILE:
        inner = rendered_item(text)
        assert "<" not in inner.replace("&lt;", ""), (text, inner)  # no tag: every < is text
        shown = " ".join(line.strip() for line in text.strip().splitlines() if line.strip())
        assert " ".join(html.unescape(inner).split()) == " ".join(shown.split()), (text, inner)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(codec="ascii", exclude_categories=["Cc"]) | st.sampled_from("\n"), max_size=60))
def test_any_ascii_note_stays_text(text):
    inner = rendered_item(text)
    assert "<" not in inner.replace("&lt;", ""), (text, inner)
    assert " ".join(html.unescape(inner).split()) == " ".join(text.split())
