"""Database-level guards for the rules a judgment must never break, whatever code path writes it.

The services check the same rules first so users get a specific message; these triggers are the backstop
(a bug, a shell session, a raw SQL fix). Errors are raised as check violations, i.e. IntegrityError.
"""

from django.db import migrations

PG_FORWARD = r"""
CREATE OR REPLACE FUNCTION cab_response_text_immutable() RETURNS trigger AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM annotation_judgment WHERE response_id = OLD.id) THEN
        RAISE EXCEPTION 'response %: text, turn and model cannot change once the response has judgments', OLD.id
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END $$ LANGUAGE plpgsql;
CREATE TRIGGER cab_response_text_immutable BEFORE UPDATE ON benchmark_modelresponse
    FOR EACH ROW WHEN (OLD.text IS DISTINCT FROM NEW.text OR OLD.turn_id <> NEW.turn_id
                       OR OLD.model_slot <> NEW.model_slot)
    EXECUTE FUNCTION cab_response_text_immutable();

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
       OR (a.unit = 'conversation' AND NEW.turn_id IS NOT NULL) THEN
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
    IF NOT EXISTS (
        SELECT 1 FROM annotation_round r JOIN annotation_study s ON s.id = r.study_id
        WHERE r.id = NEW.round_id AND s.schema_id = a.schema_id) THEN
        RAISE EXCEPTION 'judgment: attribute % is not in the schema of the round''s study', a.code
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END $$ LANGUAGE plpgsql;
CREATE TRIGGER cab_judgment_guard BEFORE INSERT OR UPDATE ON annotation_judgment
    FOR EACH ROW EXECUTE FUNCTION cab_judgment_guard();

CREATE OR REPLACE FUNCTION cab_span_guard() RETURNS trigger AS $$
DECLARE j record; text_length integer;
BEGIN
    SELECT attribute_id, response_id INTO j FROM annotation_judgment WHERE id = NEW.judgment_id;
    IF j.response_id IS NULL THEN
        RAISE EXCEPTION 'span: only response-level judgments have spans' USING ERRCODE = 'check_violation';
    END IF;
    IF NOT EXISTS (SELECT 1 FROM annotation_spansubcategory
                   WHERE id = NEW.subcategory_id AND attribute_id = j.attribute_id) THEN
        RAISE EXCEPTION 'span: subcategory % belongs to another attribute', NEW.subcategory_id
            USING ERRCODE = 'check_violation';
    END IF;
    SELECT char_length(text) INTO text_length FROM benchmark_modelresponse WHERE id = j.response_id;
    IF NEW."end" > text_length THEN
        RAISE EXCEPTION 'span: [%, %) is outside the response text (% characters)', NEW.start, NEW."end", text_length
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END $$ LANGUAGE plpgsql;
CREATE TRIGGER cab_span_guard BEFORE INSERT OR UPDATE ON annotation_span
    FOR EACH ROW EXECUTE FUNCTION cab_span_guard();

CREATE OR REPLACE FUNCTION cab_schema_part_frozen() RETURNS trigger AS $$
DECLARE target_schema bigint;
BEGIN
    IF TG_OP = 'DELETE' THEN target_schema := OLD.schema_id; ELSE target_schema := NEW.schema_id; END IF;
    IF EXISTS (SELECT 1 FROM annotation_study WHERE schema_id = target_schema AND status <> 'setup')
       OR (TG_OP = 'UPDATE' AND EXISTS (
           SELECT 1 FROM annotation_study WHERE schema_id = OLD.schema_id AND status <> 'setup')) THEN
        RAISE EXCEPTION 'schema %: frozen, a study using it is open', target_schema USING ERRCODE = 'check_violation';
    END IF;
    IF TG_OP = 'DELETE' THEN RETURN OLD; END IF;
    RETURN NEW;
END $$ LANGUAGE plpgsql;
CREATE TRIGGER cab_attribute_frozen BEFORE INSERT OR UPDATE OR DELETE ON annotation_attributedefinition
    FOR EACH ROW EXECUTE FUNCTION cab_schema_part_frozen();
CREATE TRIGGER cab_subcategory_frozen BEFORE INSERT OR UPDATE OR DELETE ON annotation_spansubcategory
    FOR EACH ROW EXECUTE FUNCTION cab_schema_part_frozen();

CREATE OR REPLACE FUNCTION cab_schema_frozen() RETURNS trigger AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM annotation_study WHERE schema_id = OLD.id AND status <> 'setup') THEN
        RAISE EXCEPTION 'schema %: frozen, a study using it is open', OLD.slug USING ERRCODE = 'check_violation';
    END IF;
    IF TG_OP = 'DELETE' THEN RETURN OLD; END IF;
    RETURN NEW;
END $$ LANGUAGE plpgsql;
CREATE TRIGGER cab_schema_frozen BEFORE UPDATE OR DELETE ON annotation_schema
    FOR EACH ROW EXECUTE FUNCTION cab_schema_frozen();

CREATE OR REPLACE FUNCTION cab_study_schema_fixed() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION 'study %: the schema cannot change once the study is open', OLD.slug
        USING ERRCODE = 'check_violation';
END $$ LANGUAGE plpgsql;
CREATE TRIGGER cab_study_schema_fixed BEFORE UPDATE ON annotation_study
    FOR EACH ROW WHEN (OLD.status <> 'setup' AND OLD.schema_id <> NEW.schema_id)
    EXECUTE FUNCTION cab_study_schema_fixed();
"""

PG_REVERSE = r"""
DROP TRIGGER IF EXISTS cab_study_schema_fixed ON annotation_study;
DROP FUNCTION IF EXISTS cab_study_schema_fixed();
DROP TRIGGER IF EXISTS cab_schema_frozen ON annotation_schema;
DROP FUNCTION IF EXISTS cab_schema_frozen();
DROP TRIGGER IF EXISTS cab_subcategory_frozen ON annotation_spansubcategory;
DROP TRIGGER IF EXISTS cab_attribute_frozen ON annotation_attributedefinition;
DROP FUNCTION IF EXISTS cab_schema_part_frozen();
DROP TRIGGER IF EXISTS cab_span_guard ON annotation_span;
DROP FUNCTION IF EXISTS cab_span_guard();
DROP TRIGGER IF EXISTS cab_judgment_guard ON annotation_judgment;
DROP FUNCTION IF EXISTS cab_judgment_guard();
DROP TRIGGER IF EXISTS cab_response_text_immutable ON benchmark_modelresponse;
DROP FUNCTION IF EXISTS cab_response_text_immutable();
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
        ("annotation", "0001_initial"),
        ("benchmark", "0001_initial"),
    ]
    operations = [migrations.RunPython(forward, reverse)]
