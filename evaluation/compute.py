"""Turn a run's items and predictions into metric rows by calling ``evaluation.metrics``.

No database access: ``services.metrics_compute`` loads rows, calls these functions and stores the
result. Every headline value carries a seeded 95% bootstrap interval that resamples the metric's
own unit (METRICS.md Sec. 6).
"""

from __future__ import annotations

import hashlib
import itertools
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from evaluation.metrics import naturalbench as nb
from evaluation.metrics import retrieval, textmetrics, vhexpansion, visit, vlind
from evaluation.metrics.bootstrap import DEFAULT_ROUNDS, Interval, bootstrap_mean_interval


def _code_version() -> str:
    digest = hashlib.sha1()
    for path in sorted((Path(__file__).parent / "metrics").glob("*.py")):
        digest.update(path.read_bytes())
    digest.update(Path(__file__).read_bytes())
    return digest.hexdigest()[:12]


CODE_VERSION = _code_version()
REFERENCE_PLAYER = "GPT-4 reference"


@dataclass(frozen=True)
class MetricSpec:
    key: str
    label: str
    kind: str = "share"  # share (shown ×100) | count | rating | tokens
    headline: bool = True
    help: str = ""


@dataclass
class MetricRow:
    metric: str
    value: float | None
    low: float | None = None
    high: float | None = None
    n: int = 0
    breakdown: dict = field(default_factory=dict)
    details: dict = field(default_factory=dict)


@dataclass(frozen=True)
class ItemData:
    item_id: str
    data: Mapping[str, Any]
    kept: bool = True


@dataclass(frozen=True)
class PredictionData:
    raw_output: Any
    parsed_answer: Any = None
    scores: Any = None


SPECS: dict[str, list[MetricSpec]] = {
    "naturalbench": [
        MetricSpec("acc", "Acc"),
        MetricSpec("q_acc", "Q-Acc"),
        MetricSpec("i_acc", "I-Acc"),
        MetricSpec("g_acc", "G-Acc"),
        MetricSpec("unparseable", "Unparseable", "count", help="answers with neither word"),
        MetricSpec("q_acc_sample_tau", "Q-Acc (sample-optimal τ)", headline=False),
        MetricSpec("i_acc_sample_tau", "I-Acc (sample-optimal τ)", headline=False),
        MetricSpec("g_acc_sample_tau", "G-Acc (sample-optimal τ)", headline=False),
        MetricSpec("g_acc_global_tau", "G-Acc (global-optimal τ)", headline=False),
        MetricSpec("g_acc_post_hoc", "G-Acc (post-hoc debiasing)", headline=False),
    ],
    "naturalbench_retrieval": [
        MetricSpec("text", "Text score"),
        MetricSpec("image", "Image score"),
        MetricSpec("group", "Group score"),
    ],
    "vhexpansion": [
        MetricSpec("accuracy", "Accuracy"),
        MetricSpec("symmetric_accuracy", "Symmetric accuracy"),
        MetricSpec(
            "new_successful",
            "# new successful VH cases",
            "count",
            help="generated cases (negations and perturbed variants, not originals) answered wrong",
        ),
    ],
    "vlind": [
        MetricSpec("s_ck", "S_CK"),
        MetricSpec("s_vp", "S_VP"),
        MetricSpec("s_cb", "S_CB"),
        MetricSpec("s_lp", "S_LP"),
        MetricSpec("cb", "CB"),
        MetricSpec("lp", "LP"),
    ],
    "visit": [
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
    ],
}

PRIMARY = {
    "naturalbench": "g_acc",
    "naturalbench_retrieval": "group",
    "vhexpansion": "symmetric_accuracy",
    "vlind": "s_lp",
    "visit": "elo_length",
}


@dataclass(frozen=True)
class ReferenceRow:
    """A row for comparison on a leaderboard, not a run: chance, or a paper's human figures."""

    label: str
    values: dict[str, float]
    note: str


REFERENCE_ROWS: dict[str, list[ReferenceRow]] = {
    "naturalbench": [
        ReferenceRow(
            "Random chance",
            dict(nb.RANDOM_CHANCE),
            "a uniform random guesser (NaturalBench paper, Table 1)",
        ),
        ReferenceRow(
            "Human (paper)",
            dict(nb.HUMAN_PAPER),
            "three annotators on the published NaturalBench (paper, Table 1); not measured on "
            "this version",
        ),
    ],
    "naturalbench_retrieval": [
        ReferenceRow(
            "Random chance",
            dict(retrieval.RANDOM_CHANCE),
            "random scores: Winoground chance (NaturalBench paper, App. B)",
        ),
    ],
    "vhexpansion": [
        ReferenceRow(
            "Random guess, P(yes) = 0.5",
            {
                "accuracy": vhexpansion.random_guess_accuracy(0.5, 0.5),
                "symmetric_accuracy": vhexpansion.random_guess_symmetric_accuracy(0.5),
            },
            "E[acc] = 1 + (2p − 1)q − p = 0.5 for p = 0.5 whatever q; E[sym-acc] = p(1 − p) "
            "(Theorems 1-2)",
        ),
    ],
}


