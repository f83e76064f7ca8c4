"""A response added to a turn while one of its coders completes it, while its round is reopened or while a coder
of it is added back to the study: the trigger of 0023 and the other wait for each other (README, "Study isolation
and frozen text"); and the trigger returns at once when none of the statement's turns is assigned at all, so the
bulk ingest of new material no longer pays for its UPDATE.

Under 0023 the two could pass each other. ``annotation.services.assignment_complete`` reads the turn's codes before
an ingestion under way commits, so the new response is not among them; the trigger reads the completions before
that completion commits, so it does not find it. Both committed, and the turn stayed completed with a response
nobody coded, the very loss 0023 prevents; so too a reopening (the trigger saw the round closed, the reopening's
statement not the response) and a member added back (the trigger saw no member). Now the trigger first takes, for
each study whose rounds (of any state: a closed one may be reopening) assign a turn of the new responses, the
study's completions lock (a transaction-level advisory lock of the class
``annotation.services.COMPLETIONS_LOCK``, in study order), which each of those holds shared while it reads the
codes and writes (``annotation.services.completions_locked``): the trigger waits for them and then finds what they
did (each statement of the function reads what has committed), and one that comes later waits for the ingestion to
commit and then sees the new response. Completions in a study still never wait for each other.

When no round assigns any of the statement's turns (new material), the loop finds nothing: the function returns
there, having changed nothing, as the UPDATE would have. The loop reads the statement's turns once each (a hash of
the new rows' turn ids) and probes the assignments' turn index (``annotation_assignment.turn_id``, there since
0001) once per turn, which finds nothing for a new turn; 0023's UPDATE hashed every completed assignment of the
database for every statement. When a turn is assigned but none of them is completed, it returns after the locks.

``CREATE OR REPLACE FUNCTION`` takes no lock on a table: a statement that is running keeps the function it started
with, the next one gets the new one. The trigger is 0023's, unchanged; the reverse puts back 0023's function."""

from django.db import migrations

BACK_IN_QUEUES = "cab.turns_back_in_queues"
# annotation.services.COMPLETIONS_LOCK, the advisory lock class of a study's completions (the two-key form, whose
# keys never meet common.locks' one-key locks).
COMPLETIONS_LOCK = -1039018984

# 0023's rule, its count and its return, word for word.
_RULE = f"""    UPDATE annotation_assignment a SET completed_at = NULL
        FROM (SELECT DISTINCT turn_id, model_slot FROM new_rows) n, annotation_round r, annotation_study s
        WHERE a.turn_id = n.turn_id AND a.completed_at IS NOT NULL AND NOT a.feedback_locked
          AND r.id = a.round_id AND r.status = 'open' AND s.id = r.study_id
          AND (jsonb_array_length(s.model_slots) = 0 OR s.model_slots ? n.model_slot)
          AND EXISTS (SELECT 1 FROM annotation_attributedefinition d
                      WHERE d.schema_id = s.schema_id AND d.unit = 'response')
          AND EXISTS (SELECT 1 FROM annotation_studymember m WHERE m.study_id = s.id AND m.user_id = a.coder_id);
    GET DIAGNOSTICS changed = ROW_COUNT;
    IF changed > 0 THEN
        PERFORM set_config('{BACK_IN_QUEUES}',
            (coalesce(nullif(current_setting('{BACK_IN_QUEUES}', true), ''), '0')::bigint + changed)::text, true);
    END IF;
    RETURN NULL;
END $$ LANGUAGE plpgsql;
"""

PG_FORWARD = f"""
CREATE OR REPLACE FUNCTION cab_response_added() RETURNS trigger AS $$
DECLARE changed bigint; study bigint; assigned boolean := false;
BEGIN
    FOR study IN SELECT DISTINCT r.study_id FROM (SELECT DISTINCT turn_id FROM new_rows) n
                 JOIN annotation_assignment a ON a.turn_id = n.turn_id JOIN annotation_round r ON r.id = a.round_id
                 ORDER BY r.study_id LOOP
        PERFORM pg_advisory_xact_lock({COMPLETIONS_LOCK}, (study % 2147483647)::integer);
        assigned := true;
    END LOOP;
    IF NOT assigned OR NOT EXISTS (SELECT 1 FROM (SELECT DISTINCT turn_id FROM new_rows) n
                                   WHERE EXISTS (SELECT 1 FROM annotation_assignment a
                                                 WHERE a.turn_id = n.turn_id AND a.completed_at IS NOT NULL)) THEN
        RETURN NULL;
    END IF;
{_RULE}"""

# 0023's function, without the lock and the early exit.
PG_REVERSE = f"""
CREATE OR REPLACE FUNCTION cab_response_added() RETURNS trigger AS $$
DECLARE changed bigint;
BEGIN
{_RULE}"""


def forward(apps, schema_editor):
    # Straight to the cursor without parameters: the PL/pgSQL body is not a template (its "?" is jsonb's operator).
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(PG_FORWARD)


def reverse(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(PG_REVERSE)


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0024_study_kind_settings_db_default"),
    ]

    operations = [migrations.RunPython(forward, reverse)]
