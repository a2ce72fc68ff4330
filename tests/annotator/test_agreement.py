"""Agreement numbers against the libraries' documented examples and hand-computed values."""

import math

import krippendorff
import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from annotator import agreement

# Fleiss (1971) as tabulated on Wikipedia's "Fleiss' kappa" page and in statsmodels' tests:
# 10 subjects, 14 raters each, 5 categories; κ = 0.210 (0.20993 unrounded).
FLEISS_1971 = [
    [0, 0, 0, 0, 14],
    [0, 2, 6, 4, 2],
    [0, 0, 3, 5, 6],
    [0, 3, 9, 2, 0],
    [2, 2, 8, 1, 1],
    [7, 7, 0, 0, 0],
    [3, 2, 6, 3, 0],
    [2, 5, 3, 2, 2],
    [6, 5, 2, 1, 0],
    [0, 2, 2, 3, 7],
]

nan = np.nan
# The krippendorff package's docstring example (README points to it): nominal α = 0.691358.
KRIPP_README = [
    [nan, nan, nan, nan, nan, 3, 4, 1, 2, 1, 1, 3, 3, nan, 3],
    [1, nan, 2, 1, 3, 3, 4, 3, nan, nan, nan, nan, nan, nan, nan],
    [nan, nan, 2, 1, 3, 4, 4, nan, 2, 1, 1, 3, 3, nan, 4],
]
# Krippendorff (2011), "Computing Krippendorff's alpha-reliability", p. 8 (4 coders, 12 units,
# missing values): nominal α = 0.743.
KRIPP_2011 = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, nan, nan, nan],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, nan, 3],
    [nan, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, nan],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, nan],
]


def ratings_from_table(table):
    """Count table (subjects × categories) -> {item: {rater: label}}; rater ids are arbitrary."""
    out = {}
    for i, row in enumerate(table):
        labels = [f"c{k}" for k, count in enumerate(row) for _ in range(count)]
        out[i] = {f"r{j}": label for j, label in enumerate(labels)}
    return out


def ratings_from_reliability(data):
    """Reliability data (raters × units, NaN = missing) -> {unit: {rater: label}}."""
    out = {}
    for r, row in enumerate(data):
        for u, value in enumerate(row):
            if not (isinstance(value, float) and math.isnan(value)):
                out.setdefault(u, {})[f"coder{r}"] = f"v{int(value)}"
    return out


# --- Fleiss -----------------------------------------------------------------------------------
def test_fleiss_kappa_table_matches_fleiss_1971():
    assert agreement.fleiss_kappa_table(FLEISS_1971) == pytest.approx(0.20993, abs=5e-6)
    assert round(agreement.fleiss_kappa_table(FLEISS_1971), 3) == 0.210


def test_fleiss_kappa_from_ratings_matches_the_table():
    ratings = ratings_from_table(FLEISS_1971)
    assert agreement.modal_rater_count(ratings) == 14
    assert agreement.fleiss_kappa(ratings) == pytest.approx(0.2099307, abs=1e-7)


def test_fleiss_kappa_keeps_items_with_the_modal_number_of_raters():
    # Given the Fleiss table plus two items with 3 raters (e.g. escalated tasks)
    ratings = ratings_from_table(FLEISS_1971)
    ratings["extra1"] = {"x": "c0", "y": "c0", "z": "c4"}
    ratings["extra2"] = {"x": "c1", "y": "c2", "z": "c3"}
    # Then κ is computed over the ten 14-rater items only
    assert agreement.fleiss_kappa(ratings) == pytest.approx(0.2099307, abs=1e-7)


def test_fleiss_kappa_hand_computed_two_raters():
    # 4 items × 2 raters: yes/yes, yes/yes, no/no, yes/no.
    # P-bar = (1 + 1 + 1 + 0) / 4 = 0.75; p_yes = 5/8, p_no = 3/8;
    # P_e = 25/64 + 9/64 = 34/64; κ = (0.75 - 34/64) / (1 - 34/64) = (14/64) / (30/64) = 7/15.
    ratings = {
        1: {"a": "yes", "b": "yes"},
        2: {"a": "yes", "b": "yes"},
        3: {"a": "no", "b": "no"},
        4: {"a": "yes", "b": "no"},
    }
    assert agreement.fleiss_kappa(ratings) == pytest.approx(7 / 15, abs=1e-12)


