"""VisIT-Bench pairwise judgments → ratings, win-rates, metric-vs-human agreement and rank
correlations, by calling ``evaluation.metrics.visit``.

No database access: ``services.judgments_compute`` loads the pairs, calls these functions and
stores the JSON they return on each JudgmentSet. Every rating carries a seeded bootstrap interval
over battles (METRICS.md Sec. 2 and 6).
"""

from __future__ import annotations

import hashlib
import itertools
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from evaluation.metrics import textmetrics, visit
from evaluation.metrics.bootstrap import DEFAULT_ROUNDS, Interval

HUMAN = "human"
LLM = "llm"


def _code_version() -> str:
    digest = hashlib.sha1()
    for path in sorted((Path(__file__).parent / "metrics").glob("*.py")):
        digest.update(path.read_bytes())
    digest.update(Path(__file__).read_bytes())
    return digest.hexdigest()[:12]


CODE_VERSION = _code_version()


@dataclass(frozen=True)
class PairData:
    """One judged pair as the computations need it (no ORM objects)."""

    item_id: str
    image: str
    instruction: str
    model_a: str
    model_b: str
    winner: str  # model_a, model_b or "tie"
    response_a: str = ""
    response_b: str = ""
    votes_a: int = 0
    votes_b: int = 0
    reference: str = ""  # the instance's human-verified GPT-4 response (text metrics)

    @property
    def key(self) -> tuple[str, frozenset[str]]:
        return self.item_id, frozenset((self.model_a, self.model_b))


def battles_of(pairs: Sequence[PairData], kind: str) -> list[visit.Battle]:
    """Elo matches: one per judged pair for a judge; one per crowd vote for humans ("treating
    each pairwise human judgement as a match", Sec. 4.2), in file order, A votes first."""
    battles = []
    for p in pairs:
        if kind == HUMAN:
            for winner, count in ((p.model_a, p.votes_a), (p.model_b, p.votes_b)):
                battles.extend(
                    visit.Battle(p.model_a, p.model_b, winner, p.image, p.instruction)
                    for _ in range(count)
                )
        else:
            battles.append(visit.Battle(p.model_a, p.model_b, p.winner, p.image, p.instruction))
    return battles


def _interval(interval: Interval | None) -> dict:
    if interval is None:
        return {"low": None, "high": None}
    return {"low": interval.low, "high": interval.high}


def set_results(
    pairs: Sequence[PairData],
    *,
    kind: str,
    reference_player: str,
    seed: int = 1,
    bootstrap_seed: int = 0,
    rounds: int = DEFAULT_ROUNDS,
) -> dict:
    """Bootstrap Elo (median, 95% interval), online Elo (recorded shuffle seed), Bradley–Terry,
    matches and win-rate vs the reference for every player of one judgment set (Sec. 4.2,
    Tables 3-4, App. E)."""
    battles = battles_of(pairs, kind)
    # A judge's repeated (pair, instance) battles are dropped as in elo_analysis.py; crowd votes
    # on one pair are separate matches.
    dedup = kind != HUMAN
    boot = visit.bootstrap_elo(battles, rounds=rounds, seed=bootstrap_seed, deduplicate=dedup)
    online = visit.online_elo(battles, seed=seed, deduplicate=dedup)
    bt = visit.bradley_terry(battles, deduplicate=dedup)
    has_reference = reference_player in boot.ratings
    reference_elo = boot.ratings[reference_player].median if has_reference else None
    players = []
    for name, rating in boot.ratings.items():
        entry = {
            "player": name,
            "elo": rating.median,
            "low": rating.low,
            "high": rating.high,
            "online": online.ratings.get(name),
            "bt": bt.get(name),
            "matches": online.matches.get(name, 0),
            "is_reference": name == reference_player,
            "win_rate": None,
            "p_beats_reference": None,
        }
        if has_reference and name != reference_player:
            win = visit.win_rate_vs_reference(
                battles,
                name,
                reference_player,
                seed=bootstrap_seed,
                rounds=rounds,
                deduplicate=dedup,
            )
            entry["win_rate"] = {
                "wins": win.wins,
                "n": win.n,
                "value": win.rate,
                **_interval(win.interval),
                "text": str(win),
            }
            entry["p_beats_reference"] = visit.elo_win_probability(rating.median, reference_elo)
        players.append(entry)
    players.sort(key=lambda e: (-e["elo"], e["player"]))
    outcomes = Counter("tie" if p.winner == visit.TIE else "decisive" for p in pairs)
    strata = Counter(
        visit.HumanPairVotes(p.votes_a, p.votes_b).stratum
        for p in pairs
        if kind == HUMAN and p.votes_a + p.votes_b > 0
    )
    return {
        "kind": kind,
        "players": players,
        "pairs": len(pairs),
        "battles": boot.n_battles,
        "ties": outcomes.get("tie", 0),
        "strata": dict(sorted(strata.items(), reverse=True)),
        "reference_player": reference_player,
        "reference_elo": reference_elo,
        "online_seed": seed,
        "bootstrap_seed": bootstrap_seed,
        "rounds": rounds,
        "deduplicated": dedup,
    }


