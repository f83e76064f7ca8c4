"""Formatting of report values on the dashboards' tables."""

from __future__ import annotations

from typing import Any

from django import template

from reports import labels

register = template.Library()


@register.filter
def cell(value: Any) -> str:
    """Fractions and statistics to three decimals, whole numbers as they are, text unchanged."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


@register.filter
def duration(seconds: Any) -> str:
    """Active time as "2 h 05 min", "7 min 30 s" or "40 s"."""
    total = int(seconds or 0)
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours} h {minutes:02d} min"
    if minutes:
        return f"{minutes} min {secs:02d} s"
    return f"{secs} s"


@register.simple_tag
def shown_table(block: Any, names: Any = None) -> dict[str, Any]:
    """A table block as the page shows it (reports.labels.shown_table): human headers with their report keys,
    intervals and κ bands beside their values."""
    headers, rows = labels.shown_table(block.columns, block.rows, block.marks, names or {})
    return {"headers": headers, "rows": rows}


@register.filter
def code_label(code: Any, names: Any) -> str:
    """A study's code as a cell shows it: its schema name, or the code itself when it has none."""
    return str((names or {}).get(code) or code)


@register.filter
def cell_or_na(value: Any) -> str:
    """An interval's end: as ``cell``, or n/a when undefined."""
    return "n/a" if value is None else cell(value)
