"""Reading benchmark files into item and prediction rows: the generic readers and dispatch.

No database access here: parsers turn text into rows and collect every problem with its line
number, so the edge can refuse a file synchronously and a job can re-validate before writing.
Each family's own layout is parsed in ``evaluation/families/<key>/parse.py``, reached through
the registry. Matching predictions to a version's items happens in ``services`` (it needs the
database).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable
from typing import Any

from annotator.platform import edge, structured
from annotator.platform.errors import Invalid, LineErrors
from evaluation.parsed import ItemRow, JudgmentFile, JudgmentRow, PredictionRow
from evaluation.registry import family_of, pairwise_of

csv.field_size_limit(50 * 1024 * 1024)


# --- Readers with line numbers ------------------------------------------------------------------


def read_jsonl(content: str, errors: LineErrors) -> list[tuple[int, dict]]:
    """Objects of a JSONL file with 1-based line numbers; a JSON array is accepted too."""
    stripped = content.lstrip()
    if stripped.startswith("["):
        try:
            array = structured.loads(content)
        except structured.StructuredTextError as exc:
            errors.add(exc.line or 1, exc.message)
            return []
        rows = []
        for index, obj in enumerate(array, start=1):
            if not isinstance(obj, dict):
                errors.add(index, f"entry {index} of the JSON array is not an object")
            elif problem := edge.row_problem(obj):
                errors.add(index, problem)
            else:
                rows.append((index, obj))
        return rows
    rows = []
    for number, line in enumerate(content.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = structured.loads(line)
        except structured.StructuredTextError as exc:
            errors.add(number, exc.message)
            continue
        if not isinstance(obj, dict):
            errors.add(number, "each line must be a JSON object")
            continue
        problem = edge.row_problem(obj)
        if problem:
            errors.add(number, problem)
            continue
        rows.append((number, obj))
    return rows


def read_csv(content: str, errors: LineErrors) -> tuple[list[str], list[tuple[int, dict]]]:
    """Rows of a CSV with the line each record starts on (quoted fields may span lines)."""
    reader = csv.reader(io.StringIO(content.lstrip("\ufeff")))
    try:
        header = next(reader)
    except StopIteration:
        errors.add(1, "the file is empty")
        return [], []
    except csv.Error as exc:
        errors.add(1, f"CSV error: {exc}")
        return [], []
    header = [h.strip() for h in header]
    problem = edge.text_problem("".join(header))
    if problem:
        errors.add(1, f"the header {problem}")
        return [], []
    rows = []
    start = reader.line_num + 1
    try:
        for record in reader:
            line = start
            start = reader.line_num + 1
            if not any(cell.strip() for cell in record):
                continue
            if len(record) != len(header):
                errors.add(line, f"expected {len(header)} columns, found {len(record)}")
                continue
            obj = dict(zip(header, record, strict=True))
            problem = edge.row_problem(obj)
            if problem:
                errors.add(line, problem)
                continue
            rows.append((line, obj))
    except csv.Error as exc:
        errors.add(reader.line_num, f"CSV error: {exc}")
    return header, rows


def read_table(content: str, errors: LineErrors, filename: str = "") -> list[tuple[int, dict]]:
    """JSONL/JSON or CSV, chosen by the file name, else by the first character."""
    name = filename.lower()
    if name.endswith(".csv") or (
        not name.endswith((".jsonl", ".json")) and not content.lstrip().startswith(("{", "["))
    ):
        return read_csv(content, errors)[1]
    return read_jsonl(content, errors)


def text_field(obj: dict, key: str, line: int, errors: LineErrors, *, required: bool = True) -> str:
    value = obj.get(key)
    if value is None or value == "":
        if required:
            errors.add(line, f"missing field {key!r}")
        return ""
    if not isinstance(value, str):
        errors.add(line, f"field {key!r} must be a string, got {type(value).__name__}")
        return ""
    return value


def check_unique(rows: list, errors: LineErrors, what: str) -> None:
    first: dict[str, int] = {}
    for row in rows:
        if row.item_id in first:
            errors.add(
                row.line, f"duplicate {what} {row.item_id!r} (first on line {first[row.item_id]})"
            )
        else:
            first[row.item_id] = row.line


def truthy(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "1", "yes", "t", "y"):
        return True
    if text in ("false", "0", "no", "f", "n", ""):
        return False
    return None


def index_of(obj: dict) -> str | None:
    for key in ("Index", "index", "id"):
        if key in obj and obj[key] not in (None, ""):
            return str(obj[key])
    return None


# (line, record, id, errors) -> the row, or None after adding its problem to errors
RowBuilder = Callable[[int, dict, str, LineErrors], Any]


def parse_indexed(
    content: str,
    filename: str,
    build: RowBuilder,
    *,
    file: str,
    id_field: str = "id",
    what: str = "",
    check: Callable[[list, LineErrors], None] | None = None,
) -> list:
    """Rows of a JSONL/JSON/CSV table whose records carry an id ("Index", "index" or "id"):
    ``build(line, record, id, errors)`` returns the row, or None after adding its problem. Ids
    must be unique (``what`` names them in the error, `id_field` when blank); ``check`` may then
    look at all rows. Every problem is collected before the file is refused as "The `file` file
    has errors"."""
    errors = LineErrors()
    rows = []
    for line, obj in read_table(content, errors, filename):
        index = index_of(obj)
        if index is None:
            errors.add(line, f"missing field {id_field!r}")
            continue
        row = build(line, obj, index, errors)
        if row is not None:
            rows.append(row)
    check_unique(rows, errors, what or id_field)
    if check is not None:
        check(rows, errors)
    errors.raise_if_any(f"The {file} file has errors; nothing was imported.")
    return rows


