"""The check of a CARE schema's ``care`` block (the ``block_problems`` hook of ``annotation.kinds``: run by
``annotation.schema_document.parse`` on every schema document), so that no code names an attribute code."""

from __future__ import annotations

from typing import Any

from annotation.schema_document import AttributeSpecDoc

# The roles a CARE schema's ``care`` block gives attributes (docs/care.md), so that no code names an attribute code.
CARE_ROLES = {
    "crisis": "turn", "marker": "turn", "request": "turn", "ambiguous": "turn", "sudden": "turn", "hold": "turn",
    "reactance": "turn", "strategy": "response", "horizon": "response", "safety_critical": "response",
}


def block_problems(care: dict[str, Any], attributes: dict[str, AttributeSpecDoc],
                   group_units: dict[str, str]) -> list[str]:
    """The optional ``care`` block: which attribute plays each role of the recovery-state rules, the marker's
    states in order, and the strategies that make an action turn."""
    problems = []
    for role, unit in CARE_ROLES.items():
        code = care.get(role)
        attribute = attributes.get(code) if isinstance(code, str) else None
        if attribute is None:
            problems.append(f"care.{role}: must name an attribute of this schema")
        elif attribute.unit != unit:
            problems.append(f"care.{role}: {code} must be coded once per {unit}")
    marker = attributes.get(str(care.get("marker")))
    states = care.get("states")
    if marker is not None and (not isinstance(states, list) or not states
                               or any(s not in marker.scale_labels.values() for s in states)):
        problems.append("care.states: the recovery states in order, each a value of the marker")
    strategy = attributes.get(str(care.get("strategy")))
    actions = care.get("action_strategies")
    if strategy is not None and (not isinstance(actions, list) or not actions
                                 or any(s not in strategy.scale_labels.values() for s in actions)):
        problems.append("care.action_strategies: a list of values of the strategy attribute")
    return problems
