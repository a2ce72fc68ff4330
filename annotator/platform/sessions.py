"""Django's database sessions, read in one hand-written statement.

Every page request reads its session first; the ORM's ``Session.objects.get(session_key=…,
expire_date__gt=now)`` costs more CPU to build than the database needs to answer. Writing,
expiry and clearing are Django's (``SESSION_ENGINE = "annotator.platform.sessions"``).
"""

from __future__ import annotations

import functools

from django.contrib.sessions.backends import db
from django.db import connections, router
from django.utils import timezone

from .sql_rows import Shape


@functools.cache
def _query(model) -> tuple[Shape, str]:
    shape = Shape(model, "s")
    return shape, (
        f"SELECT {shape.columns} FROM {model._meta.db_table} s"
        " WHERE s.session_key = %s AND s.expire_date > %s"
    )


class SessionStore(db.SessionStore):
    def _get_session_from_db(self):
        """The unexpired row of this key, or None (the key then forgotten), as Django's."""
        key = self.session_key
        if not key:  # Django's lookup of an empty key finds nothing either
            self._session_key = None
            return None
        connection = connections[router.db_for_read(self.model)]
        shape, sql = _query(self.model)
        now = connection.ops.adapt_datetimefield_value(timezone.now())
        with connection.cursor() as cursor:
            cursor.execute(sql, [key, now])
            row = cursor.fetchone()
        if row is None:
            self._session_key = None
            return None
        return shape.build(row, 0, connection)
