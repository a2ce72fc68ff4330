"""Winoground text / image / group scores (naturalbench.txt App. B)."""

import pytest

from evaluation.metrics.retrieval import RANDOM_CHANCE, PairCorrect, pair_correct, winoground_scores

# s[caption][image]
PAIRS = [
    [[0.9, 0.2], [0.1, 0.8]],  # text: .9>.1, .8>.2; image: .9>.2, .8>.1 -> all correct
    [[0.5, 0.6], [0.4, 0.7]],  # text: .5>.4, .7>.6; image: .5>.6 fails
    [[0.3, 0.3], [0.2, 0.4]],  # text: .3>.2, .4>.3; image: .3>.3 fails (strict)
    [[0.1, 0.2], [0.3, 0.4]],  # text: .1>.3 fails; image: .1>.2 fails
]


def test_pair_correct_by_hand():
    assert pair_correct(PAIRS[0]) == PairCorrect(text=True, image=True, group=True)
    assert pair_correct(PAIRS[1]) == PairCorrect(text=True, image=False, group=False)
    assert pair_correct(PAIRS[2]) == PairCorrect(text=True, image=False, group=False)
    assert pair_correct(PAIRS[3]) == PairCorrect(text=False, image=False, group=False)


def test_winoground_scores():
    result = winoground_scores(PAIRS, seed=1, rounds=100)
    assert (result.n_pairs, result.text, result.image, result.group) == (4, 0.75, 0.25, 0.25)
    assert result.intervals["text"].low <= 0.75 <= result.intervals["text"].high


def test_equal_scores_are_never_correct():
    assert pair_correct([[1.0, 1.0], [1.0, 1.0]]) == PairCorrect(False, False, False)


def test_chance_and_empty():
    assert RANDOM_CHANCE == {"text": 0.25, "image": 0.25, "group": pytest.approx(1 / 6)}
    assert winoground_scores([]).text is None
    with pytest.raises(ValueError):
        pair_correct([[1.0, 2.0, 3.0]])
