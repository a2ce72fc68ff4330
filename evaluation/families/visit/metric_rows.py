"""VisIT-Bench metric rows (METRICS.md Sec. 2): per-run length and text metrics, and the
version-level length-baseline ratings of every run (App. E)."""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from evaluation.compute import ItemData, MetricRow, MetricSpec, PredictionData, cell, metric_row
from evaluation.metrics import textmetrics, visit
from evaluation.metrics.bootstrap import DEFAULT_ROUNDS, bootstrap_mean_interval

# Where an item's reference came from (publish.py's ``reference_source``; absent in the published
# CSV, whose references are GPT-4's, human-verified) → how the reference player is named.
REFERENCE_SOURCES = {
    "": "GPT-4 reference (published, human-verified)",
    "imported": "GPT-4 reference (published, human-verified)",
    "llm": "LLM-drafted reference (human-verified)",
    "offline drafter": "Offline-drafted reference (rule-based demo drafter)",
    "human": "Human-written reference (published, fully annotated layout)",
}
SPECS = (
    MetricSpec(
        "elo_length",
        "Elo (length baseline, online)",
        "rating",
        help="online Elo as the sandbox's elo_analysis.py computes it (K = 4, battles shuffled "
        "with seed 1, one pass) when the longer response wins every pair — a baseline, not a "
        "quality judgment",
    ),
    MetricSpec(
        "elo_length_bootstrap",
        "Elo (length baseline, bootstrap median)",
        "rating",
        help="median of 1000 bootstrap rounds with its 95% interval; the seed is derived from "
        "the battles",
    ),
    MetricSpec(
        "win_rate_length",
        "Win-rate vs reference (length baseline)",
        help="share of instances where the response is longer than the reference",
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
    length baseline against the reference, and reference-based text metrics (Sec. 4.3)."""
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
            details={"baseline": "length", "reference": reference_label(kept)},
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
                details={"reference": reference_label(kept)},
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


def reference_label(items: Sequence[ItemData]) -> str:
    """The reference player's name, from where the kept items' references came from: an
    offline-drafted reference is not "GPT-4 reference" (Sec. 2.1 drafts with GPT-4)."""
    return reference_label_of(str(i.data.get("reference_source") or "") for i in items if i.kept)


def reference_label_of(sources: Iterable[str]) -> str:
    """``reference_label`` from the kept items' ``reference_source`` values."""
    labels = sorted({REFERENCE_SOURCES.get(s or "", f"Reference ({s})") for s in sources})
    if not labels:
        return REFERENCE_SOURCES[""]
    if len(labels) == 1:
        return labels[0]
    return "Reference (mixed: " + "; ".join(labels) + ")"


def length_battles(
    items: Sequence[ItemData],
    runs: Mapping[str, Mapping[str, PredictionData]],
    reference: str,
) -> list[visit.Battle]:
    """Battles under the length baseline: every pair of players (runs, by model name, plus the
    reference) on every kept instance both answered; the longer response wins, equal length is
    a tie."""
    battles = []
    for item in items:
        if not item.kept:
            continue
        responses = {
            name: str(p[item.item_id].raw_output) for name, p in runs.items() if item.item_id in p
        }
        if len(responses) == 0:
            continue
        responses[reference] = item.data["reference"]
        for a, b in itertools.combinations(sorted(responses), 2):
            vote = visit.length_choice(responses[a], responses[b])
            winner = visit.vote_winner(vote or visit.TIE, a, b)
            battles.append(visit.Battle(a, b, winner, item.data["image"], item.data["instruction"]))
    return battles


def version_rows(
    items: Sequence[ItemData],
    runs: Mapping[str, Mapping[str, PredictionData]],
    *,
    rounds: int = DEFAULT_ROUNDS,
) -> dict[str, list[MetricRow]]:
    """Version-level ratings for every run (keyed by player: the run's model name): the online
    Elo of the length baseline as the sandbox ranks (App. E: K = 4, shuffle seed 1), its
    bootstrap median and 95% interval with a seed derived from the battles, and Bradley–Terry.
    No database id enters, so the same data gives the same numbers in any database."""
    reference = reference_label(items)
    battles = length_battles(items, runs, reference)
    if not battles:
        return {}
    seed = visit.battles_seed(battles)
    boot = visit.bootstrap_elo(battles, rounds=rounds, seed=seed)
    bt = visit.bradley_terry(battles)
    online = visit.online_elo(battles, seed=1)
    out: dict[str, list[MetricRow]] = {}
    common = {
        "bootstrap_seed": seed,
        "seed_rule": "sha256(battles)[:4]",
        "rounds": rounds,
        "battles": boot.n_battles,
        "online_seed": online.seed,
        "reference": reference,
        "reference_elo": online.ratings.get(reference),
        "reference_bootstrap_elo": boot.ratings[reference].median,
        "players": sorted(boot.ratings),
        "baseline": "length",
    }
    for name in runs:
        if name not in boot.ratings:
            continue
        rating = boot.ratings[name]
        matches = online.matches.get(name, 0)
        out[name] = [
            MetricRow(
                "elo_length",
                online.ratings.get(name),
                n=matches,
                details={**common, "bootstrap_median": rating.median},
            ),
            MetricRow(
                "elo_length_bootstrap",
                float(rating.median),
                rating.low,
                rating.high,
                n=matches,
                details=common,
            ),
            MetricRow("bt_length", bt.get(name), n=matches, details={"baseline": "length"}),
        ]
    return out
