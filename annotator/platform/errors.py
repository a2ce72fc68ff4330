"""Refusals every app raises and every edge maps to a status: ``ServiceError`` and its kinds,
``SchemaError`` for a payload that does not fit its declared shape, and ``LineErrors``, the one
collector of line-numbered problems an import reports all at once."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

MAX_ERRORS = 200  # line errors listed in one refusal; the count covers them all
MAX_ECHO = 300  # characters of one message: a message quoting a 1 MB value is not 1 MB long


def clip(text: str, limit: int = MAX_ECHO) -> str:
    """``text`` cut to ``limit`` characters, with "…" when it was longer."""
    text = str(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


class ServiceError(Exception):
    """A refused operation; ``status`` is the HTTP status the edge should answer with."""

    status = 400

    def __init__(self, message: str):
        message = clip(message, 4 * MAX_ECHO)
        super().__init__(message)
        self.message = message


class NotFound(ServiceError):
    status = 404


class Conflict(ServiceError):
    status = 409


class Invalid(ServiceError):
    status = 400

    def __init__(self, message: str, errors: list[dict] | None = None):
        super().__init__(message)
        self.errors = errors or []


class SchemaError(ValueError):
    """A payload, config or response that does not fit its kind; the message is user-facing."""


class LineErrors:
    """Problems found while reading an upload, by line (or place): the first ``limit`` are
    kept, all are counted; :meth:`raise_if_any` refuses the whole import with them."""

    def __init__(self, limit: int = MAX_ERRORS) -> None:
        self.limit = limit
        self.rows: list[dict] = []
        self.count = 0

    def add(self, line: Any, error: str) -> None:
        self.count += 1
        if len(self.rows) < self.limit:
            self.rows.append({"line": line, "error": clip(error)})

    @property
    def more(self) -> str:
        """ " (the first N are listed)" when some problems were counted but not kept."""
        return f" (the first {self.limit} are listed)" if self.count > self.limit else ""

    def raise_if_any(self, message: str, *, sort_key: Callable[[dict], Any] | None = None) -> None:
        """Raise ``Invalid`` with the kept rows when anything was added. ``message`` may name
        ``{count}`` and ``{more}``, replaced by the count and :attr:`more`."""
        if not self.count:
            return
        rows = sorted(self.rows, key=sort_key) if sort_key else list(self.rows)
        text = message.replace("{count}", str(self.count)).replace("{more}", self.more)
        raise Invalid(text, rows)