def spec_map(family: str) -> dict[str, MetricSpec]:
    return {s.key: s for s in SPECS.get(family, [])}


def _row(metric: str, value: float | None, interval: Interval | None, n: int, **extra) -> MetricRow:
    details = extra.pop("details", {})
    if interval is not None:
        details = {
            **details,
            "seed": interval.seed,
            "rounds": interval.rounds,
            "level": interval.level,
        }
        if interval.undefined_rounds:
            details["undefined_rounds"] = interval.undefined_rounds
    return MetricRow(
        metric=metric,
        value=value,
        low=interval.low if interval else None,
        high=interval.high if interval else None,
        n=n,
        details=details,
        **extra,
    )


def _cell(value: float | None, interval: Interval | None, n: int) -> dict:
    return {
        "value": value,
        "low": interval.low if interval else None,
        "high": interval.high if interval else None,
        "n": n,
    }


# --- NaturalBench (METRICS.md Sec. 1) ------------------------------------------------------------


def parse_naturalbench(item: ItemData, raw: Mapping[str, str]) -> list[str | None]:
    """Official answer parsing of the four outputs of one sample (naturalbench.txt Sec. 4)."""
    return [nb.parse_answer(raw.get(key, ""), item.data["question_type"]) for key in nb.SAMPLE_KEYS]


def naturalbench_rows(
    items: Sequence[ItemData],
    predictions: Mapping[str, PredictionData],
    *,
    seed: int,
    rounds: int = DEFAULT_ROUNDS,
) -> list[MetricRow]:
    kept = [item for item in items if item.kept]
    samples: list[list[str | None]] = []
    missing = 0
    for item in kept:
        prediction = predictions.get(item.item_id)
        if prediction is None:
            missing += 1
            samples.append([None] * 4)
        else:
            samples.append(list(prediction.parsed_answer or [None] * 4))
    options = {"seed": seed, "rounds": rounds}
    codes = nb.encode_answers(samples)
    overall = nb.naturalbench_scores(codes, **options)
    keys = [
        " × ".join(
            (
                str(item.data.get("source") or "—"),
                str(item.data["question_type"]),
                str(item.data.get("language") or "en"),
            )
        )
        for item in kept
    ]
    by_subset = nb.naturalbench_scores_by_group(codes, keys, **options) if kept else {}
    rows = []
    for name in ("acc", "q_acc", "i_acc", "g_acc"):
        breakdown = {
            "subset": {
                str(key): _cell(getattr(s, name), s.intervals.get(name), s.n_samples)
                for key, s in sorted(by_subset.items())
            }
        }
        rows.append(
            _row(
                name,
                getattr(overall, name),
                overall.intervals.get(name),
                overall.n_samples,
                breakdown=breakdown,
                details={"missing_predictions": missing},
            )
        )
    # Per-skill Q-Acc over the questions carrying the tag (App. C).
    tagged = [k for k, item in enumerate(kept) if item.data.get("skills")]
    if tagged:
        skills = nb.skill_question_accuracy(
            nb.AnswerCodes(codes.codes[tagged]),
            [kept[k].data["skills"] for k in tagged],
            **options,
        )
        rows[1].breakdown["skill"] = {
            name: _cell(s.q_acc, s.interval, s.n_questions) for name, s in skills.items()
        }
    rows.append(_row("unparseable", float(overall.unparseable), None, 4 * len(kept)))
    rows.extend(_naturalbench_debiased(kept, predictions, options))
    return rows


