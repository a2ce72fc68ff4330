"""The NaturalBench sample layout (METRICS.md Sec. 1) and its check (evaluation families)."""

from __future__ import annotations

import pytest

from evaluation.families.naturalbench import layout as nb

MC_0 = nb.mc_question("What is the dog doing?", "sleeping", "running")
MC_1 = nb.mc_question("What is the dog doing?", "running", "sleeping")


def yes_no_record(**changes):
    record = {
        "Index": 3,
        "Image_0": "flickr/101.jpg",
        "Image_1": "flickr/202.jpg",
        "Question_0": "Is the dog asleep?",
        "Image_0_Question_0": "Yes",
        "Image_1_Question_0": "No",
        "Question_1": "Is the dog running?",
        "Image_0_Question_1": "No",
        "Image_1_Question_1": "Yes",
        "Question_Type": "yes_no",
        "Source": "Flickr30K",
    }
    record.update(changes)
    return record


def mc_record(**changes):
    record = yes_no_record(
        Question_0=MC_0,
        Question_1=MC_1.replace("What is the dog doing?", "Which activity is shown?"),
        Image_0_Question_0="A",
        Image_1_Question_0="B",
        Image_0_Question_1="B",
        Image_1_Question_1="A",
        Question_Type="multiple_choice",
    )
    record.update(changes)
    return record


def test_build_yes_no_sample_in_published_layout():
    # Given a mined pair, two drafted questions and the four verified answers (any case)
    record = nb.sample_build(
        image_0="flickr/101.jpg",
        image_1="flickr/202.jpg",
        question_0="Is the dog asleep?",
        question_1="Is the dog running?",
        question_type="yes_no",
        answers={"q0_i0": "yes", "q0_i1": "NO", "q1_i0": " No ", "q1_i1": "Yes"},
        source="Flickr30K",
        index=3,
    )
    # Then the record is the published layout, answers spelled canonically
    assert record == yes_no_record()
    assert list(record) == list(nb.RECORD_FIELDS)


def test_build_multiple_choice_sample_from_a_flat_answer_list():
    record = nb.sample_build(
        image_0=11,
        image_1=12,
        question_0=MC_0,
        question_1=nb.mc_question("Which activity is shown?", "running", "sleeping"),
        question_type="multiple_choice",
        answers=["a", "b", "B", "A"],
        language="en",
    )
    assert record["Question_0"] == "What is the dog doing?\nOption: A:sleeping; B:running;"
    assert [record[f] for f in nb.ANSWER_FIELDS] == ["A", "B", "B", "A"]
    assert record["Question_Type"] == "multiple_choice"
    assert record["Language"] == "en"
    assert "Index" not in record


def test_layout_answers_are_balanced_by_construction():
    # Every question and every image has one a0 and one a1 (so a blind answer is at chance)
    for qtype in nb.QUESTION_TYPES:
        q0_i0, q0_i1, q1_i0, q1_i1 = nb.expected_answers(qtype)
        assert q0_i0 != q0_i1 and q1_i0 != q1_i1  # per question
        assert q0_i0 != q1_i0 and q0_i1 != q1_i1  # per image
    assert nb.expected_answers("yes_no") == ("Yes", "No", "No", "Yes")
    assert nb.expected_answers("multiple_choice") == ("A", "B", "B", "A")
    assert nb.GROUND_TRUTH == ("a0", "a1", "a1", "a0")


def test_valid_records_pass_the_check():
    assert nb.sample_problems(yes_no_record()) == []
    assert nb.sample_problems(mc_record()) == []
    # older copies spell "Question Type" with a space
    old = yes_no_record()
    old["Question Type"] = old.pop("Question_Type")
    assert nb.sample_problems(old) == []
    nb.sample_check(yes_no_record())


