"""Multi-label (tag-set) agreement against hand-computed values and nltk's set distances.

The issue's case: three annotators chose ``shape`` on 24 items, two of them adding a different
extra tag each ({shape}, {shape, color}, {shape, count} on every item). Whole-set labels give
percent 0, κ 0, Fleiss −0.50, α −0.48. Per tag, ``shape`` is agreed on every item (1.0).

Krippendorff's α is chance-corrected: when every item gets the very same three sets, nothing
varies between items, so *any* α — with any distance — is 1 − D_o/D_e = −0.479 (below). α rises
above 0 once items differ (the ``varied`` case: the main tag changes from item to item while
the two people keep adding their own extra tag): whole-set α −0.11, set α (Jaccard) 25/96.
"""

import random
from fractions import Fraction as F

import pytest
from nltk.metrics.distance import jaccard_distance, masi_distance

from annotator import agreement

SHAPE, COLOR, COUNT = "shape", "color", "count"

LITERAL = {
    i: {
        "a": frozenset({SHAPE}),
        "b": frozenset({SHAPE, COLOR}),
        "c": frozenset({SHAPE, COUNT}),
    }
    for i in range(24)
}
MAINS = (SHAPE, COLOR, COUNT)
VARIED = {
    i: {
        "a": frozenset({MAINS[i % 3]}),
        "b": frozenset({MAINS[i % 3], "text"}),
        "c": frozenset({MAINS[i % 3], "spatial"}),
    }
    for i in range(24)
}


def by_tag(rows):
    return {r["tag"]: r for r in rows}


def test_distance_matrix_equals_nltk_masi_and_jaccard():
    rng = random.Random(7)
    tags = [f"t{i}" for i in range(6)]
    sets = {frozenset(rng.sample(tags, rng.randint(1, 4))) for _ in range(60)}
    sets = sorted(sets, key=sorted)
    masi = agreement.set_distance_matrix(sets, "masi")
    jac = agreement.set_distance_matrix(sets, "jaccard")
    for i, a in enumerate(sets):
        for j, b in enumerate(sets):
            assert masi[i, j] == pytest.approx(masi_distance(set(a), set(b)), abs=1e-12)
            assert jac[i, j] == pytest.approx(jaccard_distance(set(a), set(b)), abs=1e-12)


def test_empty_sets_are_equal_and_unknown_distance_is_refused():
    m = agreement.set_distance_matrix([frozenset(), frozenset(), frozenset({"x"})], "masi")
    assert m[0, 1] == 0.0 and m[0, 2] == 1.0
    with pytest.raises(ValueError, match="unknown set distance"):
        agreement.set_distance_matrix([frozenset()], "hamming")


def test_literal_24_item_case_per_tag_and_set_alpha():
    # Per tag: shape chosen by all three on all 24 items -> percent 1.0; κ and α undefined (one
    # category in use: chance agreement 1). color/count: 1 of 3 pairs agree -> 1/3.
    tags = by_tag(agreement.per_tag_agreement(LITERAL))
    assert tags[SHAPE]["percent_agreement"] == 1.0
    assert tags[SHAPE]["n_votes"] == 72 and tags[SHAPE]["n_items"] == 24
    assert (tags[SHAPE]["cohen_kappa"], tags[SHAPE]["krippendorff_alpha"]) == (None, None)
    assert tags[COLOR]["percent_agreement"] == pytest.approx(1 / 3)
    # Set α, MASI: D_o = (2/3 + 2/3 + 8/9)·24/72 = 480/648; D_e = 576·2·(2/3+2/3+8/9)/(72·71)
    # = 2560/5112 -> α = 1 − (480/648)(5112/2560) = −23/48.
    expected = 1 - F(480, 648) * F(5112, 2560)
    assert expected == F(-23, 48)
    assert agreement.set_alpha(LITERAL, "masi") == pytest.approx(float(expected), abs=1e-12)
    assert agreement.set_alpha(LITERAL, "jaccard") == pytest.approx(float(expected), abs=1e-12)
    # Mean pairwise Jaccard similarity: (1/2 + 1/2 + 1/3) / 3 = 4/9 on every item.
    assert agreement.mean_set_similarity(LITERAL) == pytest.approx(4 / 9)


def test_varied_24_item_case_set_alpha_is_well_above_whole_set_alpha():
    tags = by_tag(agreement.per_tag_agreement(VARIED))
    for main in MAINS:  # each main tag: all three on 8 items, none on 16
        assert tags[main]["percent_agreement"] == 1.0
        assert tags[main]["cohen_kappa"] == pytest.approx(1.0)
        assert tags[main]["krippendorff_alpha"] == pytest.approx(1.0)
    # Jaccard: D_o = (1/2+1/2+2/3)·2/2·24/72 = 5/9; D_e = 64·60/(72·71) -> α = 25/96.
    assert agreement.set_alpha(VARIED, "jaccard") == pytest.approx(25 / 96, abs=1e-12)
    # MASI: D_o = 480/648; D_e = 64·66/(72·71) -> α = 1 − (480·5112)/(648·4224).
    masi = 1 - F(480, 648) * F(5112, 64 * 66)
    assert agreement.set_alpha(VARIED, "masi") == pytest.approx(float(masi), abs=1e-12)
    whole = {i: {r: agreement.canonical_label(s) for r, s in d.items()} for i, d in VARIED.items()}
    assert agreement.krippendorff_alpha(whole) == pytest.approx(-0.109375)
    assert agreement.set_alpha(VARIED, "jaccard") > agreement.krippendorff_alpha(whole) + 0.3


def test_rater_kappa_on_tag_decisions_hand_computed():
    # Two raters, 4 items, tags {x, y}: decisions (item, tag) for a: x1 y0 | x1 y1 | x0 y1 | x0 y0
    # b: x1 y0 | x1 y0 | x0 y1 | x0 y0 -> 7 of 8 agree; a yes 4/8, b yes 3/8:
    # p_e = 4/8·3/8 + 4/8·5/8 = 1/2 -> κ = (7/8 − 1/2)/(1/2) = 3/4.
    ratings = {
        1: {"a": frozenset({"x"}), "b": frozenset({"x"})},
        2: {"a": frozenset({"x", "y"}), "b": frozenset({"x"})},
        3: {"a": frozenset({"y"}), "b": frozenset({"y"})},
        4: {"a": frozenset(), "b": frozenset()},
    }
    pairs = agreement.tag_decision_kappa_pairs(ratings)
    assert [(p.rater_a, p.rater_b, p.n_shared) for p in pairs] == [("a", "b", 4)]
    assert pairs[0].kappa == pytest.approx(0.75)
    assert agreement.rater_kappa(pairs) == {"a": pytest.approx(0.75), "b": pytest.approx(0.75)}


def test_set_figures_undefined_cases_return_none():
    assert agreement.set_alpha({}) is None
    assert agreement.set_alpha({1: {"a": frozenset({"x"})}, 2: {"a": frozenset({"y"})}}) is None
    same = {i: {"a": frozenset({"x"}), "b": frozenset({"x"})} for i in range(3)}
    assert agreement.set_alpha(same) is None  # one set in use: α undefined
    assert agreement.mean_set_similarity({}) is None
    assert agreement.per_tag_agreement({}) == []
