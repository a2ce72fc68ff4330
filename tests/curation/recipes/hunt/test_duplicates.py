"""Duplicate and near-duplicate hunt questions (curation/recipes/hunt/duplicates.py)."""

from curation.recipes.hunt.duplicates import NEAR, closest, lengths_within, normal_form


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
