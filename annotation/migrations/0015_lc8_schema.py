"""Install the LongCounsel-8 schema ``lc8-v1`` from its versioned JSON file (like ``care-v1`` in 0013)."""

from django.db import migrations

from annotation import schema_document


def forward(apps, schema_editor):
    schema_document.write_schema_rows(
        schema_document.load_builtin("lc8-v1"),
        schema_model=apps.get_model("annotation", "Schema"),
        attribute_model=apps.get_model("annotation", "AttributeDefinition"),
        subcategory_model=apps.get_model("annotation", "SpanSubcategory"),
    )


def reverse(apps, schema_editor):
    Schema = apps.get_model("annotation", "Schema")
    schema = Schema.objects.filter(slug="lc8-v1", studies__isnull=True).first()
    if schema is not None:
        schema.attributes.all().delete()
        schema.delete()


class Migration(migrations.Migration):
    dependencies = [("annotation", "0014_lc8")]
    operations = [migrations.RunPython(forward, reverse)]
