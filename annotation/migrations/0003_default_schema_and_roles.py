"""Install the default schema ``cab-v1`` from its versioned JSON file, and the four role groups."""

from django.db import migrations

from access import roles
from annotation import schema_document


def install(apps, schema_editor):
    doc = schema_document.load_builtin("cab-v1")
    schema_document.write_schema_rows(
        doc,
        schema_model=apps.get_model("annotation", "Schema"),
        attribute_model=apps.get_model("annotation", "AttributeDefinition"),
        subcategory_model=apps.get_model("annotation", "SpanSubcategory"),
    )
    roles.sync_groups_in_migration(apps, schema_editor)


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0002_database_guards"),
        ("benchmark", "0001_initial"),
        ("metrics", "0001_initial"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]
    operations = [migrations.RunPython(install, migrations.RunPython.noop)]
