"""Each coder's progress through a round, kept by PostgreSQL in the transaction of every change that moves it.

``annotation_queueprogress`` holds, per (round, coder), how many assignments there are and how many are completed;
``annotation_conversationprogress`` the same per conversation (the conversation of the assignment's turn). The
turn page reads them instead of counting the coder's whole queue on every page (issue 34).

Statement-level triggers on ``annotation_assignment`` (after INSERT, UPDATE, DELETE, with transition tables) add
the statement's changes per counter row: whatever writes assignments (the services, ``bulk_create`` in the
generators, the study archive import, a data migration, a shell session) keeps the counters right without having
to remember them. A bulk insert costs one upsert per counter row, not one per assignment. Increments and decrements
are ``INSERT … ON CONFLICT … DO UPDATE`` in key order, so concurrent writers queue on the counter row's lock and
no count is lost; a row whose total falls to zero is removed, so a row exists exactly while the coder has
assignments in the round (Django deletes a round's assignments before the round: the counters' foreign keys are
DO_NOTHING, checked at commit). Triggers do not fire on TRUNCATE: ``TRUNCATE … CASCADE`` of the rounds empties
the counters with the assignments through their foreign keys. The triggers are created before the backfill, in the
same transaction: CREATE TRIGGER locks the assignment table against writes until the migration commits.
"""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

# (round_id, coder_id, conversation_id, total, done) per changed assignment: +1 for a row as it is now, -1 for a
# row as it was.
_AS_NOW = ("SELECT n.round_id, n.coder_id, t.conversation_id, 1 AS total, (n.completed_at IS NOT NULL)::int AS done "
           "FROM new_rows n JOIN benchmark_turn t ON t.id = n.turn_id")
_AS_WAS = ("SELECT o.round_id, o.coder_id, t.conversation_id, -1 AS total, -(o.completed_at IS NOT NULL)::int AS done "
           "FROM old_rows o JOIN benchmark_turn t ON t.id = o.turn_id")
_MOVED = ("(SELECT id FROM new_rows n JOIN old_rows o USING (id) WHERE (n.round_id, n.coder_id, n.turn_id, "
          "n.completed_at IS NULL) IS DISTINCT FROM (o.round_id, o.coder_id, o.turn_id, o.completed_at IS NULL))")
CHANGES = {
    "insert": _AS_NOW,
    "delete": _AS_WAS,
    "update": f"{_AS_NOW} WHERE n.id IN {_MOVED} UNION ALL {_AS_WAS} WHERE o.id IN {_MOVED}",
}
TRANSITIONS = {"insert": "NEW TABLE AS new_rows", "delete": "OLD TABLE AS old_rows",
               "update": "OLD TABLE AS old_rows NEW TABLE AS new_rows"}


def _counter(table: str, keys: str, changes: str, op: str) -> str:
    """Add the statement's changes to ``table``'s rows, by ``keys``, in key order. Additions go through an upsert;
    a change that takes anything away goes through an UPDATE of the existing row (PostgreSQL checks an upsert's
    proposed row, which must not be negative, before it looks for the conflict) after locking the rows in key
    order; rows left at zero are removed."""
    grouped = (f"SELECT {keys}, sum(total) AS total, sum(done) AS done FROM ({changes}) c GROUP BY {keys} "
               f"HAVING sum(total) <> 0 OR sum(done) <> 0")
    match = " AND ".join(f"p.{k} = d.{k}" for k in keys.split(", "))
    sql = f"""
    INSERT INTO {table} AS p ({keys}, total, done)
        SELECT * FROM ({grouped}) d WHERE d.total >= 0 AND d.done >= 0 ORDER BY {keys}
        ON CONFLICT ({keys}) DO UPDATE SET total = p.total + EXCLUDED.total, done = p.done + EXCLUDED.done;"""
    if op == "insert":
        return sql
    return sql + f"""
    PERFORM 1 FROM {table} p JOIN ({grouped}) d ON {match} WHERE d.total < 0 OR d.done < 0
        ORDER BY {", ".join(f"p.{k}" for k in keys.split(", "))} FOR UPDATE OF p;
    UPDATE {table} p SET total = p.total + d.total, done = p.done + d.done
        FROM ({grouped}) d WHERE {match} AND (d.total < 0 OR d.done < 0);
    DELETE FROM {table} p USING ({grouped}) d WHERE {match} AND p.total = 0;"""


