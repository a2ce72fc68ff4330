"""A new model's responses for VisIT-Bench's living leaderboard (visit-bench.txt Sec. 1, App. F):
CSV or JSONL rows naming the instance by ``instance_id`` (the version's item id) or by ``image``
+ ``instruction`` (as in the published files), parsed and matched to a version's items with
every problem reported by line. The curation recipe imports them as a run and has them judged."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from annotator.platform.errors import Invalid, LineErrors
from evaluation.importers import read_csv, read_jsonl

from .parse import output_column, visit_key

_ID_KEYS = ("instance_id", "item_id", "id")
_IMAGE_KEYS = ("image", "image_url")
_RESPONSE_KEYS = ("response", "prediction", "output", "model_output")
MAX_RESPONSE = 20000


@dataclass
class SubmissionRow:
    line: int
    instance_id: str = ""
    image: str = ""
    instruction: str = ""
    response: str = ""


def _first_key(obj: dict, keys: Iterable[str]) -> str | None:
    return next((k for k in keys if k in obj), None)


def submission_format(content: str, filename: str) -> str:
    name = filename.lower()
    if name.endswith((".jsonl", ".ndjson", ".json")):
        return "jsonl"
    if name.endswith(".csv"):
        return "csv"
    return "jsonl" if content.lstrip().startswith(("{", "[")) else "csv"


def _records(content: str, filename: str, errors: LineErrors) -> tuple[list, str]:
    """The file's (line, record) pairs and, for a CSV, its response column."""
    if submission_format(content, filename) == "jsonl":
        return read_jsonl(content, errors), ""
    table_errors = LineErrors()  # after the missing columns, as the page lists them
    header, records = read_csv(content, table_errors)
    columns = set(header)
    response_col = _first_key(dict.fromkeys(header), _RESPONSE_KEYS) or (
        output_column(header) or ""
    )
    if header:
        has_id = bool(columns & set(_ID_KEYS))
        has_pair = bool(columns & set(_IMAGE_KEYS)) and "instruction" in columns
        missing = []
        if not (has_id or has_pair):
            missing.append("instance_id (or image and instruction)")
        if not response_col:
            missing.append("response")
        if missing:
            errors.add(1, f"missing columns: {', '.join(missing)}")
    for problem in table_errors.rows:
        errors.add(problem["line"], problem["error"])
    return records, response_col


def _row(line: int, obj: dict, response_col: str, errors: LineErrors) -> SubmissionRow | None:
    row = SubmissionRow(line=line)
    id_key = _first_key(obj, _ID_KEYS)
    image_key = _first_key(obj, _IMAGE_KEYS)
    if id_key and str(obj[id_key] or "").strip():
        row.instance_id = str(obj[id_key]).strip()
    elif image_key and obj.get("instruction"):
        row.image = str(obj[image_key] or "").strip()
        row.instruction = str(obj["instruction"])
    else:
        return errors.add(line, "missing field instance_id (or image and instruction)")
    key = response_col or _first_key(obj, _RESPONSE_KEYS)
    value = obj.get(key) if key else None
    if value is None:
        return errors.add(line, "missing field response")
    if not isinstance(value, str):
        return errors.add(line, f"response must be text, got {type(value).__name__}")
    if len(value) > MAX_RESPONSE:
        return errors.add(line, f"response is longer than {MAX_RESPONSE} characters")
    row.response = value
    return row


def parse_submission(content: str, filename: str = "") -> list[SubmissionRow]:
    """A new model's responses: the text in ``response`` (or ``prediction`` / ``output``, or the
    one extra column of the published model-output layout). Every problem comes back with its
    line; any problem stores nothing."""
    errors = LineErrors()
    records, response_col = _records(content, filename, errors)
    errors.raise_if_any("The submission has errors; nothing was stored.{more}")
    rows = [_row(line, obj, response_col, errors) for line, obj in records]
    errors.raise_if_any("The submission has errors; nothing was stored.{more}")
    if not rows:
        raise Invalid("The file holds no responses.", [{"line": 0, "error": "no rows"}])
    return [r for r in rows if r is not None]


def match_submission(version, rows: Sequence[SubmissionRow]) -> list[tuple[SubmissionRow, str]]:
    """Each row's item id in ``version``: unknown instances and duplicate rows are line errors.
    A repeated (image, instruction) maps to the version's repeated instance (``key~2``) as the
    published files do, and is a duplicate only when the version holds it fewer times."""
    item_ids = set(version.items.values_list("item_id", flat=True))
    errors = LineErrors()
    first: dict[str, int] = {}
    seen: Counter[str] = Counter()
    out = []
    for row in rows:
        if row.instance_id:
            item_id = row.instance_id
            if item_id not in item_ids:
                errors.add(row.line, f"unknown instance {item_id!r} (not in {version.label})")
                continue
        else:
            key = visit_key(row.image, row.instruction)
            seen[key] += 1
            item_id = key if seen[key] == 1 else f"{key}~{seen[key]}"
            if item_id not in item_ids:
                if key in item_ids:
                    where = first.get(key, "?")
                    problem = (
                        f"duplicate row: this image and instruction are already on line {where}"
                    )
                else:
                    problem = "unknown instance: image and instruction match no instance of "
                    problem += version.label
                errors.add(row.line, problem)
                continue
        if item_id in first:
            problem = f"duplicate row for instance {item_id!r} (first on line {first[item_id]})"
            errors.add(row.line, problem)
            continue
        first[item_id] = row.line
        out.append((row, item_id))
    errors.raise_if_any("The submission does not match this version; nothing was stored.{more}")
    return out