def _naturalbench_debiased(
    kept: Sequence[ItemData], predictions: Mapping[str, PredictionData], options: dict
) -> list[MetricRow]:
    """Debiased metrics when every sample has likelihoods (naturalbench.txt Sec. 5, App. D)."""
    scored = [predictions.get(item.item_id) for item in kept]
    if not kept or any(p is None or not p.scores or "p_a0" not in p.scores for p in scored):
        return []
    p_a0 = np.array([p.scores["p_a0"] for p in scored], dtype=float)
    p_a1 = np.array([p.scores["p_a1"] for p in scored], dtype=float)
    n = len(kept)
    rows = []
    oracle = nb.sample_optimal_scores(p_a0, p_a1, **options)
    for name in ("q_acc", "i_acc", "g_acc"):
        rows.append(
            _row(f"{name}_sample_tau", getattr(oracle, name), oracle.intervals.get(name), n)
        )
    global_tau = nb.global_optimal_scores(p_a0, p_a1, **options)
    rows.append(
        _row(
            "g_acc_global_tau",
            global_tau.g_acc,
            global_tau.intervals.get("g_acc"),
            n,
            details={
                "tau": global_tau.tau,
                "acc": global_tau.acc,
                "q_acc": global_tau.q_acc,
                "i_acc": global_tau.i_acc,
            },
        )
    )
    if all("p_a0_blind" in p.scores and "p_a1_blind" in p.scores for p in scored):
        post = nb.post_hoc_scores(
            p_a0,
            p_a1,
            np.array([p.scores["p_a0_blind"] for p in scored]),
            np.array([p.scores["p_a1_blind"] for p in scored]),
            **options,
        )
        rows.append(
            _row(
                "g_acc_post_hoc",
                post.g_acc,
                post.intervals.get("g_acc"),
                n,
                details={"acc": post.acc, "q_acc": post.q_acc, "i_acc": post.i_acc},
            )
        )
    return rows


# --- NaturalBench-Retrieval (App. B) ------------------------------------------------------------


def retrieval_rows(
    items: Sequence[ItemData],
    predictions: Mapping[str, PredictionData],
    *,
    seed: int,
    rounds: int = DEFAULT_ROUNDS,
) -> list[MetricRow]:
    pairs = [predictions[i.item_id].scores for i in items if i.kept and i.item_id in predictions]
    scores = retrieval.winoground_scores(pairs, seed=seed, rounds=rounds)
    missing = sum(1 for i in items if i.kept and i.item_id not in predictions)
    return [
        _row(
            name,
            getattr(scores, name),
            scores.intervals.get(name),
            scores.n_pairs,
            details={"missing_predictions": missing},
        )
        for name in ("text", "image", "group")
    ]


# --- VHExpansion (METRICS.md Sec. 3) -------------------------------------------------------------


def vh_pairs(
    items: Sequence[ItemData], predictions: Mapping[str, PredictionData]
) -> list[vhexpansion.VHPair]:
    """One VHPair per (case, negated case); a missing prediction counts as wrong."""
    by_pair: dict[str, dict[bool, ItemData]] = defaultdict(dict)
    for item in items:
        if item.kept:
            by_pair[item.data["pair_id"]][bool(item.data["negated"])] = item
    pairs = []
    for pair_id in sorted(by_pair):
        members = by_pair[pair_id]
        if set(members) != {False, True}:
            continue

        def correct(item: ItemData) -> bool:
            prediction = predictions.get(item.item_id)
            return prediction is not None and prediction.parsed_answer == item.data["answer"]

        original, negation = members[False], members[True]
        pairs.append(
            vhexpansion.VHPair(
                case_correct=correct(original),
                negation_correct=correct(negation),
                perturbation=original.data.get("perturbation") or vhexpansion.ORIGINAL,
                source=original.data.get("source", ""),
            )
        )
    return pairs


def vh_rows(
    items: Sequence[ItemData],
    predictions: Mapping[str, PredictionData],
    *,
    seed: int,
    rounds: int = DEFAULT_ROUNDS,
) -> list[MetricRow]:
    pairs = vh_pairs(items, predictions)
    options = {"seed": seed, "rounds": rounds}
    overall = vhexpansion.vh_scores(pairs, **options)
    groups = {
        "perturbation": vhexpansion.vh_scores_by_perturbation(pairs, **options),
        "source": vhexpansion.vh_scores_by_source(pairs, **options),
    }
    rows = []
    for name in ("accuracy", "symmetric_accuracy"):
        breakdown = {
            dim: {
                str(k): _cell(getattr(s, name), s.intervals.get(name), s.n_pairs)
                for k, s in sorted(g.items(), key=lambda kv: str(kv[0]))
            }
            for dim, g in groups.items()
        }
        rows.append(
            _row(
                name,
                getattr(overall, name),
                overall.intervals.get(name),
                overall.n_pairs,
                breakdown=breakdown,
            )
        )
    rows.append(
        MetricRow(
            "new_successful",
            float(overall.new_successful),
            n=overall.n_pairs,
            breakdown={
                dim: {
                    str(k): {"value": float(s.new_successful), "n": s.n_pairs}
                    for k, s in sorted(g.items(), key=lambda kv: str(kv[0]))
                }
                for dim, g in groups.items()
            },
            details={
                "definition": "generated cases (negations and perturbed variants, not the "
                "originals) answered wrong"
            },
        )
    )
    return rows


