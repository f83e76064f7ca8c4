"""The sessions of a study kind's histories that took a reply after the study first coded them as a whole (a
session-rated kind's rating, a session checklist's item): their codes are of a transcript without it
(docs/sessions.md#a-session-that-grew-after-it-was-coded). The server finds them
(``annotation.selectors.sessions_grown_after_coding``); each kind's rows carry them by history name and session index,
its run.json block keeps them (absent: none, so every other study keeps its fingerprint and bundle), its section's
``input`` names them (``grown_after_rating``) and its warning says so, here in one wording. The codes stay in the
figures: left out, the figures would lose data without a word too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .report_warnings import plural

KEY = "grown_after_rating"


def grown_entry(grown: Mapping[str, tuple[int, ...]]) -> dict[str, Any]:
    """``{KEY: {history: [session, …]}}`` by name, or ``{}`` when no session grew: a kind's ``input`` and run.json
    block take it as it is."""
    return {KEY: {name: list(indexes) for name, indexes in sorted(grown.items())}} if grown else {}


def grown_read(value: Any, kind: str) -> dict[str, tuple[int, ...]]:
    """run.json's ``KIND.grown_after_rating`` (absent: ``{}``, none): each history's name and the indexes of its
    sessions that grew after they were coded, one or more each; ValueError names what is wrong."""
    if not isinstance(value, dict) or not all(
            isinstance(indexes, list) and indexes and all(type(i) is int and i >= 1 for i in indexes)
            for indexes in value.values()):
        raise ValueError(f"run.json: {kind}.{KEY} is {str(value)[:40]!r}, not an object of history names and their "
                         "session indexes, one or more each (absent: none)")
    return {str(name): tuple(indexes) for name, indexes in value.items()}


def grown_said(counts: Mapping[str, Any], *, code: str, anchor: str) -> str | None:
    """The warning of a section whose ``input`` names sessions that grew after they were coded (``code``: what a
    code of theirs is, in the kind's words), by history and session index, never by text; None when none."""
    grown = counts.get(KEY)
    if not isinstance(grown, Mapping):
        return None
    named = [f"{name} session{'' if len(indexes) == 1 else 's'} {', '.join(str(i) for i in indexes)}"
             for name, indexes in sorted(grown.items()) if isinstance(indexes, list) and indexes]
    n = sum(len(indexes) for indexes in grown.values() if isinstance(indexes, list))
    if not n:
        return None
    return (f"{plural(n, 'session')} took a reply after {'its' if n == 1 else 'their'} first {code} "
            f"({'; '.join(named)}): the {code}s given before it are of a transcript without that reply, which their "
            f"coder never saw, and are counted in the figures all the same ({anchor}).")
