"""VLind-Bench parsing and pipeline scores (vlind-bench.txt Sec. 3, 5.1)."""

import pytest

from evaluation.families.vlind import layout
from evaluation.metrics import vlind
from evaluation.metrics.vlind import VLindInstance


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        ("True", True),
        ("False.", False),
        ("The statement is true.", True),
        ("TRUE, because it is", True),
        ("Answer:\nFalse", False),  # newline becomes a space
        ("True\nFalse", True),  # the first one decides
        ("  true", True),  # empty tokens from single-space split are skipped
        ("true/false", None),
        ("It is untrue", None),
        ("", None),
    ],
)
def test_parse_true_false(output, expected):
    assert vlind.parse_true_false(output) is expected


def test_prompts_are_official():
    assert layout.ck_prompt("Bananas are yellow.") == (
        "Statement: Bananas are yellow.\nBased on the common sense, is the given statement true "
        "or false? Only respond in True or False."
    )
    assert layout.cb_prompt("In this world bananas are blue.", "Bananas are blue.") == (
        "Context: In this world bananas are blue.\nStatement: Bananas are blue.\nBased on the "
        "context, is the given statement true or false? Forget real-world common sense and just "
        "follow the information provided in the context. Only respond in True or False."
    )
    assert layout.vp_statement("a banana") == "There is a banana in the given image."
    assert layout.lp_prompt("S").endswith("provided in the image. Only respond in True or False.")
    assert layout.vp_prompt("S").startswith("Statement: S\nBased on the image, is the given")


def test_statement_pair_passes():
    assert vlind.statement_pair_passes(True, False)
    assert not vlind.statement_pair_passes(True, None)
    assert not vlind.statement_pair_passes(False, False)


INSTANCES = [
    VLindInstance(ck=True, vp=True, cb=True, lp=(True, False), concept="color"),  # LP mean .5
    VLindInstance(ck=True, vp=False, cb=True, lp=(True,), concept="color"),
    VLindInstance(ck=False, vp=True, cb=True, lp=(True, True, True), concept="size"),
    VLindInstance(ck=True, vp=True, cb=False, lp=(False,), concept="size"),
    VLindInstance(ck=True, vp=True, cb=True, lp=(), concept="size"),  # no good image: dropped
]


def test_pipeline_scores_by_hand():
    result = vlind.vlind_scores(INSTANCES, seed=2, rounds=100)
    # N = 4; a = 3, b = 3, c = 3; a∧c = 2 (inst 1, 2); a∧b∧c = inst 1 only, LP mean 0.5
    assert result.n_instances == 4
    assert result.s_ck == 0.75
    assert result.s_vp == 0.75
    assert result.s_cb == pytest.approx(2 / 3)
    assert result.s_lp == 0.5
    assert result.cb == 0.75
    assert result.lp == pytest.approx((0.5 + 1 + 1 + 0) / 4)
    assert set(result.intervals) == {"s_ck", "s_vp", "s_cb", "s_lp", "cb", "lp"}


def test_empty_denominator_is_not_available():
    result = vlind.vlind_scores([INSTANCES[2]], with_intervals=False)  # CK failed
    assert result.s_cb is None
    assert result.s_lp is None
    assert vlind.format_score(result.s_cb) == "n/a"
    assert vlind.format_score(result.s_ck) == "0.0"
    assert vlind.format_score(2 / 3) == "66.7"
    nothing = vlind.vlind_scores([], with_intervals=False)
    assert nothing.s_ck is None


def test_scores_per_concept():
    result = vlind.vlind_scores_by(INSTANCES, lambda inst: inst.concept, with_intervals=False)
    # color: both CK pass, CB pass -> S_CB 1; a∧b∧c only inst 1 -> S_LP .5
    assert (result["color"].s_cb, result["color"].s_lp) == (1.0, 0.5)
    # size (after dropping inst 5): inst 3 (CK fail), inst 4 (CB fail) -> S_CB 0, S_LP n/a
    assert result["size"].n_instances == 2
    assert (result["size"].s_cb, result["size"].s_lp) == (0.0, None)
