"""Frozen reference implementations: the code as it was before vectorisation (commit b3ae6e8).

NaturalBench scores here are computed one sample at a time, as the first version of
``evaluation.metrics.naturalbench`` did, and ``bootstrap_elo_v1`` is the first across-rounds Elo.
The fidelity tests assert that the production code returns exactly (bit for bit) the same
results. Do not "improve" this file: it is the yardstick.
"""

# ruff: noqa

from __future__ import annotations


import math
import re
from collections import defaultdict
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from evaluation.metrics.bootstrap import (
    DEFAULT_ROUNDS,
    DEFAULT_SEED,
    Interval,
    bootstrap_mean_interval,
    percentile_interval,
    resample_indices,
)

YES_NO = "yes_no"
MULTIPLE_CHOICE = "multiple_choice"
QUESTION_TYPES = (YES_NO, MULTIPLE_CHOICE)

# Canonical answers: a0 is "Yes"/"A", a1 is "No"/"B".
A0 = "a0"
A1 = "a1"

# Ground truth in sample order q0_i0, q0_i1, q1_i0, q1_i1 (METRICS.md Sec. 1).
GROUND_TRUTH: tuple[str, str, str, str] = (A0, A1, A1, A0)
SAMPLE_KEYS = ("q0_i0", "q0_i1", "q1_i0", "q1_i1")

PROMPT_SUFFIX = {
    YES_NO: "Please answer Yes or No.",
    MULTIPLE_CHOICE: "Please output the letter corresponding to the correct option.",
}

_ANSWER_WORDS = {YES_NO: ("yes", "no"), MULTIPLE_CHOICE: ("A", "B")}

# Random-chance rows (naturalbench.txt Table 1; METRICS.md Sec. 1), as fractions.
RANDOM_CHANCE = {"acc": 0.5, "q_acc": 0.25, "i_acc": 0.25, "g_acc": 0.0625}

MultiAnswer = Sequence[str | None]


def build_prompt(question: str, question_type: str, *, space_before_suffix: bool = False) -> str:
    """Question + answer suffix; the official code joins them with no space (METRICS.md Sec. 1)."""
    _check_question_type(question_type)
    separator = " " if space_before_suffix else ""
    return f"{question}{separator}{PROMPT_SUFFIX[question_type]}"


def _check_question_type(question_type: str) -> None:
    if question_type not in QUESTION_TYPES:
        raise ValueError(f"question type must be one of {QUESTION_TYPES}, got {question_type!r}")


def _first_position(text: str, word: str, *, strict_letter: bool) -> int:
    if strict_letter:
        # Uppercase letter only, and not an article opening a lowercase word ("A dog ...").
        pattern = r"\b" + re.escape(word) + r"\b(?!\s+[a-z])"
        match = re.search(pattern, text)
    else:
        match = re.search(r"\b" + re.escape(word) + r"\b", text, re.IGNORECASE)
    return match.start() if match else -1


def parse_answer(output: str, question_type: str, *, strict: bool = False) -> str | None:
    """Map model output to a0/a1 or None (unparseable) as the official extract_answer (Sec. 4).

    Case-insensitive whole-word search for yes/no or A/B; the earlier match wins. By default the
    article "a" counts as option A (official quirk). `strict=True` (multiple choice only) requires
    an uppercase letter that does not open a lowercase word, so "A dog" no longer means option A.
    """
    _check_question_type(question_type)
    word_a0, word_a1 = _ANSWER_WORDS[question_type]
    strict_letter = strict and question_type == MULTIPLE_CHOICE
    pos_a0 = _first_position(output, word_a0, strict_letter=strict_letter)
    pos_a1 = _first_position(output, word_a1, strict_letter=strict_letter)
    if pos_a0 == -1 and pos_a1 == -1:
        return None
    if pos_a0 != -1 and pos_a1 != -1:
        return A0 if pos_a0 < pos_a1 else A1
    return A0 if pos_a0 != -1 else A1


def correctness(answers: MultiAnswer) -> tuple[bool, bool, bool, bool]:
    """c(x) for the four answers of a sample against the fixed ground truth (METRICS.md Sec. 1)."""
    if len(answers) != 4:
        raise ValueError("a NaturalBench sample has exactly four answers")
    return (
        answers[0] == GROUND_TRUTH[0],
        answers[1] == GROUND_TRUTH[1],
        answers[2] == GROUND_TRUTH[2],
        answers[3] == GROUND_TRUTH[3],
    )


