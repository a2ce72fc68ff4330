"""Corpus import: a folder or an archive of images plus a manifest or a common caption file.

Formats (``fmt``; "auto" detects from the file name and first line):

- ``jsonl`` manifest, one sample per line: ``{"file": "img/1.jpg", "caption": "…"}`` or
  ``"captions": ["…", {"text": "…", "language": "zh"}]``, optional ``language`` (BCP 47),
  ``source_id``, ``licence``, ``source`` (URL), ``attribution``.
- ``csv`` manifest with a header: ``file`` (or image, image_name, filename, file_name, path) and
  ``caption`` (or comment, text), optional language, source_id, licence, source, attribution.
  Rows naming the same file (or source_id) are one sample with several captions.
- ``coco``: COCO captions JSON (``images`` + ``annotations`` + ``licenses``).
- ``flickr``: Flickr30K/8K ``results_20130124.token`` (``1000092795.jpg#0<TAB>caption``) or
  ``results.csv`` (``image_name| comment_number| comment``).

All or nothing: every line is checked first and every problem is reported with its line
(``annotator.services.Invalid``); images are decoded and validated before any row is written;
the rows are written in one transaction; blobs written for an import that fails are deleted,
and so is the stored upload of a refused import (a failure a retry could fix keeps it). Text
PostgreSQL cannot store (NUL, lone surrogates) and over-long lines are refused with their line
and field (``annotator.edge``).
A manifest is made for its import, so each of its files must be found. COCO and Flickr caption
files describe whole datasets, so their images that the archive does not hold are skipped and
counted (an archive with a subset of Flickr30K imports with the full caption file).

Archives are never extracted to disk: members are read into memory one at a time with a bounded
read, so path traversal cannot write anywhere, and unsafe names, links, too many members or too
many unpacked bytes (zip/gzip bombs) refuse the archive.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import re
import shutil
import stat
import tarfile
import tempfile
import time
import uuid
import zipfile
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import IO, Any, NamedTuple

from django.conf import settings
from django.core.files.storage import default_storage
from django.db import IntegrityError, transaction
from django.utils.text import slugify

from annotator.platform import edge
from annotator.platform.errors import Invalid
from annotator.platform.jobs import job_enqueue, job_progress
from annotator.platform.models import Project

from . import assets
from .models import Caption, Corpus, Sample

IMPORT_JOB = "curation.import_corpus"
FORMAT_CHOICES = [
    ("auto", "Detect from the file"),
    ("jsonl", "Manifest, JSON Lines"),
    ("csv", "Manifest, CSV"),
    ("coco", "COCO captions JSON"),
    ("flickr", "Flickr30K / Flickr8K captions (.token or results.csv)"),
]
FORMATS = {key for key, _label in FORMAT_CHOICES}
MAX_ERRORS = 200
MAX_CAPTION_CHARS = 20_000
PROGRESS_EVERY = 25

FILE_KEYS = ("file", "image", "image_name", "filename", "file_name", "path")
CAPTION_KEYS = ("caption", "comment", "text")
LANGUAGE_KEYS = ("language", "lang")
LICENCE_KEYS = ("licence", "license")
ID_KEYS = ("source_id", "id")
MANIFEST_NAMES = {
    "manifest.jsonl",
    "manifest.csv",
    "captions.jsonl",
    "captions.csv",
    "captions.txt",
    "results.csv",
    "results_20130124.token",
    "results.token",
    "flickr8k.token.txt",
    "flickr30k.token",
}
MANIFEST_SUFFIXES = (".jsonl", ".ndjson", ".csv", ".json", ".token", ".tsv")
JUNK = ("__MACOSX/", ".DS_Store", "Thumbs.db", "desktop.ini")

_BCP47 = re.compile(
    r"^(?:[A-Za-z]{2,3}|[A-Za-z]{5,8})(?:-[A-Za-z0-9]{1,8})*$|^[xX](?:-[A-Za-z0-9]{1,8})+$"
)
_FLICKR_TOKEN = re.compile(r"^[^\t#]+#\d+\t")
_FLICKR_CSV = re.compile(r"^\s*image_name\s*\|\s*comment_number\s*\|\s*comment\s*$", re.I)


# --------------------------------------------------------------------------------------------
# limits
# --------------------------------------------------------------------------------------------
def _setting(name: str, default: int) -> int:
    return int(getattr(settings, name, default))


def max_upload_bytes() -> int:
    return _setting("BLINDSPOT_MAX_CORPUS_UPLOAD_BYTES", 4 * 1024**3)


def max_manifest_bytes() -> int:
    return _setting("BLINDSPOT_MAX_MANIFEST_BYTES", 200 * 1024**2)


def max_archive_members() -> int:
    return _setting("BLINDSPOT_MAX_ARCHIVE_MEMBERS", 500_000)


def max_unpacked_bytes() -> int:
    return _setting("BLINDSPOT_MAX_ARCHIVE_UNPACKED_BYTES", 16 * 1024**3)


# --------------------------------------------------------------------------------------------
# rows and errors
# --------------------------------------------------------------------------------------------
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


class _Errors:
    def __init__(self) -> None:
        self.items: list[dict] = []
        self.count = 0

    def add(self, line: int | str, error: str) -> None:
        self.count += 1
        if len(self.items) < MAX_ERRORS:
            self.items.append({"line": line, "error": error})

    def raise_if_any(self, what: str, *, in_order: bool = False) -> None:
        if not self.count:
            return
        more = f" (the first {MAX_ERRORS} are listed)" if self.count > MAX_ERRORS else ""
        items = list(self.items)
        if in_order:
            items.sort(key=_place_key)
        raise Invalid(f"{self.count} problem(s) in {what}; nothing was imported{more}.", items)


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


def _is_junk(name: str) -> bool:
    base = PurePosixPath(name).name
    return name.startswith("__MACOSX/") or base.startswith("._") or base in JUNK


def _is_image_name(name: str) -> bool:
    return PurePosixPath(name).suffix.lower() in assets.EXTENSIONS


def _decode(content: bytes, filename: str) -> str:
    try:
        return edge.decode_utf8(content)
    except edge.NotUtf8 as exc:
        raise Invalid(
            f"{filename or 'The manifest'} is not UTF-8 text; save it as UTF-8 (for example "
            f"“CSV UTF-8” in a spreadsheet) and upload it again. Nothing was imported.",
            [{"line": exc.line, "error": exc.message}],
        ) from None


def _unstorable(record: Any, line: int | str, errors: _Errors) -> bool:
    """True (and the problem noted) when a record holds text PostgreSQL cannot store: a NUL
    character or a lone surrogate. Checked before any field, so no message echoes such text."""
    problem = edge.row_problem(record)
    if problem:
        errors.add(line, problem)
    return bool(problem)


def _too_long(raw: str, line: int, errors: _Errors) -> bool:
    problem = edge.line_problem(raw, line)
    if problem:
        errors.add(line, problem)
    return bool(problem)


# --------------------------------------------------------------------------------------------
# manifest parsers
# --------------------------------------------------------------------------------------------
def _first(obj: dict, keys: Iterable[str]) -> Any:
    for key in keys:
        if key in obj and obj[key] not in (None, ""):
            return obj[key]
    return None


def _text_field(obj: dict, keys, line, errors: _Errors, label: str, limit: int, default="") -> str:
    value = _first(obj, keys)
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


def _language(value: Any, line, errors: _Errors, default: str) -> str:
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


def _caption(text: Any, language: str, line, errors: _Errors) -> CaptionRow | None:
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


def _file(value: Any, line, errors: _Errors) -> str | None:
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


def _row(obj: dict, line, errors: _Errors, *, language: str, licence: str) -> ManifestRow | None:
    """One manifest record (a JSONL object or a CSV row as a dict) checked field by field."""
    before = errors.count
    file = _file(_first(obj, FILE_KEYS), line, errors)
    row_language = _language(_first(obj, LANGUAGE_KEYS), line, errors, language)
    captions: list[CaptionRow] = []
    if "captions" in obj:
        items = obj["captions"]
        if not isinstance(items, list) or not items:
            errors.add(line, "“captions” must be a non-empty list")
            items = []
        for item in items:
            if isinstance(item, dict):
                lang = _language(_first(item, LANGUAGE_KEYS), line, errors, row_language)
                cap = _caption(item.get("text"), lang, line, errors)
            else:
                cap = _caption(item, row_language, line, errors)
            if cap:
                captions.append(cap)
    else:
        text = _first(obj, CAPTION_KEYS)
        if text is None:
            errors.add(line, "no caption: give “caption” (text) or “captions” (a list)")
        else:
            cap = _caption(text, row_language, line, errors)
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


def parse_jsonl(text: str, *, language: str, licence: str, errors: _Errors) -> list[ManifestRow]:
    rows: list[ManifestRow] = []
    seen: dict[str, int | str] = {}
    for n, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip() or _too_long(raw, n, errors):
            continue
        try:
            obj = json.loads(raw)
        except ValueError as exc:
            msg = getattr(exc, "msg", str(exc))
            errors.add(n, f"not valid JSON ({msg}, column {getattr(exc, 'colno', '?')})")
            continue
        if not isinstance(obj, dict):
            errors.add(n, 'expected a JSON object such as {"file": "a.jpg", "caption": "…"}')
            continue
        if _unstorable(obj, n, errors):
            continue
        row = _row(obj, n, errors, language=language, licence=licence)
        if row is None:
            continue
        if row.source_id in seen:
            errors.add(
                n, f"source_id “{row.source_id}” is already used on line {seen[row.source_id]}"
            )
            continue
        seen[row.source_id] = n
        rows.append(row)
    return rows


def _merge(rows: dict[str, ManifestRow], row: ManifestRow, errors: _Errors) -> None:
    """CSV and Flickr files give one caption per line: lines of one sample are merged."""
    have = rows.get(row.source_id)
    if have is None:
        rows[row.source_id] = row
    elif have.file != row.file:
        errors.add(
            row.line,
            f"source_id “{row.source_id}” names “{have.file}” on line {have.line}, "
            f"not “{row.file}”",
        )
    else:
        have.captions.extend(row.captions)


def parse_csv(text: str, *, language: str, licence: str, errors: _Errors) -> list[ManifestRow]:
    long_lines = list(edge.lines_problems(text))
    for line, problem in long_lines:
        errors.add(line, problem)
    if long_lines:
        return []
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader)
    except StopIteration:
        errors.add(1, "the file is empty")
        return []
    except csv.Error as exc:
        errors.add(1, f"unreadable CSV header ({exc})")
        return []
    problem = edge.text_problem("".join(header))
    if problem:
        errors.add(1, f"the header {problem}")
        return []
    columns = [h.strip().lower() for h in header]
    if not any(c in FILE_KEYS for c in columns) or not any(c in CAPTION_KEYS for c in columns):
        errors.add(
            1,
            f"the header needs a file column ({', '.join(FILE_KEYS)}) and a caption column "
            f"({', '.join(CAPTION_KEYS)}); found: {', '.join(columns) or 'nothing'}",
        )
        return []
    dupes = sorted({c for c in columns if columns.count(c) > 1 and c})
    if dupes:
        errors.add(1, f"the header repeats {', '.join(dupes)}")
        return []
    rows: dict[str, ManifestRow] = {}
    last = reader.line_num
    try:
        for values in reader:
            line, last = last + 1, reader.line_num
            if not any(v.strip() for v in values):
                continue
            if len(values) != len(columns):
                errors.add(
                    line,
                    f"{len(values)} fields where the header has {len(columns)} "
                    "(a comma inside a caption that is not in quotes?)",
                )
                continue
            obj = {c: v for c, v in zip(columns, values, strict=True) if c}
            if _unstorable(obj, line, errors):
                continue
            row = _row(obj, line, errors, language=language, licence=licence)
            if row is not None:
                _merge(rows, row, errors)
    except csv.Error as exc:
        errors.add(reader.line_num, f"unreadable CSV ({exc})")
    return list(rows.values())


def _flickr_row(name: str, caption: str, n: int, errors: _Errors, language: str, licence: str):
    file = _file(name.strip(), n, errors)
    cap = _caption(caption, language, n, errors)
    if file is None or cap is None:
        return None
    return ManifestRow(
        line=n,
        file=file,
        captions=[cap],
        source_id=PurePosixPath(file).stem,
        licence=licence,
        optional=True,
    )


def parse_flickr(text: str, *, language: str, licence: str, errors: _Errors) -> list[ManifestRow]:
    lines = text.splitlines()
    rows: dict[str, ManifestRow] = {}
    first = next((i for i, raw in enumerate(lines) if raw.strip()), None)
    as_csv = first is not None and bool(_FLICKR_CSV.match(lines[first]))
    for n, raw in enumerate(lines, start=1):
        if not raw.strip() or (as_csv and n - 1 == first) or _too_long(raw, n, errors):
            continue
        problem = edge.text_problem(raw)
        if problem:
            errors.add(n, f"the line {problem}")
            continue
        if as_csv:
            parts = raw.split("|", 2)
            if len(parts) != 3 or not parts[1].strip().isdigit():
                errors.add(n, "expected “image_name| comment_number| comment”")
                continue
            row = _flickr_row(parts[0], parts[2], n, errors, language, licence)
        else:
            left, tab, caption = raw.partition("\t")
            name, hash_, number = left.strip().rpartition("#")
            if not tab or not hash_ or not number.isdigit():
                errors.add(n, "expected “image.jpg#0<TAB>caption”")
                continue
            row = _flickr_row(name, caption, n, errors, language, licence)
        if row is not None:
            _merge(rows, row, errors)
    return list(rows.values())


def parse_coco(
    text: str, *, language: str, licence: str, errors: _Errors
) -> tuple[list[ManifestRow], int]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        errors.add(exc.lineno, f"not valid JSON ({exc.msg}, column {exc.colno})")
        return [], 0
    if (
        not isinstance(data, dict)
        or not isinstance(data.get("images"), list)
        or not isinstance(data.get("annotations"), list)
    ):
        errors.add(1, "a COCO captions file is an object with “images” and “annotations” lists")
        return [], 0
    licences: dict[Any, str] = {}
    for k, item in enumerate(data.get("licenses") or []):
        if _unstorable(item, f"licenses[{k}]", errors):
            continue
        if isinstance(item, dict) and "id" in item:
            licences[item["id"]] = str(item.get("name") or item.get("url") or "")[:200]
    images: dict[Any, ManifestRow] = {}
    for i, img in enumerate(data["images"]):
        where = f"images[{i}]"
        if _unstorable(img, where, errors):
            continue
        if not isinstance(img, dict) or not isinstance(img.get("id"), int | str):
            errors.add(where, "each image needs an “id” and a “file_name”")
            continue
        file = _file(img.get("file_name"), where, errors)
        if file is None:
            continue
        if img["id"] in images:
            errors.add(where, f"image id {img['id']} is listed twice")
            continue
        source = img.get("coco_url") or img.get("flickr_url") or ""
        images[img["id"]] = ManifestRow(
            line=where,
            file=file,
            captions=[],
            source_id=str(img["id"])[:200],
            licence=licences.get(img.get("license"), "") or licence,
            source=str(source)[:500],
            optional=True,
        )
    for j, ann in enumerate(data["annotations"]):
        where = f"annotations[{j}]"
        if _unstorable(ann, where, errors):
            continue
        if not isinstance(ann, dict):
            errors.add(where, "each annotation is an object with “image_id” and “caption”")
            continue
        row = images.get(ann.get("image_id"))
        if row is None:
            errors.add(where, f"image_id {ann.get('image_id')!r} is not in “images”")
            continue
        cap = _caption(ann.get("caption"), language, where, errors)
        if cap:
            row.captions.append(cap)
    rows = [r for r in images.values() if r.captions]
    return rows, len(images) - len(rows)


def detect_format(text: str, filename: str) -> str:
    ext = PurePosixPath(filename or "").suffix.lower()
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    if ext in (".jsonl", ".ndjson"):
        return "jsonl"
    if ext == ".json" or (not ext and first.startswith("{")):
        try:
            json.loads(first)
        except ValueError:
            return "coco"  # a pretty-printed or single-object file
        return "coco" if '"images"' in first and '"annotations"' in first else "jsonl"
    if _FLICKR_TOKEN.match(first) or _FLICKR_CSV.match(first):
        return "flickr"
    return "csv"


def parse_rows(
    *, content: bytes, filename: str, fmt: str, language: str, licence: str, errors: _Errors
) -> Manifest:
    """The good rows of a manifest; bad lines go to ``errors`` (undecodable text raises)."""
    if fmt not in FORMATS:
        raise Invalid(f"Unknown format “{fmt}”; choose one of {', '.join(sorted(FORMATS))}.")
    text = _decode(content, filename)
    if fmt == "auto":
        fmt = detect_format(text, filename)
    uncaptioned = 0
    if fmt == "jsonl":
        rows = parse_jsonl(text, language=language, licence=licence, errors=errors)
    elif fmt == "csv":
        rows = parse_csv(text, language=language, licence=licence, errors=errors)
    elif fmt == "flickr":
        rows = parse_flickr(text, language=language, licence=licence, errors=errors)
    else:
        rows, uncaptioned = parse_coco(text, language=language, licence=licence, errors=errors)
    return Manifest(format=fmt, rows=rows, uncaptioned=uncaptioned)


def parse_manifest(
    *, content: bytes, filename: str, fmt: str = "auto", language: str = "en", licence: str = ""
) -> Manifest:
    """Every row of a manifest or caption file, or Invalid listing every bad line."""
    errors = _Errors()
    manifest = parse_rows(
        content=content,
        filename=filename,
        fmt=fmt,
        language=language,
        licence=licence,
        errors=errors,
    )
    errors.raise_if_any(filename or "the manifest")
    if not manifest.rows:
        raise Invalid(f"{filename or 'The manifest'} has no captioned image; nothing was imported.")
    return manifest


# --------------------------------------------------------------------------------------------
# sources: a folder, a zip or tar archive, or files in memory
# --------------------------------------------------------------------------------------------
class Member(NamedTuple):
    name: str
    data: bytes | None
    error: str = ""


class Source:
    """Files of an import, by safe relative POSIX name; reads are bounded by ``limit``."""

    label = ""

    def names(self) -> list[str]:
        raise NotImplementedError

    def read_many(self, names: Iterable[str], limit: int) -> Iterator[Member]:
        raise NotImplementedError

    def read(self, name: str, limit: int) -> Member:
        return next(iter(self.read_many([name], limit)))

    def close(self) -> None:
        return None


def _too_large(size: int, limit: int) -> str:
    return f"the file is {size / 1024**2:.1f} MB; the limit is {limit / 1024**2:.1f} MB"


class MemorySource(Source):
    """Files held in a dict (the demo corpus, tests)."""

    def __init__(self, files: dict[str, bytes], label: str = "upload"):
        self.label = label
        self.files = {}
        for name, data in files.items():
            safe = safe_relpath(name)
            if safe is None:
                raise Invalid(f"{label}: “{name}” is an unsafe path; nothing was imported.")
            self.files[safe] = data

    def names(self) -> list[str]:
        return list(self.files)

    def read_many(self, names: Iterable[str], limit: int) -> Iterator[Member]:
        for name in names:
            data = self.files[name]
            if len(data) > limit:
                yield Member(name, None, _too_large(len(data), limit))
            else:
                yield Member(name, data)


class FolderSource(Source):
    """A folder on the server (the management command). Links that lead outside are refused."""

    def __init__(self, root: str | Path, label: str = ""):
        self.root = Path(root).resolve()
        self.label = label or str(root)
        if not self.root.is_dir():
            raise Invalid(f"{self.label} is not a folder.")
        self._names: list[str] = []
        count = 0
        for dirpath, _dirs, files in os.walk(self.root, followlinks=False):
            for fname in files:
                count += 1
                if count > max_archive_members():
                    raise Invalid(f"{self.label} has more than {max_archive_members():,} files.")
                path = Path(dirpath) / fname
                if not self._inside(path):
                    continue
                self._names.append(path.relative_to(self.root).as_posix())

    def _inside(self, path: Path) -> bool:
        try:
            return path.resolve().is_relative_to(self.root)
        except OSError:
            return False

    def names(self) -> list[str]:
        return list(self._names)

    def read_many(self, names: Iterable[str], limit: int) -> Iterator[Member]:
        for name in names:
            path = self.root / name
            if safe_relpath(name) is None or not self._inside(path):
                yield Member(name, None, "the path leads outside the folder")
                continue
            try:
                size = path.stat().st_size
                if size > limit:
                    yield Member(name, None, _too_large(size, limit))
                    continue
                with path.open("rb") as handle:
                    yield Member(name, handle.read(limit + 1))
            except OSError as exc:
                yield Member(name, None, f"cannot be read ({exc.strerror or exc})")


class ZipSource(Source):
    def __init__(self, file: str | Path | IO[bytes], label: str):
        self.label = label
        try:
            self.zf = zipfile.ZipFile(file)
            infos = self.zf.infolist()
        except (zipfile.BadZipFile, OSError, EOFError, ValueError) as exc:
            raise Invalid(f"{label} is not a readable zip archive ({exc}).") from None
        if len(infos) > max_archive_members():
            raise Invalid(f"{label} has more than {max_archive_members():,} members.")
        self.infos: dict[str, zipfile.ZipInfo] = {}
        total = 0
        for info in infos:
            if info.is_dir():
                continue
            safe = safe_relpath(info.filename)
            if safe is None:
                raise Invalid(
                    f"{label}: member “{info.filename}” has an unsafe path (absolute or with "
                    "“..”); nothing was imported."
                )
            if stat.S_ISLNK(info.external_attr >> 16):
                raise Invalid(f"{label}: member “{info.filename}” is a link; links are refused.")
            if info.flag_bits & 0x1:
                raise Invalid(f"{label}: member “{info.filename}” is encrypted.")
            total += info.file_size
            # Images are compressed already: one that shrinks 200-fold is a bomb. Caption text
            # shrinks that much honestly (a long line of one letter); its read is bounded by
            # the manifest limit, and the line by BLINDSPOT_MAX_LINE_BYTES.
            ratio = info.file_size / max(info.compress_size, 1) if _is_image_name(safe) else 0
            if total > max_unpacked_bytes() or (info.file_size > 2**20 and ratio > 200):
                raise Invalid(
                    f"{label} unpacks to more than allowed (a zip bomb?); nothing was imported."
                )
            self.infos.setdefault(safe, info)

    def names(self) -> list[str]:
        return list(self.infos)

    def read_many(self, names: Iterable[str], limit: int) -> Iterator[Member]:
        for name in names:
            info = self.infos[name]
            if info.file_size > limit:
                yield Member(name, None, _too_large(info.file_size, limit))
                continue
            try:
                with self.zf.open(info) as handle:
                    data = handle.read(limit + 1)
            except (zipfile.BadZipFile, OSError, EOFError, ValueError) as exc:
                yield Member(name, None, f"cannot be unpacked ({exc})")
                continue
            if len(data) > limit:
                yield Member(name, None, _too_large(len(data), limit))
            else:
                yield Member(name, data)

    def close(self) -> None:
        self.zf.close()


class TarSource(Source):
    """tar, tar.gz, tar.bz2, tar.xz; members are read in archive order (one pass over gzip)."""

    def __init__(self, file: str | Path | IO[bytes], label: str):
        self.label = label
        try:
            if isinstance(file, str | Path):
                self.tf = tarfile.open(file, mode="r:*")
            else:
                self.tf = tarfile.open(fileobj=file, mode="r:*")
        except (tarfile.TarError, OSError, EOFError) as exc:
            raise Invalid(f"{label} is not a readable tar archive ({exc}).") from None
        self.infos: dict[str, tarfile.TarInfo] = {}
        total = count = 0
        try:
            for info in self.tf:
                count += 1
                if count > max_archive_members():
                    raise Invalid(f"{label} has more than {max_archive_members():,} members.")
                total += max(info.size, 0)
                if total > max_unpacked_bytes():
                    raise Invalid(
                        f"{label} unpacks to more than allowed (a tar bomb?); nothing was imported."
                    )
                if info.isdir():
                    continue
                if info.issym() or info.islnk():
                    raise Invalid(f"{label}: member “{info.name}” is a link; links are refused.")
                if not info.isreg():
                    raise Invalid(f"{label}: member “{info.name}” is not a regular file.")
                safe = safe_relpath(info.name)
                if safe is None:
                    raise Invalid(
                        f"{label}: member “{info.name}” has an unsafe path (absolute or with "
                        "“..”); nothing was imported."
                    )
                self.infos.setdefault(safe, info)
        except (tarfile.TarError, OSError, EOFError) as exc:
            raise Invalid(f"{label} is damaged or truncated ({exc}).") from None

    def names(self) -> list[str]:
        return list(self.infos)

    def read_many(self, names: Iterable[str], limit: int) -> Iterator[Member]:
        # In archive order: going back in a gzip stream means decompressing from the start.
        for name in sorted(names, key=lambda n: self.infos[n].offset_data):
            info = self.infos[name]
            if info.size > limit:
                yield Member(name, None, _too_large(info.size, limit))
                continue
            try:
                handle = self.tf.extractfile(info)
                data = handle.read(limit + 1) if handle else b""
            except (tarfile.TarError, OSError, EOFError) as exc:
                yield Member(name, None, f"cannot be unpacked ({exc})")
                continue
            yield Member(name, data)

    def close(self) -> None:
        self.tf.close()


def open_source(file: str | Path | IO[bytes], *, label: str = "") -> Source:
    """A folder, or a zip/tar archive given as a path or a seekable binary file."""
    if isinstance(file, str | Path):
        label = label or Path(file).name
        if Path(file).is_dir():
            return FolderSource(file, label)
        if zipfile.is_zipfile(file):
            return ZipSource(file, label)
        try:
            is_tar = tarfile.is_tarfile(file)
        except Exception:  # noqa: BLE001 - a damaged compressed stream is just "not a tar"
            is_tar = False
        if is_tar:
            return TarSource(file, label)
    else:
        label = label or "upload"
        file.seek(0)
        if zipfile.is_zipfile(file):
            file.seek(0)
            return ZipSource(file, label)
        file.seek(0)
        try:
            with tarfile.open(fileobj=file, mode="r:*") as probe:
                probe.next()
            is_tar = True
        except Exception:  # noqa: BLE001 - a damaged compressed stream is just "not a tar"
            is_tar = False
        file.seek(0)
        if is_tar:
            return TarSource(file, label)
    raise Invalid(f"{label} is not a zip or tar archive (.zip, .tar, .tar.gz, .tgz).")


class _Index:
    """Finds a manifest's file among the source's names, also below a top-level folder."""

    def __init__(self, names: Iterable[str]):
        self.by_suffix: dict[str, list[str]] = defaultdict(list)
        for name in names:
            parts = name.split("/")
            for k in range(len(parts)):
                self.by_suffix["/".join(parts[k:])].append(name)

    def resolve(self, file: str) -> tuple[str | None, str]:
        hits = self.by_suffix.get(file, [])
        if file in hits or len(hits) == 1:
            return (file if file in hits else hits[0]), ""
        if hits:
            return None, (
                f"“{file}” matches several files ({hits[0]}, {hits[1]}); give its full path"
            )
        return None, ""


def find_manifest(source: Source) -> str:
    names = [n for n in source.names() if not _is_junk(n)]
    named = [
        n
        for n in names
        if PurePosixPath(n).name.lower() in MANIFEST_NAMES
        or re.match(r"^captions_\w+\.json$", PurePosixPath(n).name)
    ]
    candidates = named or [n for n in names if PurePosixPath(n).suffix.lower() in MANIFEST_SUFFIXES]
    if not candidates:
        raise Invalid(
            f"No manifest in {source.label}: add manifest.jsonl or manifest.csv next to the "
            "images, or upload the manifest or caption file separately."
        )
    depth = min(n.count("/") for n in candidates)
    top = sorted(n for n in candidates if n.count("/") == depth)
    if len(top) > 1:
        raise Invalid(
            f"Several caption files in {source.label} ({', '.join(top[:4])}); upload the one "
            "to use as the manifest."
        )
    return top[0]


# --------------------------------------------------------------------------------------------
# plan and import
# --------------------------------------------------------------------------------------------
@dataclass
class ImportPlan:
    format: str
    manifest_name: str
    rows: list[ManifestRow]
    members: list[str]  # the source's name of each row's image
    missing: int = 0
    uncaptioned: int = 0
    ignored: int = 0
    lines_of: dict[str, list] = field(default_factory=dict)


def corpus_plan(
    *,
    source: Source,
    manifest: bytes | None = None,
    manifest_name: str = "",
    fmt: str = "auto",
    language: str = "en",
    licence: str = "",
) -> ImportPlan:
    """Parse the manifest and find every image it names; Invalid lists every problem."""
    try:
        language = language_normalise(language)
    except ValueError as exc:
        raise Invalid(f"Default language: {exc}.") from None
    if manifest is None:
        manifest_name = find_manifest(source)
        member = source.read(manifest_name, max_manifest_bytes())
        if member.data is None:
            raise Invalid(f"{manifest_name}: {member.error}.")
        manifest = member.data
    elif len(manifest) > max_manifest_bytes():
        raise Invalid(
            f"{manifest_name or 'The manifest'}: {_too_large(len(manifest), max_manifest_bytes())}."
        )
    # Bad lines and files the source lacks are reported together, in line order.
    errors = _Errors()
    parsed = parse_rows(
        content=manifest,
        filename=manifest_name,
        fmt=fmt,
        language=language,
        licence=licence,
        errors=errors,
    )
    images = [n for n in source.names() if not _is_junk(n) and n != manifest_name]
    index = _Index(images)
    rows: list[ManifestRow] = []
    members: list[str] = []
    lines_of: dict[str, list] = defaultdict(list)
    missing = 0
    for row in parsed.rows:
        member, problem = index.resolve(row.file)
        if problem:
            errors.add(row.line, problem)
        elif member is None:
            if row.optional:
                missing += 1
            else:
                errors.add(row.line, f"“{row.file}” is not in {source.label}")
        else:
            rows.append(row)
            members.append(member)
            lines_of[member].append(row.line)
    errors.raise_if_any(manifest_name or "the manifest", in_order=True)
    if not parsed.rows:
        raise Invalid(
            f"{manifest_name or 'The manifest'} has no captioned image; nothing was imported."
        )
    if not rows:
        raise Invalid(
            f"None of the {len(parsed.rows)} images named by {manifest_name or 'the manifest'} "
            f"is in {source.label}; nothing was imported."
        )
    ignored = sum(1 for n in images if _is_image_name(n) and n not in lines_of)
    return ImportPlan(
        format=parsed.format,
        manifest_name=manifest_name,
        rows=rows,
        members=members,
        missing=missing,
        uncaptioned=parsed.uncaptioned,
        ignored=ignored,
        lines_of=dict(lines_of),
    )


def corpus_slug(*, project: Project, name: str, slug: str = "") -> str:
    """The slug a new corpus would get; Invalid when the name is empty or already taken."""
    name = (name or "").strip()
    if not name:
        raise Invalid("Give the corpus a name.")
    if len(name) > 200:
        raise Invalid("The corpus name is longer than 200 characters.")
    slug = (
        slugify(slug or name, allow_unicode=False)[:80].strip("-")
        or f"corpus-{uuid.uuid4().hex[:8]}"
    )
    taken = Corpus.objects.filter(project=project, slug=slug).first()
    if taken is not None:
        raise Invalid(
            f"This project already has a corpus “{taken.name}” ({slug}); choose another name."
        )
    return slug


class _Progress:
    def __init__(self, job_id: int | None, total: int):
        self.job_id, self.total, self.last = job_id, total, 0.0

    def __call__(self, done: int, message: str, force: bool = False) -> None:
        if self.job_id is None:
            return
        now = time.monotonic()
        if force or done % PROGRESS_EVERY == 0 or now - self.last > 1.0:
            self.last = now
            job_progress(job_id=self.job_id, done=done, total=self.total, message=message)


def corpus_import(
    *,
    project: Project,
    name: str,
    source: Source,
    manifest: bytes | None = None,
    manifest_name: str = "",
    fmt: str = "auto",
    language: str = "en",
    licence: str = "",
    source_url: str = "",
    description: str = "",
    slug: str = "",
    created_by=None,
    job_id: int | None = None,
    thumbnails: str = "job",
) -> dict:
    """Import a corpus all or nothing; returns counts. ``thumbnails``: "job", "inline" or "none".

    Images are decoded and stored first, outside the transaction (so progress is visible and
    no transaction stays open for minutes); then every row is written in one transaction.
    On any failure the blobs this import wrote, and no row references, are deleted.
    """
    slug = corpus_slug(project=project, name=name, slug=slug)
    plan = corpus_plan(
        source=source,
        manifest=manifest,
        manifest_name=manifest_name,
        fmt=fmt,
        language=language,
        licence=licence,
    )
    wanted = sorted(plan.lines_of)
    progress = _Progress(job_id, total=len(wanted) + 1)
    progress(0, f"Reading {len(wanted)} images", force=True)
    first_row: dict[str, ManifestRow] = {}
    for row, member in zip(plan.rows, plan.members, strict=True):
        first_row.setdefault(member, row)
    errors = _Errors()
    entries: dict[str, assets.ImageEntry] = {}
    written: list[str] = []
    limit = assets.max_image_bytes()
    try:
        for done, member in enumerate(source.read_many(wanted, limit), start=1):
            line = plan.lines_of[member.name][0]
            if member.data is None:
                errors.add(line, f"{member.name}: {member.error}")
            else:
                try:
                    norm = assets.image_normalise(data=member.data, name=member.name)
                except assets.ImageRejected as exc:
                    errors.add(line, str(exc))
                else:
                    # After the first error nothing more is stored: the rest is only checked.
                    if not errors.count and assets.blob_save(norm.path, norm.data):
                        written.append(norm.path)
                    row = first_row[member.name]
                    entries[member.name] = assets.ImageEntry.of(
                        norm,
                        original_name=member.name,
                        source=row.source or source_url,
                        licence=row.licence,
                        attribution=row.attribution,
                    )
            progress(done, f"Checked {done} of {len(wanted)} images")
        errors.raise_if_any(f"the images of {source.label}")
        progress(len(wanted), "Writing samples and captions", force=True)
        with transaction.atomic():
            corpus, counts = _write(
                project=project,
                name=name.strip(),
                slug=slug,
                description=description,
                source_url=source_url,
                licence=licence,
                plan=plan,
                entries=entries,
                created_by=created_by,
            )
            image_ids = counts.pop("image_ids")
            if thumbnails == "job":
                # The Job row is written with the import; Celery is told once it commits.
                assets.thumbnails_start(image_ids=image_ids, project=project, created_by=created_by)
    except BaseException:
        assets.blobs_discard(written)
        raise
    if thumbnails == "inline":
        assets.thumbnails_make(image_ids=image_ids)
    progress(len(wanted) + 1, f"Imported {counts['samples']} samples", force=True)
    return {
        "corpus_id": corpus.pk,
        "format": plan.format,
        "manifest": plan.manifest_name,
        **counts,
        "skipped_missing_images": plan.missing,
        "skipped_uncaptioned": plan.uncaptioned,
        "ignored_files": plan.ignored,
    }


def _write(
    *,
    project: Project,
    name: str,
    slug: str,
    description: str,
    source_url: str,
    licence: str,
    plan: ImportPlan,
    entries: dict[str, assets.ImageEntry],
    created_by,
) -> tuple[Corpus, dict]:
    # In manifest order: an image named twice takes the metadata of its first row.
    by_sha, new = assets.images_register(
        entries=[entries[m] for m in dict.fromkeys(plan.members)], created_by=created_by
    )
    try:
        with transaction.atomic():
            corpus = Corpus.objects.create(
                project=project,
                name=name,
                slug=slug,
                description=description,
                source=source_url[:500],
                licence=licence[:200],
                created_by=created_by,
            )
    except IntegrityError:
        raise Invalid(f"This project already has a corpus “{slug}”; choose another name.") from None
    samples = [
        Sample(
            corpus=corpus,
            image=by_sha[entries[member].sha256],
            source_id=row.source_id,
            licence=row.licence,
            position=i,
        )
        for i, (row, member) in enumerate(zip(plan.rows, plan.members, strict=True))
    ]
    Sample.objects.bulk_create(samples, batch_size=1000)
    captions = [
        Caption(sample=sample, text=cap.text, language=cap.language, position=j)
        for sample, row in zip(samples, plan.rows, strict=True)
        for j, cap in enumerate(row.captions)
    ]
    Caption.objects.bulk_create(captions, batch_size=2000)
    Corpus.objects.filter(pk=corpus.pk).update(
        sample_count=len(samples), caption_count=len(captions)
    )
    corpus.sample_count, corpus.caption_count = len(samples), len(captions)
    image_ids = sorted({img.pk for img in by_sha.values()})
    return corpus, {
        "samples": len(samples),
        "captions": len(captions),
        "images_new": len(new),
        "images_reused": len(by_sha) - len(new),
        "image_ids": image_ids,
    }


# --------------------------------------------------------------------------------------------
# the web upload: validated at the edge, imported in a job
# --------------------------------------------------------------------------------------------
def _upload_name(upload) -> str:
    return PurePosixPath(str(getattr(upload, "name", "") or "upload").replace("\\", "/")).name


def _store_upload(upload, folder: str) -> str:
    upload.seek(0)
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", _upload_name(upload))[-100:] or "upload"
    return default_storage.save(f"{folder}/{safe}", upload)


def uploads_delete(names: Iterable[str]) -> None:
    """Delete stored uploads, and their folder on local disk once it is empty."""
    folders = set()
    for name in names:
        if name:
            default_storage.delete(name)
            folders.add(str(PurePosixPath(name).parent))
    for folder in folders:
        with contextlib.suppress(NotImplementedError, OSError):
            os.rmdir(default_storage.path(folder))  # only an empty folder goes


@contextlib.contextmanager
def uploads_kept_for_retry(names: Iterable[str]) -> Iterator[None]:
    """Around an import job: its stored uploads are deleted when it succeeds or is refused
    (``Invalid``: the same files would be refused again); any other failure (a lost database
    connection, a stopped worker) keeps them, so the job page's Retry can run it again."""
    names = [n for n in names if n]
    missing = [n for n in names if not default_storage.exists(n)]
    if missing:
        raise Invalid(
            f"The uploaded file {PurePosixPath(missing[0]).name} is no longer stored (a refused "
            "import deletes its upload); upload it again."
        )
    try:
        yield
    except Invalid:
        uploads_delete(names)
        raise
    uploads_delete(names)


