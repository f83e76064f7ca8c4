"""A clone is the whole project (issue 30 item 5): no tracked file cites a document the clone does not have (the
old functional specification, a folder beside the checkout, an absolute path of one machine), and every citation
of a page of ``docs/`` names a page and a heading that exist."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from tests.cab.markdown_lines import TEXT, fenced

ROOT = Path(__file__).resolve().parents[2]
THIS = Path(__file__).resolve().relative_to(ROOT).as_posix()
# History may say what the project once cited; nothing else may.
EXEMPT = {THIS, "CHANGELOG.md"}
# Text that migrations installed as data: a schema's description is part of its definition in every installation
# (frozen once a study using it opens, and compared by a study archive's import), so rewording it would make an
# upgraded installation and a new one refuse each other's archives. These words stay until a new schema version.
INSTALLED = {
    "care/schemas/care-v1.json": "Schema of the CARE evaluation (SPEC-CARE)",
    "lc8/schemas/lc8-v1.json": "over five-session counseling trajectories (SPEC-LC8)",
}

OUTSIDE = {
    "a folder beside the checkout": re.compile(r"\.\./shared\b|\b(?:ARCHITECTURE|STYLE)\.md\b"),
    "the old specification": re.compile(r"\bSPEC\b"),  # SPEC §6, SPEC-CARE, SPEC.md, the SPEC's; not SPEC_KEYS
    "an absolute path of one machine": re.compile(r"(?<![\w.:/-])/work/"),
}
# docs/PAGE.md#anchor anywhere; in a page of docs/, also a Markdown link to a sibling page.
CITATION = re.compile(r"(?<![\w/.-])docs/([\w.-]+\.md)(?:#([\w-]+))?")
LINK = re.compile(r"\]\(([\w.-]+\.md)(?:#([^)\s]+))?\)")
HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")


def tracked_texts() -> dict[str, str]:
    """Every tracked file that is text, by path (binary files are left out: they cite nothing)."""
    paths = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, check=True, capture_output=True).stdout.split(b"\0")
    texts = {}
    for raw in paths:
        path = raw.decode()
        if not path or not (ROOT / path).is_file():
            continue
        data = (ROOT / path).read_bytes()
        if b"\0" in data:
            continue
        try:
            texts[path] = data.decode()
        except UnicodeDecodeError:
            continue
    return texts


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: its text as shown (link targets and emphasis marks gone), lowercase,
    punctuation dropped, spaces turned into hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(markdown: str) -> set[str]:
    """The anchors of a page's headings (outside fenced code), a repeated one numbered as GitHub numbers it."""
    seen: dict[str, int] = {}
    out = set()
    for _, line, where in fenced(markdown.splitlines()):
        if where != TEXT:
            continue
        match = HEADING.match(line)
        if match:
            base = slug(match.group(2))
            count = seen.get(base, 0)
            seen[base] = count + 1
            out.add(base if count == 0 else f"{base}-{count}")
    return out


def mentions_outside(texts: dict[str, str]) -> list[str]:
    """``path:line: what`` for every line that cites something a clone does not have."""
    found = []
    for path, text in sorted(texts.items()):
        if path in EXEMPT:
            continue
        if path in INSTALLED:
            assert INSTALLED[path] in text, f"{path} no longer holds the installed text: take it out of INSTALLED"
            text = text.replace(INSTALLED[path], "")
        for number, line in enumerate(text.splitlines(), start=1):
            for what, pattern in OUTSIDE.items():
                match = pattern.search(line)
                if match:
                    found.append(f"{path}:{number}: {what}: {match.group(0)!r}")
    return found


