"""Interface icons as inline SVG: ``{% load icons %}{% icon "timer" %}``.

Emoji and rare symbols (⏱ ⏸ ☕ 🔍 …) come from whatever font the visitor's machine has and show
as boxes where it has none; these drawings need no font. They take the text's colour and size
(``1em``), carry no inline style (the Content-Security-Policy allows none) and are hidden from
screen readers: the text beside them, or the button's label, says what they mean.
"""

from __future__ import annotations

from django import template
from django.utils.html import format_html, mark_safe

register = template.Library()

# 24 × 24 line drawings, stroked with the current colour.
PATHS = {
    "timer": '<circle cx="12" cy="13" r="8"/><path d="M12 9v4l2.5 2.5M9.5 2.5h5M12 2.5V5"/>',
    "pause": '<path d="M9 5v14M15 5v14"/>',
    "play": '<path d="M7 4.5v15l12-7.5z"/>',
    "stop": '<rect x="5.5" y="5.5" width="13" height="13" rx="1.5"/>',
    "retry": '<path d="M20 12a8 8 0 1 1-2.34-5.66M20 4v4.5h-4.5"/>',
    "restore": '<path d="M4 12a8 8 0 1 0 2.34-5.66M4 4v4.5h4.5"/>',
    "check": '<path d="M4.5 12.5l5 5 10-11"/>',
    "cross": '<path d="M6 6l12 12M18 6L6 18"/>',
    "expand": '<path d="M14 4h6v6M10 20H4v-6M20 4l-7 7M4 20l7-7"/>',
    "cup": '<path d="M4 9h13v5a5 5 0 0 1-5 5H9a5 5 0 0 1-5-5zM17 10h1.5a2.5 2.5 0 0 1 0 5H17'
    'M8 3.5v2.5M12 3.5v2.5"/>',
    "folder": '<path d="M3 6.5A1.5 1.5 0 0 1 4.5 5H9l2 2.5h8.5A1.5 1.5 0 0 1 21 9v9.5a1.5 1.5 0 0 '
    '1-1.5 1.5h-15A1.5 1.5 0 0 1 3 18.5z"/>',
    "search": '<circle cx="10.5" cy="10.5" r="6.5"/><path d="M15.5 15.5L20.5 20.5"/>',
    "image": '<rect x="3" y="4.5" width="18" height="15" rx="1.5"/><circle cx="8.5" cy="9.5" '
    'r="1.8"/><path d="M21 16l-5-5-9 8.5"/>',
    "warning": '<path d="M12 3.5l9.5 16.5h-19z"/><path d="M12 10v4.5M12 17.3v.2"/>',
    "people": '<circle cx="9" cy="8" r="3.5"/><path d="M2.5 20a6.5 6.5 0 0 1 13 0"/><path '
    'd="M16 4.8a3.5 3.5 0 0 1 0 6.4M18 14a6.5 6.5 0 0 1 3.5 6"/>',
    "download": '<path d="M12 3.5v12M7 11l5 5 5-5M4.5 20h15"/>',
    "enter": '<path d="M19 5v7a2 2 0 0 1-2 2H6M9.5 10.5L6 14l3.5 3.5"/>',
    "undo": '<path d="M9 14L4 9l5-5"/><path d="M4 9h10.5a5.5 5.5 0 0 1 0 11H11"/>',
    "history": '<path d="M3.5 12a8.5 8.5 0 1 0 2.5-6M3.5 4v4.5H8"/><path d="M12 8v4.5l3 2"/>',
}


@register.simple_tag
def icon(name: str, label: str = "") -> str:
    """The named drawing; with ``label``, it is announced as that text (``role="img"``)."""
    body = PATHS[name]
    a11y = (
        format_html(' role="img" aria-label="{}"', label)
        if label
        else mark_safe(' aria-hidden="true"')
    )
    return format_html(
        '<svg class="icon icon-{}" viewBox="0 0 24 24" width="1em" height="1em" fill="none" '
        'stroke="currentColor" stroke-width="2" stroke-linecap="round" stroke-linejoin="round" '
        'focusable="false"{}>{}</svg>',
        name,
        a11y,
        mark_safe(body),
    )
