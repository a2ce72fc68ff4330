"""The ReDoc bundle, served without its one call to a CDN.

drf-spectacular-sidecar ships ReDoc's standalone script, which draws the "API docs by Redocly"
link with an image from ``cdn.redoc.ly``: the Content-Security-Policy refuses it (and this app
asks no CDN for anything). The API docs page loads the same script from here, with that image's
address pointing at a copy in the app's static files.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from django.contrib.staticfiles import finders
from django.http import HttpRequest, HttpResponse
from django.templatetags.static import static
from django.views.decorators.http import require_GET

BUNDLE = "drf_spectacular_sidecar/redoc/bundles/redoc.standalone.js"
CDN_LOGO = "https://cdn.redoc.ly/redoc/logo-mini.svg"
LOCAL_LOGO = "img/redoc-logo-mini.svg"


@cache
def redoc_script() -> bytes:
    found = finders.find(BUNDLE)
    if not found:
        raise FileNotFoundError(f"{BUNDLE} is not among the static files (drf-spectacular-sidecar)")
    text = Path(str(found)).read_text(encoding="utf-8")
    return text.replace(CDN_LOGO, static(LOCAL_LOGO)).encode("utf-8")


@require_GET
def redoc_bundle(request: HttpRequest) -> HttpResponse:
    """ReDoc's script (public, like any static file)."""
    return HttpResponse(
        redoc_script(),
        content_type="application/javascript; charset=utf-8",
        headers={"Cache-Control": "public, max-age=86400"},
    )
