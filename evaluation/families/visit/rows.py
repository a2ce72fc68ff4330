"""VisIT-Bench metric rows (METRICS.md Sec. 2): per-run length and text metrics, and the
version-level length-baseline ratings of every run (App. E)."""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Mapping, Sequence

import numpy as np

from evaluation.compute import ItemData, MetricRow, MetricSpec, PredictionData, cell, metric_row
from evaluation.metrics import textmetrics, visit
from evaluation.metrics.bootstrap import DEFAULT_ROUNDS, bootstrap_mean_interval

REFERENCE_PLAYER = "GPT-4 reference"
SPECS = (
    MetricSpec(
        "elo_length",
        "Elo (length baseline)",
        "rating",
        help="bootstrap Elo when the longer response wins every pair — a baseline, not a "
        "quality judgment",
    ),
    MetricSpec(
        "win_rate_length",
        "Win-rate vs reference (length baseline)",
        help="share of instances where the response is longer than the GPT-4 reference",
    ),
    MetricSpec("mean_length", "Mean length (tokens)", "tokens"),
    MetricSpec("bleu4", "BLEU-4"),
    MetricSpec("rouge_l", "ROUGE-L"),
    MetricSpec("meteor", "METEOR"),
    MetricSpec("cider", "CIDEr", "rating"),
    MetricSpec("bertscore", "BERTScore"),
    MetricSpec("bt_length", "Bradley–Terry (length baseline)", "rating", headline=False),
)
PRIMARY = "elo_length"


def rows(
    items: Sequence[ItemData],
    predictions: Mapping[str, PredictionData],
    *,
    seed: int,
    rounds: int = DEFAULT_ROUNDS,
    text_metrics: bool = True,
) -> list[MetricRow]:
    """Per-run numbers the published CSVs support without judgments: response length, the
    length baseline against the GPT-4 reference, and reference-based text metrics (Sec. 4.3)."""
    kept = [i for i in items if i.kept and i.item_id in predictions]
    options = {"seed": seed, "rounds": rounds}
    n = len(kept)
    lengths = [visit.length_tokens(str(predictions[i.item_id].raw_output)) for i in kept]
    out = [
        metric_row(
            "mean_length",
            float(np.mean(lengths)) if lengths else None,
            bootstrap_mean_interval(lengths, **options),
            n,
            breakdown={"category": _by_category(kept, lengths, options)},
        )
    ]
    longer = [
        float(
            visit.length_choice(str(predictions[i.item_id].raw_output), i.data["reference"])
            == visit.VOTE_A
        )
        for i in kept
    ]
    out.append(
        metric_row(
            "win_rate_length",
            float(np.mean(longer)) if longer else None,
            bootstrap_mean_interval(longer, **options),
            n,
            details={"baseline": "length", "reference": "human-verified GPT-4 response"},
        )
    )
    if not text_metrics:
        return out
    candidates = {i.item_id: str(predictions[i.item_id].raw_output) for i in kept}
    references = {i.item_id: i.data["reference"] for i in kept}
    for name, result in textmetrics.all_text_metrics(candidates, references).items():
        if not result.available:
            out.append(MetricRow(name, None, n=0, details={"unavailable": result.reason}))
            continue
        values = [result.scores[i.item_id] for i in kept]
        out.append(
            metric_row(
                name,
                float(np.mean(values)) if values else None,
                bootstrap_mean_interval(values, **options),
                n,
                breakdown={"category": _by_category(kept, values, options)}
                if name == textmetrics.ROUGE_L
                else {},
                details={"reference": "human-verified GPT-4 response (gpt4_prediction)"},
            )
        )
    return out


def _by_category(kept: Sequence[ItemData], values: Sequence[float], options: dict) -> dict:
    grouped: dict[str, list[float]] = defaultdict(list)
    for item, value in zip(kept, values, strict=True):
        grouped[str(item.data.get("category", ""))].append(float(value))
    return {
        k: cell(float(np.mean(v)), bootstrap_mean_interval(v, **options), len(v))
        for k, v in sorted(grouped.items())
    }


def length_battles(
    items: Sequence[ItemData], runs: Mapping[str, Mapping[str, PredictionData]]
) -> list[visit.Battle]:
    """Battles under the length baseline: every pair of players (runs plus the GPT-4 reference)
    on every kept instance both answered; the longer response wins, equal length is a tie."""
    battles = []
    for item in items:
        if not item.kept:
            continue
        responses = {
            name: str(p[item.item_id].raw_output) for name, p in runs.items() if item.item_id in p
        }
        if len(responses) == 0:
            continue
        responses[REFERENCE_PLAYER] = item.data["reference"]
        for a, b in itertools.combinations(sorted(responses), 2):
            vote = visit.length_choice(responses[a], responses[b])
            winner = visit.vote_winner(vote or visit.TIE, a, b)
            battles.append(visit.Battle(a, b, winner, item.data["image"], item.data["instruction"]))
    return battles


def version_rows(
    items: Sequence[ItemData],
    runs: Mapping[str, Mapping[str, PredictionData]],
    *,
    seed: int,
    rounds: int = DEFAULT_ROUNDS,
) -> dict[str, list[MetricRow]]:
    """Version-level ratings for every run: bootstrap Elo and Bradley–Terry of the length
    baseline (no judge or human battles exist yet; App. E)."""
    battles = length_battles(items, runs)
    if not battles:
        return {}
    boot = visit.bootstrap_elo(battles, rounds=rounds, seed=seed)
    bt = visit.bradley_terry(battles)
    online = visit.online_elo(battles, seed=1)
    out: dict[str, list[MetricRow]] = {}
    for name in runs:
        if name not in boot.ratings:
            continue
        rating = boot.ratings[name]
        matches = online.matches.get(name, 0)
        out[name] = [
            MetricRow(
                "elo_length",
                float(rating.median),
                rating.low,
                rating.high,
                n=matches,
                details={
                    "seed": seed,
                    "rounds": rounds,
                    "battles": boot.n_battles,
                    "online_elo": online.ratings.get(name),
                    "online_seed": online.seed,
                    "reference_elo": boot.ratings[REFERENCE_PLAYER].median,
                    "players": sorted(boot.ratings),
                    "baseline": "length",
                },
            ),
            MetricRow("bt_length", bt.get(name), n=matches, details={"baseline": "length"}),
        ]
    return out
