"""Parsers for each paper's published file layout (METRICS.md) into item and prediction rows.

No database access here: parsers turn text into rows and collect every problem with its line
number, so the edge can refuse a file synchronously and a job can re-validate before writing.
Matching predictions to a version's items happens in ``services`` (it needs the database).
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from annotator.platform import edge
from annotator.platform.errors import Invalid
from evaluation.metrics import naturalbench as nb
from evaluation.metrics import visit, vlind
from evaluation.models import Family

MAX_ERRORS = 200
csv.field_size_limit(50 * 1024 * 1024)


@dataclass
class ItemRow:
    item_id: str
    data: dict
    line: int
    kept: bool = True


@dataclass
class PredictionRow:
    item_id: str
    raw_output: Any
    line: int
    parsed_answer: Any = None
    scores: Any = None


@dataclass
class Errors:
    rows: list[dict] = field(default_factory=list)

    def add(self, line: int, error: str) -> None:
        if len(self.rows) < MAX_ERRORS:
            self.rows.append({"line": line, "error": error})

    def raise_if_any(self, message: str) -> None:
        if self.rows:
            raise Invalid(message, self.rows)


# --- Readers with line numbers ------------------------------------------------------------------


def read_jsonl(content: str, errors: Errors) -> list[tuple[int, dict]]:
    """Objects of a JSONL file with 1-based line numbers; a JSON array is accepted too."""
    stripped = content.lstrip()
    if stripped.startswith("["):
        try:
            array = json.loads(content)
        except json.JSONDecodeError as exc:
            errors.add(exc.lineno, f"not valid JSON: {exc.msg}")
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
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            errors.add(number, f"not valid JSON: {exc.msg}")
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


def read_csv(content: str, errors: Errors) -> tuple[list[str], list[tuple[int, dict]]]:
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


def read_table(content: str, errors: Errors, filename: str = "") -> list[tuple[int, dict]]:
    """JSONL/JSON or CSV, chosen by the file name, else by the first character."""
    name = filename.lower()
    if name.endswith(".csv") or (
        not name.endswith((".jsonl", ".json")) and not content.lstrip().startswith(("{", "["))
    ):
        return read_csv(content, errors)[1]
    return read_jsonl(content, errors)


def _text(obj: dict, key: str, line: int, errors: Errors, *, required: bool = True) -> str:
    value = obj.get(key)
    if value is None or value == "":
        if required:
            errors.add(line, f"missing field {key!r}")
        return ""
    if not isinstance(value, str):
        errors.add(line, f"field {key!r} must be a string, got {type(value).__name__}")
        return ""
    return value


def _check_unique(rows: list, errors: Errors, what: str) -> None:
    first: dict[str, int] = {}
    for row in rows:
        if row.item_id in first:
            errors.add(
                row.line, f"duplicate {what} {row.item_id!r} (first on line {first[row.item_id]})"
            )
        else:
            first[row.item_id] = row.line


def _truthy(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "1", "yes", "t", "y"):
        return True
    if text in ("false", "0", "no", "f", "n", ""):
        return False
    return None


# --- NaturalBench (METRICS.md Sec. 1) -------------------------------------------------------------

NB_ANSWER_FIELDS = (
    "Image_0_Question_0",
    "Image_1_Question_0",
    "Image_0_Question_1",
    "Image_1_Question_1",
)  # flattened order q0_i0, q0_i1, q1_i0, q1_i1
_NB_WORDS = {nb.YES_NO: ("yes", "no"), nb.MULTIPLE_CHOICE: ("a", "b")}


def _question_type(value: Any) -> str | None:
    text = str(value or "").strip().lower().replace(" ", "_").replace("-", "_").replace("/", "_")
    aliases = {
        "yes_no": nb.YES_NO,
        "multiple_choice": nb.MULTIPLE_CHOICE,
        "mcq": nb.MULTIPLE_CHOICE,
    }
    return aliases.get(text)


def _index_of(obj: dict) -> str | None:
    for key in ("Index", "index", "id"):
        if key in obj and obj[key] not in (None, ""):
            return str(obj[key])
    return None


def parse_naturalbench_items(content: str, filename: str = "") -> list[ItemRow]:
    """NaturalBench records (Index, Image_0, …, Question_Type, Source); ground truth must follow
    the published layout q0_i0 = a0, q0_i1 = a1, q1_i0 = a1, q1_i1 = a0 (METRICS.md Sec. 1)."""
    errors = Errors()
    rows = []
    for line, obj in read_table(content, errors, filename):
        index = _index_of(obj)
        if index is None:
            errors.add(line, "missing field 'Index'")
            continue
        qtype = _question_type(obj.get("Question_Type", obj.get("Question Type")))
        if qtype is None:
            errors.add(line, "Question_Type must be 'yes_no' or 'multiple_choice'")
            continue
        data: dict[str, Any] = {"question_type": qtype}
        for key in ("Question_0", "Question_1", "Image_0", "Image_1", "Source"):
            data[key.lower()] = _text(obj, key, line, errors, required=key != "Source")
        data["language"] = str(obj.get("Language") or obj.get("language") or "en")
        words = _NB_WORDS[qtype]
        expected = [words[0], words[1], words[1], words[0]]
        answers = [str(obj.get(key, "")).strip().lower() for key in NB_ANSWER_FIELDS]
        if answers != expected:
            errors.add(
                line,
                "ground truth does not follow the NaturalBench layout "
                f"(expected {', '.join(expected)} for {', '.join(NB_ANSWER_FIELDS)})",
            )
            continue
        skills = obj.get("Skills", obj.get("skills"))
        if skills is not None:
            if (
                not isinstance(skills, list)
                or len(skills) != 2
                or not all(
                    isinstance(s, list) and all(isinstance(t, str) for t in s) for s in skills
                )
            ):
                errors.add(line, "Skills must be two lists of tag strings: [[q0 tags], [q1 tags]]")
                continue
            data["skills"] = skills
        rows.append(ItemRow(item_id=index, data=data, line=line))
    _check_unique(rows, errors, "Index")
    errors.raise_if_any("The NaturalBench file has errors; nothing was imported.")
    return rows


def _float_list(value: Any, width: int) -> list[float] | None:
    if not isinstance(value, list) or len(value) != width:
        return None
    if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in value):
        return None
    return [float(v) for v in value]


def parse_naturalbench_predictions(content: str, filename: str = "") -> list[PredictionRow]:
    """Per sample: "outputs" (four strings in q0_i0, q0_i1, q1_i0, q1_i1 order) or one field per
    key; optional "scores" {p_a0: [4], p_a1: [4], p_a0_blind: [2], p_a1_blind: [2]} (App. D)."""
    errors = Errors()
    rows = []
    for line, obj in read_table(content, errors, filename):
        index = _index_of(obj)
        if index is None:
            errors.add(line, "missing field 'Index'")
            continue
        outputs = obj.get("outputs")
        if outputs is None and all(k in obj for k in nb.SAMPLE_KEYS):
            outputs = [obj[k] for k in nb.SAMPLE_KEYS]
        if not isinstance(outputs, list) or len(outputs) != 4:
            errors.add(line, "expected 'outputs' with four answers (or fields q0_i0 … q1_i1)")
            continue
        if not all(isinstance(o, str) for o in outputs):
            errors.add(line, "every answer in 'outputs' must be a string")
            continue
        scores = obj.get("scores")
        if scores is not None:
            clean = {}
            ok = isinstance(scores, dict)
            for key, width in (("p_a0", 4), ("p_a1", 4), ("p_a0_blind", 2), ("p_a1_blind", 2)):
                if ok and key in scores:
                    values = _float_list(scores[key], width)
                    if values is None:
                        ok = False
                    else:
                        clean[key] = values
            if not ok or ("p_a0" in clean) != ("p_a1" in clean):
                errors.add(line, "'scores' must hold p_a0 and p_a1 as four numbers each")
                continue
            scores = clean
        rows.append(
            PredictionRow(
                item_id=index,
                raw_output=dict(zip(nb.SAMPLE_KEYS, outputs, strict=True)),
                line=line,
                scores=scores,
            )
        )
    _check_unique(rows, errors, "prediction for Index")
    errors.raise_if_any("The predictions file has errors; nothing was imported.")
    return rows


# --- NaturalBench-Retrieval (App. B) ------------------------------------------------------------


def parse_retrieval_items(content: str, filename: str = "") -> list[ItemRow]:
    errors = Errors()
    rows = []
    for line, obj in read_table(content, errors, filename):
        index = _index_of(obj)
        if index is None:
            errors.add(line, "missing field 'id'")
            continue
        data = {
            k: _text(obj, k, line, errors) for k in ("image_0", "image_1", "caption_0", "caption_1")
        }
        rows.append(ItemRow(item_id=index, data=data, line=line))
    _check_unique(rows, errors, "id")
    errors.raise_if_any("The retrieval file has errors; nothing was imported.")
    return rows


def parse_retrieval_predictions(content: str, filename: str = "") -> list[PredictionRow]:
    """Per pair: "scores" = [[s(c0,i0), s(c0,i1)], [s(c1,i0), s(c1,i1)]] (App. B)."""
    errors = Errors()
    rows = []
    for line, obj in read_table(content, errors, filename):
        index = _index_of(obj)
        if index is None:
            errors.add(line, "missing field 'id'")
            continue
        scores = obj.get("scores")
        matrix = (
            [_float_list(r, 2) for r in scores]
            if isinstance(scores, list) and len(scores) == 2
            else None
        )
        if not matrix or any(r is None for r in matrix):
            errors.add(line, "'scores' must be a 2 × 2 list of numbers indexed [caption][image]")
            continue
        rows.append(PredictionRow(item_id=index, raw_output="", line=line, scores=matrix))
    _check_unique(rows, errors, "prediction for id")
    errors.raise_if_any("The predictions file has errors; nothing was imported.")
    return rows


# --- VHExpansion (METRICS.md Sec. 3) -------------------------------------------------------------


def parse_vh_items(content: str, filename: str = "") -> list[ItemRow]:
    """VH test cases: id, pair_id, image, question, answer (yes/no), negated, perturbation,
    source. Each pair_id needs exactly one original and one negated case (vhexpansion Def. 3)."""
    errors = Errors()
    rows = []
    for line, obj in read_table(content, errors, filename):
        index = _index_of(obj)
        if index is None:
            errors.add(line, "missing field 'id'")
            continue
        answer = str(obj.get("answer", "")).strip().lower()
        if answer not in ("yes", "no"):
            errors.add(line, "'answer' must be 'yes' or 'no'")
            continue
        negated = _truthy(obj.get("negated", False))
        if negated is None:
            errors.add(line, "'negated' must be true or false")
            continue
        data = {
            "pair_id": str(obj.get("pair_id") or ""),
            "image": _text(obj, "image", line, errors, required=False),
            "question": _text(obj, "question", line, errors),
            "answer": answer,
            "negated": negated,
            "perturbation": str(obj.get("perturbation") or "original"),
            "source": str(obj.get("source") or ""),
        }
        if not data["pair_id"]:
            errors.add(line, "missing field 'pair_id'")
            continue
        rows.append(ItemRow(item_id=index, data=data, line=line))
    _check_unique(rows, errors, "id")
    by_pair: dict[str, list[ItemRow]] = {}
    for row in rows:
        by_pair.setdefault(row.data["pair_id"], []).append(row)
    for pair_id, members in by_pair.items():
        flags = sorted(m.data["negated"] for m in members)
        if flags != [False, True]:
            errors.add(
                members[0].line,
                f"pair {pair_id!r} needs exactly one original and one negated case",
            )
        elif members[0].data["perturbation"] != members[1].data["perturbation"]:
            errors.add(
                members[1].line, f"both cases of pair {pair_id!r} need the same perturbation"
            )
    errors.raise_if_any("The VH test-case file has errors; nothing was imported.")
    return rows


def parse_vh_predictions(content: str, filename: str = "") -> list[PredictionRow]:
    """Per test case: id and the model's output text, parsed as yes/no (official NaturalBench-style
    whole-word search, the earlier word wins)."""
    errors = Errors()
    rows = []
    for line, obj in read_table(content, errors, filename):
        index = _index_of(obj)
        if index is None:
            errors.add(line, "missing field 'id'")
            continue
        output = obj.get("output")
        if not isinstance(output, str):
            errors.add(line, "'output' must be a string")
            continue
        parsed = nb.parse_answer(output, nb.YES_NO)
        answer = None if parsed is None else ("yes" if parsed == nb.A0 else "no")
        rows.append(
            PredictionRow(item_id=index, raw_output=output, line=line, parsed_answer=answer)
        )
    _check_unique(rows, errors, "prediction for id")
    errors.raise_if_any("The predictions file has errors; nothing was imported.")
    return rows


# --- VLind-Bench (METRICS.md Sec. 4; official data.json) ----------------------------------------

VLIND_STYLES = {
    **{str(i): "photorealistic" for i in range(0, 4)},
    **{str(i): "illustration" for i in range(4, 8)},
    **{str(i): "cartoon" for i in range(8, 12)},
}
VLIND_VOTE_THRESHOLD = 2
VLIND_SINGLE_KEYS = ("a1_image", "a2_image", "b1", "b2", "c1_image", "c2_image")


def vlind_item_id(obj: dict) -> str:
    if obj.get("id") not in (None, ""):
        return str(obj["id"])
    return f"{obj.get('concept', '')}/{obj.get('context_id', '')}"


def parse_vlind_items(content: str, filename: str = "") -> list[ItemRow]:
    """Instances of the official data.json; good images are those with ≥ 2 of 3 votes."""
    errors = Errors()
    rows = []
    for line, obj in read_jsonl(content, errors):
        for key in ("concept", "context", "true_statement", "false_statement"):
            _text(obj, key, line, errors)
        votes = obj.get("aggregated_human_label_good_images", {})
        if not isinstance(votes, dict) or not all(
            isinstance(v, int | float) for v in votes.values()
        ):
            errors.add(line, "'aggregated_human_label_good_images' must map image ids to votes")
            continue
        good = [str(k) for k, v in votes.items() if v >= VLIND_VOTE_THRESHOLD]
        data = {
            key: obj.get(key, "")
            for key in (
                "concept",
                "context_id",
                "context",
                "factual_context",
                "true_statement",
                "false_statement",
                "existent_noun",
                "non-existent_noun",
                "best_img_id",
            )
        }
        data["good_images"] = good
        rows.append(ItemRow(item_id=vlind_item_id(obj), data=data, line=line, kept=bool(good)))
    _check_unique(rows, errors, "instance")
    errors.raise_if_any("The VLind-Bench file has errors; nothing was imported.")
    return rows


def vlind_model_identifiers(content: str) -> list[str]:
    """Model identifiers that have predictions in a data.json ("{mid}_pred_a1_image" keys)."""
    try:
        data = json.loads(content)
    except json.JSONDecodeError:
        return []
    found: set[str] = set()
    for obj in data if isinstance(data, list) else []:
        if isinstance(obj, dict):
            found.update(k[: -len("_pred_a1_image")] for k in obj if k.endswith("_pred_a1_image"))
    return sorted(found)


def _vlind_answer(entry: Any) -> tuple[str | None, bool | None, bool]:
    """(response, parsed answer, ok). The official scorer reads the stored 'answer' field."""
    if not isinstance(entry, dict):
        return None, None, False
    response = entry.get("response")
    if response is not None and not isinstance(response, str):
        return None, None, False
    answer = entry.get("answer")
    if answer is not None:
        if answer not in ("True", "False", "NA"):
            return None, None, False
        return response, {"True": True, "False": False}.get(answer), True
    if response is None:
        return None, None, False
    return response, vlind.parse_true_false(response), True


def parse_vlind_predictions(
    content: str, filename: str = "", *, model_identifier: str = ""
) -> list[PredictionRow]:
    """Predictions stored in data.json under "{mid}_pred_*" keys (official gpt4o_eval.py)."""
    errors = Errors()
    if not model_identifier:
        found = vlind_model_identifiers(content)
        if len(found) != 1:
            raise Invalid(
                "Name the model identifier: the file holds predictions for "
                + (", ".join(found) if found else "no model"),
                [{"line": 0, "error": "model identifier needed"}],
            )
        model_identifier = found[0]
    prefix = f"{model_identifier}_pred_"
    rows = []
    for line, obj in read_jsonl(content, errors):
        if not any(k.startswith(prefix) for k in obj):
            continue  # the official runner skips instances without good images
        raw: dict[str, Any] = {}
        parsed: dict[str, Any] = {}
        ok = True
        for key in VLIND_SINGLE_KEYS:
            response, answer, good = _vlind_answer(obj.get(prefix + key))
            if not good:
                errors.add(line, f"'{prefix + key}' must be {{response, answer: True/False/NA}}")
                ok = False
                break
            raw[key], parsed[key] = response, answer
        for key in ("d1", "d2"):
            per_image = obj.get(prefix + key)
            if not ok:
                break
            if not isinstance(per_image, dict):
                errors.add(line, f"'{prefix + key}' must map good image ids to answers")
                ok = False
                break
            raw[key], parsed[key] = {}, {}
            for image_id, entry in per_image.items():
                response, answer, good = _vlind_answer(entry)
                if not good:
                    errors.add(line, f"'{prefix + key}'[{image_id!r}] has no valid answer")
                    ok = False
                    break
                raw[key][str(image_id)], parsed[key][str(image_id)] = response, answer
        if ok:
            rows.append(
                PredictionRow(
                    item_id=vlind_item_id(obj), raw_output=raw, line=line, parsed_answer=parsed
                )
            )
    _check_unique(rows, errors, "prediction for instance")
    errors.raise_if_any("The predictions in the data.json have errors; nothing was imported.")
    return rows


# --- VisIT-Bench (METRICS.md Sec. 2; the published CSVs) ----------------------------------------

VISIT_DATASET_COLUMNS = {
    "instruction_category",
    "image",
    "visual",
    "instruction",
    "instruction_conditioned_caption",
    "image_dense_captions",
    "gpt4_prediction",
    "reference_output",
    "human_ratings_gpt4_correct",
    "human_ratings_problem_in_caption",
    "human_ratings_problem_in_gpt4",
    "public_images_metadata",
}


def visit_key(image: str, instruction: str) -> str:
    return hashlib.sha1(f"{image}\n{instruction}".encode()).hexdigest()[:12]


def _visit_ids(rows: list[tuple[int, dict]]) -> list[str]:
    """Stable ids from (image, instruction); a repeated pair gets "~2", "~3" in file order (the
    published dataset repeats one instance, and model files repeat or omit it)."""
    seen: Counter[str] = Counter()
    ids = []
    for _, row in rows:
        key = visit_key(row.get("image", ""), row.get("instruction", ""))
        seen[key] += 1
        ids.append(key if seen[key] == 1 else f"{key}~{seen[key]}")
    return ids


def parse_visit_items(content: str, filename: str = "") -> list[ItemRow]:
    """The dataset CSV. An instance is kept for leaderboards when human_ratings_gpt4_correct is
    true and human_ratings_problem_in_caption is false (529 of 578 in the published file)."""
    errors = Errors()
    header, rows = read_csv(content, errors)
    missing = {"image", "instruction", "gpt4_prediction", "human_ratings_gpt4_correct"} - set(
        header
    )
    if header and missing:
        errors.add(1, f"missing columns: {', '.join(sorted(missing))}")
    errors.raise_if_any("The VisIT-Bench CSV has errors; nothing was imported.")
    items = []
    for (line, row), item_id in zip(rows, _visit_ids(rows), strict=True):
        correct = _truthy(row.get("human_ratings_gpt4_correct", ""))
        problem = _truthy(row.get("human_ratings_problem_in_caption", "false"))
        if correct is None or problem is None:
            errors.add(line, "human rating flags must be TRUE or FALSE")
            continue
        if not row.get("instruction", "").strip():
            errors.add(line, "empty instruction")
            continue
        caption = row.get("instruction_conditioned_caption") or row.get("image_dense_captions", "")
        data = {
            "category": row.get("instruction_category", ""),
            "image": row.get("image", ""),
            "instruction": row.get("instruction", ""),
            "caption": caption,
            "reference": row.get("gpt4_prediction", ""),
            "reference_output": row.get("reference_output", ""),
            "gpt4_correct": correct,
            "problem_in_caption": problem,
            "problem_in_gpt4": _truthy(row.get("human_ratings_problem_in_gpt4", "")),
        }
        items.append(ItemRow(item_id=item_id, data=data, line=line, kept=correct and not problem))
    errors.raise_if_any("The VisIT-Bench CSV has errors; nothing was imported.")
    return items


def visit_output_column(header: list[str]) -> str | None:
    extra = [h for h in header if h and h not in VISIT_DATASET_COLUMNS]
    return extra[0] if len(extra) == 1 else None


def parse_visit_predictions(
    content: str, filename: str = "", *, output_column: str = ""
) -> list[PredictionRow]:
    """A model output CSV: the dataset columns plus one column with the model's response."""
    errors = Errors()
    header, rows = read_csv(content, errors)
    column = output_column or (visit_output_column(header) or "")
    if header and (not column or column not in header):
        errors.add(
            1,
            "cannot tell which column holds the model output; name it "
            f"(columns: {', '.join(header)})",
        )
    errors.raise_if_any("The model output CSV has errors; nothing was imported.")
    predictions = []
    for (line, row), item_id in zip(rows, _visit_ids(rows), strict=True):
        if not row.get("instruction", "").strip():
            errors.add(line, "empty instruction")
            continue
        predictions.append(PredictionRow(item_id=item_id, raw_output=row[column], line=line))
    errors.raise_if_any("The model output CSV has errors; nothing was imported.")
    return predictions


