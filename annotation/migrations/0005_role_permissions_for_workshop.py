from django.db import migrations

from access import roles


class Migration(migrations.Migration):
    dependencies = [("annotation", "0004_calibration_workshop")]
    operations = [migrations.RunPython(roles.sync_groups_in_migration, migrations.RunPython.noop)]
