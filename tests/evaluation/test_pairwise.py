"""Pure pairwise computations: judge outputs of a runner, battles per vote, rank correlation
with its exact p-value, and metric-vs-human agreement on a hand-made example."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats

from evaluation import rankings
from evaluation.families.visit import pairwise
from evaluation.metrics import visit


@pytest.mark.parametrize(
    ("judge_output", "extraction", "expected"),
    [
        ("… Overall, Response A is better.", None, "m1"),
        ("RESPONSE B IS BETTER", None, "m2"),
        ("Response A is better. No, response B is better.", None, "tie"),  # both: no direct vote
        ("Response A is better. No, response B is better.", "Final Answer: Response B", "m2"),
        ("Both are wrong.", "final answer: response a", "tie"),  # extraction is case-sensitive
        ("Both are wrong.", "Final Answer: Response A", "m1"),
        ("Both are wrong.", None, "tie"),
    ],
)
def test_order_winner_follows_the_official_parse_then_extraction(
    judge_output, extraction, expected
):
    # m1 is shown as Response A, m2 as Response B
    assert visit.needs_extraction(judge_output) is (visit.parse_judge_output(judge_output) is None)
    assert visit.order_winner(judge_output, "m1", "m2", extraction_output=extraction) == expected


def test_crowd_votes_become_one_battle_each_and_judges_one_per_pair():
    pairs = [
        pairwise.PairData("i1", "img", "ins", "a", "b", "a", votes_a=4, votes_b=1),
        pairwise.PairData("i2", "img2", "ins", "b", "c", "tie", votes_a=0, votes_b=0),
    ]
    human = pairwise.battles_of(pairs, pairwise.HUMAN)
    assert [(b.model_a, b.model_b, b.winner) for b in human] == [("a", "b", "a")] * 4 + [
        ("a", "b", "b")
    ]
    judge = pairwise.battles_of(pairs, pairwise.LLM)
    assert [b.winner for b in judge] == ["a", "tie"]


def test_repeated_battles_count_only_without_deduplication():
    battles = [visit.Battle("a", "b", "a", "img", "ins")] * 3 + [
        visit.Battle("a", "b", "b", "img2", "ins")
    ]
    assert visit.online_elo(battles).n_battles == 2
    assert visit.online_elo(battles, deduplicate=False).n_battles == 4
    assert visit.win_rate_vs_reference(battles, "a", "b", with_interval=False).n == 2
    kept_all = visit.win_rate_vs_reference(
        battles, "a", "b", with_interval=False, deduplicate=False
    )
    assert (kept_all.wins, kept_all.n) == (3, 4)
    assert visit.bootstrap_elo(battles, rounds=5, deduplicate=False).n_battles == 4


def ranking(values: dict, key: str = "k") -> rankings.Ranking:
    return rankings.Ranking(key, key, values)


def test_correlation_matches_scipy_with_exact_p_for_few_systems():
    # Given two rankings of five shared systems, one system rated by A only
    a = ranking({"s1": 5.0, "s2": 4.0, "s3": 3.0, "s4": 2.0, "s5": 1.0, "only-a": 0.0})
    b = ranking({"s1": 0.9, "s2": 0.7, "s3": 0.8, "s4": 0.2, "s5": 0.1})
    result = rankings.correlate(a, b)
    shared = ["s1", "s2", "s3", "s4", "s5"]
    x, y = [a.values[s] for s in shared], [b.values[s] for s in shared]
    # Then ρ is scipy's, and p is the exact permutation p-value: the share of the 120 orderings
    # of B whose |ρ| (scipy) reaches the observed one
    observed = float(stats.spearmanr(x, y).statistic)
    assert result["rho"] == pytest.approx(observed)
    orderings = [abs(stats.spearmanr(x, list(p)).statistic) for p in itertools.permutations(y)]
    exact = sum(r >= abs(observed) - 1e-12 for r in orderings) / len(orderings)
    assert result["p_value"] == pytest.approx(exact)
    assert result["p_method"] == "exact, all 120 orderings"
    assert result["only_a"] == ["only-a"] and result["n"] == 5
    assert [(r["system"], r["rank_a"], r["rank_b"]) for r in result["rows"]][:3] == [
        ("s1", 1.0, 1.0),
        ("s2", 2.0, 3.0),
        ("s3", 3.0, 2.0),
    ]


def test_perfect_agreement_of_four_systems_is_not_p_zero():
    # scipy's t approximation says p = 0 for ρ = 1; exactly, 2 of the 24 orderings reach |ρ| = 1
    values = {f"s{k}": float(k) for k in range(4)}
    result = rankings.correlate(ranking(values), ranking(values))
    assert result["rho"] == pytest.approx(1.0)
    assert result["p_value"] == pytest.approx(2 / 24)


def test_many_systems_use_the_t_approximation_and_ties_share_ranks():
    rng = np.random.default_rng(0)
    a = {f"s{k}": float(v) for k, v in enumerate(rng.random(10))}
    b = {f"s{k}": float(round(v, 1)) for k, v in enumerate(rng.random(10))}  # some ties
    result = rankings.correlate(ranking(a), ranking(b))
    expected = stats.spearmanr([a[s] for s in sorted(a)], [b[s] for s in sorted(a)])
    assert result["rho"] == pytest.approx(float(expected.statistic))
    assert result["p_value"] == pytest.approx(float(expected.pvalue))
    assert result["p_method"] == "t approximation (scipy)"
    assert rankings._ranks([3.0, 1.0, 3.0, 2.0]) == [1.5, 4.0, 1.5, 3.0]


def test_correlation_undefined_cases_say_why():
    one = rankings.correlate(ranking({"a": 1.0, "b": 2.0}), ranking({"a": 1.0, "c": 2.0}))
    assert one["rho"] is None and "at least two systems" in one["reason"]
    flat = rankings.correlate(ranking({"a": 1.0, "b": 1.0}), ranking({"a": 1.0, "b": 2.0}))
    assert flat["rho"] is None and "same value" in flat["reason"]


def test_agreement_by_hand():
    # Given four model-vs-model pairs with five votes, one with the reference and one with four
    def pair(item, votes_a, votes_b, a="x", b="y", ra="short", rb="a longer answer"):
        return pairwise.PairData(item, "", "", a, b, a, ra, rb, votes_a, votes_b, "ref")

    human = [
        pair("1", 5, 0),  # 5/5 for A (shorter)
        pair("2", 1, 4),  # 4/5 for B (longer)
        pair("3", 3, 2),  # 3/5 for A
        pair("4", 0, 5),  # 5/5 for B
        pair("5", 5, 0, b="ref-player"),  # with the reference: left out
        pair("6", 3, 1),  # four votes: left out
    ]
    judge = [
        pairwise.PairData("1", "", "", "y", "x", "x"),  # right, presented the other way round
        pairwise.PairData("2", "", "", "x", "y", "x"),  # wrong
        pairwise.PairData("4", "", "", "x", "y", "y"),  # right; pair 3 not judged
    ]
    result = pairwise.agreement_results(
        human,
        reference_player="ref-player",
        judges={"J": judge},
        text_metrics=False,
        rounds=20,
    )
    assert (result["pairs"], result["excluded_reference"], result["excluded_not_five"]) == (
        4,
        1,
        1,
    )
    assert result["strata"] == {"5/5": 2, "4/5": 1, "3/5": 1}
    by_name = {m["name"]: m for m in result["metrics"]}
    j = by_name["J"]
    assert j["coverage"] == 3 and j["ties_broken"] == 0
    assert j["overall"]["value"] == pytest.approx(2 / 3)
    assert j["strata"]["5/5"]["value"] == 1.0 and j["strata"]["4/5"]["value"] == 0.0
    assert j["strata"]["3/5"] == {"value": None, "n": 0, "low": None, "high": None}
    # The length baseline prefers the longer response: right on pairs 2 and 4
    length = by_name["Length (longer wins)"]
    assert length["overall"]["value"] == 0.5 and length["coverage"] == 4
