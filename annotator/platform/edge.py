"""Hostile text and oversized bodies, refused at the edge before they reach a view or a table.

PostgreSQL stores no NUL character in ``text`` or ``jsonb``, and a lone UTF-16 surrogate (a
``"\\ud800"`` escape in JSON) cannot be encoded as UTF-8 at all: both used to end in a 500 deep
inside a write. One check, :func:`text_problem`, serves every way text comes in:

- :class:`TextGuardMiddleware`: the path, the query string, the headers and the form fields of
  every request answer 400 naming the field; cookies holding such text are dropped (a session
  cookie with NUL would fail its database lookup).
- :class:`JSONParser`, :class:`FormParser`, :class:`MultiPartParser`: DRF's parsers walk what
  they parsed; 400 names the JSON path (``response.text``, ``0.payload.caption``).
- :func:`row_problem` and :func:`line_problem`: every file-row parser (tasks JSONL, corpus
  manifests, recipe tables) reports "field “F”: contains a NUL character" or "line N is longer
  than X MB" under the row's line number.

:class:`BodyLimitMiddleware` holds every request body, the API's and file uploads included, to
``BLINDSPOT_MAX_REQUEST_BYTES`` (413 with a message); the URL names in
``BLINDSPOT_LARGE_UPLOADS`` may be larger by the sum of the settings they name.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from django.conf import settings
from django.core.exceptions import SuspiciousOperation
from django.http import HttpRequest, HttpResponse, JsonResponse, QueryDict
from django.shortcuts import render
from django.utils.translation import gettext as _
from rest_framework import exceptions, parsers
from rest_framework.parsers import DataAndFiles

from . import structured
from .structured import size_text

NUL = "contains a NUL character"
SURROGATE = "contains an unpaired surrogate (text that is not valid Unicode)"
_BAD = re.compile("[\x00\ud800-\udfff]")
_FORM_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")
_SEGMENT = 100  # characters of one key shown in a path


# --------------------------------------------------------------------------------------------
# the check
# --------------------------------------------------------------------------------------------
def text_problem(text: str) -> str | None:
    """What makes ``text`` unstorable (a NUL, a lone surrogate), or None."""
    match = _BAD.search(text)
    if match is None:
        return None
    return NUL if match.group() == "\x00" else SURROGATE


def visible(text: str) -> str:
    """``text`` safe to echo in a message or store: bad characters as ``\\uXXXX`` escapes."""
    return _BAD.sub(lambda m: f"\\u{ord(m.group()):04x}", str(text)[:_SEGMENT])


def _join(path: str, key: Any) -> str:
    name = visible(str(key))
    return f"{path}.{name}" if path else name


def find_bad_text(value: Any, path: str = "") -> tuple[str, str] | None:
    """The first ``(path, problem)`` in a parsed JSON value (keys included), in document order.

    Paths use the API's dotted form: ``response.text``, ``0.payload.caption``. Iterative, so a
    deeply nested body cannot exhaust the stack here.
    """
    stack: list[tuple[str, Any]] = [(path, value)]
    while stack:
        where, item = stack.pop()
        if isinstance(item, str):
            problem = text_problem(item)
            if problem:
                return where, problem
        elif isinstance(item, dict):
            children = []
            for key, child in item.items():
                if isinstance(key, str):
                    problem = text_problem(key)
                    if problem:
                        return _join(where, key), f"its name {problem}"
                children.append((_join(where, key), child))
            stack.extend(reversed(children))
        elif isinstance(item, list | tuple):
            stack.extend(reversed([(_join(where, i), child) for i, child in enumerate(item)]))
    return None


def querydict_problem(data: QueryDict) -> tuple[str, str] | None:
    """The first ``(field, problem)`` among the names and values of a query string or form."""
    for key, values in data.lists():
        problem = text_problem(key)
        if problem:
            return visible(key), f"its name {problem}"
        for value in values:
            if isinstance(value, str):
                problem = text_problem(value)
                if problem:
                    return visible(key), problem
    return None


def row_problem(record: Any) -> str | None:
    """A file row's first unstorable field, as a message for its line: ``field “caption”:
    contains a NUL character``; None when the row is clean."""
    found = find_bad_text(record)
    if found is None:
        return None
    where, problem = found
    return f"field “{where}”: {problem}" if where else f"the row {problem}"


def max_line_bytes() -> int:
    return int(getattr(settings, "BLINDSPOT_MAX_LINE_BYTES", 4 * 1024**2))


def line_problem(line: str, number: int, limit: int | None = None) -> str | None:
    """ "line N is longer than X MB" for a line over the limit (in UTF-8 bytes), else None."""
    limit = max_line_bytes() if limit is None else limit
    if len(line) * 4 <= limit:  # no UTF-8 character is longer than four bytes
        return None
    if len(line.encode("utf-8", "surrogatepass")) <= limit:
        return None
    return f"line {number} is longer than {size_text(limit)}"


def lines_problems(text: str, limit: int | None = None) -> Iterable[tuple[int, str]]:
    """``(line, message)`` for every over-long line of a file."""
    limit = max_line_bytes() if limit is None else limit
    if len(text) * 4 <= limit:
        return
    for number, line in enumerate(text.splitlines(), start=1):
        problem = line_problem(line, number, limit)
        if problem:
            yield number, problem


class NotUtf8(ValueError):
    """Bytes that are not UTF-8 text, with the place of the first bad byte."""

    def __init__(self, line: int, column: int, byte: int):
        self.line, self.column = line, column
        self.message = (
            f"byte 0x{byte:02X} at column {column} is not UTF-8 (Latin-1 or Windows-1252 text?)"
        )
        super().__init__(f"line {line}: {self.message}")


def decode_utf8(content: bytes) -> str:
    """UTF-8 text without its byte-order mark; :class:`NotUtf8` names the first bad byte."""
    try:
        return content.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = content[: exc.start].count(b"\n") + 1
        column = exc.start - (content.rfind(b"\n", 0, exc.start) + 1) + 1
        raise NotUtf8(line, column, content[exc.start]) from None


# --------------------------------------------------------------------------------------------
# answers
# --------------------------------------------------------------------------------------------
def is_api(request: HttpRequest) -> bool:
    return request.path_info.startswith("/api/")


def error_response(
    request: HttpRequest, *, status: int, message: str, errors: list[dict] | None = None
) -> HttpResponse:
    """The edge's refusal: JSON under /api/ (``message``, and ``errors`` naming the field, as
    the API's other 400s do), an HTML page otherwise."""
    if is_api(request):
        body: dict[str, Any] = {"message": message}
        if errors:
            body["errors"] = errors
        return JsonResponse(body, status=status)
    return render(request, "edge_error.html", {"status": status, "message": message}, status=status)


