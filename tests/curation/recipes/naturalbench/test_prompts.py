"""NaturalBench App. A prompts: the checks a drafted pair of questions must pass, the offline
drafter's rules, the choice of prompt per question type and language, and the App. C taxonomy."""

from __future__ import annotations

import pytest

from annotator.demo import content as demo_content
from annotator.kinds import get_kind
from curation.gateway import DEFAULT_TEMPLATES
from curation.gateway.offline import run_offline
from curation.gateway.parsing import validate_output
from curation.recipes.naturalbench import prompts, skills
from curation.recipes.naturalbench.prompts import DraftInvalid, check_multiple_choice, check_yes_no
from evaluation.families.naturalbench import layout as nb


def qa(question, c1, c2):
    return {"Question": question, "Caption1 Answer": c1, "Caption2 Answer": c2}


def test_yes_no_in_the_prompt_order_is_kept():
    # Given the order the prompt asks for (q0: Yes for caption 1, q1: No for caption 1)
    draft = check_yes_no(
        {"0": qa("Is there a dog?", "Yes", "No"), "1": qa("Is it night?", "No", "Yes")}
    )
    # Then question 0 is the one answered Yes on image 0
    assert (draft.question_0, draft.question_1) == ("Is there a dog?", "Is it night?")
    assert draft.choices == {"q0": ["Yes", "No"], "q1": ["Yes", "No"]}


def test_yes_no_in_the_other_order_is_put_right_and_spelling_is_normalised():
    draft = check_yes_no(
        {"0": qa("Is it night?", "no", "YES."), "1": qa("Is there a dog?", "yes", "no")}
    )
    assert (draft.question_0, draft.question_1) == ("Is there a dog?", "Is it night?")


def test_yes_no_answers_in_chinese_and_hindi_are_understood():
    draft = check_yes_no({"0": qa("有狗吗？", "是", "否"), "1": qa("क्या रात है?", "नहीं", "हाँ")})
    assert (draft.question_0, draft.question_1) == ("有狗吗？", "क्या रात है?")


@pytest.mark.parametrize(
    ("output", "problem"),
    [
        (
            {"0": qa("Is there a dog?", "Yes", "Yes"), "1": qa("Is it night?", "No", "Yes")},
            "question 0 has the same answer (Yes) for both captions; "
            "its answer must change with the image",
        ),
        (
            {"0": qa("Is there a dog?", "Yes", "No"), "1": qa("Is it day?", "Yes", "No")},
            "both questions are answered Yes for caption 1; one must be Yes and the other No",
        ),
        (
            {"0": qa("Is there a dog?", "Yes", "No"), "1": qa("is there a DOG?", "No", "Yes")},
            "the two questions are the same",
        ),
        (
            {"0": qa("Is there a dog?", "Maybe", "No"), "1": qa("Is it night?", "No", "Yes")},
            "question 0: the caption answers must be Yes or No",
        ),
        ({"0": qa("", "Yes", "No"), "1": qa("Is it night?", "No", "Yes")}, "question 0 is empty"),
        (["just one"], "expected a JSON object with the keys 0 and 1"),
    ],
)
def test_yes_no_drafts_that_break_the_prompt_are_refused(output, problem):
    with pytest.raises(DraftInvalid) as caught:
        check_yes_no(output)
    assert caught.value.problems == [problem]


def test_multiple_choice_text_answers_become_options_per_the_prompt():
    # Given the prompt's mapping: q0 A = caption 1, B = caption 2; q1 A = caption 2, B = caption 1
    draft = check_multiple_choice(
        {
            "0": qa("How many women sit on the bench?", "Three", "One"),
            "1": qa("What is behind the bench?", "A tiled wall", "A railway station"),
        }
    )
    # Then the published text embeds the options, and image 0 is answered A for q0, B for q1
    assert draft.question_0 == "How many women sit on the bench?\nOption: A:Three; B:One;"
    assert (
        draft.question_1
        == "What is behind the bench?\nOption: A:A railway station; B:A tiled wall;"
    )
    assert draft.choices == {
        "q0": ["A: Three", "B: One"],
        "q1": ["A: A railway station", "B: A tiled wall"],
    }
    record = nb.sample_build(
        image_0="i0",
        image_1="i1",
        question_0=draft.question_0,
        question_1=draft.question_1,
        question_type=nb.MULTIPLE_CHOICE,
        answers=nb.expected_answers(nb.MULTIPLE_CHOICE),
    )
    assert nb.sample_problems(record) == []


def test_multiple_choice_letter_answers_with_options_in_the_question():
    draft = check_multiple_choice(
        {
            "0": qa("What colour is the car? (A) red (B) blue", "A", "B"),
            "1": qa("Where is the car?\nOption: A:in a garage; B:on a road;", "(B)", "Option A"),
        }
    )
    assert draft.question_0 == "What colour is the car?\nOption: A:red; B:blue;"
    assert draft.question_1 == "Where is the car?\nOption: A:in a garage; B:on a road;"


def test_multiple_choice_letters_against_the_prompt_are_refused():
    with pytest.raises(DraftInvalid) as caught:
        check_multiple_choice(
            {
                "0": qa("Colour? (A) red (B) blue", "B", "A"),
                "1": qa("Place? (A) garage (B) road", "B", "A"),
            }
        )
    assert caught.value.problems == [
        "question 0: caption 1 must get option A and caption 2 option B (got 'B' and 'A')"
    ]


