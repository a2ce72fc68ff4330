"""VisIT-Bench: judge parsing, two-order aggregation, Elo, Bradley-Terry, win-rate, agreement.

Follows METRICS.md Sec. 2 and visit-bench.txt Sec. 4.2-4.3, App. E (Elo after FastChat's
elo_analysis.py) and App. F (judge prompts and answer extraction, Fig. 18).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import Counter, defaultdict
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import optimize, stats

from evaluation.metrics.bootstrap import (
    DEFAULT_ROUNDS,
    DEFAULT_SEED,
    Interval,
    bootstrap_mean_interval,
    resample_indices,
)

TIE = "tie"
VOTE_A = "A"
VOTE_B = "B"

ELO_K = 4.0
ELO_SCALE = 400.0
ELO_BASE = 10.0
ELO_INITIAL = 1000.0

STRATA = ("5/5", "4/5", "3/5")


# --- Judge output parsing (App. F) --------------------------------------------------------------


def parse_judge_output(text: str) -> str | None:
    """Vote "A"/"B" iff exactly one of "response a/b is better" occurs, any case (App. F)."""
    lowered = text.lower()
    says_a = "response a is better" in lowered
    says_b = "response b is better" in lowered
    if says_a == says_b:
        return None
    return VOTE_A if says_a else VOTE_B


def parse_extraction_output(text: str) -> str | None:
    """Vote from the extraction call: exactly one of "Final Answer: Response A/B", case-sensitive
    (visit-bench.txt App. F, Fig. 18)."""
    says_a = "Final Answer: Response A" in text
    says_b = "Final Answer: Response B" in text
    if says_a == says_b:
        return None
    return VOTE_A if says_a else VOTE_B


def judge_vote(judge_output: str, extract: Callable[[str], str] | None = None) -> str:
    """ "A", "B" or "tie": direct parse, else one extraction call, else tie (App. F).

    `extract` sends the judge output to the extraction prompt and returns the reply; without it an
    unparseable judgment is a tie.
    """
    vote = parse_judge_output(judge_output)
    if vote is not None:
        return vote
    if extract is None:
        return TIE
    return parse_extraction_output(extract(judge_output)) or TIE


def needs_extraction(judge_output: str) -> bool:
    """True when the judge output names no single winner, so the extraction call is due (App. F)."""
    return parse_judge_output(judge_output) is None


def order_winner(
    judge_output: str,
    shown_a: str,
    shown_b: str,
    *,
    extraction_output: str | None = None,
) -> str:
    """Winner of one judged order from the recorded outputs: the direct parse, else the reply of
    the one extraction call, else "tie" (visit-bench.txt App. F; official pairwise_eval)."""
    vote = parse_judge_output(judge_output)
    if vote is None and extraction_output is not None:
        vote = parse_extraction_output(extraction_output)
    return vote_winner(vote or TIE, shown_a, shown_b)


def vote_winner(vote: str, model_a: str, model_b: str) -> str:
    """Model shown as Response A / B in this order, or "tie" (Sec. 4.3)."""
    if vote == VOTE_A:
        return model_a
    if vote == VOTE_B:
        return model_b
    return TIE


def aggregate_two_orders(first: str, second: str) -> str:
    """Winner of a pair judged in both orders, or "tie" (visit-bench.txt Sec. 4.3; official code).

    Ties are dropped; if nothing remains or the remaining winners are all distinct it is a tie.
    So a win needs both orders to agree, and (X, tie) is a tie.
    """
    wins = [w for w in (first, second) if w != TIE]
    if not wins or len(wins) == len(set(wins)):
        return TIE
    return Counter(wins).most_common(1)[0][0]


# --- Battles and Elo (Sec. 4.2, App. E) ---------------------------------------------------------


@dataclass(frozen=True)
class Battle:
    """One aggregated pairwise judgment; `winner` is model_a, model_b or "tie"."""

    model_a: str
    model_b: str
    winner: str
    image: str
    instruction: str

    def __post_init__(self) -> None:
        if self.winner not in (self.model_a, self.model_b, TIE):
            raise ValueError(f"winner must be {self.model_a!r}, {self.model_b!r} or 'tie'")

    @property
    def score_a(self) -> float:
        """S_a: 1 win, 0 loss, 0.5 tie."""
        if self.winner == TIE:
            return 0.5
        return 1.0 if self.winner == self.model_a else 0.0


def deduplicate_battles(battles: Sequence[Battle]) -> list[Battle]:
    """Keep the first battle per (unordered model pair, image, instruction) (App. E, official)."""
    seen: set[tuple[frozenset[str], str, str]] = set()
    kept = []
    for battle in battles:
        key = (frozenset((battle.model_a, battle.model_b)), battle.image, battle.instruction)
        if key not in seen:
            seen.add(key)
            kept.append(battle)
    return kept


def battles_seed(battles: Sequence[Battle], *, salt: int = 0) -> int:
    """A bootstrap seed from the battles, never a database id (App. E records it): the first 32
    bits of SHA-256 over their [model_a, model_b, winner, image, instruction] in order, + salt."""
    rows = [[b.model_a, b.model_b, b.winner, b.image, b.instruction] for b in battles]
    text = json.dumps(rows, ensure_ascii=False, separators=(",", ":"))
    return (int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "big") + salt) % 2**32


def elo_expected(rating_a: float, rating_b: float) -> float:
    """E_a = 1 / (1 + 10^((R_b − R_a)/400)): P(a beats b) from the Elo gap (App. E, Eq. 1)."""
    return 1.0 / (1.0 + ELO_BASE ** ((rating_b - rating_a) / ELO_SCALE))


def elo_sequence(
    battles: Sequence[Battle],
    *,
    k: float = ELO_K,
    initial: float = ELO_INITIAL,
) -> dict[str, float]:
    """One online Elo pass in the given order, K = 4, scale 400, base 10, start 1000 (App. E)."""
    rating: dict[str, float] = defaultdict(lambda: initial)
    for battle in battles:
        ra, rb = rating[battle.model_a], rating[battle.model_b]
        ea = elo_expected(ra, rb)
        eb = elo_expected(rb, ra)
        sa = battle.score_a
        rating[battle.model_a] = ra + k * (sa - ea)
        rating[battle.model_b] = rb + k * (1.0 - sa - eb)
    return dict(rating)


@dataclass(frozen=True)
class EloResult:
    """Online Elo ratings with the seed of the battle shuffle and match counts."""

    ratings: dict[str, float]
    matches: dict[str, int]
    seed: int
    n_battles: int


def _battles_used(battles: Sequence[Battle], deduplicate: bool) -> list[Battle]:
    return deduplicate_battles(battles) if deduplicate else list(battles)


def online_elo(
    battles: Sequence[Battle],
    *,
    seed: int = 1,
    k: float = ELO_K,
    initial: float = ELO_INITIAL,
    deduplicate: bool = True,
) -> EloResult:
    """Leaderboard Elo: de-duplicate, shuffle with a recorded seed, one pass (Sec. 4.2, App. E).

    The shuffle is numpy's legacy RandomState(seed) permutation, so seed 1 reproduces the order of
    the official `np.random.seed(1); np.random.shuffle(battles)`. `deduplicate=False` keeps
    repeated battles: each crowd vote is its own match in the human Elo (Sec. 4.2).
    """
    unique = _battles_used(battles, deduplicate)
    order = np.random.RandomState(seed).permutation(len(unique))
    shuffled = [unique[i] for i in order]
    matches: Counter[str] = Counter()
    for battle in shuffled:
        matches[battle.model_a] += 1
        matches[battle.model_b] += 1
    return EloResult(
        ratings=elo_sequence(shuffled, k=k, initial=initial),
        matches=dict(matches),
        seed=seed,
        n_battles=len(shuffled),
    )


@dataclass(frozen=True)
class BootstrapRating:
    """Median bootstrap Elo (rounded to an integer) and its 2.5 / 97.5 percentiles."""

    median: int
    low: float
    high: float


@dataclass(frozen=True)
class BootstrapEloResult:
    ratings: dict[str, BootstrapRating]
    seed: int
    rounds: int
    n_battles: int


# Steps per block of the across-rounds Elo pass: small blocks of (step × round) indices stay in
# cache, where full matrices (12k battles × 1000 rounds) would cost more to build than to run.
_ELO_BLOCK = 64


def bootstrap_elo(
    battles: Sequence[Battle],
    *,
    rounds: int = DEFAULT_ROUNDS,
    seed: int = DEFAULT_SEED,
    k: float = ELO_K,
    initial: float = ELO_INITIAL,
    deduplicate: bool = True,
) -> BootstrapEloResult:
    """Bootstrap Elo: each round resamples battles with replacement and runs one online pass in
    the drawn order; per model the median (rounded) and 2.5 / 97.5 percentiles (App. E, FastChat).

    Vectorised across rounds: step t updates battle t of every round at once, which gives the
    same numbers as `bootstrap_elo_loop` (one Python pass per round) for the same seed, up to the
    last bits (see below). A model absent from a round is left out of that round's statistics.
    """
    unique = _battles_used(battles, deduplicate)
    if not unique:
        return BootstrapEloResult(ratings={}, seed=seed, rounds=rounds, n_battles=0)
    models = sorted({m for b in unique for m in (b.model_a, b.model_b)})
    index = {m: i for i, m in enumerate(models)}
    n_models = len(models)
    first = np.array([index[b.model_a] for b in unique], dtype=np.intp)
    second = np.array([index[b.model_b] for b in unique], dtype=np.intp)
    score = np.array([b.score_a for b in unique], dtype=float)
    small = len(unique) < 2**31
    draws = resample_indices(  # rounds × n
        len(unique), rounds=rounds, seed=seed, dtype=np.int32 if small else np.int64
    )
    offsets = np.arange(rounds, dtype=np.intp) * n_models
    present = np.zeros(rounds * n_models, dtype=bool)
    rating = np.full(rounds * n_models, float(initial))
    # Row t of `pair_index` holds the flat rating indices of battle t in every round: the A side
    # of rounds 0..R-1, then the B side, so one take and one put move both ratings.
    block = min(_ELO_BLOCK, len(unique))
    pair_index = np.empty((block, 2 * rounds), dtype=np.intp)
    scores = np.empty((block, rounds))
    pair = np.empty(2 * rounds)
    updated = np.empty(2 * rounds)
    gap = np.empty(rounds)
    ra, rb = pair[:rounds], pair[rounds:]
    new_a, new_b = updated[:rounds], updated[rounds:]
    # E_a = 1 / (1 + 10^((R_b − R_a)/400)) and E_b = 1 − E_a, so one update is zero-sum:
    # R_a += K(S_a − E_a), R_b −= K(S_a − E_a). 10^x is computed as exp(x·ln 10); the two
    # rewrites change results only in the last bits (tested against `bootstrap_elo_loop`).
    log_scale = math.log(ELO_BASE) / ELO_SCALE
    for start in range(0, len(unique), block):
        steps = draws[:, start : start + block].T  # steps × rounds
        size = steps.shape[0]
        np.add(first[steps], offsets, out=pair_index[:size, :rounds])
        np.add(second[steps], offsets, out=pair_index[:size, rounds:])
        np.take(score, steps, out=scores[:size])
        present[pair_index[:size].ravel()] = True
        for flat, sa in zip(pair_index[:size], scores[:size], strict=True):
            rating.take(flat, out=pair)
            np.subtract(rb, ra, out=gap)
            gap *= log_scale
            np.exp(gap, out=gap)
            gap += 1.0
            np.divide(1.0, gap, out=gap)  # E_a
            np.subtract(sa, gap, out=gap)
            gap *= k
            np.add(ra, gap, out=new_a)
            np.subtract(rb, gap, out=new_b)
            # With model_a == model_b the B write lands last, as in the one-pass loop.
            rating.put(flat, updated)
    rating = rating.reshape(rounds, n_models)
    present = present.reshape(rounds, n_models)
    result = {}
    for model, column in index.items():
        result[model] = _bootstrap_rating(rating[present[:, column], column])
    return BootstrapEloResult(ratings=result, seed=seed, rounds=rounds, n_battles=len(unique))


def _bootstrap_rating(values: np.ndarray) -> BootstrapRating:
    """The median and 95% percentile interval of one player's bootstrap ratings."""
    low, high = np.percentile(values, [2.5, 97.5])
    return BootstrapRating(
        median=int(round(float(np.median(values)))), low=float(low), high=float(high)
    )


