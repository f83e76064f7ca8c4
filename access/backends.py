"""Sign-in: Django's ModelBackend, with the signed-in user read by one plain statement.

Every signed-in request reads its user; ``User.objects.get(pk=…)`` compiled a queryset for it each time, which cost
more CPU than a health check's whole request (issue 34). ``UserBackend`` reads the same row, every column, through
the ORM's converters (``common.rows.ModelColumns``), and keeps every other rule of ModelBackend: the password check,
inactive users refused, permissions.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.db import connection
from django.db.models import Field

from common.rows import ModelColumns

# Sessions signed in before UserBackend name Django's ModelBackend; access.login_sessions reads them as UserBackend's.
DJANGO_MODEL_BACKEND = "django.contrib.auth.backends.ModelBackend"
USER_BACKEND = "access.backends.UserBackend"
_statement: list[tuple[str, ModelColumns, Field]] = []


def _user_statement() -> tuple[str, ModelColumns, Field]:
    """The statement, the user model's columns and its primary key (built once per process: they depend only on the
    model)."""
    if not _statement:
        model = get_user_model()
        columns = ModelColumns.of(model, "u")
        table = connection.ops.quote_name(model._meta.db_table)
        pk = connection.ops.quote_name(str(model._meta.pk.column))
        select = f"SELECT {columns.select()} FROM {table} u WHERE u.{pk} = %s"  # noqa: S608  # nosec B608 - model names
        _statement.append((select, columns, model._meta.pk))
    return _statement[0]


class UserBackend(ModelBackend):
    def get_user(self, user_id: Any) -> Any:
        sql, columns, pk_field = _user_statement()
        pk = pk_field.to_python(user_id)  # as get(pk=…) converts it
        with connection.cursor() as cursor:
            cursor.execute(sql, [pk])
            row = cursor.fetchone()
        if row is None:
            return None
        user = columns.instance(row)
        return user if self.user_can_authenticate(user) else None  # type: ignore[arg-type]  # the user model's