def visit_prediction_column(content: str, option: str = "") -> str:
    """The column a VisIT-Bench model output CSV's responses come from (named or detected): the
    model's name in the official judgment files (make_pairs.py)."""
    if option:
        return option
    header, _ = read_csv(content.split("\n", 1)[0] + "\n", Errors())
    return visit_output_column(header) or ""


# --- VisIT-Bench pairwise judgments (Sec. 4.2-4.3; official sandbox and human preferences) -------

OFFICIAL_REFERENCE_PLAYER = "human_verified_reference"
MAX_PLAYER_NAME = 200


@dataclass
class JudgmentRow:
    """One judged pair, before it is matched to an item: the winner of each order for an LLM
    judge (model name or "tie"), the vote counts for crowd judgments."""

    line: int
    image: str
    instruction: str
    model_a: str
    model_b: str
    response_a: str = ""
    response_b: str = ""
    order_winners: list[str] = field(default_factory=list)
    outputs: list[dict] = field(default_factory=list)
    votes_a: int = 0
    votes_b: int = 0
    winner: str = "tie"

    @property
    def pair_key(self) -> str:
        return pair_key(self.model_a, self.model_b)


def pair_key(model_a: str, model_b: str) -> str:
    """The unordered pair as one string (the official de-duplication key, App. E)."""
    return "\x1f".join(sorted((model_a, model_b)))