# --- Metric-vs-human agreement (Sec. 4.3, Fig. 7) -----------------------------------------------


def _choice(winner: str, model_a: str, model_b: str) -> str | None:
    """The judged winner as "A"/"B" relative to the crowd pair's presentation; None for a tie."""
    if winner == model_a:
        return visit.VOTE_A
    if winner == model_b:
        return visit.VOTE_B
    return None


def _agreement_entry(
    name: str,
    kind: str,
    votes: Sequence[visit.HumanPairVotes],
    choices: Sequence[str | None],
    *,
    seed: int,
    rounds: int,
    coverage: int | None = None,
) -> dict:
    result = visit.metric_human_agreement(votes, choices, seed=seed, rounds=rounds)

    def cell(a: visit.Agreement) -> dict:
        return {"value": a.share, "n": a.n, **_interval(a.interval)}

    return {
        "name": name,
        "kind": kind,
        "overall": cell(result.overall),
        "strata": {s: cell(a) for s, a in result.strata.items()},
        "ties_broken": result.ties_broken,
        "coverage": len(votes) if coverage is None else coverage,
        "unavailable": "",
    }


def agreement_results(
    human: Sequence[PairData],
    *,
    reference_player: str,
    judges: Mapping[str, Sequence[PairData]],
    text_metrics: bool = True,
    seed: int = 0,
    rounds: int = DEFAULT_ROUNDS,
) -> dict:
    """How often each metric reproduces the crowd majority on pairs with five votes where both
    responses are model-generated, overall and for the 5/5, 4/5 and 3/5 strata; a metric's tie
    becomes a seeded random choice (Sec. 4.3, Fig. 7). Judges count on the pairs they judged."""
    eligible = [
        p
        for p in human
        if reference_player not in (p.model_a, p.model_b) and p.votes_a + p.votes_b == 5
    ]
    excluded_reference = sum(1 for p in human if reference_player in (p.model_a, p.model_b))
    votes = [visit.HumanPairVotes(p.votes_a, p.votes_b) for p in eligible]
    options = {"seed": seed, "rounds": rounds}
    metrics = []
    for name, judged in judges.items():
        by_key = {}
        for p in judged:
            by_key.setdefault(p.key, p)
        covered = [(k, by_key[p.key]) for k, p in enumerate(eligible) if p.key in by_key]
        choices = [_choice(j.winner, eligible[k].model_a, eligible[k].model_b) for k, j in covered]
        metrics.append(
            _agreement_entry(
                name,
                "judge",
                [votes[k] for k, _ in covered],
                choices,
                coverage=len(covered),
                **options,
            )
        )
    if text_metrics:
        candidates, references = {}, {}
        for k, p in enumerate(eligible):
            for side, text in (("a", p.response_a), ("b", p.response_b)):
                candidates[f"{k}{side}"] = text
                references[f"{k}{side}"] = p.reference
        labels = {
            textmetrics.BLEU4: "BLEU-4",
            textmetrics.ROUGE_L: "ROUGE-L",
            textmetrics.METEOR: "METEOR",
            textmetrics.CIDER: "CIDEr",
            textmetrics.BERTSCORE: "BERTScore",
        }
        for key, result in textmetrics.all_text_metrics(candidates, references).items():
            if not result.available:
                metrics.append({"name": labels[key], "kind": "text", "unavailable": result.reason})
                continue
            choices = [
                visit.score_choice(result.scores.get(f"{k}a"), result.scores.get(f"{k}b"))
                for k in range(len(eligible))
            ]
            metrics.append(_agreement_entry(labels[key], "text", votes, choices, **options))
    length = [visit.length_choice(p.response_a, p.response_b) for p in eligible]
    metrics.append(_agreement_entry("Length (longer wins)", "baseline", votes, length, **options))
    chance = visit.random_choices(len(eligible), seed=seed)
    metrics.append(_agreement_entry("Random", "baseline", votes, chance, **options))
    return {
        "pairs": len(eligible),
        "excluded_reference": excluded_reference,
        "excluded_not_five": len(human) - len(eligible) - excluded_reference,
        "strata": {s: sum(1 for v in votes if v.stratum == s) for s in visit.STRATA},
        "metrics": metrics,
        "seed": seed,
        "rounds": rounds,
    }


