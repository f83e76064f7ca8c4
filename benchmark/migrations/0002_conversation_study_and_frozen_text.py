"""Study isolation and frozen text (see benchmark/models.py and README, "Study isolation and frozen text").

1. ``Conversation.study``: the study whose ingestion first wrote a conversation, the only one that may change it.
   Existing conversations start without an owner; studies that already use them (round items, assignments,
   judgments) are protected by use, whoever owns them.
2. PostgreSQL triggers, the backstop behind the services' checks (a bug, a shell session, a raw SQL fix), raised as
   check violations (IntegrityError) like those of annotation migration 0002:
   - a turn's client text, therapist reference, index and conversation cannot change once the turn, or a later turn
     of its conversation (which shows it as context), has judgments or is an item or assignment of an open round,
     or once the conversation itself is judged;
   - a response's text, turn and model cannot change while its turn is an item or assignment of an open round
     (annotation migration 0002 already freezes them once the response has judgments);
   - a conversation's dataset, id, kind, topic, complexity and title cannot change once any judgment refers to it
     or one of its turns is in an open round.
"""

import django.db.models.deletion
from django.db import migrations, models

# 'open' is annotation.Round.Status.OPEN.
PG_FORWARD = r"""
CREATE OR REPLACE FUNCTION cab_turn_text_frozen() RETURNS trigger AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM annotation_judgment j LEFT JOIN benchmark_turn t ON t.id = j.turn_id
               WHERE j.conversation_id = OLD.conversation_id AND (j.turn_id IS NULL OR t."index" >= OLD."index")) THEN
        RAISE EXCEPTION 'turn %: client text, reference, index and conversation cannot change once the turn or a '
                        'later turn of its conversation has judgments', OLD.id USING ERRCODE = 'check_violation';
    END IF;
    IF EXISTS (SELECT 1 FROM benchmark_turn t
               JOIN annotation_rounditem i ON i.turn_id = t.id JOIN annotation_round r ON r.id = i.round_id
               WHERE t.conversation_id = OLD.conversation_id AND t."index" >= OLD."index" AND r.status = 'open')
       OR EXISTS (SELECT 1 FROM benchmark_turn t
               JOIN annotation_assignment a ON a.turn_id = t.id JOIN annotation_round r ON r.id = a.round_id
               WHERE t.conversation_id = OLD.conversation_id AND t."index" >= OLD."index" AND r.status = 'open') THEN
        RAISE EXCEPTION 'turn %: client text, reference, index and conversation cannot change while the turn or a '
                        'later turn of its conversation is in an open round', OLD.id
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END $$ LANGUAGE plpgsql;
CREATE TRIGGER cab_turn_text_frozen BEFORE UPDATE ON benchmark_turn
    FOR EACH ROW WHEN (OLD.client_text IS DISTINCT FROM NEW.client_text
                       OR OLD.therapist_reference IS DISTINCT FROM NEW.therapist_reference
                       OR OLD."index" <> NEW."index" OR OLD.conversation_id <> NEW.conversation_id)
    EXECUTE FUNCTION cab_turn_text_frozen();

CREATE OR REPLACE FUNCTION cab_response_text_frozen_in_open_round() RETURNS trigger AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM annotation_rounditem i JOIN annotation_round r ON r.id = i.round_id
               WHERE i.turn_id = OLD.turn_id AND r.status = 'open')
       OR EXISTS (SELECT 1 FROM annotation_assignment a JOIN annotation_round r ON r.id = a.round_id
               WHERE a.turn_id = OLD.turn_id AND r.status = 'open') THEN
        RAISE EXCEPTION 'response %: text, turn and model cannot change while its turn is in an open round', OLD.id
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END $$ LANGUAGE plpgsql;
CREATE TRIGGER cab_response_text_frozen_in_open_round BEFORE UPDATE ON benchmark_modelresponse
    FOR EACH ROW WHEN (OLD.text IS DISTINCT FROM NEW.text OR OLD.turn_id <> NEW.turn_id
                       OR OLD.model_slot <> NEW.model_slot)
    EXECUTE FUNCTION cab_response_text_frozen_in_open_round();

CREATE OR REPLACE FUNCTION cab_conversation_frozen() RETURNS trigger AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM annotation_judgment WHERE conversation_id = OLD.id) THEN
        RAISE EXCEPTION 'conversation %: dataset, id, kind, topic, complexity and title cannot change once it has '
                        'judgments', OLD.id USING ERRCODE = 'check_violation';
    END IF;
    IF EXISTS (SELECT 1 FROM benchmark_turn t
               JOIN annotation_rounditem i ON i.turn_id = t.id JOIN annotation_round r ON r.id = i.round_id
               WHERE t.conversation_id = OLD.id AND r.status = 'open')
       OR EXISTS (SELECT 1 FROM benchmark_turn t
               JOIN annotation_assignment a ON a.turn_id = t.id JOIN annotation_round r ON r.id = a.round_id
               WHERE t.conversation_id = OLD.id AND r.status = 'open') THEN
        RAISE EXCEPTION 'conversation %: dataset, id, kind, topic, complexity and title cannot change while it is '
                        'in an open round', OLD.id USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END $$ LANGUAGE plpgsql;
CREATE TRIGGER cab_conversation_frozen BEFORE UPDATE ON benchmark_conversation
    FOR EACH ROW WHEN (OLD.dataset_id <> NEW.dataset_id OR OLD.external_id IS DISTINCT FROM NEW.external_id
                       OR OLD.kind IS DISTINCT FROM NEW.kind OR OLD.topic IS DISTINCT FROM NEW.topic
                       OR OLD.complexity IS DISTINCT FROM NEW.complexity OR OLD.title IS DISTINCT FROM NEW.title)
    EXECUTE FUNCTION cab_conversation_frozen();
"""

PG_REVERSE = r"""
DROP TRIGGER IF EXISTS cab_conversation_frozen ON benchmark_conversation;
DROP FUNCTION IF EXISTS cab_conversation_frozen();
DROP TRIGGER IF EXISTS cab_response_text_frozen_in_open_round ON benchmark_modelresponse;
DROP FUNCTION IF EXISTS cab_response_text_frozen_in_open_round();
DROP TRIGGER IF EXISTS cab_turn_text_frozen ON benchmark_turn;
DROP FUNCTION IF EXISTS cab_turn_text_frozen();
"""


def forward(apps, schema_editor):
    # Straight to the cursor without parameters: the PL/pgSQL bodies use % as their own placeholder.
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(PG_FORWARD)


def reverse(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(PG_REVERSE)


class Migration(migrations.Migration):

    dependencies = [
        ("annotation", "0008_reserved_gold_pool_and_feedback_lock"),
        ("benchmark", "0001_initial"),
    ]

    operations = [
        migrations.AddField(
            model_name="conversation",
            name="study",
            field=models.ForeignKey(
                blank=True,
                help_text="The study whose ingestion first wrote it: only that study's ingestion may change it. "
                          "Empty for material imported without a study (import_conversations, the demo), until a "
                          "study changes it.",
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="owned_conversations",
                to="annotation.study",
            ),
        ),
        migrations.RunPython(forward, reverse),
    ]