def bootstrap_elo_loop(
    battles: Sequence[Battle],
    *,
    rounds: int = DEFAULT_ROUNDS,
    seed: int = DEFAULT_SEED,
    k: float = ELO_K,
    initial: float = ELO_INITIAL,
) -> BootstrapEloResult:
    """Reference implementation of `bootstrap_elo`: one online pass per round (App. E)."""
    unique = deduplicate_battles(battles)
    draws: dict[str, list[float]] = defaultdict(list)
    if unique:
        for row in resample_indices(len(unique), rounds=rounds, seed=seed):
            ratings = elo_sequence([unique[i] for i in row], k=k, initial=initial)
            for model, value in ratings.items():
                draws[model].append(value)
    result = {}
    for model in sorted(draws):
        result[model] = _bootstrap_rating(np.asarray(draws[model]))
    return BootstrapEloResult(ratings=result, seed=seed, rounds=rounds, n_battles=len(unique))


def bradley_terry(
    battles: Sequence[Battle],
    *,
    scale: float = ELO_SCALE,
    initial: float = ELO_INITIAL,
    deduplicate: bool = True,
) -> dict[str, float]:
    """Order-free Bradley-Terry ratings by maximum likelihood (METRICS.md Sec. 2; FastChat MLE).

    P(a beats b) = 1 / (1 + 10^−(β_a − β_b)), fitted without intercept or penalty; a tie counts
    as half a win each way. Ratings = 400·β + 1000 with Σβ = 0 (the minimum-norm solution that
    an unpenalised logistic fit started at zero reaches). A model that never loses (or never
    wins) has no finite MLE; its rating is then only as large as the optimiser's tolerance allows.
    """
    unique = _battles_used(battles, deduplicate)
    models = sorted({m for b in unique for m in (b.model_a, b.model_b)})
    if not models:
        return {}
    index = {m: i for i, m in enumerate(models)}
    winners, losers, weights = [], [], []
    for b in unique:
        ia, ib = index[b.model_a], index[b.model_b]
        sa = b.score_a
        if sa > 0:
            winners.append(ia)
            losers.append(ib)
            weights.append(sa)
        if sa < 1:
            winners.append(ib)
            losers.append(ia)
            weights.append(1.0 - sa)
    w_idx = np.asarray(winners, dtype=int)
    l_idx = np.asarray(losers, dtype=int)
    w = np.asarray(weights, dtype=float)
    ln_base = math.log(ELO_BASE)
    p = len(models)

    def loss_and_grad(beta: np.ndarray) -> tuple[float, np.ndarray]:
        margin = ln_base * (beta[w_idx] - beta[l_idx])
        loss = float(np.sum(w * np.logaddexp(0.0, -margin)))
        # d/dmargin of softplus(-margin) = -sigmoid(-margin)
        coef = -w * ln_base / (1.0 + np.exp(margin))
        grad = np.zeros(p)
        np.add.at(grad, w_idx, coef)
        np.add.at(grad, l_idx, -coef)
        return loss, grad

    fit = optimize.minimize(
        loss_and_grad,
        np.zeros(p),
        jac=True,
        method="L-BFGS-B",
        options={"gtol": 1e-12, "ftol": 1e-15, "maxiter": 10_000},
    )
    beta = fit.x - fit.x.mean()
    return {m: float(scale * beta[index[m]] + initial) for m in models}


