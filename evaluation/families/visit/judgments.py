"""VisIT-Bench pairwise judgments (Sec. 4.2-4.3): the official sandbox's head-to-head file and
the published crowd preferences, into judged pairs before they are matched to items."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from annotator.platform.errors import Invalid, LineErrors
from evaluation.importers import keep_first, player, read_csv, read_jsonl, text_field, truthy
from evaluation.metrics import visit
from evaluation.parsed import JudgmentFile, JudgmentRow, pair_key

from .parse import images_cell, json_strings, visit_key

OFFICIAL_REFERENCE_PLAYER = "human_verified_reference"
FORMATS = {
    "LLM judge": '[{"A_model": "llava13b_output", "B_model": "human_verified_reference", '
    '"A": "…", "B": "…", "image_url": "https://…/visit_images/….png", "instruction": "…", '
    '"auto_evaluation_result": ["human_verified_reference", "tie"], '
    '"auto_evaluation_cot": [{"A_model_in_cot": "…", "B_model_in_cot": "…", "cot": "…"}, …], '
    '"engine": "gpt-4", "evaluated_with_reference": false}, …]  — the sandbox’s '
    "gpt-4_head2head.json (or one object per line)",
    "Crowd votes": "image_url,instruction,A,B,A_model,B_model,model_selection.A,"
    "model_selection.B — visit_bench_human_preferences.csv, one row per vote (forced choice)",
}


def _pair_fields(
    obj: dict, line: int, errors: LineErrors, aliases: dict[str, str]
) -> tuple[str, str, str, str] | None:
    """A judged pair's two models, image and instruction; None after adding the line's
    problem (a missing field, a model against itself)."""
    model_a = player(obj, "A_model", line, errors, aliases)
    model_b = player(obj, "B_model", line, errors, aliases)
    if isinstance(obj.get("image_url"), list):
        # A multi-image pair as evaluate_all_queries.py copies it from ``image_urls``: the list
        # stands for the instance as the published ``images`` cell does.
        urls = json_strings(obj["image_url"])
        image = images_cell(urls) if urls else ""
        if not urls:
            errors.add(line, "field 'image_url' must be a URL or a list of URLs")
    else:
        image = text_field(obj, "image_url", line, errors)
    instruction = text_field(obj, "instruction", line, errors)
    if not (model_a and model_b and image and instruction):
        return None
    if model_a == model_b:
        errors.add(line, f"a model cannot be judged against itself ({model_a!r})")
        return None
    return model_a, model_b, image, instruction


def parse_llm_judgments(
    content: str, filename: str = "", *, aliases: dict[str, str] | None = None
) -> JudgmentFile:
    """The official head-to-head file of the VisIT-Bench sandbox (``gpt-4_head2head.json``, a JSON
    array, or the per-submission JSONL): A_model, B_model, A, B, image_url, instruction and
    auto_evaluation_result = [winner of order A-B, winner of order B-A] (a model or "tie"), with
    the judge's chains of thought in auto_evaluation_cot. A pair is won only when both orders
    agree (two-order aggregation, Sec. 4.3)."""
    aliases = aliases or {}
    errors = LineErrors()
    rows: list[JudgmentRow] = []
    engines: list[str] = []
    references: set[bool] = set()
    for line, obj in read_jsonl(content, errors):
        fields = _pair_fields(obj, line, errors, aliases)
        if fields is None:
            continue
        model_a, model_b, image, instruction = fields
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
    kept, duplicates = keep_first(rows)
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
    errors = LineErrors()
    header, records = read_csv(content, errors)
    missing = [c for c in (*HUMAN_COLUMNS, *SELECTION_COLUMNS) if c not in header]
    if header and missing:
        errors.add(1, f"missing columns: {', '.join(missing)}")
    errors.raise_if_any("The human judgment CSV has errors; nothing was imported.")
    pairs: dict[tuple[str, str, str], JudgmentRow] = {}
    votes = 0
    for line, obj in records:
        fields = _pair_fields(obj, line, errors, aliases)
        if fields is None:
            continue
        model_a, model_b, image, instruction = fields
        picked_a = truthy(obj["model_selection.A"])
        picked_b = truthy(obj["model_selection.B"])
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


def human_vote_record(item: Mapping[str, Any], pair: Any, winner: str | None) -> dict:
    """One crowd vote as a row of ``visit_bench_human_preferences.csv`` (what
    ``parse_human_judgments`` reads back): the item's image and instruction, the pair's models
    and responses (``model_a`` / ``response_a`` …), the chosen model flagged TRUE."""
    return {
        "image_url": item.get("image", ""),
        "instruction": item.get("instruction", ""),
        "A": pair.response_a,
        "B": pair.response_b,
        "A_model": pair.model_a,
        "B_model": pair.model_b,
        "model_selection.A": "TRUE" if winner == pair.model_a else "FALSE",
        "model_selection.B": "TRUE" if winner == pair.model_b else "FALSE",
    }


PARSERS = {"llm": parse_llm_judgments, "human": parse_human_judgments}


def parse(
    kind: str, content: str, filename: str = "", *, aliases: dict[str, str] | None = None
) -> JudgmentFile:
    if kind not in PARSERS:
        raise Invalid(f"Unknown judgment kind {kind!r}: use 'llm' or 'human'.")
    return PARSERS[kind](content, filename, aliases=aliases)


def row_key(row: JudgmentRow) -> str:
    """The instance key of a judged pair (``parse.visit_key`` of its image and instruction)."""
    return visit_key(row.image, row.instruction)
