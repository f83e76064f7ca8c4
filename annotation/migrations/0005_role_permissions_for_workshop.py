from django.contrib.auth.management import create_permissions
from django.db import migrations

from annotation import roles


def sync(apps, schema_editor):
    for app_config in apps.get_app_configs():
        app_config.models_module = True
        create_permissions(app_config, apps=apps, verbosity=0)
        app_config.models_module = None
    roles.sync_groups(group_model=apps.get_model("auth", "Group"), permission_model=apps.get_model("auth", "Permission"))


class Migration(migrations.Migration):
    dependencies = [("annotation", "0004_calibration_workshop")]
    operations = [migrations.RunPython(sync, migrations.RunPython.noop)]