@dataclass(frozen=True)
class SampleScore:
    """Per-sample scores of naturalbench.txt Sec. 4 (official get_scores)."""

    question: int  # 0-2
    image: int  # 0-2
    binary: int  # 0-4
    group: int  # 0-1


def sample_score(correct: Sequence[bool]) -> SampleScore:
    """Question, image, binary and group score of one sample from c(x) (naturalbench.txt Sec. 4)."""
    c00, c01, c10, c11 = (bool(x) for x in correct)
    question = int(c00 and c01) + int(c10 and c11)
    image = int(c00 and c10) + int(c01 and c11)
    binary = int(c00) + int(c01) + int(c10) + int(c11)
    group = int(question == 2 and image == 2)
    return SampleScore(question=question, image=image, binary=binary, group=group)


@dataclass(frozen=True)
class NaturalBenchScores:
    """Acc, Q-Acc, I-Acc, G-Acc as fractions (None when undefined) with bootstrap intervals."""

    n_samples: int
    acc: float | None
    q_acc: float | None
    i_acc: float | None
    g_acc: float | None
    unparseable: int = 0
    tau: float | None = None
    intervals: dict[str, Interval] = field(default_factory=dict)


def _score_arrays(scores: Sequence[SampleScore]) -> dict[str, np.ndarray]:
    return {
        "acc": np.array([s.binary / 4 for s in scores], dtype=float),
        "q_acc": np.array([s.question / 2 for s in scores], dtype=float),
        "i_acc": np.array([s.image / 2 for s in scores], dtype=float),
        "g_acc": np.array([s.group for s in scores], dtype=float),
    }


def aggregate_scores(
    scores: Sequence[SampleScore],
    *,
    unparseable: int = 0,
    with_intervals: bool = True,
    seed: int = DEFAULT_SEED,
    rounds: int = DEFAULT_ROUNDS,
) -> NaturalBenchScores:
    """Acc = Σbinary/4N, Q-Acc = Σquestion/2N, I-Acc = Σimage/2N, G-Acc = Σgroup/N (Sec. 4)."""
    if not scores:
        return NaturalBenchScores(0, None, None, None, None, unparseable=unparseable)
    arrays = _score_arrays(scores)
    intervals = (
        {name: bootstrap_mean_interval(v, seed=seed, rounds=rounds) for name, v in arrays.items()}
        if with_intervals
        else {}
    )
    return NaturalBenchScores(
        n_samples=len(scores),
        acc=float(arrays["acc"].mean()),
        q_acc=float(arrays["q_acc"].mean()),
        i_acc=float(arrays["i_acc"].mean()),
        g_acc=float(arrays["g_acc"].mean()),
        unparseable=unparseable,
        intervals=intervals,
    )


def naturalbench_scores(
    samples: Sequence[MultiAnswer],
    *,
    with_intervals: bool = True,
    seed: int = DEFAULT_SEED,
    rounds: int = DEFAULT_ROUNDS,
) -> NaturalBenchScores:
    """Headline metrics from parsed answers (a0/a1/None) per sample (naturalbench.txt Sec. 4)."""
    scores = [sample_score(correctness(answers)) for answers in samples]
    unparseable = sum(answer is None for answers in samples for answer in answers)
    return aggregate_scores(
        scores, unparseable=unparseable, with_intervals=with_intervals, seed=seed, rounds=rounds
    )


def naturalbench_scores_by_group(
    samples: Sequence[MultiAnswer],
    keys: Sequence[Hashable],
    *,
    with_intervals: bool = True,
    seed: int = DEFAULT_SEED,
    rounds: int = DEFAULT_ROUNDS,
) -> dict[Hashable, NaturalBenchScores]:
    """Metrics per subset, e.g. key = (source, question type, language) (naturalbench Tab. 4)."""
    if len(samples) != len(keys):
        raise ValueError("one key per sample is required")
    grouped: dict[Hashable, list[MultiAnswer]] = defaultdict(list)
    for answers, key in zip(samples, keys, strict=True):
        grouped[key].append(answers)
    return {
        key: naturalbench_scores(group, with_intervals=with_intervals, seed=seed, rounds=rounds)
        for key, group in grouped.items()
    }


@dataclass(frozen=True)
class SkillScore:
    """Q-Acc over the questions carrying one skill tag."""

    skill: str
    n_questions: int
    q_acc: float
    interval: Interval | None = None


