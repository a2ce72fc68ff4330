"""The one parser for structured text a person sends: every form field, manifest, upload line and
API body that holds JSON goes through :func:`loads` (or, for a body DRF already parsed,
:func:`too_deep`), so they all share the same limits and messages.

What it refuses, with a message that never echoes the value:

- nesting deeper than ``BLINDSPOT_MAX_JSON_DEPTH`` levels (default 64): Python's parser and every
  recursive walk after it (``json.dumps(indent=2)`` on an edit page, schema checks) would
  otherwise end in a RecursionError, a 500;
- a field's text over ``max_bytes`` (form fields: ``BLINDSPOT_MAX_JSON_FIELD_BYTES``, 1 MB);
- ``NaN`` / ``Infinity`` and numbers too large for a float: PostgreSQL's jsonb cannot store them
  (``nonfinite="null"`` turns the constants into null instead, for published files that use
  them for missing values);
- integers of more than 4,300 digits (Python's own limit).
"""

from __future__ import annotations

import json
from typing import Any, Literal

from django.conf import settings
from django.utils.translation import gettext as _

NESTED = "nested too deeply"


class StructuredTextError(ValueError):
    """Text that is not acceptable JSON; ``message`` is user-facing and names no value."""

    def __init__(self, message: str, line: int | None = None, column: int | None = None):
        super().__init__(message)
        self.message, self.line, self.column = message, line, column


def max_depth() -> int:
    return int(getattr(settings, "BLINDSPOT_MAX_JSON_DEPTH", 64))


def max_field_bytes() -> int:
    return int(getattr(settings, "BLINDSPOT_MAX_JSON_FIELD_BYTES", 1024**2))


def size_text(size: int) -> str:
    """4194304 → "4 MB", 1536 → "1.5 KB"."""
    for unit, scale in (("GB", 1024**3), ("MB", 1024**2), ("KB", 1024)):
        if size >= scale:
            return f"{size / scale:.1f}".removesuffix(".0") + f" {unit}"
    return f"{size} bytes"


def _refuse_constant(name: str) -> Any:
    raise StructuredTextError(f"{name} is not a number JSON can store")


def _finite_float(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise StructuredTextError(f"the number {text[:20]}… is too large")
    return value


def too_deep(value: Any, limit: int | None = None) -> bool:
    """Whether a parsed value nests lists and objects more than ``limit`` levels (iterative, so
    it cannot exhaust the stack itself)."""
    limit = max_depth() if limit is None else limit
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, list | tuple):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False


def nested_message(limit: int | None = None) -> str:
    return _("nested too deeply (more than %(n)d levels of lists and objects)") % {
        "n": max_depth() if limit is None else limit
    }


def loads(
    text: str | bytes,
    *,
    max_bytes: int | None = None,
    depth: int | None = None,
    nonfinite: Literal["refuse", "null"] = "refuse",
) -> Any:
    """``json.loads`` with the edge's limits; :class:`StructuredTextError` for anything else."""
    if max_bytes is not None and len(text) > max_bytes // 4:
        size = len(text.encode("utf-8", "surrogatepass")) if isinstance(text, str) else len(text)
        if size > max_bytes:
            raise StructuredTextError(_("longer than %(limit)s") % {"limit": size_text(max_bytes)})
    constant = _refuse_constant if nonfinite == "refuse" else (lambda _name: None)
    try:
        value = json.loads(text, parse_constant=constant, parse_float=_finite_float)
    except RecursionError:
        raise StructuredTextError(nested_message(depth)) from None
    except json.JSONDecodeError as exc:
        where = (
            _("line %(line)d, column %(col)d") % {"line": exc.lineno, "col": exc.colno}
            if exc.lineno > 1 or "\n" in exc.doc.strip()
            else _("column %(col)d") % {"col": exc.colno}
        )
        raise StructuredTextError(
            _("not valid JSON: %(msg)s (%(where)s)") % {"msg": exc.msg, "where": where},
            exc.lineno,
            exc.colno,
        ) from None
    except StructuredTextError:
        raise
    except (ValueError, UnicodeDecodeError) as exc:
        # over-long integers ("Exceeds the limit (4300 digits)…"), undecodable bytes
        raise StructuredTextError(_("not valid JSON: %(msg)s") % {"msg": str(exc)[:120]}) from None
    if too_deep(value, depth):
        raise StructuredTextError(nested_message(depth))
    return value
