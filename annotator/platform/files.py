"""Stored files behind permissions: one way to answer a file, and who may read media.

Nothing under ``MEDIA_ROOT`` (or the S3 bucket) is public. Two kinds of reader reach files:

- **Checked views** (each export's download view, NaturalBench's version download) decide in
  their own selectors who may read the object (curators and researchers of its project, admins;
  anyone else 404) and then call :func:`file_response`.
- **The media view** (``/media/<path>``, :func:`media`) serves only the prefixes declared in
  :data:`MEDIA_READERS`, to signed-in people: images and thumbnails (named by the SHA-256 of
  their bytes, so a name is an unguessable capability, the way a signed URL is), the demo
  drawings, and answer uploads (``uploads/<queue>/<task>/…``) to the members of that queue's
  project. Every other prefix — ``exports/``, ``curation/uploads/``, ``evaluation/uploads/``
  and anything new — answers 404 here whoever asks: those files are read only through their
  checked views.

:func:`file_response` answers a stored file the cheapest way the deployment allows: with the
web server's internal redirect (``X-Accel-Redirect`` for nginx, ``X-Sendfile`` for Apache or
lighttpd; ``BLINDSPOT_PROTECTED_MEDIA_REDIRECT``), streamed by Django otherwise, and on S3 as a
redirect to a signed URL that expires after ``BLINDSPOT_SIGNED_URL_EXPIRE_S`` seconds.
"""

from __future__ import annotations

import mimetypes
import os
import posixpath
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

from django.conf import settings
from django.contrib.auth.views import redirect_to_login
from django.core.files.storage import Storage, default_storage
from django.db.models import Model, QuerySet
from django.http import (
    FileResponse,
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponseRedirect,
)
from django.urls import reverse
from django.utils.cache import patch_cache_control
from django.utils.http import content_disposition_header
from django.views.decorators.http import require_safe
from rest_framework import exceptions
from storages.backends.s3 import S3Storage
from storages.utils import clean_name

from . import roles
from .auth import TokenAuthentication
from .scoping import projects_for

X_ACCEL = "x-accel"
X_SENDFILE = "x-sendfile"
REDIRECTS = ("", X_ACCEL, X_SENDFILE)
SIGNED_URL_EXPIRE_S = 300  # default of settings.BLINDSPOT_SIGNED_URL_EXPIRE_S
MEDIA_MAX_AGE_S = 3600  # how long a browser keeps a media file (privately) before asking again

# Who may download a project's files (exports, versions): its curators and researchers; admins
# pass every role check and see every project.
DOWNLOAD_ROLES = (roles.CURATOR, roles.RESEARCHER)


# --------------------------------------------------------------------------------------------
# answering a stored file
# --------------------------------------------------------------------------------------------
def file_response(
    request: HttpRequest,
    name: str,
    *,
    filename: str = "",
    content_type: str = "",
    attachment: bool = True,
    storage: Storage | None = None,
) -> HttpResponse:
    """The stored file ``name`` as a response, for a caller that has already checked who asks.

    Local storage: an empty response carrying ``X-Accel-Redirect`` (the configured internal
    prefix + the name) or ``X-Sendfile`` (the absolute path) when the web server is set up
    for it, else the bytes streamed with their length. Remote storage (S3): a redirect to a
    signed URL that expires soon. Every answer carries the content type, a content disposition
    (attachment or inline, with the file name) and ``Cache-Control: private``. A file missing
    from local storage is a 404."""
    storage = storage or default_storage
    filename = filename or posixpath.basename(name)
    content_type = content_type or mimetypes.guess_type(filename)[0] or "application/octet-stream"
    try:
        local_path = storage.path(name)
    except NotImplementedError:  # no local path: a remote storage such as S3
        response: HttpResponse = HttpResponseRedirect(
            signed_url(storage, name, filename, content_type, attachment)
        )
        patch_cache_control(response, private=True, no_store=True)  # the URL is a credential
        return response
    if not os.path.isfile(local_path):  # missing, or a folder
        raise Http404
    mode = protected_media_redirect()
    if mode:
        response = HttpResponse(content_type=content_type)
        if mode == X_ACCEL:
            response["X-Accel-Redirect"] = settings.BLINDSPOT_PROTECTED_MEDIA_PREFIX + quote(name)
        else:
            response["X-Sendfile"] = local_path
        response["Content-Disposition"] = content_disposition_header(attachment, filename)
    else:
        try:
            handle = storage.open(name, "rb")
        except OSError as missing:
            raise Http404 from missing
        response = FileResponse(
            handle, as_attachment=attachment, filename=filename, content_type=content_type
        )
    patch_cache_control(response, private=True)
    return response


def media_url(name: str) -> str:
    """The app's own address of a stored file (``/media/<name>``), for payloads and answers that
    are stored: it stays valid, since the media view checks the reader and, on S3, redirects to a
    freshly signed URL, whereas ``storage.url()`` on S3 is signed once and expires."""
    return reverse("media", kwargs={"path": name})