@pytest.mark.parametrize(
    ("changes", "problems"),
    [
        (
            {"Image_0_Question_0": "No", "Image_1_Question_0": "Yes"},
            [
                "Question_0 must be answered Yes on Image_0 and No on Image_1 (got No and Yes): "
                "swap the questions or the images"
            ],
        ),
        (
            {"Image_0_Question_1": "Yes", "Image_1_Question_1": "No"},
            [
                "Question_1 must be answered No on Image_0 and Yes on Image_1 (got Yes and No): "
                "swap the questions or the images"
            ],
        ),
        (
            {"Image_1_Question_0": "Yes"},
            [
                "Question_0 has the same answer (Yes) on both images; "
                "its answer must change with the image"
            ],
        ),
        (
            {"Image_0_Question_1": "Yes", "Image_1_Question_1": "Yes"},
            [
                "Question_1 has the same answer (Yes) on both images; "
                "its answer must change with the image"
            ],
        ),
        (
            {"Image_0_Question_0": "A", "Image_1_Question_0": "B"},
            [
                "Image_0_Question_0 = 'A' is not a yes/no answer (Yes or No)",
                "Image_1_Question_0 = 'B' is not a yes/no answer (Yes or No)",
            ],
        ),
        (
            {"Image_1_Question_1": "Unanswerable"},
            ["Image_1_Question_1 = 'Unanswerable' is not a yes/no answer (Yes or No)"],
        ),
        ({"Image_0_Question_0": None}, ["missing Image_0_Question_0"]),
        ({"Image_1": "  "}, ["missing Image_1"]),
        (
            {"Question_Type": "open"},
            ["Question_Type must be one of yes_no, multiple_choice, got 'open'"],
        ),
        ({"Image_1": "flickr/101.jpg"}, ["Image_0 and Image_1 are the same image"]),
        (
            {"Question_1": " is the dog asleep?"},
            ["Question_0 and Question_1 are the same question"],
        ),
        (
            {"Question_0": MC_0},
            ["Question_0 lists options A/B but Question_Type is yes_no"],
        ),
    ],
)
def test_yes_no_records_breaking_the_layout_are_refused(changes, problems):
    record = yes_no_record(**changes)
    assert nb.sample_problems(record) == problems
    with pytest.raises(nb.LayoutError) as refused:
        nb.sample_check(record)
    assert refused.value.problems == problems
    assert str(refused.value) == "not a NaturalBench sample: " + "; ".join(problems)


@pytest.mark.parametrize(
    ("changes", "problems"),
    [
        (
            {"Image_0_Question_0": "Yes", "Image_1_Question_0": "No"},
            [
                "Image_0_Question_0 = 'Yes' is not a multiple-choice answer (A or B)",
                "Image_1_Question_0 = 'No' is not a multiple-choice answer (A or B)",
            ],
        ),
        (
            {"Question_0": "What is the dog doing?"},
            [
                "Question_0 is multiple-choice but lists no options "
                "(expected '<question>\\nOption: A:<x>; B:<y>;')"
            ],
        ),
        (
            {"Question_1": nb.mc_question("Which one?", "running", "Running")},
            ["Question_1 has the same text for options A and B"],
        ),
        ({"Question_1": "Which one?\nOption: A:; B:running;"}, ["Question_1 has an empty option"]),
        (
            {"Image_0_Question_1": "A", "Image_1_Question_1": "B"},
            [
                "Question_1 must be answered B on Image_0 and A on Image_1 (got A and B): "
                "swap the questions or the images"
            ],
        ),
    ],
)
def test_multiple_choice_records_breaking_the_layout_are_refused(changes, problems):
    assert nb.sample_problems(mc_record(**changes)) == problems


def test_every_missing_field_is_named():
    assert nb.sample_problems({"Image_0": "x.jpg"}) == [
        "missing Image_1",
        "missing Question_0",
        "missing Question_1",
        "missing Image_0_Question_0",
        "missing Image_1_Question_0",
        "missing Image_0_Question_1",
        "missing Image_1_Question_1",
        "missing Question_Type",
    ]


@pytest.mark.parametrize(
    ("answers", "match"),
    [
        (["No", "Yes", "No", "Yes"], "Question_0 must be answered Yes on Image_0"),
        (["Yes", "No"], "expected 4 answers"),
        ({"q0_i0": "Yes", "q0_i1": "No", "q1_i0": "No"}, "missing answer q1_i1"),
    ],
)
def test_build_refuses_instead_of_reordering(answers, match):
    # Given answers with question 0 reversed, too few or one missing, When built, Then refused
    # (nothing is swapped)
    with pytest.raises(nb.LayoutError, match=match):
        nb.sample_build(
            image_0="a.jpg",
            image_1="b.jpg",
            question_0="Is it red?",
            question_1="Is it blue?",
            question_type="yes_no",
            answers=answers,
        )


def test_options_round_trip():
    assert nb.mc_options(MC_0) == ("What is the dog doing?", "sleeping", "running")
    assert nb.mc_options("Is it red?") is None
    assert nb.mc_options("Which?\nOption: A: a red car ; B: a blue; car;") == (
        "Which?",
        "a red car",
        "a blue; car",
    )


def test_sample_items_flatten_in_metric_order():
    items = nb.sample_items(mc_record())
    assert [(i["key"], i["image"], i["answer"]) for i in items] == [
        ("q0_i0", "flickr/101.jpg", "A"),
        ("q0_i1", "flickr/202.jpg", "B"),
        ("q1_i0", "flickr/101.jpg", "B"),
        ("q1_i1", "flickr/202.jpg", "A"),
    ]
    assert items[0]["question"] == MC_0
    assert items[2]["question"].startswith("Which activity is shown?")
    with pytest.raises(nb.LayoutError):
        nb.sample_items(yes_no_record(Image_1_Question_0="Yes"))