def elo_win_probability(rating_a: float, rating_b: float) -> float:
    """Win probability implied by an Elo gap, e.g. 1223 vs 1085 → 0.69 (visit-bench Sec. 4.2)."""
    return elo_expected(rating_a, rating_b)


# --- Win-rate vs reference (Sec. 4.2) -----------------------------------------------------------


@dataclass(frozen=True)
class WinRate:
    """Wins against the reference over decisive battles against it (ties excluded)."""

    wins: int
    n: int
    rate: float | None
    interval: Interval | None = None

    def __str__(self) -> str:
        if self.rate is None:
            return f"n/a (n={self.n})"
        return f"{100 * self.rate:.2f}% (n={self.n})"


def win_rate_vs_reference(
    battles: Sequence[Battle],
    model: str,
    reference: str,
    *,
    with_interval: bool = True,
    seed: int = DEFAULT_SEED,
    rounds: int = DEFAULT_ROUNDS,
    deduplicate: bool = True,
) -> WinRate:
    """Battles `model` won against `reference` ÷ decisive battles between them, shown as
    "18.53% (n=475)" (visit-bench.txt Sec. 4.2, Table 3; official elo_analysis)."""
    outcomes = [
        float(b.winner == model)
        for b in _battles_used(battles, deduplicate)
        if {b.model_a, b.model_b} == {model, reference} and b.winner != TIE
    ]
    if not outcomes:
        return WinRate(0, 0, None)
    interval = (
        bootstrap_mean_interval(outcomes, seed=seed, rounds=rounds) if with_interval else None
    )
    wins = int(sum(outcomes))
    return WinRate(wins, len(outcomes), wins / len(outcomes), interval)


