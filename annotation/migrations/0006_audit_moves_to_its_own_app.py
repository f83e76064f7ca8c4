from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0005_role_permissions_for_workshop"),
        ("audit", "0002_copy_annotation_events"),
    ]
    operations = [migrations.DeleteModel(name="AuditEvent")]