def protected_media_redirect() -> str:
    """The configured internal redirect ("" to stream through Django)."""
    mode = getattr(settings, "BLINDSPOT_PROTECTED_MEDIA_REDIRECT", "")
    if mode not in REDIRECTS:
        raise ValueError(
            f"BLINDSPOT_PROTECTED_MEDIA_REDIRECT is {mode!r}; expected one of "
            f"{', '.join(repr(m) for m in REDIRECTS)}."
        )
    return mode


def signed_url(
    storage: Storage, name: str, filename: str, content_type: str, attachment: bool
) -> str:
    """A short-lived signed URL of ``name`` on S3 (django-storages), which also tells S3 the
    content type and disposition to answer with. Signed whatever ``AWS_QUERYSTRING_AUTH`` and
    ``AWS_S3_CUSTOM_DOMAIN`` say (those govern the images' own URLs): a private file's URL must
    always expire. Presigning is computed locally; no request leaves the server."""
    expire = int(getattr(settings, "BLINDSPOT_SIGNED_URL_EXPIRE_S", SIGNED_URL_EXPIRE_S))
    params = {
        "ResponseContentType": content_type,
        "ResponseContentDisposition": content_disposition_header(attachment, filename),
    }
    if not isinstance(storage, S3Storage):  # another remote storage: its own URL is its best
        return storage.url(name)
    key = storage._normalize_name(clean_name(name))  # under its location, as S3Storage.url does
    return storage.connection.meta.client.generate_presigned_url(
        "get_object",
        Params={"Bucket": storage.bucket_name, "Key": key, **params},
        ExpiresIn=expire,
        HttpMethod="GET",
    )


# --------------------------------------------------------------------------------------------
# who reads what
# --------------------------------------------------------------------------------------------
def downloadable_or_404(user, queryset: QuerySet, pk: int) -> Model:
    """One object (with a ``project``) whose files ``user`` may download: curators and
    researchers of its project, admins; anyone else gets a 404 exactly like a missing one."""
    if not roles.has_role(user, DOWNLOAD_ROLES):
        raise Http404
    found = queryset.filter(project__in=projects_for(user), pk=pk).first()
    if found is None:
        raise Http404
    return found


def _anyone_signed_in(user, parts: list[str]) -> bool:
    return True


# The media prefixes served by /media/, with who may read them. Anything not listed answers 404.
# An app adds its own prefix with :func:`media_reader` (the annotation engine: ``uploads``).
MEDIA_READERS: dict[str, Callable[[Any, list[str]], bool]] = {
    "images": _anyone_signed_in,  # content-addressed: images/ab/<sha256>.<ext>
    "thumbs": _anyone_signed_in,  # content-addressed: thumbs/ab/<sha256>.webp
    "demo": _anyone_signed_in,  # the demo's generated drawings
}


def media_reader(prefix: str) -> Callable[[Callable[[Any, list[str]], bool]], Callable]:
    """Register ``reader(user, parts) -> bool`` as who may read ``/media/<prefix>/…``; a
    second reader for one prefix is an error."""

    def register(reader: Callable[[Any, list[str]], bool]) -> Callable[[Any, list[str]], bool]:
        if MEDIA_READERS.get(prefix, reader) is not reader:
            raise ValueError(f"The media prefix {prefix!r} has a reader already.")
        MEDIA_READERS[prefix] = reader
        return reader

    return register


def media_name(path: str) -> list[str] | None:
    """The parts of a media path, or None when it is not a plain relative name (``..``, an
    absolute path, backslashes, control characters, empty parts)."""
    if not path or any(ord(c) < 32 or c == "\\" for c in path):
        return None
    parts = path.split("/")
    if any(part in ("", ".", "..") for part in parts):
        return None
    return parts


def media_readable(user, path: str) -> bool:
    parts = media_name(path)
    if parts is None or len(parts) < 2:
        return False
    reader = MEDIA_READERS.get(parts[0])
    return reader is not None and reader(user, parts)


def _signed_in_user(request: HttpRequest):
    """The session's user, or the API token's (``Authorization: Token …``) so that API clients
    can load the images their tasks name; an invalid token counts as nobody."""
    if request.user.is_authenticated:
        return request.user
    try:
        found = TokenAuthentication().authenticate(request)
    except exceptions.AuthenticationFailed:
        return request.user
    return found[0] if found else request.user


@require_safe
def media(request: HttpRequest, path: str) -> HttpResponse:
    """``/media/<path>``: signed-in people only (else the login page), and only the prefixes
    of :data:`MEDIA_READERS` (else 404, exports and uploaded archives included)."""
    user = _signed_in_user(request)
    if not user.is_authenticated:
        return redirect_to_login(request.get_full_path())
    if not media_readable(user, path):
        raise Http404
    response = file_response(request, path, attachment=False)
    if response.status_code == 200:  # the bytes behind a name never change: the browser keeps them
        patch_cache_control(response, max_age=MEDIA_MAX_AGE_S)
    return response
