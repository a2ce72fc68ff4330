"""NaturalBench VQA metrics: answer parsing, Acc / Q-Acc / I-Acc / G-Acc and debiased variants.

Follows METRICS.md Sec. 1 and naturalbench.txt Sec. 4-5 and App. D. A sample is four
(question, image) answers flattened as q0_i0, q0_i1, q1_i0, q1_i1.
"""

from __future__ import annotations

import math
import re
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from itertools import chain, repeat

import numpy as np

from evaluation.metrics.bootstrap import (
    DEFAULT_ROUNDS,
    DEFAULT_SEED,
    Interval,
    bootstrap_mean_interval,
    bootstrap_mean_intervals,
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
# Human performance on the published NaturalBench: three annotators (naturalbench.txt Table 1).
HUMAN_PAPER = {"acc": 0.975, "q_acc": 0.946, "i_acc": 0.950, "g_acc": 0.921}

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
    return _aggregate(
        _score_arrays(scores),
        unparseable=unparseable,
        with_intervals=with_intervals,
        seed=seed,
        rounds=rounds,
    )


def _aggregate(
    arrays: dict[str, np.ndarray],
    *,
    unparseable: int = 0,
    with_intervals: bool,
    seed: int,
    rounds: int,
    tau: float | None = None,
) -> NaturalBenchScores:
    """Means of per-sample values (one array per defined metric) with their intervals."""
    n = next(iter(arrays.values())).size
    if n == 0:
        return NaturalBenchScores(0, None, None, None, None, unparseable=unparseable, tau=tau)
    intervals = bootstrap_mean_intervals(arrays, seed=seed, rounds=rounds) if with_intervals else {}
    means = {name: float(v.mean()) for name, v in arrays.items()}
    return NaturalBenchScores(
        n_samples=n,
        acc=means.get("acc"),
        q_acc=means.get("q_acc"),
        i_acc=means.get("i_acc"),
        g_acc=means.get("g_acc"),
        unparseable=unparseable,
        tau=tau,
        intervals=intervals,
    )


# --- Vectorised scoring -----------------------------------------------------------------------
# Parsed answers become an (N, 4) int8 array, so every metric is a few numpy operations instead
# of Python work per sample. The results equal the per-sample definitions above bit for bit
# (tests/evaluation/test_metrics_vectorised.py checks them against the first implementation).

CODE_A0, CODE_A1, CODE_UNPARSEABLE, CODE_OTHER = 0, 1, 2, 3
# The answer of a sample the run has no prediction for: wrong, but not "unparseable" (there was
# no output to parse); it is counted as missing instead.
NO_PREDICTION = "no prediction"
_CODES = {A0: CODE_A0, A1: CODE_A1, None: CODE_UNPARSEABLE}
GROUND_TRUTH_CODES = np.array([_CODES[a] for a in GROUND_TRUTH], dtype=np.int8)


@dataclass(frozen=True, eq=False)
class AnswerCodes:
    """Parsed answers of N samples as int8 codes, shape (N, 4): 0 = a0, 1 = a1,
    2 = unparseable (None), 3 = anything else (wrong, but not counted as unparseable)."""

    codes: np.ndarray

    def __post_init__(self) -> None:
        if self.codes.ndim != 2 or self.codes.shape[1] != 4:
            raise ValueError("a NaturalBench sample has exactly four answers")

    def __len__(self) -> int:
        return int(self.codes.shape[0])


Samples = Sequence[MultiAnswer] | AnswerCodes


def _code_of(answer: object) -> int:
    try:
        return _CODES.get(answer, CODE_OTHER)  # type: ignore[call-overload]
    except TypeError:  # unhashable: never equal to "a0"/"a1" and not None
        return CODE_OTHER


def encode_answers(samples: Samples) -> AnswerCodes:
    """Codes of parsed answers (a0 / a1 / None per position), checked for four per sample."""
    if isinstance(samples, AnswerCodes):
        return samples
    if set(map(len, samples)) - {4}:
        raise ValueError("a NaturalBench sample has exactly four answers")
    flat = list(chain.from_iterable(samples))
    try:
        codes = np.fromiter(
            map(_CODES.get, flat, repeat(CODE_OTHER)), dtype=np.int8, count=len(flat)
        )
    except TypeError:
        codes = np.fromiter(map(_code_of, flat), dtype=np.int8, count=len(flat))
    return AnswerCodes(codes.reshape(-1, 4))


def _correct(codes: AnswerCodes) -> np.ndarray:
    """c(x) per answer, shape (N, 4) (METRICS.md Sec. 1)."""
    return codes.codes == GROUND_TRUTH_CODES


def _value_arrays(correct: np.ndarray) -> dict[str, np.ndarray]:
    """Per-sample binary/4, question/2, image/2 and group scores (naturalbench.txt Sec. 4)."""
    c00, c01, c10, c11 = correct[:, 0], correct[:, 1], correct[:, 2], correct[:, 3]
    question = (c00 & c01).astype(np.int64) + (c10 & c11)
    image = (c00 & c10).astype(np.int64) + (c01 & c11)
    binary = correct.sum(axis=1, dtype=np.int64)
    group = (question == 2) & (image == 2)
    return {
        "acc": binary / 4,
        "q_acc": question / 2,
        "i_acc": image / 2,
        "g_acc": group.astype(float),
    }


def _scores_of_codes(
    codes: AnswerCodes,
    *,
    with_intervals: bool,
    seed: int,
    rounds: int,
    tau: float | None = None,
) -> NaturalBenchScores:
    unparseable = int(np.count_nonzero(codes.codes == CODE_UNPARSEABLE))
    return _aggregate(
        _value_arrays(_correct(codes)),
        unparseable=unparseable,
        with_intervals=with_intervals,
        seed=seed,
        rounds=rounds,
        tau=tau,
    )


def naturalbench_scores(
    samples: Samples,
    *,
    with_intervals: bool = True,
    seed: int = DEFAULT_SEED,
    rounds: int = DEFAULT_ROUNDS,
) -> NaturalBenchScores:
    """Headline metrics from parsed answers (a0/a1/None) per sample (naturalbench.txt Sec. 4)."""
    return _scores_of_codes(
        encode_answers(samples), with_intervals=with_intervals, seed=seed, rounds=rounds
    )


def naturalbench_scores_by_group(
    samples: Samples,
    keys: Sequence[Hashable],
    *,
    with_intervals: bool = True,
    seed: int = DEFAULT_SEED,
    rounds: int = DEFAULT_ROUNDS,
) -> dict[Hashable, NaturalBenchScores]:
    """Metrics per subset, e.g. key = (source, question type, language) (naturalbench Tab. 4).

    Groups come in the order their key first appears; each keeps its samples' order.
    """
    if len(samples) != len(keys):
        raise ValueError("one key per sample is required")
    codes = encode_answers(samples)
    first_seen = {key: k for k, key in enumerate(dict.fromkeys(keys))}
    group_of = np.fromiter(map(first_seen.__getitem__, keys), dtype=np.intp, count=len(keys))
    order = np.argsort(group_of, kind="stable")
    ends = np.cumsum(np.bincount(group_of, minlength=len(first_seen)))
    result = {}
    start = 0
    for key, end in zip(first_seen, ends, strict=True):
        rows = order[start:end]
        result[key] = _scores_of_codes(
            AnswerCodes(codes.codes[rows]), with_intervals=with_intervals, seed=seed, rounds=rounds
        )
        start = end
    return result


def _skill_positions(
    question_skills: Sequence[tuple[Iterable[str], Iterable[str]]],
) -> dict[str, np.ndarray]:
    """For each tag, the flat positions (2k for q0, 2k + 1 for q1 of sample k) of the questions
    carrying it, ascending; a tag repeated within one question counts once (as a set would)."""
    if set(map(len, question_skills)) - {2}:
        raise ValueError("each sample needs a pair of tag sets: (q0 tags, q1 tags)")
    per_question = list(chain.from_iterable(question_skills))  # q0, q1, q0, q1, …
    tags = list(chain.from_iterable(per_question))
    if not tags:
        return {}
    names = list(dict.fromkeys(tags))
    code_of = {tag: k for k, tag in enumerate(names)}
    tag_codes = np.fromiter(map(code_of.__getitem__, tags), dtype=np.intp, count=len(tags))
    lengths = np.fromiter(map(len, per_question), dtype=np.intp, count=len(per_question))
    question = np.repeat(np.arange(len(per_question), dtype=np.intp), lengths)
    # One entry per (question, tag), sorted by question; then grouped by tag, order kept.
    pairs = np.sort(question * len(names) + tag_codes, kind="stable")  # nearly sorted already
    pairs = pairs[np.concatenate(([True], pairs[1:] != pairs[:-1]))]
    question, tag_codes = np.divmod(pairs, len(names))
    order = np.argsort(tag_codes, kind="stable")
    ends = np.cumsum(np.bincount(tag_codes, minlength=len(names)))
    starts = ends - np.bincount(tag_codes, minlength=len(names))
    return {
        name: question[order[start:end]]
        for name, start, end in zip(names, starts, ends, strict=True)
    }


@dataclass(frozen=True)
class SkillScore:
    """Q-Acc over the questions carrying one skill tag."""

    skill: str
    n_questions: int
    q_acc: float
    interval: Interval | None = None


def skill_question_accuracy(
    samples: Samples,
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
    correct = _correct(encode_answers(samples))
    # Questions in sample order, q0 before q1: 1.0 when right on both images.
    solved = np.empty(2 * correct.shape[0])
    solved[0::2] = correct[:, 0] & correct[:, 1]
    solved[1::2] = correct[:, 2] & correct[:, 3]
    positions = _skill_positions(question_skills)
    result = {}
    for skill in sorted(positions):
        values = solved[positions[skill]]
        interval = (
            bootstrap_mean_interval(values, seed=seed, rounds=rounds) if with_intervals else None
        )
        result[skill] = SkillScore(skill, values.size, float(np.mean(values)), interval)
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


def _codes_at_threshold(d: np.ndarray, tau: float) -> AnswerCodes:
    """`answers_at_threshold` as codes: a0 iff d > τ (a NaN never exceeds τ, so it reads a1)."""
    return AnswerCodes(np.where(d > tau, CODE_A0, CODE_A1).astype(np.int8))


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
    codes = _codes_at_threshold(score_differences(p_a0, p_a1), tau)
    return _scores_of_codes(codes, with_intervals=with_intervals, seed=seed, rounds=rounds, tau=tau)


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
    d00, d01, d10, d11 = d[:, 0], d[:, 1], d[:, 2], d[:, 3]
    question = (d00 > d01).astype(np.int64) + (d11 > d10)
    image = (d00 > d10).astype(np.int64) + (d11 > d01)
    # Python's min(d00, d11) and max(d01, d10), NaN handling included (a NaN first argument
    # wins, a NaN second argument loses), as `sample_optimal_score` computes them.
    low_of_right = np.where(d11 < d00, d11, d00)
    high_of_wrong = np.where(d10 > d01, d10, d01)
    group = low_of_right > high_of_wrong
    arrays = {"q_acc": question / 2, "i_acc": image / 2, "g_acc": group.astype(float)}
    return _aggregate(arrays, with_intervals=with_intervals, seed=seed, rounds=rounds)


TAU_RULE = (
    "the τ with the highest G-Acc; among equally good τ the first maximum, i.e. the smallest "
    "(what a search from τ = −∞ upwards keeps when only a strictly higher G-Acc replaces the best)"
)


def global_optimal_tau(d: Sequence[Sequence[float]] | np.ndarray) -> tuple[float, int]:
    """Exact search of the single τ maximising G-Acc over all samples (App. D, Table 11).

    Candidates are −∞, +∞ and every midpoint between consecutive distinct d values, which covers
    every distinct prediction pattern of "a0 iff d > τ". Tie rule (TAU_RULE): among τ with the
    same, maximal G-Acc — whose Acc / Q-Acc / I-Acc can differ — the first maximum in ascending
    order wins, the smallest τ: ``argmax`` over an ascending sweep, as an implementation of
    App. D's "search for a single τ" that keeps a τ only when it improves G-Acc gives. The
    official repository (Baiqi-Li/NaturalBench) publishes no debiasing code to follow. Returns
    (τ, number of group points).
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
    size = candidates.size + 1
    delta = np.bincount(starts, minlength=size) - np.bincount(ends, minlength=size)
    counts = np.cumsum(delta)[:-1]
    first = int(np.argmax(counts))  # the first maximum: candidates are in ascending order
    return float(candidates[first]), int(counts[first])


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
    result = _scores_of_codes(
        _codes_at_threshold(d, tau), with_intervals=False, seed=seed, rounds=rounds, tau=tau
    )
    if not with_intervals or d.shape[0] == 0:
        return result
    names = ("acc", "q_acc", "i_acc", "g_acc")
    draws: dict[str, list[float]] = {name: [] for name in names}
    for row in resample_indices(d.shape[0], rounds=rounds, seed=seed):
        sub = d[row]
        sub_tau, _ = global_optimal_tau(sub)
        means = _value_arrays(_correct(_codes_at_threshold(sub, sub_tau)))
        for name in names:
            draws[name].append(float(means[name].mean()))
    intervals = {name: percentile_interval(draws[name], seed=seed, rounds=rounds) for name in names}
    return replace(result, intervals=intervals)


def _post_hoc_score(p_a0, p_a1, p_a0_blind, p_a1_blind) -> np.ndarray:
    """P(a0|q,i)/P(a0|q) − P(a1|q,i)/P(a1|q); P(a|q) given per question, shape (N, 2) (Eq. 5)."""
    blind0 = _as_samples(p_a0_blind, width=2)[:, [0, 0, 1, 1]]
    blind1 = _as_samples(p_a1_blind, width=2)[:, [0, 0, 1, 1]]
    return _as_samples(p_a0) / blind0 - _as_samples(p_a1) / blind1


def post_hoc_answers(
    p_a0: Sequence[Sequence[float]] | np.ndarray,
    p_a1: Sequence[Sequence[float]] | np.ndarray,
    p_a0_blind: Sequence[Sequence[float]] | np.ndarray,
    p_a1_blind: Sequence[Sequence[float]] | np.ndarray,
) -> list[list[str]]:
    """Predict a0 iff P(a0|q,i)/P(a0|q) − P(a1|q,i)/P(a1|q) > 0 (naturalbench.txt App. D, Eq. 5).

    The question-only likelihoods P(a|q) are given per question, shape (N, 2) for (q0, q1).
    """
    return answers_at_threshold(_post_hoc_score(p_a0, p_a1, p_a0_blind, p_a1_blind), 0.0)


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
    codes = _codes_at_threshold(_post_hoc_score(p_a0, p_a1, p_a0_blind, p_a1_blind), 0.0)
    return _scores_of_codes(codes, with_intervals=with_intervals, seed=seed, rounds=rounds)


def random_chance_row() -> NaturalBenchScores:
    """Chance row for a uniform random guesser: 50 / 25 / 25 / 6.25 % (naturalbench.txt Table 1)."""
    return NaturalBenchScores(n_samples=0, **RANDOM_CHANCE)
