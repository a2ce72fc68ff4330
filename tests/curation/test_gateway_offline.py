"""The offline drafter: built-in rules, registration of new ones, and its generations."""

from __future__ import annotations

import pytest

from curation import gateway
from curation.gateway import offline
from curation.models import Generation


@pytest.mark.parametrize(
    ("question", "negated"),
    [
        # the simple case: the single "a"/"an" becomes "no"
        ("Is there a dog in the image?", "Is there no dog in the image?"),
        ("Is there an apple on the table?", "Is there no apple on the table?"),
        ("Does the man wear a hat?", "Does the man wear no hat?"),
        # otherwise "Is it false that" + the question as a declarative sentence
        ("Is the cat black?", "Is it false that the cat is black?"),
        ("Are the two cups on the table?", "Is it false that the two cups are on the table?"),
        ("Is a man riding a horse?", "Is it false that a man is riding a horse?"),
        ("Is the traffic light red?", "Is it false that the traffic light is red?"),
        ("Is the Eiffel Tower visible?", "Is it false that the Eiffel Tower is visible?"),
        ("Are there any people?", "Is it false that there are any people?"),
        ("Does the man hold the cup?", "Is it false that the man does hold the cup?"),
        ("Can you see an apple and a pear?", "Is it false that you can see an apple and a pear?"),
        ("Is this photo taken indoors?", "Is it false that this photo is taken indoors?"),
        ("Is this the kitchen?", "Is it false that this is the kitchen?"),
        ("Has the window been opened?", "Is it false that the window has been opened?"),
    ],
)
def test_vhexpansion_negation_rules(question, negated):
    assert offline.vhexpansion_negation({"question": question}, None) == negated


def test_negation_refuses_questions_that_are_not_yes_no():
    with pytest.raises(offline.OfflineRuleError, match="does not start with an auxiliary verb"):
        offline.vhexpansion_negation({"question": "What colour is the car?"}, None)


def test_naturalbench_rule_builds_questions_with_opposite_answers():
    out = offline.naturalbench_yes_no(
        {
            "caption_1": "A dog sits on a red sofa next to a lamp.",
            "caption_2": "Two cats sleeping on a sofa by the window.",
        },
        None,
    )

    assert out == {
        "0": {
            "Question": "Is there a dog in the image?",
            "Caption1 Answer": "Yes",
            "Caption2 Answer": "No",
        },
        "1": {
            "Question": "Are there cats in the image?",
            "Caption1 Answer": "No",
            "Caption2 Answer": "Yes",
        },
    }


def test_naturalbench_rule_seed_picks_among_candidates_reproducibly():
    variables = {
        "caption_1": "A dog, a kite and an umbrella on the beach.",
        "caption_2": "A horse in a field.",
    }
    picks = {offline.naturalbench_yes_no(variables, s)["0"]["Question"] for s in range(20)}

    assert picks == {
        "Is there a dog in the image?",
        "Is there a kite in the image?",
        "Is there an umbrella in the image?",
        "Is there a beach in the image?",
    }
    assert offline.naturalbench_yes_no(variables, 3) == offline.naturalbench_yes_no(variables, 3)


def test_naturalbench_rule_refuses_captions_without_a_difference():
    with pytest.raises(offline.OfflineRuleError, match="share them all"):
        offline.naturalbench_yes_no({"caption_1": "A dog.", "caption_2": "The dog!"}, None)


@pytest.mark.parametrize(
    ("caption", "limit", "short"),
    [
        ("A cat on a mat.", 230, "A cat on a mat."),
        (
            "A man rides a bicycle down a busy street. Cars are parked along the road.",
            50,
            "A man rides a bicycle down a busy street.",
        ),
        (
            "A man in a blue shirt rides a bicycle, cars parked along the road",
            30,
            "A man in a blue shirt rides.",
        ),
        ("Supercalifragilistic", 10, "Supercali."),
    ],
)
def test_caption_shorten_cuts_at_sentence_or_word_boundaries(caption, limit, short):
    out = offline.caption_shorten({"caption": caption, "max_chars": limit}, None)
    assert out == short and len(out) <= limit


@pytest.mark.django_db
def test_offline_generation_is_labelled_and_validated_against_the_schema(project, curator):
    # given no provider configured: the offline drafter answers
    gen = gateway.generate(
        template="naturalbench-yes-no",
        variables={"caption_1": "A dog on grass.", "caption_2": "A cat on a chair."},
        project=project,
        purpose="naturalbench.yes_no",
        seed=1,
        created_by=curator,
    )

    assert gen.status == "ok" and gen.is_offline
    assert gen.provider.name == "Offline drafter"
    assert gen.model == "offline-drafter/naturalbench-yes-no"
    assert gen.params == {"provider": "Offline drafter", "rule": "naturalbench-yes-no"}
    assert gen.output["0"]["Caption1 Answer"] == "Yes"
    assert gen.template_version == 1 and gen.attempts == 1
    assert gen.messages[0]["content"].startswith("I will present two captions")
    assert gen.raw_response.startswith('{"0": {"Question": ')


@pytest.mark.django_db
def test_registered_rules_serve_their_template_and_bad_output_fails(project):
    gateway.template_ensure(
        name="count-things",
        text="Count {thing}.",
        output_schema={
            "type": "object",
            "required": ["n"],
            "properties": {"n": {"type": "integer"}},
        },
    )

    @gateway.rule("count-things")
    def count(variables, seed):
        return {"n": len(variables["thing"])} if variables["thing"] != "bad" else {"n": "three"}

    try:
        good = gateway.generate(template="count-things", variables={"thing": "cats"})
        bad = gateway.generate(template="count-things", variables={"thing": "bad"})
    finally:
        offline._RULES.pop("count-things")

    assert (good.status, good.output) == ("ok", {"n": 4})
    assert bad.status == "failed" and bad.raw_response == '{"n": "three"}'
    assert "broke the template's schema" in bad.error


@pytest.mark.django_db
def test_offline_without_a_rule_or_with_a_rule_error_fails_without_raising(project):
    gateway.template_ensure(name="no-rule", text="Hello {x}.")

    missing = gateway.generate(template="no-rule", variables={"x": 1})
    refused = gateway.generate(template="vhexpansion-negation", variables={"question": "Why?"})

    assert missing.status == "failed"
    assert "has no rule for template 'no-rule'" in missing.error
    assert refused.status == "failed" and refused.error.startswith(
        "Offline rule 'vhexpansion-negation' could not draft:"
    )
    assert Generation.objects.filter(status="failed").count() == 2
