"""VisIT-Bench judging, Elo, Bradley-Terry, win-rate and agreement (visit-bench.txt Sec. 4)."""

import csv

import numpy as np
import pytest

from evaluation.metrics import visit
from evaluation.metrics.visit import TIE, Battle, HumanPairVotes
from tests.paths import VISIT_BENCH, needs

FIXTURES = VISIT_BENCH


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Step 1 ... Overall, Response B is better.", "B"),
        ("OVERALL, RESPONSE A IS BETTER", "A"),
        ("Response A is better in fluency while Response B is better in accuracy.", None),
        ("Both responses are poor.", None),
    ],
)
def test_parse_judge_output(text, expected):
    assert visit.parse_judge_output(text) == expected


def test_parse_extraction_output_is_case_sensitive():
    # Fig. 18 examples
    text = "Final Answer: Response B is slightly better, but it should also explain ..."
    assert visit.parse_extraction_output(text) == "B"
    assert visit.parse_extraction_output("Final Answer: Unknown.") is None
    assert visit.parse_extraction_output("final answer: response a") is None


def test_judge_vote_calls_extraction_once_only_when_needed():
    calls = []

    def extract(text):
        calls.append(text)
        return "Final Answer: Response A"

    assert visit.judge_vote("Overall, Response B is better.", extract) == "B"
    assert calls == []
    assert visit.judge_vote("I cannot decide.", extract) == "A"
    assert calls == ["I cannot decide."]
    assert visit.judge_vote("I cannot decide.") == TIE
    assert visit.judge_vote("I cannot decide.", lambda _: "Final Answer: Unknown.") == TIE


def test_two_order_aggregation_needs_agreement():
    # second order shows the models swapped; winners are already model names
    assert visit.vote_winner("B", "llava", "blip") == "blip"
    assert visit.vote_winner(TIE, "llava", "blip") == TIE
    assert visit.aggregate_two_orders("llava", "llava") == "llava"
    assert visit.aggregate_two_orders("llava", TIE) == TIE
    assert visit.aggregate_two_orders(TIE, "llava") == TIE
    assert visit.aggregate_two_orders("llava", "blip") == TIE
    assert visit.aggregate_two_orders(TIE, TIE) == TIE


def test_elo_sequence_by_hand():
    # Battle 1: equal ratings, E = .5, a wins: a = 1000 + 4*.5 = 1002, b = 998
    # Battle 2: tie, E_a = 1/(1+10^(-4/400)) = 0.5057562: a = 1002 + 4*(0.5 - 0.5057562)
    battles = [Battle("a", "b", "a", "img1", "x"), Battle("a", "b", TIE, "img2", "x")]
    ratings = visit.elo_sequence(battles)
    assert ratings["a"] == pytest.approx(1001.976975, abs=1e-5)
    assert ratings["b"] == pytest.approx(998.023025, abs=1e-5)


def test_online_elo_deduplicates_and_records_seed():
    battles = [
        Battle("a", "b", "a", "img1", "x"),
        Battle("b", "a", "b", "img1", "x"),  # same unordered pair, image, instruction: dropped
        Battle("a", "c", TIE, "img1", "x"),
        Battle("c", "b", "c", "img2", "y"),
    ]
    result = visit.online_elo(battles, seed=1)
    assert result.seed == 1
    assert result.n_battles == 3
    assert result.matches == {"a": 2, "b": 2, "c": 2}
    # Same order as the official `np.random.seed(1); np.random.shuffle(battles)`
    official = visit.deduplicate_battles(battles)
    np.random.RandomState(1).shuffle(official)
    assert result.ratings == visit.elo_sequence(official)
    assert sum(result.ratings.values()) == pytest.approx(3000.0)  # Elo updates are zero-sum


def test_bootstrap_elo_with_identical_battles():
    # Every resample is three "a beats b" battles, so every round gives the same ratings:
    # 1002 -> 1002 + 4*(1 - 0.5057562) = 1003.976975 -> + 4*(1 - 0.5114462) = 1005.931197
    battles = [Battle("a", "b", "a", f"img{k}", "x") for k in range(3)]
    result = visit.bootstrap_elo(battles, rounds=20, seed=4)
    assert result.ratings["a"].median == 1006
    assert result.ratings["b"].median == 994
    assert result.ratings["a"].low == pytest.approx(1005.931197, abs=1e-5)
    assert result.ratings["a"].high == pytest.approx(1005.931197, abs=1e-5)
    assert (result.seed, result.rounds, result.n_battles) == (4, 20, 3)


def test_bradley_terry_mle_by_hand():
    # a beats b 3 times out of 4: 10^(β_a − β_b) = 3 -> gap 400·log10(3) = 190.85, mean 1000
    battles = [Battle("a", "b", "a", f"img{k}", "x") for k in range(3)]
    battles.append(Battle("b", "a", "b", "img9", "x"))
    ratings = visit.bradley_terry(battles)
    assert ratings["a"] == pytest.approx(1000 + 200 * np.log10(3), abs=1e-4)  # 1095.4243
    assert ratings["b"] == pytest.approx(1000 - 200 * np.log10(3), abs=1e-4)


def test_bradley_terry_counts_ties_as_half_wins():
    # 1 win + 2 ties = 2 wins for a, 1 for b -> gap 400·log10(2) = 120.41
    battles = [
        Battle("a", "b", "a", "img1", "x"),
        Battle("b", "a", TIE, "img2", "x"),
        Battle("a", "b", TIE, "img3", "x"),
    ]
    ratings = visit.bradley_terry(battles)
    assert ratings["a"] == pytest.approx(1060.206, abs=1e-3)
    assert ratings["b"] == pytest.approx(939.794, abs=1e-3)


