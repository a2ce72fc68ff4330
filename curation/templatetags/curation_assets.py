"""Template helpers for images: the thumbnail while there is one, else the image itself."""

from __future__ import annotations

from django import template
from django.utils.html import format_html

from curation import assets
from curation.models import Image

register = template.Library()


@register.filter
def thumb_url(image: Image | None) -> str:
    """``{{ image|thumb_url }}``: the 256 px thumbnail's URL, or the original's before the
    thumbnail job has run."""
    return assets.thumb_url(image)


@register.simple_tag
def image_thumb(image: Image | None, alt: str = "", css: str = "thumb") -> str:
    """``{% image_thumb image alt %}``: a lazy ``<img>`` with the thumbnail's box size, so the
    grid does not jump while pictures load."""
    if image is None:
        return ""
    width, height = assets.display_size(image)
    return format_html(
        '<img class="{}" src="{}" width="{}" height="{}" alt="{}" loading="lazy" decoding="async">',
        css,
        assets.thumb_url(image),
        width,
        height,
        alt,
    )