# --- Rankings and Spearman ρ (Sec. 4.3, "System-level Correlation") -------------------------------


@dataclass(frozen=True)
class Ranking:
    key: str
    label: str
    values: dict[str, float]  # system → value (higher ranks first)
    kind: str = "rating"  # how values are shown: share (×100), rating, count, tokens


def correlate(a: Ranking, b: Ranking) -> dict:
    """Spearman ρ between two rankings over the systems both rate (scipy), with the table of
    shared systems and their ranks; fewer than two shared systems or a constant ranking leave ρ
    undefined, with the reason."""
    shared = sorted(set(a.values) & set(b.values), key=lambda s: (-a.values[s], s))
    only_a = sorted(set(a.values) - set(b.values))
    only_b = sorted(set(b.values) - set(a.values))
    out = {
        "a": a.label,
        "b": b.label,
        "kind_a": a.kind,
        "kind_b": b.kind,
        "n": len(shared),
        "rho": None,
        "p_value": None,
        "reason": "",
        "p_method": "",
        "rows": [],
        "only_a": only_a,
        "only_b": only_b,
    }
    rank_a = _ranks([a.values[s] for s in shared])
    rank_b = _ranks([b.values[s] for s in shared])
    out["rows"] = [
        {"system": s, "a": a.values[s], "b": b.values[s], "rank_a": ra, "rank_b": rb}
        for s, ra, rb in zip(shared, rank_a, rank_b, strict=True)
    ]
    if len(shared) < 2:
        out["reason"] = "Spearman ρ needs at least two systems that both rankings rate."
        return out
    if len(set(rank_a)) == 1 or len(set(rank_b)) == 1:
        out["reason"] = "One ranking gives every shared system the same value: ρ is undefined."
        return out
    result = visit.ranking_correlation(a.values, b.values)
    out["rho"] = result.rho
    out["p_value"] = None if math.isnan(result.p_value) else result.p_value
    out["p_method"] = "t approximation (scipy)"
    if len(shared) <= EXACT_MAX_SYSTEMS:
        out["p_value"] = exact_p_value(rank_a, rank_b)
        out["p_method"] = f"exact, all {math.factorial(len(shared))} orderings"
    return out


# Up to 8 systems (40 320 orderings) the permutation p-value is exact and cheap; scipy's t
# approximation says p = 0 for ρ = ±1 whatever n, which overstates 4 or 5 systems.
EXACT_MAX_SYSTEMS = 8


def exact_p_value(rank_a: Sequence[float], rank_b: Sequence[float]) -> float:
    """Two-sided permutation p-value of Spearman's ρ: the share of all orderings of B's ranks
    whose |ρ| is at least the observed one."""
    a = np.asarray(rank_a, dtype=float)
    perms = np.asarray(list(itertools.permutations(rank_b)), dtype=float)
    a_c = a - a.mean()
    b_c = perms - perms.mean(axis=1, keepdims=True)
    rho = (b_c @ a_c) / np.sqrt((a_c @ a_c) * (b_c * b_c).sum(axis=1))
    observed = abs(rho[0])  # the identity ordering comes first
    return float(np.mean(np.abs(rho) >= observed - 1e-12))


def _ranks(values: Sequence[float]) -> list[float]:
    """Rank 1 = highest value; ties share their mean rank (as Spearman's ρ treats them)."""
    order = sorted(range(len(values)), key=lambda k: -values[k])
    ranks = [0.0] * len(values)
    k = 0
    while k < len(order):
        j = k
        while j + 1 < len(order) and values[order[j + 1]] == values[order[k]]:
            j += 1
        for m in range(k, j + 1):
            ranks[order[m]] = (k + j) / 2 + 1
        k = j + 1
    return ranks
