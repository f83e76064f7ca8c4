from django.db import migrations

from access import roles


class Migration(migrations.Migration):
    dependencies = [("annotation", "0006_audit_moves_to_its_own_app"), ("audit", "0003_append_only")]
    operations = [migrations.RunPython(roles.sync_groups_in_migration, migrations.RunPython.noop)]