# --- Metric-vs-human agreement (Sec. 4.3, Fig. 7) -----------------------------------------------


@dataclass(frozen=True)
class HumanPairVotes:
    """Crowd votes for one (response A, response B) pair."""

    votes_a: int
    votes_b: int

    @property
    def majority(self) -> str:
        if self.votes_a == self.votes_b:
            raise ValueError("no majority in a tied vote")
        return VOTE_A if self.votes_a > self.votes_b else VOTE_B

    @property
    def stratum(self) -> str:
        """Agreement stratum such as "5/5", "4/5", "3/5"."""
        total = self.votes_a + self.votes_b
        return f"{max(self.votes_a, self.votes_b)}/{total}"


@dataclass(frozen=True)
class Agreement:
    """Share of pairs where a metric reproduces the human majority, with n."""

    share: float | None
    n: int
    interval: Interval | None = None


@dataclass(frozen=True)
class AgreementResult:
    overall: Agreement
    strata: dict[str, Agreement]
    seed: int
    ties_broken: int
    excluded: int  # pairs without exactly five votes


def break_ties(choices: Sequence[str | None], *, seed: int) -> tuple[list[str], int]:
    """Replace each tie (None or "tie") by a seeded random A/B choice (visit-bench.txt Sec. 4.3)."""
    rng = np.random.default_rng(seed)
    resolved, broken = [], 0
    for choice in choices:
        if choice in (VOTE_A, VOTE_B):
            resolved.append(choice)
        else:
            resolved.append(VOTE_A if rng.integers(2) == 0 else VOTE_B)
            broken += 1
    return resolved, broken