@contextlib.contextmanager
def uploads_deleted_on_error(names: list[str]) -> Iterator[list[str]]:
    """Around storing uploads and enqueueing their job: append each stored name to the list;
    if anything fails before the job exists, they are deleted again."""
    try:
        yield names
    except BaseException:
        uploads_delete(names)
        raise


def corpus_import_start(
    *,
    project: Project,
    name: str,
    archive,
    manifest=None,
    fmt: str = "auto",
    language: str = "en",
    licence: str = "",
    source: str = "",
    description: str = "",
    created_by=None,
):
    """Check an uploaded archive (and manifest) now, with line-numbered errors, then import it
    in the ``curation.import_corpus`` job. Returns (job, number of samples)."""
    if archive is None:
        raise Invalid("Choose an archive (.zip, .tar, .tar.gz) with the images.")
    if fmt not in FORMATS:
        raise Invalid(f"Unknown format “{fmt}”.")
    if archive.size > max_upload_bytes():
        raise Invalid(f"{_upload_name(archive)}: {_too_large(archive.size, max_upload_bytes())}.")
    slug = corpus_slug(project=project, name=name)
    manifest_bytes = None
    manifest_name = ""
    if manifest is not None:
        manifest_name = _upload_name(manifest)
        if manifest.size > max_manifest_bytes():
            raise Invalid(f"{manifest_name}: {_too_large(manifest.size, max_manifest_bytes())}.")
        manifest.seek(0)
        manifest_bytes = manifest.read()
    archive.seek(0)
    src = open_source(archive.file, label=_upload_name(archive))
    try:
        plan = corpus_plan(
            source=src,
            manifest=manifest_bytes,
            manifest_name=manifest_name,
            fmt=fmt,
            language=language,
            licence=licence,
        )
    finally:
        src.close()
    folder = f"curation/uploads/{uuid.uuid4().hex}"
    with uploads_deleted_on_error([]) as stored:
        stored.append(_store_upload(archive, folder))
        if manifest is not None:
            stored.append(_store_upload(manifest, folder))
        params = {
            "project_id": project.pk,
            "name": name.strip(),
            "slug": slug,
            "archive": stored[0],
            "archive_name": _upload_name(archive),
            "manifest": stored[1] if manifest is not None else "",
            "manifest_name": manifest_name,
            "format": plan.format,
            "language": language_normalise(language),
            "licence": licence,
            "source": source,
            "description": description,
        }
        job = job_enqueue(
            kind=IMPORT_JOB,
            params=params,
            created_by=created_by,
            project=project,
            total=len(set(plan.members)) + 1,
        )
    return job, len(plan.rows)


