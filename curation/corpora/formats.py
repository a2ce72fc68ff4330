"""The manifest formats a corpus import reads (``fmt``; "auto" detects from the file name and
the first line): JSON Lines and CSV manifests, COCO captions JSON, Flickr30K/8K caption files.

Each parser returns the good rows and puts every bad line into ``errors``; lines naming one
sample (CSV, Flickr) are merged into one row with several captions. COCO and Flickr rows are
``optional``: those files describe whole datasets, so an image the archive lacks is skipped.
"""

from __future__ import annotations

import csv
import io
import re
from pathlib import PurePosixPath
from typing import Any

from annotator.platform import edge, structured
from annotator.platform.errors import Invalid, LineErrors

from .manifest_rows import (
    CAPTION_KEYS,
    FILE_KEYS,
    Manifest,
    ManifestRow,
    Reading,
    caption_row,
    decode,
    file_field,
    record_row,
    too_long,
    unstorable,
)

FORMAT_CHOICES = [
    ("auto", "Detect from the file"),
    ("jsonl", "Manifest, JSON Lines"),
    ("csv", "Manifest, CSV"),
    ("coco", "COCO captions JSON"),
    ("flickr", "Flickr30K / Flickr8K captions (.token or results.csv)"),
]
FORMATS = {key for key, _label in FORMAT_CHOICES}

_FLICKR_TOKEN = re.compile(r"^[^\t#]+#\d+\t")
_FLICKR_CSV = re.compile(r"^\s*image_name\s*\|\s*comment_number\s*\|\s*comment\s*$", re.I)


def parse_jsonl(text: str, *, language: str, licence: str, errors: LineErrors) -> list[ManifestRow]:
    rows: list[ManifestRow] = []
    seen: dict[str, int | str] = {}
    for n, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip() or too_long(raw, n, errors):
            continue
        try:
            obj = structured.loads(raw)
        except structured.StructuredTextError as exc:
            errors.add(n, exc.message)
            continue
        if not isinstance(obj, dict):
            errors.add(n, 'expected a JSON object such as {"file": "a.jpg", "caption": "…"}')
            continue
        if unstorable(obj, n, errors):
            continue
        row = record_row(obj, n, errors, language=language, licence=licence)
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


def _merge(rows: dict[str, ManifestRow], row: ManifestRow, errors: LineErrors) -> None:
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


def parse_csv(text: str, *, language: str, licence: str, errors: LineErrors) -> list[ManifestRow]:
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
            if unstorable(obj, line, errors):
                continue
            row = record_row(obj, line, errors, language=language, licence=licence)
            if row is not None:
                _merge(rows, row, errors)
    except csv.Error as exc:
        errors.add(reader.line_num, f"unreadable CSV ({exc})")
    return list(rows.values())


def _flickr_row(name: str, caption: str, n: int, errors: LineErrors, language: str, licence: str):
    file = file_field(name.strip(), n, errors)
    cap = caption_row(caption, language, n, errors)
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


def parse_flickr(
    text: str, *, language: str, licence: str, errors: LineErrors
) -> list[ManifestRow]:
    lines = text.splitlines()
    rows: dict[str, ManifestRow] = {}
    first = next((i for i, raw in enumerate(lines) if raw.strip()), None)
    as_csv = first is not None and bool(_FLICKR_CSV.match(lines[first]))
    for n, raw in enumerate(lines, start=1):
        if not raw.strip() or (as_csv and n - 1 == first) or too_long(raw, n, errors):
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
    text: str, *, language: str, licence: str, errors: LineErrors
) -> tuple[list[ManifestRow], int]:
    try:
        data = structured.loads(text)
    except structured.StructuredTextError as exc:
        errors.add(exc.line or 1, exc.message)
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
        if unstorable(item, f"licenses[{k}]", errors):
            continue
        if isinstance(item, dict) and "id" in item:
            licences[item["id"]] = str(item.get("name") or item.get("url") or "")[:200]
    images: dict[Any, ManifestRow] = {}
    for i, img in enumerate(data["images"]):
        where = f"images[{i}]"
        if unstorable(img, where, errors):
            continue
        if not isinstance(img, dict) or not isinstance(img.get("id"), int | str):
            errors.add(where, "each image needs an “id” and a “file_name”")
            continue
        file = file_field(img.get("file_name"), where, errors)
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
        if unstorable(ann, where, errors):
            continue
        if not isinstance(ann, dict):
            errors.add(where, "each annotation is an object with “image_id” and “caption”")
            continue
        row = images.get(ann.get("image_id"))
        if row is None:
            errors.add(where, f"image_id {ann.get('image_id')!r} is not in “images”")
            continue
        cap = caption_row(ann.get("caption"), language, where, errors)
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
            structured.loads(first)
        except structured.StructuredTextError:
            return "coco"  # a pretty-printed or single-object file
        return "coco" if '"images"' in first and '"annotations"' in first else "jsonl"
    if _FLICKR_TOKEN.match(first) or _FLICKR_CSV.match(first):
        return "flickr"
    return "csv"


def parse_rows(*, content: bytes, filename: str, reading: Reading, errors: LineErrors) -> Manifest:
    """The good rows of a manifest; bad lines go to ``errors`` (undecodable text raises)."""
    fmt = reading.fmt
    if fmt not in FORMATS:
        raise Invalid(f"Unknown format “{fmt}”; choose one of {', '.join(sorted(FORMATS))}.")
    text = decode(content, filename)
    if fmt == "auto":
        fmt = detect_format(text, filename)
    meta = {"language": reading.language, "licence": reading.licence, "errors": errors}
    uncaptioned = 0
    if fmt == "jsonl":
        rows = parse_jsonl(text, **meta)
    elif fmt == "csv":
        rows = parse_csv(text, **meta)
    elif fmt == "flickr":
        rows = parse_flickr(text, **meta)
    else:
        rows, uncaptioned = parse_coco(text, **meta)
    return Manifest(format=fmt, rows=rows, uncaptioned=uncaptioned)