@dataclass
class JudgmentFile:
    rows: list[JudgmentRow]
    duplicates: int = 0  # repeated (pair, instance): the first is kept, as elo_analysis.py does
    engines: list[str] = field(default_factory=list)
    with_reference: bool | None = None
    votes: int = 0


def parse_aliases(text: str) -> dict[str, str]:
    """Player renames, one "name in file = name to show" per line (e.g. the output column of a
    model CSV = the model's name on the leaderboard)."""
    aliases: dict[str, str] = {}
    errors = Errors()
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


def _player(obj: dict, key: str, line: int, errors: Errors, aliases: dict[str, str]) -> str:
    name = _text(obj, key, line, errors).strip()
    name = aliases.get(name, name)
    if len(name) > MAX_PLAYER_NAME:
        errors.add(line, f"{key!r} is longer than {MAX_PLAYER_NAME} characters")
    return name


def _keep_first(rows: list[JudgmentRow]) -> tuple[list[JudgmentRow], int]:
    seen: set[tuple[str, str, str]] = set()
    kept = []
    for row in rows:
        key = (row.pair_key, row.image, row.instruction)
        if key not in seen:
            seen.add(key)
            kept.append(row)
    return kept, len(rows) - len(kept)


def parse_llm_judgments(
    content: str, filename: str = "", *, aliases: dict[str, str] | None = None
) -> JudgmentFile:
    """The official head-to-head file of the VisIT-Bench sandbox (``gpt-4_head2head.json``, a JSON
    array, or the per-submission JSONL): A_model, B_model, A, B, image_url, instruction and
    auto_evaluation_result = [winner of order A-B, winner of order B-A] (a model or "tie"), with
    the judge's chains of thought in auto_evaluation_cot. A pair is won only when both orders
    agree (two-order aggregation, Sec. 4.3)."""
    aliases = aliases or {}
    errors = Errors()
    rows: list[JudgmentRow] = []
    engines: list[str] = []
    references: set[bool] = set()
    for line, obj in read_jsonl(content, errors):
        model_a = _player(obj, "A_model", line, errors, aliases)
        model_b = _player(obj, "B_model", line, errors, aliases)
        image = _text(obj, "image_url", line, errors)
        instruction = _text(obj, "instruction", line, errors)
        if not (model_a and model_b and image and instruction):
            continue
        if model_a == model_b:
            errors.add(line, f"a model cannot be judged against itself ({model_a!r})")
            continue
        result = obj.get("auto_evaluation_result")
        if not isinstance(result, list) or len(result) != 2:
            errors.add(line, "'auto_evaluation_result' must list the winner of both orders")
            continue
        winners = [aliases.get(w, w) if isinstance(w, str) else w for w in result]
        allowed = (model_a, model_b, visit.TIE)
        if not all(isinstance(w, str) and w in allowed for w in winners):
            errors.add(
                line,
                f"each winner in 'auto_evaluation_result' must be {model_a!r}, {model_b!r} "
                "or 'tie'",
            )
            continue
        outputs = []
        cot = obj.get("auto_evaluation_cot")
        if isinstance(cot, list):
            for entry in cot[:2]:
                if isinstance(entry, dict):
                    shown = [entry.get("A_model_in_cot"), entry.get("B_model_in_cot")]
                    shown = [aliases.get(n, n) if isinstance(n, str) else "" for n in shown]
                    text = entry.get("cot")
                    outputs.append(
                        {
                            "shown_a": shown[0],
                            "shown_b": shown[1],
                            "judge_output": text if isinstance(text, str) else "",
                        }
                    )
        engine = obj.get("engine")
        if isinstance(engine, str) and engine and engine not in engines:
            engines.append(engine)
        if isinstance(obj.get("evaluated_with_reference"), bool):
            references.add(obj["evaluated_with_reference"])
        rows.append(
            JudgmentRow(
                line=line,
                image=image,
                instruction=instruction,
                model_a=model_a,
                model_b=model_b,
                response_a=obj.get("A") if isinstance(obj.get("A"), str) else "",
                response_b=obj.get("B") if isinstance(obj.get("B"), str) else "",
                order_winners=winners,
                outputs=outputs,
                winner=visit.aggregate_two_orders(winners[0], winners[1]),
            )
        )
    if len(references) > 1:
        errors.add(0, "the file mixes reference-free and reference-backed judgments")
    errors.raise_if_any("The judgment file has errors; nothing was imported.")
    kept, duplicates = _keep_first(rows)
    return JudgmentFile(
        rows=kept,
        duplicates=duplicates,
        engines=engines,
        with_reference=references.pop() if references else None,
    )


