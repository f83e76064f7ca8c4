"""The check of a LongCounsel-8 schema's ``lc8`` block (the ``block_problems`` hook of ``annotation.kinds``: run by
``annotation.schema_document.parse`` on every schema document)."""

from __future__ import annotations

from typing import Any

from annotation.schema_document import AttributeSpecDoc


def block_problems(lc8: dict[str, Any], attributes: dict[str, AttributeSpecDoc],  # noqa: C901 - one linear pass
                   group_units: dict[str, str]) -> list[str]:
    """The optional ``lc8`` block (docs/lc8.md#schema-lc8-v1): the PHQ items, their total and which attributes are
    derived (never typed by a rater), each an attribute of this schema coded once per session; the optional groups,
    groups of this schema; the tracking rules (sessions per trajectory, a large change, the screening cut-off, the
    severe tail) as numbers."""
    problems = []

    def session_attribute(where: str, code: Any) -> None:
        attribute = attributes.get(code) if isinstance(code, str) else None
        if attribute is None:
            problems.append(f"{where}: must name an attribute of this schema")
        elif attribute.unit != "session":
            problems.append(f"{where}: {code} must be coded once per session")

    items = lc8.get("items")
    if not isinstance(items, list) or not items or len(set(map(str, items))) != len(items):
        problems.append("lc8.items: a non-empty list of distinct attribute codes")
    else:
        for i, code in enumerate(items):
            session_attribute(f"lc8.items[{i}]", code)
    session_attribute("lc8.total", lc8.get("total"))
    derived = lc8.get("derived", [])
    if not isinstance(derived, list):
        problems.append("lc8.derived: a list of attribute codes")
    else:
        for i, code in enumerate(derived):
            session_attribute(f"lc8.derived[{i}]", code)
        if isinstance(items, list) and set(map(str, derived)) & set(map(str, items)):
            problems.append("lc8.derived: an item cannot be derived (raters score the items)")
    optional = lc8.get("optional_groups", [])
    if not isinstance(optional, list) or any(not isinstance(g, str) or g not in group_units for g in optional):
        problems.append("lc8.optional_groups: a list of groups of this schema")
    for key in ("sessions",):
        value = lc8.get(key)
        if value is not None and not (isinstance(value, int) and not isinstance(value, bool) and value >= 2):
            problems.append(f"lc8.{key}: a whole number of sessions per trajectory, at least 2")
    for key in ("large_change", "screening_cutoff", "severe_above"):
        value = lc8.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)
                                  or value != value or value in (float("inf"), float("-inf"))):
            problems.append(f"lc8.{key}: must be a finite number")
    return problems
