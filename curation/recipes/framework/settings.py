"""A recipe object's settings, declared once on its model: their defaults are the model fields'
defaults, read and written as a dict of field values (many-to-many fields as lists, written
through ``set``). The recipe's services check the values; these helpers only move them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from django.db import transaction
from django.db.models import Model


def _many(model: type[Model]) -> set[str]:
    return {f.name for f in model._meta.many_to_many}


def model_defaults(model: type[Model], names: Iterable[str]) -> dict[str, Any]:
    """The default of each field in ``names`` as the model declares it: its ``default``, None for
    a nullable field without one, [] for a many-to-many field; fields with neither are left out
    (a name, a required foreign key: the caller must give them)."""
    out: dict[str, Any] = {}
    for name in names:
        field = model._meta.get_field(name)
        if field.many_to_many:
            out[name] = []
        elif field.has_default():
            out[name] = field.get_default()
        elif field.null:
            out[name] = None
    return out


def settings_of(obj: Model, names: Iterable[str]) -> dict[str, Any]:
    """``obj``'s current value of each field in ``names`` (many-to-many: a list)."""
    many = _many(type(obj))
    return {
        name: list(getattr(obj, name).all()) if name in many else getattr(obj, name)
        for name in names
    }


def settings_create(model: type[Model], values: Mapping[str, Any], **fixed: Any) -> Any:
    """A new ``model`` row with ``values`` and ``fixed`` (project, created_by …), its
    many-to-many fields set, in one transaction."""
    many = _many(model)
    with transaction.atomic():
        obj = model.objects.create(**fixed, **{k: v for k, v in values.items() if k not in many})
        for name in many & values.keys():
            getattr(obj, name).set(values[name])
    return obj


def settings_save(obj: Model, values: Mapping[str, Any]) -> Any:
    """Set ``values`` on ``obj`` and save it (every field), many-to-many fields through ``set``,
    in one transaction."""
    many = _many(type(obj))
    with transaction.atomic():
        for name, value in values.items():
            if name not in many:
                setattr(obj, name, value)
        obj.save()
        for name in many & values.keys():
            getattr(obj, name).set(values[name])
    return obj