HUMAN_COLUMNS = ("image_url", "instruction", "A", "B", "A_model", "B_model")
SELECTION_COLUMNS = ("model_selection.A", "model_selection.B")


def parse_human_judgments(
    content: str, filename: str = "", *, aliases: dict[str, str] | None = None
) -> JudgmentFile:
    """The published crowd preferences (``visit_bench_human_preferences.csv``): image_url,
    instruction, A, B, A_model, B_model and the forced choice model_selection.A /
    model_selection.B, one row per crowd vote. Votes are counted per response for each
    (instance, unordered pair); the winner is the majority (Sec. 4.2-4.3)."""
    aliases = aliases or {}
    errors = Errors()
    header, records = read_csv(content, errors)
    missing = [c for c in (*HUMAN_COLUMNS, *SELECTION_COLUMNS) if c not in header]
    if header and missing:
        errors.add(1, f"missing columns: {', '.join(missing)}")
    errors.raise_if_any("The human judgment CSV has errors; nothing was imported.")
    pairs: dict[tuple[str, str, str], JudgmentRow] = {}
    votes = 0
    for line, obj in records:
        model_a = _player(obj, "A_model", line, errors, aliases)
        model_b = _player(obj, "B_model", line, errors, aliases)
        image = _text(obj, "image_url", line, errors)
        instruction = _text(obj, "instruction", line, errors)
        if not (model_a and model_b and image and instruction):
            continue
        if model_a == model_b:
            errors.add(line, f"a model cannot be judged against itself ({model_a!r})")
            continue
        picked_a = _truthy(obj["model_selection.A"])
        picked_b = _truthy(obj["model_selection.B"])
        if picked_a is None or picked_b is None or picked_a == picked_b:
            errors.add(
                line,
                "forced choice: exactly one of model_selection.A and model_selection.B is TRUE",
            )
            continue
        chosen = model_a if picked_a else model_b
        key = (pair_key(model_a, model_b), image, instruction)
        row = pairs.get(key)
        if row is None:
            row = pairs[key] = JudgmentRow(
                line=line,
                image=image,
                instruction=instruction,
                model_a=model_a,
                model_b=model_b,
                response_a=obj["A"],
                response_b=obj["B"],
            )
        if chosen == row.model_a:
            row.votes_a += 1
        else:
            row.votes_b += 1
        votes += 1
    errors.raise_if_any("The human judgment CSV has errors; nothing was imported.")
    rows = list(pairs.values())
    for row in rows:
        if row.votes_a != row.votes_b:
            row.winner = row.model_a if row.votes_a > row.votes_b else row.model_b
    return JudgmentFile(rows=rows, votes=votes)