@contextlib.contextmanager
def _local_path(name: str) -> Iterator[str]:
    """A local file path for a stored upload (a temporary copy when storage is remote)."""
    try:
        yield default_storage.path(name)
        return
    except NotImplementedError:
        pass
    suffix = "".join(PurePosixPath(name).suffixes)[-16:]
    with tempfile.NamedTemporaryFile(suffix=suffix) as tmp:
        with default_storage.open(name, "rb") as handle:
            shutil.copyfileobj(handle, tmp)
        tmp.flush()
        yield tmp.name


def corpus_import_run(*, params: dict, created_by=None, job_id: int | None = None) -> dict:
    """The body of the import job: re-check and import the stored upload, then delete it.

    A refused import deletes the upload too; one that failed for another reason (a stopped
    worker, a lost connection) keeps it so the job page's Retry can run it again.
    """
    project = Project.objects.get(pk=params["project_id"])
    with uploads_kept_for_retry([params.get("archive", ""), params.get("manifest", "")]):
        return _import_stored(project, params, created_by=created_by, job_id=job_id)


def _import_stored(project: Project, params: dict, *, created_by, job_id: int | None) -> dict:
    manifest = None
    if params.get("manifest"):
        with default_storage.open(params["manifest"], "rb") as handle:
            manifest = handle.read()
    with _local_path(params["archive"]) as path:
        src = open_source(path, label=params.get("archive_name") or "archive")
        try:
            return corpus_import(
                project=project,
                name=params["name"],
                slug=params.get("slug", ""),
                source=src,
                manifest=manifest,
                manifest_name=params.get("manifest_name", ""),
                fmt=params.get("format", "auto"),
                language=params.get("language", "en"),
                licence=params.get("licence", ""),
                source_url=params.get("source", ""),
                description=params.get("description", ""),
                created_by=created_by,
                job_id=job_id,
            )
        finally:
            src.close()
