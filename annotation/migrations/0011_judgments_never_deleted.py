"""PostgreSQL keeps every judgment and its history, whatever code path or SQL session tries otherwise.

- ``annotation_judgmentrevision`` is append-only: UPDATE is always refused, DELETE too except inside an explicit
  purge (below), because a judgment cannot be purged while its history still points at it.
- ``annotation_judgment`` refuses DELETE unless the transaction has set ``cab.purge`` to ``on``
  (``SELECT set_config('cab.purge', 'on', true)``, i.e. ``SET LOCAL``): only ``annotation.services.judgments_purge``
  does, and it records the purge and its reason in the audit trail.

Row triggers do not fire on TRUNCATE, which only the test framework's flush uses. Raised as
integrity_constraint_violation, i.e. IntegrityError, like the audit trail's own guard (audit 0003).
"""

from django.db import migrations

PG_FORWARD = r"""
CREATE OR REPLACE FUNCTION cab_purging() RETURNS boolean AS $$
    SELECT coalesce(current_setting('cab.purge', true), '') = 'on'
$$ LANGUAGE sql STABLE;

CREATE OR REPLACE FUNCTION cab_judgment_history_append_only() RETURNS trigger AS $$
BEGIN
    IF TG_OP = 'DELETE' AND cab_purging() THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION 'judgment history is append-only: % of revision % refused', TG_OP, OLD.id
        USING ERRCODE = 'integrity_constraint_violation';
END $$ LANGUAGE plpgsql;
CREATE TRIGGER cab_judgment_history_append_only BEFORE UPDATE OR DELETE ON annotation_judgmentrevision
    FOR EACH ROW EXECUTE FUNCTION cab_judgment_history_append_only();

CREATE OR REPLACE FUNCTION cab_judgment_never_deleted() RETURNS trigger AS $$
BEGIN
    IF cab_purging() THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION 'judgment %: judgments are never deleted (only an explicit, audited purge may)', OLD.id
        USING ERRCODE = 'integrity_constraint_violation';
END $$ LANGUAGE plpgsql;
CREATE TRIGGER cab_judgment_never_deleted BEFORE DELETE ON annotation_judgment
    FOR EACH ROW EXECUTE FUNCTION cab_judgment_never_deleted();
"""

PG_REVERSE = r"""
DROP TRIGGER IF EXISTS cab_judgment_never_deleted ON annotation_judgment;
DROP FUNCTION IF EXISTS cab_judgment_never_deleted();
DROP TRIGGER IF EXISTS cab_judgment_history_append_only ON annotation_judgmentrevision;
DROP FUNCTION IF EXISTS cab_judgment_history_append_only();
DROP FUNCTION IF EXISTS cab_purging();
"""


def forward(apps, schema_editor):
    # Straight to the cursor without parameters: the PL/pgSQL bodies use % as their own placeholder.
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(PG_FORWARD)


def reverse(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(PG_REVERSE)


class Migration(migrations.Migration):
    dependencies = [("annotation", "0010_judgment_history_and_item_comments")]
    operations = [migrations.RunPython(forward, reverse)]
