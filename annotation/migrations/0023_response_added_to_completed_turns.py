"""A model response added to a turn that coders have completed takes the turn out of their completed ones, whatever
path adds it (README, "Study isolation and frozen text").

Adding responses (for new model slots) stays possible while a turn is in an open round, and the new response has no
judgment of anyone yet: in a study whose schema codes responses (an attribute of unit ``response``), each coder
who completed the turn now has a turn short of what completing it wants, as a save that clears a score leaves it
(``annotation.services.item_judgment_save``). A statement-level trigger on ``benchmark_modelresponse`` (after INSERT,
with the statement's new rows) sets ``completed_at`` back to null, in one UPDATE per statement, for every completed
assignment of those turns that

- is in an open round (a closed round's record stays as it was),
- belongs to a study that codes the response's model slot (``Study.model_slots``; none listed: every slot) and
  whose schema has an attribute of unit ``response``,
- is its coder's while they are a member of the study (someone taken off cannot code it), and
- is not locked by the feedback of a reopened calibration round (its judgments no longer change).

The queue counters follow through the triggers of 0017. Whatever inserts responses (the ingestion API, the upload
page, ``import_conversations``, the bulk COPY, a shell session) is covered. The trigger adds the number of
assignments it changed to the transaction-local setting ``cab.turns_back_in_queues``, which every ingestion reads
before and after it writes to say how many coders' turns went back to their queues
(``benchmark.material_rules.turns_back_in_queues``). CREATE TRIGGER locks ``benchmark_modelresponse`` against
writes until the migration commits, a moment.
"""

from django.db import migrations

BACK_IN_QUEUES = "cab.turns_back_in_queues"

PG_FORWARD = f"""
CREATE OR REPLACE FUNCTION cab_response_added() RETURNS trigger AS $$
DECLARE changed bigint;
BEGIN
    UPDATE annotation_assignment a SET completed_at = NULL
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
CREATE TRIGGER cab_response_added AFTER INSERT ON benchmark_modelresponse
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION cab_response_added();
"""

PG_REVERSE = """
DROP TRIGGER IF EXISTS cab_response_added ON benchmark_modelresponse;
DROP FUNCTION IF EXISTS cab_response_added();
"""


def forward(apps, schema_editor):
    # Straight to the cursor without parameters: the PL/pgSQL body is not a template (its "?" is jsonb's operator).
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(PG_FORWARD)


def reverse(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(PG_REVERSE)


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0022_former_members_from_audit"),
        ("benchmark", "0006_kind_neutral_labels"),
    ]

    operations = [migrations.RunPython(forward, reverse)]