def skill_question_accuracy(
    samples: Sequence[MultiAnswer],
    question_skills: Sequence[tuple[Iterable[str], Iterable[str]]],
    *,
    with_intervals: bool = True,
    seed: int = DEFAULT_SEED,
    rounds: int = DEFAULT_ROUNDS,
) -> dict[str, SkillScore]:
    """Per-skill Q-Acc: share of tagged questions answered right on both images (App. C, Tab. 9-10).

    `question_skills[k]` holds the tags of (q0, q1) of sample k. The interval resamples questions.
    """
    if len(samples) != len(question_skills):
        raise ValueError("one pair of tag sets per sample is required")
    per_skill: dict[str, list[float]] = defaultdict(list)
    for answers, (tags_q0, tags_q1) in zip(samples, question_skills, strict=True):
        c00, c01, c10, c11 = correctness(answers)
        for tags, solved in ((tags_q0, c00 and c01), (tags_q1, c10 and c11)):
            for tag in set(tags):
                per_skill[tag].append(float(solved))
    result = {}
    for skill in sorted(per_skill):
        values = per_skill[skill]
        interval = (
            bootstrap_mean_interval(values, seed=seed, rounds=rounds) if with_intervals else None
        )
        result[skill] = SkillScore(skill, len(values), float(np.mean(values)), interval)
    return result


# --- Debiasing (naturalbench.txt Sec. 5 Eq. 2, App. D Eq. 4-5) -------------------------------


def _as_samples(values: Sequence[Sequence[float]] | np.ndarray, width: int = 4) -> np.ndarray:
    array = np.asarray(values, dtype=float)
    if array.ndim != 2 or array.shape[1] != width:
        raise ValueError(f"expected an array of shape (N, {width})")
    return array


def score_differences(
    p_a0: Sequence[Sequence[float]] | np.ndarray, p_a1: Sequence[Sequence[float]] | np.ndarray
) -> np.ndarray:
    """d = P(a0|q,i) − P(a1|q,i) per (question, image), shape (N, 4) (naturalbench.txt Eq. 2)."""
    return _as_samples(p_a0) - _as_samples(p_a1)


def answers_at_threshold(d: np.ndarray, tau: float = 0.0) -> list[list[str]]:
    """Predict a0 iff d > τ, else a1 (naturalbench.txt Eq. 2 / Eq. 4)."""
    return [[A0 if value > tau else A1 for value in row] for row in _as_samples(d)]


def deterministic_scores(
    p_a0: Sequence[Sequence[float]] | np.ndarray,
    p_a1: Sequence[Sequence[float]] | np.ndarray,
    *,
    tau: float = 0.0,
    with_intervals: bool = True,
    seed: int = DEFAULT_SEED,
    rounds: int = DEFAULT_ROUNDS,
) -> NaturalBenchScores:
    """Metrics from answer likelihoods with a fixed threshold τ (default 0) (App. D, Eq. 4)."""
    answers = answers_at_threshold(score_differences(p_a0, p_a1), tau)
    result = naturalbench_scores(answers, with_intervals=with_intervals, seed=seed, rounds=rounds)
    return _with_tau(result, tau)


def _with_tau(result: NaturalBenchScores, tau: float) -> NaturalBenchScores:
    return NaturalBenchScores(
        n_samples=result.n_samples,
        acc=result.acc,
        q_acc=result.q_acc,
        i_acc=result.i_acc,
        g_acc=result.g_acc,
        unparseable=result.unparseable,
        tau=tau,
        intervals=result.intervals,
    )


def sample_optimal_score(d: Sequence[float]) -> SampleScore:
    """Oracle per-sample τ: a point when the right pair ranks strictly higher (Sec. 5, Table 2).

    Q: q0 iff d(q0_i0) > d(q0_i1), q1 iff d(q1_i1) > d(q1_i0); I: i0 iff d(q0_i0) > d(q1_i0),
    i1 iff d(q1_i1) > d(q0_i1); G iff min(d(q0_i0), d(q1_i1)) > max(d(q0_i1), d(q1_i0)).
    `binary` is not defined for this oracle and is reported as 0.
    """
    d00, d01, d10, d11 = (float(x) for x in d)
    question = int(d00 > d01) + int(d11 > d10)
    image = int(d00 > d10) + int(d11 > d01)
    group = int(min(d00, d11) > max(d01, d10))
    return SampleScore(question=question, image=image, binary=0, group=group)


