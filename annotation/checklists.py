"""Session checklists (docs/sessions.md#session-checklists): the behaviours from a clinician guide that coders
mark present (1) or absent (0) once per session the study kind chooses. Each item is an attribute of the schema's
session group — its code is the item id, its name the item's text — typed ``productive``, ``unproductive`` or
``required`` and tagged with the crisis types it applies to (none: every crisis type). Items are schema data: admins
add, edit and remove them here (or in the Django admin) while no study using the schema is open; from then on the schema
is frozen, like every part of it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Max

from access.checks import require_study_admin
from annotation.models import AttributeDefinition, Schema
from annotation.schema_document import CRISIS_TYPES, ITEM_TYPES
from annotation.services import schema_is_frozen
from audit.services import audit_record

_ITEM_ID = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,19}$")  # fits AttributeDefinition.code


def checklist_items(*, schema: Schema) -> list[AttributeDefinition]:
    """The schema's checklist items, in order."""
    return list(schema.attributes.filter(unit=AttributeDefinition.Unit.SESSION).exclude(item_type="")
                .order_by("position"))


def _session_group(schema: Schema) -> str:
    for group in schema.definition.get("groups", []):
        if isinstance(group, dict) and group.get("unit") == AttributeDefinition.Unit.SESSION:
            return str(group["code"])
    raise ValidationError(f"schema {schema.slug} codes no sessions: it has no group with unit session")


def _editable(schema: Schema) -> None:
    if schema_is_frozen(schema=schema):
        raise ValidationError(f"schema {schema.slug} is frozen: a study using it is open; checklist items are edited "
                              "before a study opens")


def checklist_item_problems(*, item_id: str, text: str, item_type: str, crisis_types: Sequence[str]) -> dict[str, str]:
    problems = {}
    if not _ITEM_ID.match(item_id):
        problems["item_id"] = "a letter, then letters, digits, - or _; at most 20 characters"
    if not text.strip() or len(text) > 200:
        problems["text"] = "required, at most 200 characters"
    if item_type not in ITEM_TYPES:
        problems["item_type"] = f"must be one of {', '.join(ITEM_TYPES)}"
    if any(c not in CRISIS_TYPES for c in crisis_types) or len(set(crisis_types)) != len(crisis_types):
        problems["crisis_types"] = f"distinct crisis types from {', '.join(CRISIS_TYPES)} (none: every crisis type)"
    return problems


@transaction.atomic
def checklist_item_save(*, schema: Schema, item_id: str, text: str, item_type: str, crisis_types: Sequence[str],
                        definition: str = "", by: User) -> AttributeDefinition:
    """Add a checklist item to the schema, or change an item's text, type, crisis types or definition. Refused
    (ValidationError, by field) for a wrong item and once the schema is frozen."""
    require_study_admin(by)
    problems = checklist_item_problems(item_id=item_id, text=text, item_type=item_type, crisis_types=crisis_types)
    if problems:
        raise ValidationError(problems)
    Schema.objects.select_for_update().filter(pk=schema.pk).first()  # one change to the schema's items at a time
    _editable(schema)
    group = _session_group(schema)
    values = {"name": text.strip(), "item_type": item_type, "crisis_types": list(crisis_types),
              "definition": definition.strip() or text.strip()}
    item = schema.attributes.filter(code=item_id).first()
    if item is not None and (item.unit != AttributeDefinition.Unit.SESSION or not item.item_type):
        raise ValidationError({"item_id": f"{item_id} is an attribute of the schema that is no checklist item"})
    if item is None:
        position = (schema.attributes.aggregate(last=Max("position"))["last"] or 0) + 1
        item = AttributeDefinition.objects.create(
            schema=schema, code=item_id, group=group, unit=AttributeDefinition.Unit.SESSION, position=position,
            scale_min=0, scale_max=1, level=AttributeDefinition.Level.NOMINAL,
            scale_labels={"0": "absent", "1": "present"}, anchors={"0": "Absent from the session.",
                                                                  "1": "Present in the session."},
            bucket={"0": 0, "1": 1}, risk=None, **values)
        changed = values
    else:
        changed = {name: value for name, value in values.items() if getattr(item, name) != value}
        if changed:
            AttributeDefinition.objects.filter(pk=item.pk).update(**changed)
            item.refresh_from_db()
    if changed:
        audit_record(by=by, action="checklist.item_save", target=f"schema:{schema.slug}", item=item_id,
                     changed=changed)
    return item


@transaction.atomic
def checklist_item_remove(*, schema: Schema, item_id: str, by: User) -> None:
    """Remove a checklist item that nobody has coded, while the schema is not frozen."""
    require_study_admin(by)
    Schema.objects.select_for_update().filter(pk=schema.pk).first()
    _editable(schema)
    item = schema.attributes.filter(code=item_id, unit=AttributeDefinition.Unit.SESSION).exclude(item_type="").first()
    if item is None:
        raise ValidationError({"item_id": f"schema {schema.slug} has no checklist item {item_id}"})
    if item.judgments.exists():
        raise ValidationError({"item_id": f"{item_id} has judgments: it cannot be removed"})
    item.delete()
    audit_record(by=by, action="checklist.item_remove", target=f"schema:{schema.slug}", item=item_id)
