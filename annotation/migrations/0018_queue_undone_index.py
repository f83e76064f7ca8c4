"""A partial index on the coder's items not yet completed, by position: where to resume (the home page's link, the
queue page's) is one probe of it, however many items before it are done. The (round, coder, position) index of
0017 would walk past every completed item first: the whole queue for a coder near its end (issue 34)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0017_queue_progress"),
    ]

    operations = [
        migrations.AddIndex(
            model_name="assignment",
            index=models.Index(condition=models.Q(completed_at__isnull=True), fields=["round", "coder", "position"],
                               name="assignment_queue_undone_idx"),
        ),
    ]
