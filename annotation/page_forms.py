"""The forms of a coding page, below every page's reads: an attribute's autosaving form (``AttrForm``) with the
judgment it shows, and the schema's groups of attributes. The turn page (``annotation.selectors``) and the session
page of a session-rated study (its kind's) build their forms from these, so neither needs the
other for them (docs/architecture.md#no-circles)."""

from __future__ import annotations

from dataclasses import dataclass

from annotation.models import AttributeDefinition, Judgment, Schema


@dataclass
class AttributeGroup:
    code: str
    name: str
    attributes: list[AttributeDefinition]


@dataclass(frozen=True, slots=True)
class JudgmentShown:
    """What the turn page shows of one of the coder's judgments: its form's data. Plain values, not a model instance
    each: a page has 80 of them, and building the instances cost more CPU than reading the rows (issue 34)."""

    pk: int
    coder_id: int  # always the page's coder: the statement reads no one else's (tests/calibration/test_selectors.py)
    attribute_id: int
    response_id: int | None
    score: int | None
    instance_count: int | None
    version: int

    @property
    def id(self) -> int:
        return self.pk


@dataclass
class AttrForm:
    """One autosaving form on the turn page: an attribute on the turn or on one response."""

    attribute: AttributeDefinition
    judgment: Judgment | JudgmentShown | None
    form_id: str
    response_handle: str | None  # the response's handle for this reviewer (never its id), None on the turn
    label: str = ""  # the response's label ("Response A"), empty for the turn's own attributes
    spans: str = ""  # the judgment's spans as "start end subcategory" joined by commas, in offset order

    @property
    def scored(self) -> bool:
        return self.judgment is not None and self.judgment.score is not None


def attribute_groups(attributes: list[AttributeDefinition], schema: Schema) -> list[AttributeGroup]:
    """The attributes by their schema group (groups in the order of their first attribute), named by the schema."""
    names = {g.get("code"): g.get("name", g.get("code")) for g in schema.definition.get("groups", [])}
    groups: dict[str, AttributeGroup] = {}
    for attribute in attributes:
        groups.setdefault(attribute.group, AttributeGroup(attribute.group, names.get(attribute.group, attribute.group),
                                                          [])).attributes.append(attribute)
    return list(groups.values())