def test_fleiss_kappa_undefined_cases_return_none():
    assert agreement.fleiss_kappa({}) is None
    assert agreement.fleiss_kappa({1: {"a": "x"}, 2: {"a": "y"}}) is None  # one rater per item
    assert agreement.fleiss_kappa({1: {"a": "x", "b": "y"}}) is None  # one item
    same = {1: {"a": "x", "b": "x"}, 2: {"a": "x", "b": "x"}}
    assert agreement.fleiss_kappa(same) is None  # one category: chance agreement is 1


# --- Krippendorff ----------------------------------------------------------------------------
def test_krippendorff_alpha_matches_package_docstring_example():
    ratings = ratings_from_reliability(KRIPP_README)
    assert agreement.krippendorff_alpha(ratings) == pytest.approx(0.691358, abs=5e-7)
    direct = krippendorff.alpha(reliability_data=KRIPP_README, level_of_measurement="nominal")
    assert agreement.krippendorff_alpha(ratings) == pytest.approx(direct, abs=1e-12)


def test_krippendorff_alpha_matches_krippendorff_2011_nominal():
    ratings = ratings_from_reliability(KRIPP_2011)
    assert round(agreement.krippendorff_alpha(ratings), 3) == 0.743
    direct = krippendorff.alpha(reliability_data=KRIPP_2011, level_of_measurement="nominal")
    assert agreement.krippendorff_alpha(ratings) == pytest.approx(direct, abs=1e-12)


def test_krippendorff_alpha_hand_computed():
    # Two coders, three units: (a,a), (a,b), (b,b). Coincidences: o_aa = 2, o_bb = 2,
    # o_ab = o_ba = 1; n = 6, n_a = n_b = 3. D_o = 2/6; D_e = 2·3·3 / (6·5) = 18/30.
    # α = 1 - (2/6) / (18/30) = 1 - 5/9 = 4/9.
    ratings = {1: {"p": "a", "q": "a"}, 2: {"p": "a", "q": "b"}, 3: {"p": "b", "q": "b"}}
    assert agreement.krippendorff_alpha(ratings) == pytest.approx(4 / 9, abs=1e-12)


def test_krippendorff_alpha_undefined_cases_return_none():
    assert agreement.krippendorff_alpha({}) is None
    assert agreement.krippendorff_alpha({1: {"a": "x", "b": "y"}}) is None
    assert agreement.krippendorff_alpha({1: {"a": "x", "b": "x"}, 2: {"a": "x", "b": "x"}}) is None


# --- Cohen -----------------------------------------------------------------------------------
def two_by_two(yy, yn, ny, nn):
    a = ["yes"] * yy + ["yes"] * yn + ["no"] * ny + ["no"] * nn
    b = ["yes"] * yy + ["no"] * yn + ["yes"] * ny + ["no"] * nn
    return a, b


def test_cohen_kappa_hand_computed_2x2():
    # 50 items: both yes 20, A yes B no 5, A no B yes 10, both no 15.
    # p_o = 35/50 = 0.7; A yes 25/50, B yes 30/50; p_e = .5·.6 + .5·.4 = 0.5; κ = 0.2/0.5 = 0.4.
    a, b = two_by_two(20, 5, 10, 15)
    assert agreement.cohen_kappa(a, b) == pytest.approx(0.4, abs=1e-12)
    pairs = agreement.cohen_kappa_pairs({i: {"A": a[i], "B": b[i]} for i in range(50)})
    assert pairs[0].kappa == pytest.approx(0.4, abs=1e-12)


def test_cohen_kappa_pairs_and_mean():
    # Raters a and b share the 50 items above; a and c share 4 items, perfect agreement
    # on two categories (κ = 1); b and c share 1 item only (not enough, no pair).
    a, b = two_by_two(20, 5, 10, 15)
    ratings = {i: {"a": a[i], "b": b[i]} for i in range(50)}
    for i, label in enumerate(["yes", "no", "yes", "no"]):
        ratings[100 + i] = {"a": label, "c": label}
    ratings[200] = {"b": "yes", "c": "no"}
    pairs = agreement.cohen_kappa_pairs(ratings)
    assert [(p.rater_a, p.rater_b, p.n_shared) for p in pairs] == [("a", "b", 50), ("a", "c", 4)]
    assert pairs[0].kappa == pytest.approx(0.4, abs=1e-12)
    assert pairs[1].kappa == pytest.approx(1.0, abs=1e-12)
    assert agreement.mean_kappa(pairs) == pytest.approx(0.7, abs=1e-12)