JUDGMENT_PARSERS = {"llm": parse_llm_judgments, "human": parse_human_judgments}


def parse_judgments(
    kind: str, content: str, filename: str = "", *, aliases: dict[str, str] | None = None
) -> JudgmentFile:
    if kind not in JUDGMENT_PARSERS:
        raise Invalid(f"Unknown judgment kind {kind!r}: use 'llm' or 'human'.")
    parsed = JUDGMENT_PARSERS[kind](content, filename, aliases=aliases)
    if not parsed.rows:
        raise Invalid("The file holds no judgments.", [{"line": 0, "error": "no judgments"}])
    return parsed


ITEM_PARSERS = {
    Family.NATURALBENCH: parse_naturalbench_items,
    Family.NATURALBENCH_RETRIEVAL: parse_retrieval_items,
    Family.VHEXPANSION: parse_vh_items,
    Family.VLIND: parse_vlind_items,
    Family.VISIT: parse_visit_items,
}


def parse_items(family: str, content: str, filename: str = "") -> list[ItemRow]:
    if family not in ITEM_PARSERS:
        raise Invalid(f"Unknown benchmark family {family!r}.")
    rows = ITEM_PARSERS[family](content, filename)
    if not rows:
        raise Invalid("The file holds no items.", [{"line": 0, "error": "no items"}])
    return rows


def parse_predictions(
    family: str, content: str, filename: str = "", *, option: str = ""
) -> list[PredictionRow]:
    """`option` is the VLind model identifier or the VisIT output column (else detected)."""
    if family == Family.NATURALBENCH:
        rows = parse_naturalbench_predictions(content, filename)
    elif family == Family.NATURALBENCH_RETRIEVAL:
        rows = parse_retrieval_predictions(content, filename)
    elif family == Family.VHEXPANSION:
        rows = parse_vh_predictions(content, filename)
    elif family == Family.VLIND:
        rows = parse_vlind_predictions(content, filename, model_identifier=option)
    elif family == Family.VISIT:
        rows = parse_visit_predictions(content, filename, output_column=option)
    else:
        raise Invalid(f"Unknown benchmark family {family!r}.")
    if not rows:
        raise Invalid("The file holds no predictions.", [{"line": 0, "error": "no predictions"}])
    return rows
