"""Install the default schema ``cab-v1`` from its versioned JSON file, and the four role groups."""

from django.contrib.auth.management import create_permissions
from django.db import migrations

from annotation import roles, schema_document
from annotation.services import write_schema_rows


def install(apps, schema_editor):
    doc = schema_document.load_builtin("cab-v1")
    write_schema_rows(
        doc,
        schema_model=apps.get_model("annotation", "Schema"),
        attribute_model=apps.get_model("annotation", "AttributeDefinition"),
        subcategory_model=apps.get_model("annotation", "SpanSubcategory"),
    )
    # Permissions are normally created after all migrations; the groups need them now.
    for app_config in apps.get_app_configs():
        app_config.models_module = True
        create_permissions(app_config, apps=apps, verbosity=0)
        app_config.models_module = None
    roles.sync_groups(group_model=apps.get_model("auth", "Group"), permission_model=apps.get_model("auth", "Permission"))


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0002_database_guards"),
        ("benchmark", "0001_initial"),
        ("metrics", "0001_initial"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]
    operations = [migrations.RunPython(install, migrations.RunPython.noop)]
