"""The papers' own facts, reproduced by simulation through the metric modules."""

import numpy as np
import pytest

from evaluation import compute
from evaluation.families.vlind import demo as vlind_demo
from evaluation.families.vlind import metric_rows as vlind_rows
from evaluation.families.vlind import parse as vlind_parse
from evaluation.metrics import naturalbench as nb
from evaluation.metrics import vhexpansion, visit, vlind


def test_uniform_random_guessing_on_naturalbench_gives_50_25_25_625():
    # Given 20,000 samples answered by a fair coin
    rng = np.random.default_rng(7)
    answers = rng.choice([nb.A0, nb.A1], size=(20_000, 4)).tolist()
    # When scored
    scores = nb.naturalbench_scores(answers, with_intervals=False)
    # Then Acc/Q/I/G match chance within sampling error (≈ 4 standard errors)
    n = 20_000
    for value, p, per_unit in (
        (scores.acc, 0.5, 4 * n),
        (scores.q_acc, 0.25, 2 * n),
        (scores.i_acc, 0.25, 2 * n),
        (scores.g_acc, 0.0625, n),
    ):
        # question/image points pair up per sample, so use the per-sample variance bound
        assert abs(value - p) < 4 * np.sqrt(p * (1 - p) / (per_unit / 2))
    assert nb.random_chance_row().g_acc == 0.0625


@pytest.mark.parametrize("p_yes", [0.1, 0.3, 0.5, 0.8])
@pytest.mark.parametrize("q", [0.2, 0.5, 0.9])
def test_vhexpansion_theorems_1_and_2_by_simulation(p_yes, q):
    # Given pairs whose original label is "yes" with share q, a guesser answering yes w.p. p
    rng = np.random.default_rng(int(p_yes * 100 + q * 10))
    n = 40_000
    labels = rng.random(n) < q  # True = "yes" for the original case; the negation flips it
    guess_case = rng.random(n) < p_yes
    guess_neg = rng.random(n) < p_yes
    pairs = [
        vhexpansion.VHPair(case_correct=bool(gc == lab), negation_correct=bool(gn == (not lab)))
        for lab, gc, gn in zip(labels, guess_case, guess_neg, strict=True)
    ]
    case_acc = vhexpansion.accuracy([p.case_correct for p in pairs])
    # Then accuracy over the original cases follows Theorem 1 and symmetric accuracy Theorem 2
    assert case_acc == pytest.approx(vhexpansion.random_guess_accuracy(p_yes, q), abs=0.015)
    sym = vhexpansion.symmetric_accuracy(pairs)
    assert sym == pytest.approx(vhexpansion.random_guess_symmetric_accuracy(p_yes), abs=0.01)
    assert vhexpansion.random_guess_symmetric_accuracy(p_yes) <= 0.25


def test_elo_gap_win_probabilities_of_the_paper():
    assert round(visit.elo_win_probability(1223, 1085), 2) == 0.69
    assert round(visit.elo_win_probability(1223, 786), 2) == 0.93


def _battles(n: int, seed: int) -> list[visit.Battle]:
    rng = np.random.default_rng(seed)
    models = ["a", "b", "c", "d", "e"]
    strength = {"a": 1.6, "b": 1.2, "c": 1.0, "d": 0.7, "e": 0.4}
    out = []
    for t in range(n):
        i, j = rng.choice(5, 2, replace=False)
        a, b = models[i], models[j]
        r = rng.random()
        p = strength[a] / (strength[a] + strength[b])
        winner = visit.TIE if r < 0.1 else (a if r < 0.1 + 0.9 * p else b)
        out.append(visit.Battle(a, b, winner, f"img{t}", f"ins{t}"))
    return out


def test_vectorised_bootstrap_elo_equals_the_per_round_loop():
    battles = _battles(1500, seed=3)
    fast = visit.bootstrap_elo(battles, rounds=150, seed=11)
    slow = visit.bootstrap_elo_loop(battles, rounds=150, seed=11)
    assert fast.ratings.keys() == slow.ratings.keys()
    for model, rating in slow.ratings.items():
        assert fast.ratings[model].median == rating.median
        assert fast.ratings[model].low == pytest.approx(rating.low, rel=1e-12)
        assert fast.ratings[model].high == pytest.approx(rating.high, rel=1e-12)
    assert (fast.seed, fast.rounds, fast.n_battles) == (11, 150, slow.n_battles)


def test_bootstrap_elo_orders_models_by_strength():
    result = visit.bootstrap_elo(_battles(3000, seed=5), rounds=200, seed=0)
    medians = [result.ratings[m].median for m in "abcde"]
    assert medians == sorted(medians, reverse=True)
    for rating in result.ratings.values():
        assert rating.low <= rating.median <= rating.high


def test_vlind_conditional_denominators_and_empty_ones():
    # Given 4 instances: CB is conditioned on CK, LP on CK ∧ VP ∧ CB
    instances = [
        vlind.VLindInstance(ck=True, vp=True, cb=True, lp=(True, False)),
        vlind.VLindInstance(ck=True, vp=False, cb=True, lp=(True,)),
        vlind.VLindInstance(ck=False, vp=True, cb=True, lp=(True, True)),
        vlind.VLindInstance(ck=True, vp=True, cb=False, lp=(False,)),
        vlind.VLindInstance(ck=True, vp=True, cb=True, lp=()),  # no good image: left out
    ]
    s = vlind.vlind_scores(instances, with_intervals=False)
    assert s.n_instances == 4
    assert s.s_ck == 3 / 4 and s.s_vp == 3 / 4
    assert s.s_cb == pytest.approx(2 / 3)  # Σ(a∧c)/Σa
    assert s.s_lp == pytest.approx(0.5)  # only instance 1 passes a∧b∧c, mean d = 1/2
    assert s.cb == 3 / 4
    assert s.lp == pytest.approx((0.5 + 1 + 1 + 0) / 4)
    # And an empty denominator is n/a, never 0
    none_ck = vlind.vlind_scores(
        [vlind.VLindInstance(False, True, True, (True,))], with_intervals=False
    )
    assert none_ck.s_cb is None and none_ck.s_lp is None
    assert vlind.format_score(none_ck.s_cb) == "n/a"


def test_vlind_rows_from_a_data_json_follow_the_official_pipeline():
    data = vlind_demo.vlind_data(21, models={"m": 1.0})
    items = [compute.ItemData(r.item_id, r.data, r.kept) for r in vlind_parse.parse_items(data)]
    preds = {
        r.item_id: compute.PredictionData(r.raw_output, r.parsed_answer)
        for r in vlind_parse.parse_predictions(data, option="m")
    }
    rows = {r.metric: r for r in vlind_rows.rows(items, preds, seed=0, rounds=50)}
    # A perfect model passes every test; instances without good images are left out
    kept = sum(1 for i in items if i.data["good_images"])
    assert rows["s_ck"].n == kept
    for name in ("s_ck", "s_vp", "s_cb", "cb"):
        assert rows[name].value == 1.0
    # LP answers are right with probability 1.0 - 0.2 in the demo generator
    assert 0 < rows["s_lp"].value <= 1.0
    assert set(rows["s_ck"].breakdown) == {"concept", "style"}