def test_elo_gap_to_win_probability_matches_paper():
    assert round(visit.elo_win_probability(1223, 1085), 2) == 0.69
    assert round(visit.elo_win_probability(1223, 786), 2) == 0.93


def test_win_rate_vs_reference():
    battles = [
        Battle("m", "ref", "m", "i1", "x"),
        Battle("ref", "m", "m", "i2", "x"),
        Battle("m", "ref", "ref", "i3", "x"),
        Battle("m", "ref", TIE, "i4", "x"),  # excluded: not decisive
        Battle("m", "other", "m", "i5", "x"),  # excluded: not against the reference
    ]
    result = visit.win_rate_vs_reference(battles, "m", "ref", seed=0, rounds=100)
    assert (result.wins, result.n) == (2, 3)
    assert str(result) == "66.67% (n=3)"
    assert str(visit.win_rate_vs_reference([], "m", "ref")) == "n/a (n=0)"


def test_metric_human_agreement_strata():
    human = [
        HumanPairVotes(5, 0),  # 5/5, majority A
        HumanPairVotes(4, 1),  # 4/5, A
        HumanPairVotes(1, 4),  # 4/5, B
        HumanPairVotes(3, 2),  # 3/5, A
        HumanPairVotes(2, 3),  # 3/5, B
        HumanPairVotes(3, 1),  # only 4 votes: excluded
    ]
    metric = ["A", "B", "B", "A", "A", "A"]
    result = visit.metric_human_agreement(human, metric, with_intervals=False)
    # hits: yes, no, yes, yes, no -> 3/5 overall
    assert (result.overall.share, result.overall.n) == (0.6, 5)
    assert (result.strata["5/5"].share, result.strata["5/5"].n) == (1.0, 1)
    assert (result.strata["4/5"].share, result.strata["4/5"].n) == (0.5, 2)
    assert (result.strata["3/5"].share, result.strata["3/5"].n) == (0.5, 2)
    assert (result.excluded, result.ties_broken) == (1, 0)


def test_metric_ties_become_seeded_random_choices():
    choices = ["A", None, TIE, "B"]
    first, broken = visit.break_ties(choices, seed=9)
    again, _ = visit.break_ties(choices, seed=9)
    assert first == again
    assert broken == 2
    assert first[0] == "A" and first[3] == "B"
    assert set(first) <= {"A", "B"}


def test_baselines():
    assert visit.length_tokens("  a b\n c\t") == 3
    assert visit.length_choice("a b c", "a  b") == "A"
    assert visit.length_choice("a b", "c d") is None
    assert visit.score_choice(0.2, 0.5) == "B"
    assert visit.random_choices(5, seed=3) == visit.random_choices(5, seed=3)
    assert len(visit.random_choices(5, seed=3)) == 5


def test_ranking_correlation():
    # common systems m1..m3: ranks (1, 2, 3) vs (1, 3, 2): Σd² = 2, ρ = 1 − 6·2/(3·8) = 0.5
    result = visit.ranking_correlation(
        {"m1": 1.0, "m2": 2.0, "m3": 3.0}, {"m1": 10.0, "m2": 30.0, "m3": 20.0, "m4": 5.0}
    )
    assert result.rho == pytest.approx(0.5)
    assert result.n_systems == 3


def _read_rows(name):
    with open(FIXTURES / name, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


@needs(FIXTURES)
def test_length_baseline_battles_on_real_outputs():
    # Given real InstructBLIP and PandaGPT outputs on the instances kept for leaderboards
    blip_rows = _read_rows("instruct_blip_13b_out.csv")
    panda = {(r["image"], r["instruction"]): r for r in _read_rows("PandaGPT_13b_out.csv")}
    kept = [
        row
        for row in blip_rows
        if row["human_ratings_gpt4_correct"] == "True"
        and row["human_ratings_problem_in_caption"] == "False"
    ]
    assert len(kept) == 529  # fixtures README: 529 of 578
    # First kept instance (cat tree): the GPT-4 reference has 61 whitespace tokens (counted by
    # hand), InstructBLIP's answer is longer, so the length baseline picks InstructBLIP.
    first = kept[0]
    assert visit.length_tokens(first["gpt4_prediction"]) == 61
    assert visit.length_choice(first["instruct_blip_output"], first["gpt4_prediction"]) == "A"
    # When the length baseline judges two pairings per instance
    battles = []
    for row in kept:
        key = (row["image"], row["instruction"])
        outputs = {
            "instructblip": row["instruct_blip_output"],
            "pandagpt": panda[key]["panda_gpt_13b_output"],
            "reference": row["gpt4_prediction"],
        }
        for a, b in (("instructblip", "pandagpt"), ("instructblip", "reference")):
            choice = visit.length_choice(outputs[a], outputs[b])
            winner = {"A": a, "B": b, None: TIE}[choice]
            battles.append(Battle(a, b, winner, *key))
    # Then one (image, instruction) appears twice in the file, so de-duplication keeps 528 x 2
    elo = visit.online_elo(battles, seed=1)
    assert elo.n_battles == 2 * 528
    assert elo == visit.online_elo(battles, seed=1)  # reproducible from the recorded seed
    # and the win-rate vs reference counts exactly the decisive length comparisons
    unique = list({(r["image"], r["instruction"]): r for r in reversed(kept)}.values())
    lengths = [
        (visit.length_tokens(r["instruct_blip_output"]), visit.length_tokens(r["gpt4_prediction"]))
        for r in unique
    ]
    longer = sum(mine > ref for mine, ref in lengths)
    shorter = sum(mine < ref for mine, ref in lengths)
    rate = visit.win_rate_vs_reference(battles, "instructblip", "reference", with_interval=False)
    assert (rate.wins, rate.n) == (longer, longer + shorter)
