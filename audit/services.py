"""``audit_record``: the one way to write to the audit trail. Call it inside the transaction of the write it
describes, so an action and its record commit or roll back together."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User

from audit.models import AuditEvent


def audit_record(
    *, by: User | None, action: str, target: str = "", study: Any = None, **data: Any
) -> AuditEvent:
    """``study`` is any object with ``pk`` and ``slug`` (a Study); only its id and slug are kept."""
    return AuditEvent.objects.create(
        actor=by if by is not None and by.is_authenticated else None,
        action=action,
        study_id=getattr(study, "pk", None),
        study_slug=getattr(study, "slug", "") or "",
        target=target,
        data=data,
    )