def _function(op: str) -> str:
    changes = CHANGES[op]
    return f"""
CREATE OR REPLACE FUNCTION cab_queue_progress_{op}() RETURNS trigger AS $$
BEGIN{_counter("annotation_queueprogress", "round_id, coder_id", changes, op)}{
      _counter("annotation_conversationprogress", "round_id, coder_id, conversation_id", changes, op)}
    RETURN NULL;
END $$ LANGUAGE plpgsql;
CREATE TRIGGER cab_queue_progress_{op} AFTER {op.upper()} ON annotation_assignment
    REFERENCING {TRANSITIONS[op]} FOR EACH STATEMENT EXECUTE FUNCTION cab_queue_progress_{op}();
"""


PG_FORWARD = "".join(_function(op) for op in CHANGES) + """
INSERT INTO annotation_queueprogress (round_id, coder_id, total, done)
    SELECT round_id, coder_id, count(*), count(completed_at) FROM annotation_assignment GROUP BY round_id, coder_id;
INSERT INTO annotation_conversationprogress (round_id, coder_id, conversation_id, total, done)
    SELECT a.round_id, a.coder_id, t.conversation_id, count(*), count(a.completed_at)
    FROM annotation_assignment a JOIN benchmark_turn t ON t.id = a.turn_id
    GROUP BY a.round_id, a.coder_id, t.conversation_id;
"""

PG_REVERSE = "".join(f"""
DROP TRIGGER IF EXISTS cab_queue_progress_{op} ON annotation_assignment;
DROP FUNCTION IF EXISTS cab_queue_progress_{op}();""" for op in CHANGES)


def forward(apps, schema_editor):
    # Straight to the cursor without parameters: the PL/pgSQL bodies are not templates.
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(PG_FORWARD)


def reverse(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(PG_REVERSE)


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0016_study_blinding_key"),
        ("benchmark", "0005_response_turn_index_dropped"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddIndex(
            model_name="assignment",
            index=models.Index(fields=["round", "coder", "position"], name="assignment_queue_position_idx"),
        ),
        migrations.CreateModel(
            name="QueueProgress",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("total", models.PositiveIntegerField()),
                ("done", models.PositiveIntegerField()),
                ("coder", models.ForeignKey(on_delete=django.db.models.deletion.DO_NOTHING, related_name="+",
                                            to=settings.AUTH_USER_MODEL)),
                ("round", models.ForeignKey(on_delete=django.db.models.deletion.DO_NOTHING, related_name="+",
                                            to="annotation.round")),
            ],
            options={"constraints": [models.UniqueConstraint(fields=("round", "coder"), name="queue_progress_unique")]},
        ),
        migrations.CreateModel(
            name="ConversationProgress",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("total", models.PositiveIntegerField()),
                ("done", models.PositiveIntegerField()),
                ("coder", models.ForeignKey(on_delete=django.db.models.deletion.DO_NOTHING, related_name="+",
                                            to=settings.AUTH_USER_MODEL)),
                ("conversation", models.ForeignKey(on_delete=django.db.models.deletion.DO_NOTHING, related_name="+",
                                                   to="benchmark.conversation")),
                ("round", models.ForeignKey(on_delete=django.db.models.deletion.DO_NOTHING, related_name="+",
                                            to="annotation.round")),
            ],
            options={"constraints": [models.UniqueConstraint(fields=("round", "coder", "conversation"),
                                                             name="conversation_progress_unique")]},
        ),
        migrations.RunPython(forward, reverse),
    ]