def metric_human_agreement(
    human: Sequence[HumanPairVotes],
    metric_choices: Sequence[str | None],
    *,
    seed: int = DEFAULT_SEED,
    with_intervals: bool = True,
    rounds: int = DEFAULT_ROUNDS,
) -> AgreementResult:
    """Share of 5-vote pairs where a metric's choice equals the human majority, overall and for
    the 5/5, 4/5, 3/5 strata; metric ties become seeded random choices (Sec. 4.3, Fig. 7)."""
    if len(human) != len(metric_choices):
        raise ValueError("one metric choice per human-rated pair is required")
    resolved, broken = break_ties(metric_choices, seed=seed)
    hits_by_stratum: dict[str, list[float]] = {s: [] for s in STRATA}
    all_hits: list[float] = []
    excluded = 0
    for votes, choice in zip(human, resolved, strict=True):
        if votes.votes_a + votes.votes_b != 5:
            excluded += 1
            continue
        hit = float(choice == votes.majority)
        all_hits.append(hit)
        hits_by_stratum[votes.stratum].append(hit)

    def summarise(hits: list[float]) -> Agreement:
        if not hits:
            return Agreement(None, 0)
        interval = (
            bootstrap_mean_interval(hits, seed=seed, rounds=rounds) if with_intervals else None
        )
        return Agreement(float(np.mean(hits)), len(hits), interval)

    return AgreementResult(
        overall=summarise(all_hits),
        strata={s: summarise(hits) for s, hits in hits_by_stratum.items()},
        seed=seed,
        ties_broken=broken,
        excluded=excluded,
    )


def score_choice(score_a: float | None, score_b: float | None) -> str | None:
    """Pick the response a reference metric scores higher; equal or missing → tie (Sec. 4.3)."""
    if score_a is None or score_b is None or score_a == score_b:
        return None
    return VOTE_A if score_a > score_b else VOTE_B


def length_tokens(text: str) -> int:
    """Number of non-whitespace tokens, the length baseline's measure (METRICS.md Sec. 2)."""
    return len(text.split())


def length_choice(response_a: str, response_b: str) -> str | None:
    """Length baseline: prefer the longer response in non-whitespace tokens (Sec. 4.3, Fig. 7)."""
    return score_choice(float(length_tokens(response_a)), float(length_tokens(response_b)))


def random_choices(n: int, *, seed: int = DEFAULT_SEED) -> list[str]:
    """Random baseline: seeded uniform A/B choices (visit-bench.txt Sec. 4.3, Fig. 7)."""
    rng = np.random.default_rng(seed)
    return [VOTE_A if x == 0 else VOTE_B for x in rng.integers(0, 2, size=n)]


# --- System-level correlation (Sec. 4.3) --------------------------------------------------------


@dataclass(frozen=True)
class RankCorrelation:
    rho: float
    p_value: float
    n_systems: int


def ranking_correlation(
    ratings_a: dict[Hashable, float], ratings_b: dict[Hashable, float]
) -> RankCorrelation:
    """Spearman ρ between two system rankings over the systems both rate (Sec. 4.3; scipy)."""
    common = sorted(set(ratings_a) & set(ratings_b), key=str)
    if len(common) < 2:
        raise ValueError("Spearman correlation needs at least two shared systems")
    result = stats.spearmanr([ratings_a[m] for m in common], [ratings_b[m] for m in common])
    return RankCorrelation(float(result.statistic), float(result.pvalue), len(common))
