import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True

    dependencies = [migrations.swappable_dependency(settings.AUTH_USER_MODEL)]

    operations = [
        migrations.CreateModel(
            name="AuditEvent",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("action", models.CharField(help_text="entity.verb, e.g. round.close", max_length=60)),
                ("study_id", models.BigIntegerField(blank=True, db_index=True, help_text="The study's id, if any.",
                                                    null=True)),
                ("study_slug", models.CharField(blank=True, help_text="The study's slug when the event happened.",
                                                max_length=80)),
                ("target", models.CharField(blank=True, max_length=200)),
                ("data", models.JSONField(blank=True, default=dict)),
                ("at", models.DateTimeField(auto_now_add=True, db_index=True)),
                ("actor", models.ForeignKey(blank=True, help_text="Empty for the system (commands, workers).",
                                            null=True, on_delete=django.db.models.deletion.PROTECT,
                                            related_name="audit_events", to=settings.AUTH_USER_MODEL)),
            ],
            options={"ordering": ["-at", "-id"]},
        ),
    ]