def sample_optimal_scores(
    p_a0: Sequence[Sequence[float]] | np.ndarray,
    p_a1: Sequence[Sequence[float]] | np.ndarray,
    *,
    with_intervals: bool = True,
    seed: int = DEFAULT_SEED,
    rounds: int = DEFAULT_ROUNDS,
) -> NaturalBenchScores:
    """Debiased Q-/I-/G-Acc with the sample-optimal (oracle) τ; Acc is None (Sec. 5, Table 2)."""
    d = score_differences(p_a0, p_a1)
    scores = [sample_optimal_score(row) for row in d]
    result = aggregate_scores(scores, with_intervals=with_intervals, seed=seed, rounds=rounds)
    intervals = {k: v for k, v in result.intervals.items() if k != "acc"}
    return NaturalBenchScores(
        n_samples=result.n_samples,
        acc=None,
        q_acc=result.q_acc,
        i_acc=result.i_acc,
        g_acc=result.g_acc,
        intervals=intervals,
    )


def global_optimal_tau(d: Sequence[Sequence[float]] | np.ndarray) -> tuple[float, int]:
    """Exact search of the single τ maximising G-Acc over all samples (App. D, Table 11).

    Candidates are −∞, +∞ and every midpoint between consecutive distinct d values, which covers
    every distinct prediction pattern of "a0 iff d > τ". Among equally good τ the one closest to
    0 (the default threshold) wins, then the smaller one. Returns (τ, number of group points).
    """
    d = _as_samples(d)
    if d.shape[0] == 0:
        return 0.0, 0
    values = np.unique(d)
    candidates = np.concatenate(([-math.inf], (values[:-1] + values[1:]) / 2.0, [math.inf]))
    # Group point at τ iff max(d01, d10) <= τ < min(d00, d11).
    low = np.maximum(d[:, 1], d[:, 2])
    high = np.minimum(d[:, 0], d[:, 3])
    feasible = low < high
    low, high = low[feasible], high[feasible]
    starts = np.searchsorted(candidates, low, side="left")
    ends = np.searchsorted(candidates, high, side="left")
    delta = np.zeros(candidates.size + 1, dtype=np.int64)
    np.add.at(delta, starts, 1)
    np.add.at(delta, ends, -1)
    counts = np.cumsum(delta)[:-1]
    best = counts.max()
    tied = candidates[counts == best]
    order = np.lexsort((tied, np.abs(tied)))
    return float(tied[order[0]]), int(best)


def global_optimal_scores(
    p_a0: Sequence[Sequence[float]] | np.ndarray,
    p_a1: Sequence[Sequence[float]] | np.ndarray,
    *,
    with_intervals: bool = True,
    seed: int = DEFAULT_SEED,
    rounds: int = DEFAULT_ROUNDS,
) -> NaturalBenchScores:
    """Metrics at the global-optimal τ; the interval re-searches τ in each round (App. D)."""
    d = score_differences(p_a0, p_a1)
    tau, _ = global_optimal_tau(d)
    result = _with_tau(naturalbench_scores(answers_at_threshold(d, tau), with_intervals=False), tau)
    if not with_intervals or d.shape[0] == 0:
        return result
    names = ("acc", "q_acc", "i_acc", "g_acc")
    draws: dict[str, list[float]] = {name: [] for name in names}
    for row in resample_indices(d.shape[0], rounds=rounds, seed=seed):
        sub = d[row]
        sub_tau, _ = global_optimal_tau(sub)
        sub_result = naturalbench_scores(answers_at_threshold(sub, sub_tau), with_intervals=False)
        for name in names:
            draws[name].append(float(getattr(sub_result, name)))
    intervals = {name: percentile_interval(draws[name], seed=seed, rounds=rounds) for name in names}
    return NaturalBenchScores(
        n_samples=result.n_samples,
        acc=result.acc,
        q_acc=result.q_acc,
        i_acc=result.i_acc,
        g_acc=result.g_acc,
        tau=tau,
        intervals=intervals,
    )


def post_hoc_answers(
    p_a0: Sequence[Sequence[float]] | np.ndarray,
    p_a1: Sequence[Sequence[float]] | np.ndarray,
    p_a0_blind: Sequence[Sequence[float]] | np.ndarray,
    p_a1_blind: Sequence[Sequence[float]] | np.ndarray,
) -> list[list[str]]:
    """Predict a0 iff P(a0|q,i)/P(a0|q) − P(a1|q,i)/P(a1|q) > 0 (naturalbench.txt App. D, Eq. 5).

    The question-only likelihoods P(a|q) are given per question, shape (N, 2) for (q0, q1).
    """
    blind0 = _as_samples(p_a0_blind, width=2)[:, [0, 0, 1, 1]]
    blind1 = _as_samples(p_a1_blind, width=2)[:, [0, 0, 1, 1]]
    score = _as_samples(p_a0) / blind0 - _as_samples(p_a1) / blind1
    return answers_at_threshold(score, 0.0)


