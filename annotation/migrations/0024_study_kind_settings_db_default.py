"""``annotation_study.kind_settings`` gets a database default, ``{}`` (every setting of the study's kind at its
default, as 0021 gave existing studies): 0021 added the column without one, so a process of 0.2.0 left running on a
migrated database (it names only the columns it knows) failed to create a study. Every other column added since
0.2.0 to a table 0.2.0 had is nullable or has a default (``tests/annotation/test_upgrade_from_020.py``). One
``ALTER COLUMN ... SET DEFAULT``: a catalogue change, no rewrite; ``annotation_study`` is locked for a moment."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('annotation', '0023_response_added_to_completed_turns'),
    ]

    operations = [
        migrations.AlterField(
            model_name='study',
            name='kind_settings',
            field=models.JSONField(blank=True, db_default=models.Value({}, output_field=models.JSONField()), default=dict, help_text="The study kind's own settings by name (docs/architecture.md#study-kinds)."),
        ),
    ]
