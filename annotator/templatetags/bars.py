"""Bar widths as classes: ``class="w-{{ share|pct }}"`` instead of ``style="width: …%"``.

The Content-Security-Policy allows no inline style, attributes included, so a bar's length is one
of 101 classes (``.w-0`` … ``.w-100``, ``.h-0`` … ``.h-100`` in static/css/blindspot.css).
"""

from __future__ import annotations

import math

from django import template

register = template.Library()


@register.filter
def pct(value) -> int:
    """A percentage as a whole number from 0 to 100 (anything not a number: 0)."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return 0
    if math.isnan(number):
        return 0
    return max(0, min(100, round(number)))
