"""Formatting of metric values: shares ×100 with one decimal, counts as integers, ratings
rounded; "n/a" for an undefined value (an empty denominator)."""

import math
from decimal import ROUND_HALF_UP, Decimal

from django import template
from django.utils.html import format_html
from django.utils.safestring import mark_safe

from evaluation.registry import label_of

register = template.Library()


def _number(value, kind: str) -> str:
    if value is None:
        return "n/a"
    if kind == "share":
        if not math.isfinite(value):
            return f"{value * 100:.1f}"
        # Half up, as the papers print (chance G-Acc 6.25 → 6.3), not Python's half to even.
        return str(Decimal(repr(value * 100)).quantize(Decimal("0.1"), rounding=ROUND_HALF_UP))
    if kind == "count":
        return f"{value:.0f}"
    if kind == "tokens":
        return f"{value:.1f}"
    return f"{value:.0f}" if abs(value) >= 100 else f"{value:.3f}"


@register.simple_tag
def metric_cell(result, spec=None, kind: str = ""):
    """Value with its 95% interval underneath; accepts a MetricResult or a breakdown dict."""
    kind = kind or (spec.kind if spec else "share")
    if result is None:
        return mark_safe('<span class="muted">—</span>')
    if isinstance(result, dict):
        value, low, high, n = (
            result.get("value"),
            result.get("low"),
            result.get("high"),
            result.get("n"),
        )
    else:
        value, low, high, n = result.value, result.interval_low, result.interval_high, result.n
    if value is None:
        reason = "" if isinstance(result, dict) else (result.details or {}).get("unavailable", "")
        return format_html('<span class="na" title="{}">n/a</span>', reason or "undefined")
    interval = ""
    if low is not None and high is not None:
        interval = format_html(
            '<span class="ci">[{}, {}]</span>', _number(low, kind), _number(high, kind)
        )
    return format_html(
        '<span class="v">{}</span>{}<span class="visually-hidden"> n={}</span>',
        _number(value, kind),
        interval,
        n if n is not None else "",
    )


@register.filter
def lookup(mapping, key):
    return (mapping or {}).get(key)


@register.filter
def metric_number(value, kind: str = "share") -> str:
    """A bare value formatted like the cells: shares ×100, ratings rounded, "n/a" for None."""
    return _number(value, kind or "share")


@register.filter
def family_label(key: str) -> str:
    """A benchmark family's shown name (``Benchmark.family`` holds its key)."""
    return label_of(key)