def parse_indexed_predictions(
    content: str, filename: str, build: RowBuilder, id_field: str
) -> list:
    """``parse_indexed`` for a predictions file: one prediction per id, named by `id_field`."""
    what = f"prediction for {id_field}"
    return parse_indexed(content, filename, build, file="predictions", id_field=id_field, what=what)


def float_list(value: Any, width: int) -> list[float] | None:
    if not isinstance(value, list) or len(value) != width:
        return None
    if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in value):
        return None
    return [float(v) for v in value]


# --- Pairwise judgments: the pieces every judgment file shares ----------------------------------

MAX_PLAYER_NAME = 200


def parse_aliases(text: str) -> dict[str, str]:
    """Player renames, one "name in file = name to show" per line (e.g. the output column of a
    model CSV = the model's name on the leaderboard)."""
    aliases: dict[str, str] = {}
    errors = LineErrors()
    for number, line in enumerate((text or "").splitlines(), start=1):
        if not line.strip():
            continue
        old, sep, new = line.partition("=")
        if not sep or not old.strip() or not new.strip():
            errors.add(number, "write one rename per line as: name in the file = new name")
            continue
        if len(new.strip()) > MAX_PLAYER_NAME:
            errors.add(number, f"the new name is longer than {MAX_PLAYER_NAME} characters")
            continue
        aliases[old.strip()] = new.strip()
    errors.raise_if_any("The player renames have errors; nothing was imported.")
    return aliases


def player(obj: dict, key: str, line: int, errors: LineErrors, aliases: dict[str, str]) -> str:
    name = text_field(obj, key, line, errors).strip()
    name = aliases.get(name, name)
    if len(name) > MAX_PLAYER_NAME:
        errors.add(line, f"{key!r} is longer than {MAX_PLAYER_NAME} characters")
    return name


def keep_first(rows: list[JudgmentRow]) -> tuple[list[JudgmentRow], int]:
    seen: set[tuple[str, str, str]] = set()
    kept = []
    for row in rows:
        key = (row.pair_key, row.image, row.instruction)
        if key not in seen:
            seen.add(key)
            kept.append(row)
    return kept, len(rows) - len(kept)


# --- Dispatch through the family registry -------------------------------------------------------


def empty_file(what: str, content: str, example: str = "") -> Invalid:
    """The error for a file that parsed to no rows, saying why (line 0: the file as a whole)."""
    if not content.strip():
        why = "the file is empty"
    elif content.lstrip().startswith("["):
        why = "the JSON array has no entries"
    else:
        why = "the file has no data rows (only a header or blank lines)"
    hint = f"; expected one {what[:-1]} per row, e.g. {example}" if example else ""
    return Invalid(f"The file holds no {what}: {why}.", [{"line": 0, "error": why + hint}])


def parse_items(family: str, content: str, filename: str = "") -> list[ItemRow]:
    declared = family_of(family)
    rows = declared.parse_items(content, filename)
    if not rows:
        raise empty_file("items", content, declared.formats.get("items", ""))
    return rows


def parse_predictions(
    family: str, content: str, filename: str = "", *, option: str = ""
) -> list[PredictionRow]:
    """`option` is the family's prediction option (a column, a model identifier), else detected."""
    declared = family_of(family)
    rows = declared.parse_predictions(content, filename, option)
    if not rows:
        raise empty_file("predictions", content, declared.formats.get("predictions", ""))
    return rows


def parse_judgments(
    family: str,
    kind: str,
    content: str,
    filename: str = "",
    *,
    aliases: dict[str, str] | None = None,
) -> JudgmentFile:
    parsed = pairwise_of(family).parse(kind, content, filename, aliases=aliases)
    if not parsed.rows:
        raise empty_file("judgments", content)
    return parsed