# --------------------------------------------------------------------------------------------
# DRF parsers: the default parser classes (settings.REST_FRAMEWORK)
# --------------------------------------------------------------------------------------------
class _Checked:
    def parse(self, stream, media_type=None, parser_context=None):
        parsed = super().parse(stream, media_type, parser_context)  # type: ignore[misc]
        data = parsed.data if isinstance(parsed, DataAndFiles) else parsed
        if isinstance(data, QueryDict):
            found = querydict_problem(data)
        else:
            if structured.too_deep(data):
                raise exceptions.ParseError(structured.nested_message())
            found = find_bad_text(data)
        if found:
            where, problem = found
            raise exceptions.ValidationError({where or "body": [problem]})
        return parsed


class JSONParser(_Checked, parsers.JSONParser):
    """DRF's JSON parser, refusing NUL characters and lone surrogates with their JSON path."""


class FormParser(_Checked, parsers.FormParser):
    pass


class MultiPartParser(_Checked, parsers.MultiPartParser):
    pass


# --------------------------------------------------------------------------------------------
# middleware
# --------------------------------------------------------------------------------------------
class TextGuardMiddleware:
    """400 for a NUL character or lone surrogate in the path, query string, headers or form.

    Sits before the session middleware: cookies with such text are dropped there (the session
    cookie is read as the session starts). The other checks run as the view is chosen, once the
    person is known, so the HTML error page shows the usual navigation.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        for name in [n for n, v in request.COOKIES.items() if text_problem(n + v)]:
            del request.COOKIES[name]
        return self.get_response(request)

    def process_view(self, request: HttpRequest, view_func, view_args, view_kwargs):
        found = self._problem(request)
        if found is None:
            return None
        where, field, problem = found
        return error_response(
            request,
            status=400,
            message=_("%(where)s: %(problem)s; nothing was changed.")
            % {"where": where, "problem": problem},
            errors=[{"field": field, "error": problem}],
        )

    @staticmethod
    def _problem(request: HttpRequest) -> tuple[str, str, str] | None:
        """(what, field, problem) of the first hostile text in the request, or None."""
        problem = text_problem(request.path_info)
        if problem:
            return _("The address"), "path", problem
        found = querydict_problem(request.GET)
        if found:
            return _("Query parameter “%(name)s”") % {"name": found[0]}, found[0], found[1]
        for key, value in request.META.items():
            # Headers reach the database too (a token lookup, django-axes' log of failed logins);
            # cookies are dropped instead (see __call__).
            if key.startswith("HTTP_") and key != "HTTP_COOKIE" and isinstance(value, str):
                problem = text_problem(value)
                if problem:
                    header = key[5:].replace("_", "-").title()
                    return _("Header “%(name)s”") % {"name": header}, header, problem
        if request.method == "POST" and request.content_type in _FORM_TYPES:
            found = querydict_problem(request.POST)
            if found:
                return _("Form field “%(name)s”") % {"name": found[0]}, found[0], found[1]
            for key, upload in request.FILES.items():
                problem = text_problem(upload.name or "")
                if problem:
                    what = _("The name of the file in “%(name)s”") % {"name": visible(key)}
                    return what, visible(key), problem
        return None


class RequestTooLarge(SuspiciousOperation):
    """A body without Content-Length (chunked, streamed) went over the limit while being read."""


class _CountedStream:
    """The request's body stream, refusing to read past ``limit`` bytes."""

    def __init__(self, stream, limit: int, request: HttpRequest):
        self.stream, self.limit, self.request, self.count = stream, limit, request, 0

    def _counted(self, data: bytes) -> bytes:
        self.count += len(data)
        if self.count > self.limit:
            self.request.body_too_large = True  # type: ignore[attr-defined]
            raise RequestTooLarge("The request body is larger than the limit.")
        return data

    def read(self, size: int = -1, /) -> bytes:
        return self._counted(self.stream.read(size))

    def readline(self, size: int = -1, /) -> bytes:
        return self._counted(self.stream.readline(size))


