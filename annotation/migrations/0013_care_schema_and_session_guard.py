"""Install the CARE schema ``care-v1`` from its versioned JSON file (like ``cab-v1`` in 0003), and teach the
judgment guard of 0002 the ``session`` unit: a session judgment names a session of its own conversation and no
turn; a conversation judgment names neither."""

from django.db import migrations

from annotation import schema_document

GUARD = r"""
CREATE OR REPLACE FUNCTION cab_judgment_guard() RETURNS trigger AS $$
DECLARE a record;
BEGIN
    SELECT code, unit, scale_min, scale_max, schema_id INTO a
        FROM annotation_attributedefinition WHERE id = NEW.attribute_id;
    IF NEW.score < a.scale_min OR NEW.score > a.scale_max THEN
        RAISE EXCEPTION 'judgment: score % is outside the scale %–% of attribute %',
            NEW.score, a.scale_min, a.scale_max, a.code USING ERRCODE = 'check_violation';
    END IF;
    IF (a.unit = 'response' AND NEW.response_id IS NULL)
       OR (a.unit = 'turn' AND (NEW.turn_id IS NULL OR NEW.response_id IS NOT NULL))
       OR (a.unit = 'conversation' AND NEW.turn_id IS NOT NULL)
       %(session_rule)s THEN
        RAISE EXCEPTION 'judgment: attribute % is coded once per %', a.code, a.unit
            USING ERRCODE = 'check_violation';
    END IF;
    IF NEW.response_id IS NOT NULL AND NOT EXISTS (
        SELECT 1 FROM benchmark_modelresponse WHERE id = NEW.response_id AND turn_id = NEW.turn_id) THEN
        RAISE EXCEPTION 'judgment: response % is not part of turn %', NEW.response_id, NEW.turn_id
            USING ERRCODE = 'check_violation';
    END IF;
    IF NEW.turn_id IS NOT NULL AND NOT EXISTS (
        SELECT 1 FROM benchmark_turn WHERE id = NEW.turn_id AND conversation_id = NEW.conversation_id) THEN
        RAISE EXCEPTION 'judgment: turn % is not part of conversation %', NEW.turn_id, NEW.conversation_id
            USING ERRCODE = 'check_violation';
    END IF;
    %(session_check)s
    IF NOT EXISTS (
        SELECT 1 FROM annotation_round r JOIN annotation_study s ON s.id = r.study_id
        WHERE r.id = NEW.round_id AND s.schema_id = a.schema_id) THEN
        RAISE EXCEPTION 'judgment: attribute % is not in the schema of the round''s study', a.code
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END $$ LANGUAGE plpgsql;
"""
SESSION_RULE = """OR (a.unit = 'conversation' AND NEW.session_id IS NOT NULL)
       OR (a.unit = 'session' AND (NEW.session_id IS NULL OR NEW.turn_id IS NOT NULL))"""
SESSION_CHECK = """IF NEW.session_id IS NOT NULL AND NOT EXISTS (
        SELECT 1 FROM benchmark_session WHERE id = NEW.session_id AND conversation_id = NEW.conversation_id) THEN
        RAISE EXCEPTION 'judgment: session % is not part of conversation %', NEW.session_id, NEW.conversation_id
            USING ERRCODE = 'check_violation';
    END IF;"""


def _guard(schema_editor, *, sessions: bool) -> None:
    body = GUARD.replace("%(session_rule)s", SESSION_RULE if sessions else "")
    body = body.replace("%(session_check)s", SESSION_CHECK if sessions else "")
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(body)


def forward(apps, schema_editor):
    _guard(schema_editor, sessions=True)
    schema_document.write_schema_rows(
        schema_document.load_builtin("care-v1"),
        schema_model=apps.get_model("annotation", "Schema"),
        attribute_model=apps.get_model("annotation", "AttributeDefinition"),
        subcategory_model=apps.get_model("annotation", "SpanSubcategory"),
    )


def reverse(apps, schema_editor):
    _guard(schema_editor, sessions=False)
    Schema = apps.get_model("annotation", "Schema")
    schema = Schema.objects.filter(slug="care-v1", studies__isnull=True).first()
    if schema is not None:
        schema.attributes.all().delete()
        schema.delete()


class Migration(migrations.Migration):
    dependencies = [("annotation", "0012_session_units_methods_and_checklists")]
    operations = [migrations.RunPython(forward, reverse)]
