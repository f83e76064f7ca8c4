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

from common.rows import ModelColumns

# Sessions signed in before UserBackend name Django's ModelBackend; access.login_sessions reads them as UserBackend's.
DJANGO_MODEL_BACKEND = "django.contrib.auth.backends.ModelBackend"
USER_BACKEND = "access.backends.UserBackend"
_statement: list[tuple[str, ModelColumns]] = []


def _user_statement() -> tuple[str, ModelColumns]:
    if not _statement:
        model = get_user_model()
        columns = ModelColumns.of(model, "u")
        table = connection.ops.quote_name(model._meta.db_table)
        pk = connection.ops.quote_name(str(model._meta.pk.column))
        _statement.append((f"SELECT {columns.select()} FROM {table} u WHERE u.{pk} = %s", columns))  # noqa: S608  # nosec B608 - names from the model
    return _statement[0]


class UserBackend(ModelBackend):
    def get_user(self, user_id: Any) -> Any:
        sql, columns = _user_statement()
        pk = get_user_model()._meta.pk.to_python(user_id)  # as get(pk=…) converts it
        with connection.cursor() as cursor:
            cursor.execute(sql, [pk])
            row = cursor.fetchone()
        if row is None:
            return None
        user = columns.instance(row)
        return user if self.user_can_authenticate(user) else None  # type: ignore[arg-type]  # the user model's
