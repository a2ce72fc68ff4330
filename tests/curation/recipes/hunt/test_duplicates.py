"""Duplicate and near-duplicate hunt questions (curation/recipes/hunt/duplicates.py)."""

from curation.recipes.hunt.duplicates import closest, normal_form


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
