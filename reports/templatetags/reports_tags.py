"""Formatting of report values on the dashboards' tables."""

from __future__ import annotations

from typing import Any

from django import template

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
