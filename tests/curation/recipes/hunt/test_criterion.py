"""The blindspot criterion and the hunt's 2 × 2 layout (curation/recipes/hunt/criterion.py)."""

import pytest

from curation.recipes.hunt import criterion as c


def test_the_first_image_is_image_0_when_its_answer_is_yes():
    assert c.image_order(c.A0) == ("first", "partner")
    assert c.image_order(c.A1) == ("partner", "first")
    assert c.first_image_slot(c.A0) == "q0_i0"
    assert c.first_image_slot(c.A1) == "q0_i1"
    # The second question's answer on the first image is the opposite of the first's.
    assert c.slot_of(1, "first", c.A0) == "q1_i0"
    assert c.GROUND_TRUTH["q1_i0"] == c.A1
    assert c.slot_of(1, "first", c.A1) == "q1_i1"
    assert c.GROUND_TRUTH["q1_i1"] == c.A0
    with pytest.raises(ValueError):
        c.first_image_slot("Yes")


def test_a_fooled_target_and_a_blind_model_at_chance_make_a_blindspot():
    # Given target "x" right everywhere, "y" wrong on q0_i1, and a blind model saying "Yes"
    truth = c.GROUND_TRUTH
    x = {s: truth[s] for s in c.SLOTS}
    y = {**x, "q0_i1": c.A0}
    blind = {"q0_i0": c.A0, "q0_i1": c.A0, "q1_i0": c.A0, "q1_i1": c.A0}
    # When judged over the 2 × 2
    v = c.verdict(slots=c.SLOTS, targets={"x": x, "y": y}, blind=blind)
    # Then y is fooled once, the blind model is at chance (2 of 4) and it is a blindspot
    assert v.fooled == {"x": 0, "y": 1}
    assert v.targets_fooled == ["y"]
    assert (v.blind_correct, v.blind_chance) == (2, 2.0)
    assert v.complete and not v.blind_solvable and v.is_blindspot


def test_a_blind_model_above_chance_rejects_the_pair_as_blind_solvable():
    x = {"q0_i0": c.A1, "q0_i1": c.A1}  # fooled on image 0
    blind = {"q0_i0": c.A0, "q0_i1": c.A1}  # a sampling blind model that got both right
    v = c.verdict(slots=c.PAIR_SLOTS, targets={"x": x}, blind=blind)
    assert v.targets_fooled == ["x"]
    assert (v.blind_correct, v.blind_chance) == (2, 1.0)
    assert v.blind_solvable and not v.is_blindspot


def test_no_target_fooled_is_no_blindspot_and_unparseable_counts_wrong():
    right = {"q0_i0": c.A0, "q0_i1": c.A1}
    v = c.verdict(slots=c.PAIR_SLOTS, targets={"x": right}, blind={"q0_i0": None, "q0_i1": None})
    assert v.targets_fooled == [] and v.blind_correct == 0 and not v.is_blindspot
    # An unparseable target answer (None) is wrong, as in the official scoring.
    v = c.verdict(
        slots=c.PAIR_SLOTS,
        targets={"x": {**right, "q0_i1": None}},
        blind={"q0_i0": c.A0, "q0_i1": c.A0},
    )
    assert v.fooled == {"x": 1} and v.is_blindspot


def test_missing_answers_make_an_incomplete_verdict_that_is_no_blindspot():
    v = c.verdict(slots=c.PAIR_SLOTS, targets={"x": {"q0_i0": c.A1}}, blind={"q0_i0": c.A0})
    assert v.missing == ("x:q0_i1", "blind:q0_i1")
    assert v.targets_fooled == ["x"] and not v.complete and not v.is_blindspot
    with pytest.raises(ValueError, match="unknown slot"):
        c.verdict(slots=("q2_i0",), targets={}, blind={})