def broken_citations(texts: dict[str, str]) -> list[str]:
    """``path:line: why`` for every citation of a docs page or heading that does not exist."""
    pages = {path.removeprefix("docs/"): anchors(text) for path, text in texts.items()
             if path.startswith("docs/") and path.endswith(".md") and path.count("/") == 1}
    broken = []
    for path, text in sorted(texts.items()):
        if path == THIS:
            continue
        in_docs = path.startswith("docs/") and path.endswith(".md")
        for number, line in enumerate(text.splitlines(), start=1):
            cited = [m.groups() for m in CITATION.finditer(line)]
            if in_docs:
                cited += [m.groups() for m in LINK.finditer(line)]
            for page, anchor in cited:
                if page not in pages:
                    broken.append(f"{path}:{number}: docs/{page} does not exist")
                elif anchor is not None and anchor not in pages[page]:
                    broken.append(f"{path}:{number}: docs/{page} has no heading #{anchor}")
    return broken


@pytest.fixture(scope="module")
def texts() -> dict[str, str]:
    return tracked_texts()


def test_no_tracked_file_cites_what_a_clone_does_not_have(texts):
    assert len(texts) > 100, "git ls-files found too little: is this a checkout?"
    found = mentions_outside(texts)
    assert not found, "cite a page of docs/ instead:\n" + "\n".join(found)


def test_every_citation_of_docs_names_a_page_and_heading_that_exist(texts):
    cited = sum(len(CITATION.findall(text)) for text in texts.values())
    assert cited > 50, "the citations were not found: has CITATION stopped matching them?"
    broken = broken_citations(texts)
    assert not broken, "\n".join(broken)


def test_the_checks_catch_what_they_are_for():
    planted = {
        "annotation/x.py": "\n".join([
            "# the long format (SPEC §6)",
            "# see ../shared/ARCHITECTURE.md",
            '"""SPEC-CARE "Metrics"."""',
            "# SPEC-LC8, and SPEC.md",
            "# the SPEC's rule",
            "# /work/shared/spec/SPEC.md",
            "SPEC_KEYS = SPECTACULAR_SETTINGS = AttributeSpec = 'names, not citations'",
            "URL = 'https://github.com/o/r/work/x' # a folder named work, not /work/ at the root'",
        ]),
        "docs/page.md": "\n".join([
            "# Page",
            "## Quadratic weighted kappa",
            "```python",
            "# not a heading",
            "```",
            "## Page",
            "See [here](page.md#missing), [there](other.md) and [this](page.md#page-1).",
        ]),
        "metrics/w.py": "# docs/page.md#quadratic-weighted-kappa docs/page.md#not-a-heading docs/gone.md docs/page.md",
    }
    assert [finding.split(": ")[:2] for finding in mentions_outside(planted)] == [
        ["annotation/x.py:1", "the old specification"],
        ["annotation/x.py:2", "a folder beside the checkout"],
        ["annotation/x.py:3", "the old specification"],
        ["annotation/x.py:4", "the old specification"],
        ["annotation/x.py:5", "the old specification"],
        ["annotation/x.py:6", "the old specification"],
        ["annotation/x.py:6", "an absolute path of one machine"],
        ["annotation/x.py:8", "an absolute path of one machine"],
    ]
    assert broken_citations(planted) == [
        "docs/page.md:7: docs/page.md has no heading #missing",
        "docs/page.md:7: docs/other.md does not exist",
        "metrics/w.py:1: docs/page.md has no heading #not-a-heading",
        "metrics/w.py:1: docs/gone.md does not exist",
    ]


@pytest.mark.parametrize(("heading", "anchor"), [
    ("Quadratic weighted kappa", "quadratic-weighted-kappa"),
    ("The default schema `cab-v1`", "the-default-schema-cab-v1"),
    ("Histories of sessions (conversations JSON Lines)", "histories-of-sessions-conversations-json-lines"),
    ("Krippendorff's alpha", "krippendorffs-alpha"),
    ("Landis-Koch bands", "landis-koch-bands"),
    ("Coders: methods and reference coders", "coders-methods-and-reference-coders"),
    ("The demo's figures (`manage.py load_demo --care`, study `care-demo`)",
     "the-demos-figures-managepy-load_demo---care-study-care-demo"),
])
def test_anchors_are_githubs(heading, anchor):
    assert slug(heading) == anchor
