"""Someone taken off a study before 0020 (0.2.0 deleted their membership row) gets their ``FormerStudyMember``
back from the audit trail, so that their judgments count in the role they had, as for anyone taken off since: an
expert's codings an expert's, a method's labels a method's, a retained reviewer on the panel (README, "Upgrading").

What the trail holds decides it: the last ``member.remove`` event of the study naming the account (its ``role``),
for an account that is not a member again and has no record yet, and that has an assignment or a judgment in the
study (a username the trail names but that coded nothing there is nobody to restore); a reviewer's place on the
panel is what the study's last ``panel.retain`` event before the removal said of them (None when there was none).
0.2.0 recorded no alias, so the record has none: the next alias given is still past every alias in use."""

from django.db import migrations

ROLES = {"reviewer", "expert", "method", "reference"}


def former_members_from_audit(apps, schema_editor):
    AuditEvent = apps.get_model("audit", "AuditEvent")
    User = apps.get_model("auth", "User")
    Study, StudyMember, FormerStudyMember, Assignment, Judgment = (
        apps.get_model("annotation", name)
        for name in ("Study", "StudyMember", "FormerStudyMember", "Assignment", "Judgment"))
    removals = {}  # (study id, username) -> (role, the removal's event)
    for event in AuditEvent.objects.filter(action="member.remove", study_id__isnull=False).order_by("at", "pk"):
        username = event.target.removeprefix("user:") if event.target.startswith("user:") else ""
        role = (event.data or {}).get("role") if isinstance(event.data, dict) else None
        if username and role in ROLES:
            removals[event.study_id, username] = (role, event)
    for (study_id, username), (role, removal) in removals.items():
        user = User.objects.filter(username=username).first()
        if user is None or not Study.objects.filter(pk=study_id).exists():
            continue
        if (StudyMember.objects.filter(study_id=study_id, user=user).exists()
                or FormerStudyMember.objects.filter(study_id=study_id, user=user).exists()):
            continue
        if not (Assignment.objects.filter(round__study_id=study_id, coder=user).exists()
                or Judgment.objects.filter(round__study_id=study_id, coder=user).exists()):
            continue
        retained = None
        if role == "reviewer":
            panel = (AuditEvent.objects.filter(action="panel.retain", study_id=study_id, at__lte=removal.at)
                     .exclude(at=removal.at, pk__gt=removal.pk).order_by("-at", "-pk").first())
            if panel is not None and isinstance(panel.data, dict):
                retained = username in (panel.data.get("retained") or [])
        former = FormerStudyMember.objects.create(study_id=study_id, user=user, role=role, alias="",
                                                  retained=retained)
        # The record dates from the removal, not from this migration.
        FormerStudyMember.objects.filter(pk=former.pk).update(removed_at=removal.at)


class Migration(migrations.Migration):

    dependencies = [
        ("annotation", "0021_study_kind_settings"),
        ("audit", "0003_append_only"),
    ]

    operations = [
        migrations.RunPython(former_members_from_audit, migrations.RunPython.noop),
    ]