def post_hoc_scores(
    p_a0: Sequence[Sequence[float]] | np.ndarray,
    p_a1: Sequence[Sequence[float]] | np.ndarray,
    p_a0_blind: Sequence[Sequence[float]] | np.ndarray,
    p_a1_blind: Sequence[Sequence[float]] | np.ndarray,
    *,
    with_intervals: bool = True,
    seed: int = DEFAULT_SEED,
    rounds: int = DEFAULT_ROUNDS,
) -> NaturalBenchScores:
    """Metrics after post-hoc debiasing (naturalbench.txt App. D, Eq. 5, after [88])."""
    answers = post_hoc_answers(p_a0, p_a1, p_a0_blind, p_a1_blind)
    return naturalbench_scores(answers, with_intervals=with_intervals, seed=seed, rounds=rounds)


def random_chance_row() -> NaturalBenchScores:
    """Chance row for a uniform random guesser: 50 / 25 / 25 / 6.25 % (naturalbench.txt Table 1)."""
    return NaturalBenchScores(
        n_samples=0,
        acc=RANDOM_CHANCE["acc"],
        q_acc=RANDOM_CHANCE["q_acc"],
        i_acc=RANDOM_CHANCE["i_acc"],
        g_acc=RANDOM_CHANCE["g_acc"],
    )


from evaluation.metrics.visit import (
    ELO_BASE,
    ELO_INITIAL,
    ELO_K,
    ELO_SCALE,
    Battle,
    BootstrapEloResult,
    BootstrapRating,
    deduplicate_battles,
)


def bootstrap_elo_v1(
    battles: Sequence[Battle],
    *,
    rounds: int = DEFAULT_ROUNDS,
    seed: int = DEFAULT_SEED,
    k: float = ELO_K,
    initial: float = ELO_INITIAL,
) -> BootstrapEloResult:
    """Bootstrap Elo: each round resamples battles with replacement and runs one online pass in
    the drawn order; per model the median (rounded) and 2.5 / 97.5 percentiles (App. E, FastChat).

    Vectorised across rounds: step t updates battle t of every round at once, which gives the
    same numbers as `bootstrap_elo_loop` (one Python pass per round) for the same seed.
    A model absent from a round is left out of that round's statistics.
    """
    unique = deduplicate_battles(battles)
    if not unique:
        return BootstrapEloResult(ratings={}, seed=seed, rounds=rounds, n_battles=0)
    models = sorted({m for b in unique for m in (b.model_a, b.model_b)})
    index = {m: i for i, m in enumerate(models)}
    n_models = len(models)
    first = np.array([index[b.model_a] for b in unique], dtype=np.int64)
    second = np.array([index[b.model_b] for b in unique], dtype=np.int64)
    score = np.array([b.score_a for b in unique], dtype=float)
    draws = resample_indices(len(unique), rounds=rounds, seed=seed)  # rounds × n
    offsets = (np.arange(rounds, dtype=np.int64) * n_models)[:, None]
    # Step-major, contiguous: row t holds battle t of every round (flat rating indices).
    flat_a = np.ascontiguousarray((first[draws] + offsets).T)
    flat_b = np.ascontiguousarray((second[draws] + offsets).T)
    score_t = np.ascontiguousarray(score[draws].T)
    present = np.zeros(rounds * n_models, dtype=bool)
    present[flat_a.ravel()] = True
    present[flat_b.ravel()] = True
    rating = np.full(rounds * n_models, float(initial))
    # E_a = 1 / (1 + 10^((R_b − R_a)/400)) and E_b = 1 − E_a, so one update is zero-sum:
    # R_a += K(S_a − E_a), R_b −= K(S_a − E_a). 10^x is computed as exp(x·ln 10); the two
    # rewrites change results only in the last bits (tested against `bootstrap_elo_loop`).
    log_scale = math.log(ELO_BASE) / ELO_SCALE
    gap = np.empty(rounds)
    for ia, ib, sa in zip(flat_a, flat_b, score_t, strict=True):
        ra = rating.take(ia)
        rb = rating.take(ib)
        np.subtract(rb, ra, out=gap)
        gap *= log_scale
        np.exp(gap, out=gap)
        gap += 1.0
        np.divide(1.0, gap, out=gap)  # E_a
        np.subtract(sa, gap, out=gap)
        gap *= k
        rating.put(ia, ra + gap)
        rating.put(ib, rb - gap)
    rating = rating.reshape(rounds, n_models)
    present = present.reshape(rounds, n_models)
    result = {}
    for model, column in index.items():
        values = rating[present[:, column], column]
        low, high = np.percentile(values, [2.5, 97.5])
        result[model] = BootstrapRating(
            median=int(round(float(np.median(values)))), low=float(low), high=float(high)
        )
    return BootstrapEloResult(ratings=result, seed=seed, rounds=rounds, n_battles=len(unique))