def test_multiple_choice_with_equal_options_is_refused():
    with pytest.raises(DraftInvalid) as caught:
        check_multiple_choice(
            {"0": qa("Colour?", "Red", "red"), "1": qa("Place?", "road", "garage")}
        )
    assert caught.value.problems == ["question 0 has the same text for options A and B"]


def test_the_yes_no_prompt_is_the_gateway_builtin_and_matches_app_a():
    text = DEFAULT_TEMPLATES[prompts.YES_NO_TEMPLATE]["text"]
    assert text.startswith(
        "I will present two captions for two images. Please help me generate two questions that "
        "highlight the differences between the captions. The first question should result in a "
        "'Yes' answer for Caption 1 and a 'No' for Caption 2."
    )
    assert "Caption 1: {caption_1}\nCaption 2: {caption_2}\n" in text


def test_prompt_choice_per_question_type_and_language():
    assert prompts.template_name("yes_no", "en") == "naturalbench-yes-no"
    assert prompts.template_name("yes_no", "zh") == "naturalbench-yes-no-language"
    assert prompts.template_name("multiple_choice", "en-GB") == "naturalbench-multiple-choice"
    with pytest.raises(ValueError, match="English only"):
        prompts.template_name("multiple_choice", "hi")
    assert prompts.template_variables(
        question_type="yes_no", language="hi", caption_1="a", caption_2="b"
    ) == {"caption_1": "a", "caption_2": "b", "language": "Hindi"}
    assert (
        "two questions in {language} that highlight"
        in prompts.TEMPLATES[prompts.LANGUAGE_TEMPLATE]["text"]
    )


class Request:
    def __init__(self, name, variables, seed=None):
        self.template_name = name
        self.variables = variables
        self.seed = seed
        spec = prompts.TEMPLATES[name]
        self.output_schema = spec["output_schema"]


def test_offline_multiple_choice_rule_passes_schema_and_checks():
    # Given two captions
    request = Request(
        prompts.MULTIPLE_CHOICE_TEMPLATE,
        {"caption_1": "a red circle.", "caption_2": "two blue squares"},
    )
    # When the offline drafter answers the multiple-choice prompt
    result = run_offline(request)
    # Then its output fits the schema and the prompt's rules: caption 1 is option A of q0
    assert result.ok
    validate_output(result.output, request.output_schema)
    draft = check_multiple_choice(result.output)
    assert (
        draft.question_0
        == "Which description fits the image?\nOption: A:a red circle; B:two blue squares;"
    )
    assert draft.question_1 == (
        "Which description does not fit the image?\nOption: A:a red circle; B:two blue squares;"
    )


def test_offline_language_rule_writes_in_the_target_language():
    request = Request(
        prompts.LANGUAGE_TEMPLATE,
        {
            "caption_1": "蓝色背景上的一个红色圆形",
            "caption_2": "绿色背景上的三个黄色三角形",
            "language": "Chinese",
        },
    )
    result = run_offline(request)
    draft = check_yes_no(result.output)
    assert draft.question_0 == "这张图片可以用“蓝色背景上的一个红色圆形”来描述吗？"
    assert draft.question_1 == "这张图片可以用“绿色背景上的三个黄色三角形”来描述吗？"
    unknown = run_offline(
        Request(prompts.LANGUAGE_TEMPLATE, {**request.variables, "language": "Klingon"})
    )
    assert not unknown.ok
    assert "no offline phrasing for 'Klingon'" in unknown.error


def test_the_taxonomy_has_the_27_skills_of_app_c_with_table_8_definitions():
    assert [g["group"] for g in skills.TAXONOMY] == ["Object", "Attribute", "Relation", "Reasoning"]
    assert [len(g["tags"]) for g in skills.TAXONOMY] == [8, 8, 6, 5]
    assert len(skills.TAGS) == 27
    by_id = {t["id"]: t for t in skills.TAGS}
    assert by_id["orientation"]["label"] == "Spatial (Orientation)"
    assert by_id["logic"]["description"].startswith("Understanding logical operators.")
    assert by_id["animal"]["description"].startswith("Animals. Basic entities within an image")
    # the config is a valid skill_tags queue config (unique ids and keys, none reserved)
    get_kind("skill_tags").validate_config(skills.QUEUE_CONFIG)
    assert skills.labels(["world_knowledge", "animal"]) == ["Animal", "World Knowledge"]


def test_the_demo_queue_tags_with_the_recipes_taxonomy():
    """The crowd demo (annotator/demo, below the recipes) reads the taxonomy the recipe lends
    it: one source, skills.json, for the recipe's queues and the demo's."""
    # Given the demo's queues
    spec = next(s for s in demo_content.queue_specs("/media/") if s.kind == "skill_tags")
    # then its skill queue's config is the recipe's, help texts (Table 8) included,
    assert spec.fields["config"] == skills.QUEUE_CONFIG
    # and its instructions list every tag with its key, group by group.
    for group in skills.TAXONOMY:
        row = f"| {group['group']} | " + ", ".join(
            f"{t['label']} `{t['key']}`" for t in group["tags"]
        )
        assert row in spec.instructions
