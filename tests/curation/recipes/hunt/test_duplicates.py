"""Duplicate and near-duplicate hunt questions (curation/recipes/hunt/duplicates.py)."""

import random
from difflib import SequenceMatcher

from rapidfuzz.distance import Indel

from curation.recipes.hunt.duplicates import NEAR, Match, closest, lengths_within, normal_form


def test_normal_form_drops_case_accents_punctuation_and_extra_spaces():
    assert normal_form("  Is the  CAFÉ open?! ") == "is the cafe open"


def test_the_same_question_in_another_spelling_is_a_duplicate():
    earlier = [
        (1, normal_form("Is the mug red?")),
        (2, normal_form("Is the mug left of the laptop?")),
    ]
    match = closest("is the mug LEFT of the laptop", earlier)
    assert (match.key, match.score, match.duplicate) == (2, 1.0, True)


def test_a_typo_or_a_plural_is_a_near_duplicate_but_a_swapped_relation_is_not():
    earlier = [(7, normal_form("Is the mug left of the laptop?"))]
    near = closest("Is the mugs left of the laptop?", earlier)
    assert near.key == 7 and 0.9 <= near.score < 1.0 and not near.duplicate
    assert closest("Is the laptop left of the mug?", earlier) is None
    assert closest("Are there three apples on the plate?", earlier) is None


def test_the_closest_of_several_near_duplicates_wins():
    earlier = [
        (1, normal_form("Is the traffic light showing red")),
        (2, normal_form("Is the traffic light showing red?!")),
        (3, normal_form("Is the traffic light showing reds")),
    ]
    assert closest("Is the traffic light showing red", earlier).key == 1
    assert closest("Is the traffic lights showing reds", earlier[2:]).key == 3


def test_only_questions_of_a_length_that_can_come_near_need_comparing():
    # Every pair of lengths whose ratio could reach NEAR lies within the bounds
    for mine in range(1, 200):
        fewest, most = lengths_within(mine)
        for other in range(0, 400):
            could = 2 * min(mine, other) / (mine + other) >= NEAR
            assert not could or fewest <= other <= most, (mine, other)
    # And a question half as long, or twice as long, is never compared
    assert lengths_within(40)[1] < 80 and lengths_within(40)[0] > 20


def _difflib_only(question, earlier, near=NEAR):
    """The scan as it was before the C bound: difflib on every earlier question."""
    mine = normal_form(question)
    best = None
    for key, text in earlier:
        if text == mine:
            return Match(key, 1.0)
        score = SequenceMatcher(None, text, mine, autojunk=False).ratio()
        if score >= near and (best is None or score > best.score):
            best = Match(key, round(score, 4))
    return best


def _alike(rng: random.Random) -> str:
    """Questions like a busy round's: one pattern, a few words and digits changed, typos."""
    things = ["mug", "mugs", "laptop", "cat", "cats", "red car", "traffic light", "dog"]
    text = (
        f"Is there a {rng.choice(things)} left of the {rng.choice(things)} "
        f"number {rng.randint(0, 30)}?"
    )
    if rng.random() < 0.3:  # a typo
        k = rng.randrange(len(text))
        text = text[:k] + rng.choice("aeiouxyz ") + text[k + 1 :]
    return text


def test_the_c_bound_is_never_below_difflibs_ratio():
    rng = random.Random(7)
    for _ in range(3000):
        a, b = normal_form(_alike(rng)), normal_form(_alike(rng))
        ratio = SequenceMatcher(None, a, b, autojunk=False).ratio()
        assert Indel.normalized_similarity(a, b) >= ratio - 1e-12, (a, b)


def test_the_scan_finds_what_difflib_alone_finds():
    rng = random.Random(11)
    earlier = [(k, normal_form(_alike(rng))) for k in range(400)]
    asked = [_alike(rng) for _ in range(150)]
    found = [closest(q, earlier) for q in asked]
    assert found == [_difflib_only(q, earlier) for q in asked]
    assert sum(m is not None and not m.duplicate for m in found) >= 10  # near ones were found