# --- VLind-Bench, first version (one bootstrap draw per interval) ----------------------------

from collections.abc import Callable

from evaluation.metrics.bootstrap import bootstrap_ratio_interval


@dataclass(frozen=True)
class VLindInstanceV1:
    """Test outcomes of one instance: a = CK, b = VP, c = CB, d = LP per good image."""

    ck: bool
    vp: bool
    cb: bool
    lp: tuple[bool, ...]
    concept: str = ""
    style: str = ""

    @property
    def lp_mean(self) -> float:
        return float(np.mean(self.lp)) if self.lp else 0.0


@dataclass(frozen=True)
class VLindScoresV1:
    """Pipeline and plain scores as fractions; None marks an empty denominator ("n/a")."""

    n_instances: int
    s_ck: float | None
    s_vp: float | None
    s_cb: float | None
    s_lp: float | None
    cb: float | None
    lp: float | None
    intervals: dict[str, Interval] = field(default_factory=dict)


def _ratio(numerator: float, denominator: float) -> float | None:
    return None if denominator == 0 else float(numerator / denominator)


def vlind_scores(
    instances: Sequence,
    *,
    with_intervals: bool = True,
    seed: int = DEFAULT_SEED,
    rounds: int = DEFAULT_ROUNDS,
) -> VLindScoresV1:
    """S_CK, S_VP, S_CB, S_LP and plain CB, LP (vlind-bench.txt Sec. 5.1, Eq. 5; METRICS.md Sec. 4).

    Only instances with at least one good image count. S_CB = Σ(a∧c)/Σa;
    S_LP = Σ[a∧b∧c]·mean(d) / Σ[a∧b∧c]; plain LP averages per-instance means of d.
    Intervals resample instances.
    """
    kept = [inst for inst in instances if inst.lp]
    n = len(kept)
    a = np.array([inst.ck for inst in kept], dtype=float)
    b = np.array([inst.vp for inst in kept], dtype=float)
    c = np.array([inst.cb for inst in kept], dtype=float)
    d = np.array([inst.lp_mean for inst in kept], dtype=float)
    abc = a * b * c
    scores = VLindScoresV1(
        n_instances=n,
        s_ck=_ratio(a.sum(), n),
        s_vp=_ratio(b.sum(), n),
        s_cb=_ratio((a * c).sum(), a.sum()),
        s_lp=_ratio((abc * d).sum(), abc.sum()),
        cb=_ratio(c.sum(), n),
        lp=_ratio(d.sum(), n),
    )
    if not with_intervals:
        return scores
    options = {"seed": seed, "rounds": rounds}
    intervals = {
        "s_ck": bootstrap_mean_interval(a, **options),
        "s_vp": bootstrap_mean_interval(b, **options),
        "s_cb": bootstrap_ratio_interval(a * c, a, **options),
        "s_lp": bootstrap_ratio_interval(abc * d, abc, **options),
        "cb": bootstrap_mean_interval(c, **options),
        "lp": bootstrap_mean_interval(d, **options),
    }
    return VLindScoresV1(**{**scores.__dict__, "intervals": intervals})


def vlind_scores_by(
    instances: Sequence,
    key,
    *,
    with_intervals: bool = True,
    seed: int = DEFAULT_SEED,
    rounds: int = DEFAULT_ROUNDS,
) -> dict:
    """Scores per group, e.g. per concept (vlind-bench.txt Table 4) or image style (Table 7).

    For per-style results pass one VLindInstance per (instance, style) holding that style's images.
    """
    grouped: dict = defaultdict(list)
    for inst in instances:
        grouped[key(inst)].append(inst)
    return {
        k: vlind_scores(group, with_intervals=with_intervals, seed=seed, rounds=rounds)
        for k, group in grouped.items()
    }