# --- VLind-Bench (METRICS.md Sec. 4) -------------------------------------------------------------


def _passes(parsed: Mapping[str, Any], should_true: str, should_false: str) -> bool:
    return vlind.statement_pair_passes(parsed.get(should_true), parsed.get(should_false))


def vlind_instance(
    item: ItemData, prediction: PredictionData | None, images: Sequence[str]
) -> vlind.VLindInstance:
    """Outcomes a (CK), b (VP), c (CB), d per good image in `images` (official score_pipeline)."""
    parsed = (prediction.parsed_answer if prediction else None) or {}
    d1, d2 = parsed.get("d1", {}), parsed.get("d2", {})
    lp = tuple(vlind.statement_pair_passes(d1.get(i), d2.get(i)) for i in images)
    return vlind.VLindInstance(
        ck=_passes(parsed, "a1_image", "a2_image"),
        vp=_passes(parsed, "b1", "b2"),
        cb=_passes(parsed, "c1_image", "c2_image"),
        lp=lp,
        concept=str(item.data.get("concept", "")),
    )


def vlind_rows(
    items: Sequence[ItemData],
    predictions: Mapping[str, PredictionData],
    *,
    seed: int,
    rounds: int = DEFAULT_ROUNDS,
) -> list[MetricRow]:
    from evaluation.importers import VLIND_STYLES

    options = {"seed": seed, "rounds": rounds}
    instances = [
        vlind_instance(item, predictions.get(item.item_id), item.data.get("good_images", []))
        for item in items
    ]
    overall = vlind.vlind_scores(instances, **options)
    by_concept = vlind.vlind_scores_by(instances, lambda i: i.concept, **options)
    styled = []
    for item in items:
        for style in ("photorealistic", "illustration", "cartoon"):
            images = [i for i in item.data.get("good_images", []) if VLIND_STYLES.get(i) == style]
            inst = vlind_instance(item, predictions.get(item.item_id), images)
            styled.append(
                vlind.VLindInstance(inst.ck, inst.vp, inst.cb, inst.lp, inst.concept, style)
            )
    by_style = vlind.vlind_scores_by(styled, lambda i: i.style, **options)
    rows = []
    for name in ("s_ck", "s_vp", "s_cb", "s_lp", "cb", "lp"):
        breakdown = {
            dim: {
                str(k): _cell(getattr(s, name), s.intervals.get(name), s.n_instances)
                for k, s in sorted(g.items())
            }
            for dim, g in (("concept", by_concept), ("style", by_style))
        }
        rows.append(
            _row(
                name,
                getattr(overall, name),
                overall.intervals.get(name),
                overall.n_instances,
                breakdown=breakdown,
            )
        )
    return rows


# --- VisIT-Bench (METRICS.md Sec. 2) -------------------------------------------------------------


def visit_run_rows(
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
    rows = [
        _row(
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
    rows.append(
        _row(
            "win_rate_length",
            float(np.mean(longer)) if longer else None,
            bootstrap_mean_interval(longer, **options),
            n,
            details={"baseline": "length", "reference": "human-verified GPT-4 response"},
        )
    )
    if not text_metrics:
        return rows
    candidates = {i.item_id: str(predictions[i.item_id].raw_output) for i in kept}
    references = {i.item_id: i.data["reference"] for i in kept}
    for name, result in textmetrics.all_text_metrics(candidates, references).items():
        if not result.available:
            rows.append(MetricRow(name, None, n=0, details={"unavailable": result.reason}))
            continue
        values = [result.scores[i.item_id] for i in kept]
        rows.append(
            _row(
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
    return rows


def _by_category(kept: Sequence[ItemData], values: Sequence[float], options: dict) -> dict:
    grouped: dict[str, list[float]] = defaultdict(list)
    for item, value in zip(kept, values, strict=True):
        grouped[str(item.data.get("category", ""))].append(float(value))
    return {
        k: _cell(float(np.mean(v)), bootstrap_mean_interval(v, **options), len(v))
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


def visit_version_rows(
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


FAMILY_ROWS = {
    "naturalbench": naturalbench_rows,
    "naturalbench_retrieval": retrieval_rows,
    "vhexpansion": vh_rows,
    "vlind": vlind_rows,
    "visit": visit_run_rows,
}
