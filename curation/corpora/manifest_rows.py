"""What a manifest row is, and how one record of a manifest is checked field by field.

Every problem goes to a ``LineErrors`` collector with its line (or COCO place such as
``images[3]``), so an import reports all of them at once; text PostgreSQL cannot store (NUL,
lone surrogates) and over-long lines are refused with their line and field
(``annotator.platform.edge``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from annotator.platform import edge
from annotator.platform.errors import Invalid, LineErrors

MAX_CAPTION_CHARS = 20_000
FILE_KEYS = ("file", "image", "image_name", "filename", "file_name", "path")
CAPTION_KEYS = ("caption", "comment", "text")
LANGUAGE_KEYS = ("language", "lang")
LICENCE_KEYS = ("licence", "license")
ID_KEYS = ("source_id", "id")

_BCP47 = re.compile(
    r"^(?:[A-Za-z]{2,3}|[A-Za-z]{5,8})(?:-[A-Za-z0-9]{1,8})*$|^[xX](?:-[A-Za-z0-9]{1,8})+$"
)


@dataclass
class CaptionRow:
    text: str
    language: str


@dataclass
class ManifestRow:
    line: int | str
    file: str
    captions: list[CaptionRow]
    source_id: str
    licence: str = ""
    source: str = ""
    attribution: str = ""
    # Rows of dataset-wide caption files (COCO, Flickr): skipped when the image is absent.
    optional: bool = False


@dataclass
class Manifest:
    format: str
    rows: list[ManifestRow]
    uncaptioned: int = 0


@dataclass(frozen=True)
class Reading:
    """How a manifest is read: its format ("auto" detects it), and the language and licence of
    the captions that do not name their own."""

    fmt: str = "auto"
    language: str = "en"
    licence: str = ""


def refuse_if_any(errors: LineErrors, what: str, *, in_order: bool = False) -> None:
    """Refuse the whole import (``Invalid``) when ``errors`` holds anything; ``in_order`` lists
    numbered lines first, then COCO places by name and index."""
    errors.raise_if_any(
        "{count} problem(s) in " + what + "; nothing was imported{more}.",
        sort_key=_place_key if in_order else None,
    )


def _place_key(error: dict) -> tuple:
    """Numbered lines first, then COCO places such as ``images[3]`` by name and index."""
    line = error["line"]
    if isinstance(line, int):
        return (0, "", line)
    match = re.match(r"^(\w+)\[(\d+)\]$", str(line))
    return (1, match.group(1), int(match.group(2))) if match else (1, str(line), 0)


def language_normalise(value: str) -> str:
    """A loosely checked BCP 47 tag in its usual case: ``zh_hans`` → ``zh-Hans``, ``pt-br`` →
    ``pt-BR``. Raises ValueError naming the value."""
    tag = (value or "").strip().replace("_", "-")
    if not tag or len(tag) > 35 or not _BCP47.match(tag):
        raise ValueError(f"“{value}” is not a BCP 47 language tag (en, zh, zh-Hans, hi, pt-BR)")
    parts = tag.split("-")
    out = [parts[0].lower()]
    for part in parts[1:]:
        if len(part) == 4 and part.isalpha():
            out.append(part.title())
        elif (len(part) == 2 and part.isalpha()) or (len(part) == 3 and part.isdigit()):
            out.append(part.upper())
        else:
            out.append(part.lower())
    return "-".join(out)


def safe_relpath(name: str) -> str | None:
    """A relative POSIX path without ``..``, or None for names that could escape a folder."""
    if not isinstance(name, str) or not name or "\x00" in name:
        return None
    norm = name.replace("\\", "/")
    if norm.startswith("/") or re.match(r"^[A-Za-z]:", norm):
        return None
    parts = [p for p in norm.split("/") if p not in ("", ".")]
    if not parts or any(p == ".." for p in parts):
        return None
    return "/".join(parts)


def decode(content: bytes, filename: str) -> str:
    try:
        return edge.decode_utf8(content)
    except edge.NotUtf8 as exc:
        raise Invalid(
            f"{filename or 'The manifest'} is not UTF-8 text; save it as UTF-8 (for example "
            f"“CSV UTF-8” in a spreadsheet) and upload it again. Nothing was imported.",
            [{"line": exc.line, "error": exc.message}],
        ) from None


def unstorable(record: Any, line: int | str, errors: LineErrors) -> bool:
    """True (and the problem noted) when a record holds text PostgreSQL cannot store: a NUL
    character or a lone surrogate. Checked before any field, so no message echoes such text."""
    problem = edge.row_problem(record)
    if problem:
        errors.add(line, problem)
    return bool(problem)


def too_long(raw: str, line: int, errors: LineErrors) -> bool:
    problem = edge.line_problem(raw, line)
    if problem:
        errors.add(line, problem)
    return bool(problem)


def first_value(obj: dict, keys: Iterable[str]) -> Any:
    """The first of ``keys`` that ``obj`` holds a value for (not None or ""), else None."""
    for key in keys:
        if key in obj and obj[key] not in (None, ""):
            return obj[key]
    return None


def _text_field(
    obj: dict, keys, line, errors: LineErrors, label: str, limit: int, default=""
) -> str:
    value = first_value(obj, keys)
    if value is None:
        return default
    if not isinstance(value, str | int):
        errors.add(line, f"“{label}” must be text")
        return default
    value = str(value).strip()
    if len(value) > limit:
        errors.add(line, f"“{label}” is longer than {limit} characters")
        return default
    return value


def _language(value: Any, line, errors: LineErrors, default: str) -> str:
    if value in (None, ""):
        return default
    if not isinstance(value, str):
        errors.add(line, "“language” must be text such as en, zh or hi")
        return default
    try:
        return language_normalise(value)
    except ValueError as exc:
        errors.add(line, str(exc))
        return default


def caption_row(text: Any, language: str, line, errors: LineErrors) -> CaptionRow | None:
    if not isinstance(text, str):
        errors.add(line, "a caption must be text")
        return None
    text = text.strip()
    if not text:
        errors.add(line, "the caption is empty")
        return None
    if len(text) > MAX_CAPTION_CHARS:
        errors.add(line, f"a caption is longer than {MAX_CAPTION_CHARS:,} characters")
        return None
    return CaptionRow(text=text, language=language)


def file_field(value: Any, line, errors: LineErrors) -> str | None:
    if value is None:
        errors.add(line, f"no image file: give “file” (or {', '.join(FILE_KEYS[1:])})")
        return None
    if not isinstance(value, str):
        errors.add(line, "“file” must be text")
        return None
    safe = safe_relpath(value.strip())
    if safe is None:
        errors.add(line, f"unsafe path “{value}”: it must be relative, without “..”")
    return safe


def record_row(
    obj: dict, line, errors: LineErrors, *, language: str, licence: str
) -> ManifestRow | None:
    """One manifest record (a JSONL object or a CSV row as a dict) checked field by field."""
    before = errors.count
    file = file_field(first_value(obj, FILE_KEYS), line, errors)
    row_language = _language(first_value(obj, LANGUAGE_KEYS), line, errors, language)
    captions: list[CaptionRow] = []
    if "captions" in obj:
        items = obj["captions"]
        if not isinstance(items, list) or not items:
            errors.add(line, "“captions” must be a non-empty list")
            items = []
        for item in items:
            if isinstance(item, dict):
                lang = _language(first_value(item, LANGUAGE_KEYS), line, errors, row_language)
                cap = caption_row(item.get("text"), lang, line, errors)
            else:
                cap = caption_row(item, row_language, line, errors)
            if cap:
                captions.append(cap)
    else:
        text = first_value(obj, CAPTION_KEYS)
        if text is None:
            errors.add(line, "no caption: give “caption” (text) or “captions” (a list)")
        else:
            cap = caption_row(text, row_language, line, errors)
            if cap:
                captions.append(cap)
    source_id = _text_field(obj, ID_KEYS, line, errors, "source_id", 200, default=file or "")
    row_licence = _text_field(obj, LICENCE_KEYS, line, errors, "licence", 200, default=licence)
    source = _text_field(obj, ("source", "url"), line, errors, "source", 500)
    attribution = _text_field(obj, ("attribution",), line, errors, "attribution", 500)
    if errors.count > before or file is None:
        return None
    return ManifestRow(
        line=line,
        file=file,
        captions=captions,
        source_id=source_id or file,
        licence=row_licence,
        source=source,
        attribution=attribution,
    )
