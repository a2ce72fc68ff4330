"""Synthetic VisIT-Bench judgments in the official layouts, for tests and demos.

Votes are simulated (a latent quality per player, Bradley–Terry style); the instances and the
responses come from whatever dataset and model CSVs are passed in (the real ones in tests).
Seeded, so every call with the same arguments gives the same bytes.
"""

from __future__ import annotations

import csv
import io
import json

import numpy as np

from .judgments import HUMAN_COLUMNS, SELECTION_COLUMNS
from .parse import DATASET_COLUMNS

REFERENCE = "human_verified_reference"


def _visit_responses(
    dataset_csv: str, model_csvs: dict[str, str]
) -> list[tuple[dict, dict[str, str]]]:
    """(dataset row, {player: response}) for every kept instance, in dataset order."""

    def rows(content: str) -> list[dict]:
        return list(csv.DictReader(io.StringIO(content.lstrip("\ufeff"))))

    answers: dict[str, dict[tuple[str, str], str]] = {}
    for player, content in model_csvs.items():
        table = rows(content)
        columns = [c for c in (table[0] if table else {}) if c not in DATASET_COLUMNS]
        answers[player] = {(r["image"], r["instruction"]): r[columns[0]] for r in table}
    out = []
    seen = set()
    for row in rows(dataset_csv):
        key = (row["image"], row["instruction"])
        kept = str(row.get("human_ratings_gpt4_correct")).lower() == "true" and str(
            row.get("human_ratings_problem_in_caption")
        ).lower() in ("false", "")
        if not kept or key in seen:
            continue
        seen.add(key)
        responses = {REFERENCE: row["gpt4_prediction"]}
        responses.update({p: a[key] for p, a in answers.items() if key in a})
        out.append((row, responses))
    return out


def _p_first_wins(quality: dict[str, float], a: str, b: str) -> float:
    return 1.0 / (1.0 + 10 ** ((quality.get(b, 0.0) - quality.get(a, 0.0)) / 400))


def visit_llm_judgments(
    dataset_csv: str,
    model_csvs: dict[str, str],
    *,
    quality: dict[str, float],
    n_instances: int | None = None,
    tie_rate: float = 0.1,
    seed: int = 0,
) -> str:
    """A head-to-head JSON array in the sandbox's layout (evaluate_all_queries.py): every pair of
    players on the first `n_instances` kept instances, each judged in both orders."""
    rng = np.random.default_rng(seed)
    results = []
    for row, responses in _visit_responses(dataset_csv, model_csvs)[:n_instances]:
        players = sorted(responses)
        for i, first in enumerate(players):
            for second in players[i + 1 :]:
                a, b = (first, second) if rng.random() < 0.5 else (second, first)
                winners = []
                for shown_a, shown_b in ((a, b), (b, a)):
                    if rng.random() < tie_rate:
                        winners.append("tie")
                    else:
                        p = _p_first_wins(quality, shown_a, shown_b)
                        winners.append(shown_a if rng.random() < p else shown_b)
                results.append(
                    {
                        "A_model": a,
                        "B_model": b,
                        "A": responses[a],
                        "B": responses[b],
                        "auto_evaluation_result": winners,
                        "auto_evaluation_cot": [
                            {
                                "A_model_in_cot": x,
                                "B_model_in_cot": y,
                                "cot": "Simulated judgment. Overall, Response "
                                f"{'A' if w == x else 'B'} is better."
                                if w != "tie"
                                else "Both responses have problems.",
                            }
                            for (x, y), w in zip(((a, b), (b, a)), winners, strict=True)
                        ],
                        "image_url": row["image"],
                        "instruction": row["instruction"],
                        "instruction_category": row["instruction_category"],
                        "engine": "simulated-judge",
                        "reference": row["gpt4_prediction"],
                        "evaluated_with_reference": False,
                    }
                )
    return json.dumps(results)


def visit_human_votes(
    dataset_csv: str,
    model_csvs: dict[str, str],
    *,
    quality: dict[str, float],
    n_pairs: int = 60,
    votes: int = 5,
    seed: int = 0,
) -> str:
    """A crowd-preferences CSV in the published layout (one row per forced-choice vote):
    `n_pairs` random (instance, pair) tuples with `votes` votes each."""
    rng = np.random.default_rng(seed)
    candidates = []
    for row, responses in _visit_responses(dataset_csv, model_csvs):
        players = sorted(responses)
        for i, first in enumerate(players):
            for second in players[i + 1 :]:
                candidates.append((row, responses, first, second))
    picks = rng.choice(len(candidates), size=min(n_pairs, len(candidates)), replace=False)
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow([*HUMAN_COLUMNS, *SELECTION_COLUMNS])
    for k in picks:
        row, responses, a, b = candidates[int(k)]
        p = _p_first_wins(quality, a, b)
        for _ in range(votes):
            picked_a = rng.random() < p
            writer.writerow(
                [row["image"], row["instruction"], responses[a], responses[b], a, b]
                + (["True", "False"] if picked_a else ["False", "True"])
            )
    return buffer.getvalue()