def test_pair_table_equals_sklearn_on_random_raters():
    # Given 6 raters, 3 per item, 4 labels over 300 items
    rng = np.random.default_rng(7)
    raters, labels = [f"r{i}" for i in range(6)], ["w", "x", "y", "z"]
    ratings = {
        item: {r: labels[rng.integers(0, 4)] for r in rng.choice(raters, 3, replace=False)}
        for item in range(300)
    }
    pairs = agreement.cohen_kappa_pairs(ratings)
    assert len(pairs) == 15
    for p in pairs:
        shared = [i for i, r in ratings.items() if p.rater_a in r and p.rater_b in r]
        a = [ratings[i][p.rater_a] for i in shared]
        b = [ratings[i][p.rater_b] for i in shared]
        assert p.n_shared == len(shared)
        assert p.kappa == pytest.approx(cohen_kappa_score(a, b), abs=1e-12)
        assert p.kappa == pytest.approx(agreement.cohen_kappa(a, b), abs=1e-12)


def test_cohen_kappa_undefined_cases_return_none():
    assert agreement.cohen_kappa(["x"], ["x"]) is None  # one item
    assert agreement.cohen_kappa(["x", "x"], ["x", "x"]) is None  # one category
    # Each rater used one label, but different ones: p_o = 0, p_e = 0, κ = 0 (defined).
    assert agreement.cohen_kappa(["x", "x"], ["y", "y"]) == 0.0
    assert agreement.mean_kappa([]) is None
    one_label = {1: {"a": "x", "b": "x"}, 2: {"a": "x", "b": "x"}}
    assert agreement.cohen_kappa_pairs(one_label)[0].kappa is None
    different = {1: {"a": "x", "b": "y"}, 2: {"a": "x", "b": "y"}}
    assert agreement.cohen_kappa_pairs(different)[0].kappa == 0.0


# --- percent agreement ------------------------------------------------------------------------
def test_percent_agreement_hand_computed():
    # item 1: a a a -> 3/3 pairs agree; item 2: a a b -> 1/3; item 3: a b -> 0/1;
    # item 4 has one rating and is left out. Mean = (1 + 1/3 + 0) / 3 = 4/9.
    ratings = {
        1: {"p": "a", "q": "a", "r": "a"},
        2: {"p": "a", "q": "a", "r": "b"},
        3: {"p": "a", "q": "b"},
        4: {"p": "b"},
    }
    assert agreement.percent_agreement(ratings) == pytest.approx(4 / 9, abs=1e-12)
    assert agreement.percent_agreement({4: {"p": "b"}}) is None


def test_percent_agreement_on_fleiss_table_is_fleiss_p_bar():
    # Fleiss' P-bar for the 1971 table is 0.378 (Wikipedia).
    ratings = ratings_from_table(FLEISS_1971)
    assert agreement.percent_agreement(ratings) == pytest.approx(0.378022, abs=1e-6)


# --- labels, gold, speed ----------------------------------------------------------------------
def test_canonical_label_makes_tag_sets_comparable():
    assert agreement.canonical_label(frozenset({"b", "a"})) == '["a", "b"]'
    assert agreement.canonical_label(["a", "b"]) == agreement.canonical_label({"b", "a"})
    assert agreement.canonical_label("keep") == "keep"
    ratings = {
        1: {"p": agreement.canonical_label(frozenset({"x", "y"})), "q": '["x", "y"]'},
        2: {"p": agreement.canonical_label(frozenset({"x"})), "q": '["y"]'},
    }
    assert agreement.percent_agreement(ratings) == 0.5


def test_gold_accuracy_and_speed():
    assert agreement.gold_accuracy([True, False, True, None]) == pytest.approx(2 / 3)
    assert agreement.gold_accuracy([]) is None
    # 4 s, 6 s, 10 s reported, 0 = not reported -> median 6 s; 3 tasks in 20 s = 540 per hour.
    assert agreement.median_seconds([4000, 6000, 10000, 0]) == 6.0
    assert agreement.tasks_per_hour([4000, 6000, 10000, 0]) == pytest.approx(540.0)
    assert agreement.median_seconds([0]) is None
    assert agreement.tasks_per_hour([]) is None


def test_summary_never_contains_nan():
    summary = agreement.agreement_summary({1: {"a": "x", "b": "x"}, 2: {"a": "x", "b": "x"}})
    assert summary["percent_agreement"] == 1.0
    assert summary["cohen_kappa"] is None
    assert summary["fleiss_kappa"] is None
    assert summary["krippendorff_alpha"] is None
    assert [p.kappa for p in summary["cohen_kappa_pairs"]] == [None]
