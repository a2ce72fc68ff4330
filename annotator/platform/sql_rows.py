"""Model instances from hand-written SQL: the annotators' hot paths skip the ORM's compiler.

Building and compiling one ORM query costs about 1 ms of CPU on a 2-core machine, more than the
database needs to answer it. The endpoints an annotator calls every few seconds (``next``,
``submit``, ``heartbeat``) run a few fixed statements instead, several rows joined in one round
trip; a :class:`Shape` names the columns of one model in such a statement and turns its slice
of the result row back into an instance, with the backend's converters (SQLite returns
datetimes as text, JSON as text).
"""

from __future__ import annotations

from typing import Any

from django.db import connection as default_connection
from django.db.models import Model


class Shape:
    """The concrete columns of ``model`` under table alias ``alias``, in a fixed order."""

    def __init__(self, model: type[Model], alias: str):
        self.model = model
        self.alias = alias
        self.fields = list(model._meta.concrete_fields)
        self.attnames = [f.attname for f in self.fields]
        self.width = len(self.fields)
        self.pk_index = self.fields.index(model._meta.pk)
        self.columns = ", ".join(f'{alias}."{f.column}"' for f in self.fields)
        self._converters: dict[str, list[tuple[int, list, Any]]] = {}

    def converters(self, connection) -> list[tuple[int, list, Any]]:
        found = self._converters.get(connection.vendor)
        if found is None:
            found = []
            for i, field in enumerate(self.fields):
                col = field.get_col(self.alias)
                funcs = connection.ops.get_db_converters(col) + col.get_db_converters(connection)
                if funcs:
                    found.append((i, funcs, col))
            self._converters[connection.vendor] = found
        return found

    def build(self, row: tuple | list, start: int = 0, connection=None):
        """The instance in ``row[start:start + width]``, or None when its primary key is NULL
        (the unmatched side of an outer join)."""
        connection = connection or default_connection
        values = list(row[start : start + self.width])
        if values[self.pk_index] is None:
            return None
        for i, funcs, col in self.converters(connection):
            value = values[i]
            for func in funcs:
                value = func(value, col, connection)
            values[i] = value
        return self.model.from_db(connection.alias, self.attnames, values)


class RowWith:
    """``model.objects.select_related(*related).filter(pk=…)``'s row as a fixed statement:
    ``related`` names forward foreign keys of ``model`` (one level, as ``select_related``
    follows them), each LEFT JOINed (a nullable one comes back None); ``where``: more
    conditions on the row (alias ``o``), their values given to ``get``."""

    def __init__(
        self, model: type[Model], related: tuple[str, ...] = (), where: list[str] | None = None
    ):
        self.shape = Shape(model, "o")
        self.pk_type = model._meta.pk.get_internal_type()
        self.links: list[tuple[str, Shape]] = []
        joins = []
        for k, name in enumerate(related):
            field = model._meta.get_field(name)
            if not (field.many_to_one or field.one_to_one) or not field.concrete:
                raise ValueError(f"{model.__name__}.{name} is not a forward foreign key")
            alias = f"r{k}"
            shape = Shape(field.related_model, alias)
            self.links.append((name, shape))
            target = field.target_field.column
            joins.append(
                f" LEFT JOIN {field.related_model._meta.db_table} {alias}"
                f' ON {alias}."{target}" = o."{field.column}"'
            )
        columns = ", ".join([self.shape.columns, *(s.columns for _n, s in self.links)])
        conditions = [f'o."{model._meta.pk.column}" = %s', *(where or [])]
        self.sql = (
            f"SELECT {columns} FROM {model._meta.db_table} o{''.join(joins)}"
            f" WHERE {' AND '.join(conditions)}"
        )

    def get(self, pk, *params, connection=None) -> Model | None:
        """The row of ``pk`` (``params``: the values of ``where``'s placeholders), or None; a
        number outside the key's range finds nothing, as the ORM's lookup (a URL's ``<int:…>``
        takes any digits; the database would refuse it)."""
        connection = connection or default_connection
        if isinstance(pk, int):
            low, high = connection.ops.integer_field_range(self.pk_type)
            if (low is not None and pk < low) or (high is not None and pk > high):
                return None
        with connection.cursor() as cursor:
            cursor.execute(self.sql, [pk, *params])
            row = cursor.fetchone()
        if row is None:
            return None
        obj = self.shape.build(row, 0, connection)
        start = self.shape.width
        for name, shape in self.links:
            related = shape.build(row, start, connection)
            if related is not None:  # else a NULL key (None already) is left to itself
                setattr(obj, name, related)
            start += shape.width
        return obj
