"""Copy the audit trail out of the annotation app's table (which cascaded with its study) into this one."""

from django.db import migrations


def copy(apps, schema_editor):
    old = apps.get_model("annotation", "AuditEvent")
    new = apps.get_model("audit", "AuditEvent")
    rows = []
    for event in old.objects.select_related("study").order_by("id").iterator():
        rows.append(new(id=event.id, actor_id=event.actor_id, action=event.action, study_id=event.study_id,
                        study_slug=event.study.slug if event.study_id else "", target=event.target, data=event.data,
                        at=event.at))
    new.objects.bulk_create(rows, batch_size=2000)
    if rows:
        # Explicit ids were inserted: move the sequence past them.
        with schema_editor.connection.cursor() as cursor:
            cursor.execute("SELECT setval(pg_get_serial_sequence('audit_auditevent', 'id'), "
                           "(SELECT MAX(id) FROM audit_auditevent))")


class Migration(migrations.Migration):
    dependencies = [
        ("audit", "0001_initial"),
        ("annotation", "0005_role_permissions_for_workshop"),
    ]
    operations = [migrations.RunPython(copy, migrations.RunPython.noop)]
