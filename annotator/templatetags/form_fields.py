"""Pick a form's fields by name, so a template lays out a group of fields in one include:
``{% include "_fields.html" with fields=form|fields:"kind title" grid="grid-2" %}``."""

from __future__ import annotations

from django import template

register = template.Library()


@register.filter
def fields(form, names: str) -> list:
    """The bound fields of ``form`` named in ``names`` (space-separated), in that order; a name the
    form does not have is skipped (a field only some states of the form carry)."""
    return [form[name] for name in names.split() if name in form.fields]
