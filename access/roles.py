"""The four roles as Django groups, and the model permissions each one carries.

Row-level scoping (a reviewer sees only their own judgments) is enforced by selectors, not by these
model permissions; the groups say what kind of object a role may touch at all.
"""

from __future__ import annotations

from typing import Any

REVIEWER = "reviewer"
EXPERT = "expert"
ADMIN = "admin"
RESEARCHER = "researcher"
ROLES = (REVIEWER, EXPERT, ADMIN, RESEARCHER)

_ALL_MODELS = {
    "benchmark": ["dataset", "conversation", "turn", "modelresponse"],
    "annotation": [
        "schema", "attributedefinition", "spansubcategory", "study", "studymember", "round",
        "rounditem", "assignment", "judgment", "span", "workshopnote", "revieweralert",
    ],
    "metrics": ["metricrun"],
}
# The audit trail is read-only for everyone: nobody adds, changes or deletes history by hand.
_AUDIT = {"audit": ["auditevent"]}


def _perms(actions: tuple[str, ...], models: dict[str, list[str]]) -> list[tuple[str, str]]:
    return [(app, f"{action}_{model}") for app, names in models.items() for model in names for action in actions]


ROLE_PERMISSIONS: dict[str, list[tuple[str, str]]] = {
    # Coders touch only judgments and spans (their own, enforced by the selectors).
    REVIEWER: _perms(("view", "add", "change"), {"annotation": ["judgment", "span"]}),
    EXPERT: _perms(("view", "add", "change"), {"annotation": ["judgment", "span"]}),
    ADMIN: _perms(("view", "add", "change", "delete"), _ALL_MODELS) + _perms(("view",), _AUDIT),
    RESEARCHER: _perms(("view",), _ALL_MODELS | _AUDIT) + [("metrics", "add_metricrun")],
}

def sync_groups(*, group_model: Any, permission_model: Any) -> None:
    """Give each role group exactly its permissions. Takes the model classes so data migrations can pass their
    historical models; permissions of models a migration does not know yet are left for a later sync."""
    for role, perms in ROLE_PERMISSIONS.items():
        group, _ = group_model.objects.get_or_create(name=role)
        wanted = [
            permission
            for app, codename in perms
            for permission in permission_model.objects.filter(content_type__app_label=app, codename=codename)
        ]
        group.permissions.set(wanted)


def sync_groups_in_migration(apps: Any, schema_editor: Any) -> None:
    """A data migration's RunPython: create the permissions of every model known so far (normally created after
    all migrations; the groups need them now), then sync the groups."""
    # Imported here: auth's management module must not load while the app registry is still populating.
    from django.contrib.auth.management import create_permissions

    for app_config in apps.get_app_configs():
        app_config.models_module = True
        create_permissions(app_config, apps=apps, verbosity=0)
        app_config.models_module = None
    sync_groups(group_model=apps.get_model("auth", "Group"), permission_model=apps.get_model("auth", "Permission"))


# API token scopes each role may hold (a token never does more than its account's role allows).
TOKEN_SCOPES: dict[str, tuple[str, ...]] = {
    ADMIN: ("ingest", "import", "read", "metrics", "setup"),
    RESEARCHER: ("read", "metrics"),
    REVIEWER: ("read",),
    EXPERT: ("read",),
}

# Roles whose members may use the Django admin (reviewers and experts never: it would unblind them).
STAFF_ROLES = {ADMIN, RESEARCHER}
