"""Formatting of metric values: shares ×100 with one decimal, counts as integers, ratings
rounded; "n/a" for an undefined value (an empty denominator)."""

from django import template
from django.utils.html import format_html

register = template.Library()


def _number(value, kind: str) -> str:
    if value is None:
        return "n/a"
    if kind == "share":
        return f"{value * 100:.1f}"
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
        return format_html('<span class="muted">—</span>')
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