def max_request_bytes() -> int:
    return int(
        getattr(settings, "BLINDSPOT_MAX_REQUEST_BYTES", settings.DATA_UPLOAD_MAX_MEMORY_SIZE)
    )


def body_limit(url_name: str | None) -> int:
    """The largest body an endpoint takes: the general limit, plus the settings named for the
    endpoint in ``BLINDSPOT_LARGE_UPLOADS`` (archive uploads)."""
    extra = getattr(settings, "BLINDSPOT_LARGE_UPLOADS", {}).get(url_name or "", ())
    return max_request_bytes() + sum(int(getattr(settings, name)) for name in extra)


class BodyLimitMiddleware:
    """413 for a request body over its endpoint's limit, API and file uploads included.

    Django's DATA_UPLOAD_MAX_MEMORY_SIZE leaves file uploads out and answers 400; here the
    declared Content-Length is checked before anything reads the body, and a body without one
    (chunked, streamed) is counted as it is read.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if getattr(request, "body_too_large", False):
            return self._refuse(request, body_limit(self._url_name(request)))
        return response

    @staticmethod
    def _url_name(request: HttpRequest) -> str | None:
        match = getattr(request, "resolver_match", None)
        return match.url_name if match else None

    def process_view(self, request: HttpRequest, view_func, view_args, view_kwargs):
        limit = body_limit(self._url_name(request))
        try:
            declared = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            declared = 0
        if declared > limit:
            return self._refuse(request, limit)
        if not request.META.get("CONTENT_LENGTH") and hasattr(request, "_stream"):
            request._stream = _CountedStream(request._stream, limit, request)
        return None

    @staticmethod
    def _refuse(request: HttpRequest, limit: int) -> HttpResponse:
        # No "Connection: close" here: WSGI forbids hop-by-hop headers; the server decides.
        return error_response(
            request,
            status=413,
            message=_(
                "The request is larger than %(limit)s, the limit for this address; "
                "nothing was stored. Split the upload into smaller files."
            )
            % {"limit": size_text(limit)},
        )
