"""Concepts, triple drafting (App. A prompt) through the fake OpenAI-compatible server and the
offline drafter, the checks on drafted triples, and the triple review's 2-of-3 rule."""

from __future__ import annotations

import pytest

from annotator.models import Task
from annotator.platform.errors import Invalid
from curation import gateway
from curation.models import Generation
from curation.recipes.vlind import benches, concepts, prompts, triples
from curation.recipes.vlind.models import VLindTriple
from tests.curation.recipes.common import fake_provider
from tests.curation.recipes.vlind.helpers import draft_offline, review_triples, reviewers
from tests.fake_openai import malformed, reply

pytestmark = pytest.mark.django_db

GOOD_COLOR = [
    {
        "id": 1,
        "context": "A polar bear has bright green fur.",
        "true_statement": "The polar bear's fur is green.",
        "false_statement": "The polar bear's fur is white.",
    },
    {
        "id": 2,
        "context": "Grass on the football pitch is bright orange.",
        "true_statement": "The grass is orange.",
        "false_statement": "The grass is green.",
    },
]
GOOD_DIET = [
    {
        "context": "A tiger eats a bowl of rice.",
        "true_statement": "The tiger is eating rice.",
        "false_statement": "The tiger is eating meat.",
    },
    {
        "context": "A giraffe drinks milkshakes through a long straw.",
        "true_statement": "The giraffe is drinking a milkshake.",
        "false_statement": "The giraffe is eating leaves.",
    },
]


def _provider(project, fake):
    return fake_provider(project, fake, model="fake-model", max_retries=2, timeout_s=5)


TABLE_1 = (
    "climate",
    "color",
    "diet",
    "folklore",
    "habitat",
    "history",
    "landmark",
    "location",
    "size",
    "time",
    "weight",
)


def _triple(context: str, true: str, false: str) -> dict:
    return {"context": context, "true_statement": true, "false_statement": false}


def test_a_new_bench_has_the_papers_11_concepts_with_three_examples_each(bench):
    # given a bench just created
    rows = list(bench.concepts.order_by("position"))
    # then it holds the paper's concepts in Table 1's order, each with 3 usable examples
    assert (
        [c.name for c in rows] == list(TABLE_1) == [c["name"] for c in concepts.default_concepts()]
    )
    assert len(rows) == 11
    for concept in rows:
        usable, problems = prompts.triples_check(concept.examples)
        assert (len(usable), problems) == (3, []), concept.name
        assert concept.image_hint.startswith("an image of")
    # and every concept's offline bank is six more triples, none repeating an example
    for spec in concepts.default_concepts():
        name = spec["name"]
        usable, problems = prompts.triples_check(
            concepts.offline_bank(name), examples=spec["examples"]
        )
        assert (len(usable), problems) == (6, []), name


def test_the_prompt_is_app_a_filled_with_the_concepts_examples(bench):
    # given the "location" concept, whose examples are App. A's own
    concept = bench.concepts.get(name="location")
    variables = prompts.triple_variables(
        concept=concept.name, image_hint=concept.image_hint, examples=concept.examples, count=50
    )
    # when the seeded template is rendered
    from curation import gateway

    text = gateway.render(gateway.template_current(prompts.TRIPLES_TEMPLATE).text, variables)
    # then it reads like the paper's filled-in template
    assert text.startswith(
        "Given a concept, create related counterfactual situation (context) which can be "
        "described with an image."
    )
    assert (
        'through the concept of "location", we can create a counterfactual situation such as '
        '"A variety of marine life lives in the city built underwater." and describe it with '
        "an image of a underwater city."
    ) in text
    assert 'List 50 context and statement pairs for the concept of "location."' in text
    assert text.endswith(
        '[{"id": 1, "context": "A ship is located in the middle of a large city.", '
        '"true_statement": "The ship is surrounded by buildings.", "false_statement": '
        '"The ship is in the ocean."}, {"id": 2, "context": "A glacier is found in a tropical '
        'jungle.", "true_statement": "The glacier coexists with tropical trees.", '
        '"false_statement": "The glacier is in the polar region."}, …]'
    )


def test_fake_llm_good_then_malformed_then_good(bench, fake_openai):
    # given the project's provider is the fake server: a good answer for "color", then a
    # malformed one and a good one (the retry) for "diet"
    _provider(bench.project, fake_openai)
    fake_openai.script(
        reply(GOOD_COLOR), malformed("Sure! Here are some situations."), reply(GOOD_DIET)
    )
    ids = list(bench.concepts.filter(name__in=["color", "diet"]).values_list("pk", flat=True))
    # when two triples per concept are drafted
    result = triples.triples_draft(bench=bench, concept_ids=ids, count=2)
    # then four triples are in review, each with its generation (provenance)
    assert result["drafted"] == 4 and result["concepts"] == {"color": 2, "diet": 2}
    assert result["failed_calls"] == 0 and result["errors"] == []
    rows = list(bench.triples.order_by("concept__position", "context_id"))
    assert [(t.concept.name, t.context_id, t.context, t.status) for t in rows] == [
        ("color", 1, GOOD_COLOR[0]["context"], "review"),
        ("color", 2, GOOD_COLOR[1]["context"], "review"),
        ("diet", 1, GOOD_DIET[0]["context"], "review"),
        ("diet", 2, GOOD_DIET[1]["context"], "review"),
    ]
    diet_gen = rows[2].generation
    assert (diet_gen.status, diet_gen.attempts, diet_gen.provider_kind) == ("ok", 2, "openai")
    assert [e["outcome"] for e in diet_gen.attempt_log] == ["malformed", "ok"]
    assert diet_gen.template_name == "vlind-triples" and diet_gen.purpose == "vlind.triples"
    assert rows[0].generation.attempts == 1
    # and the second call's prompt asked for the diet concept with its own examples
    prompt = fake_openai.chat_requests[1]["body"]["messages"][-1]["content"]
    assert 'List 2 context and statement pairs for the concept of "diet."' in prompt
    assert "A koala chews on a slice of pepperoni pizza." in prompt
    # and every triple has a review task with the six criteria
    queue = bench.triple_queue
    assert (queue.kind, queue.redundancy, queue.outcome_handler) == (
        "review",
        3,
        "vlind.triple_review",
    )
    assert len(queue.config["criteria"]) == 6
    task = Task.objects.get(pk=rows[0].task_id)
    assert task.payload["fields"] == {
        "Context": "A polar bear has bright green fur.",
        "True statement (true in the context)": "The polar bear's fur is green.",
        "False statement (false in the context, true by common sense)": (
            "The polar bear's fur is white."
        ),
    }


def test_an_llm_that_never_answers_json_leaves_the_concept_with_the_error(bench, fake_openai):
    _provider(bench.project, fake_openai)
    fake_openai.default = malformed("I cannot help with that.")
    concept = bench.concepts.get(name="color")
    result = triples.triples_draft(bench=bench, concept_ids=[concept.pk], count=2)
    assert result["drafted"] == 0 and result["failed_calls"] == 1
    assert result["errors"][0].startswith("color: Failed after 3 attempts")
    assert VLindTriple.objects.count() == 0
    assert Generation.objects.get().status == "failed"


def test_unusable_triples_are_dropped_and_counted(bench, fake_openai):
    # given an answer with a copied example, a duplicate, equal statements and an empty field
    _provider(bench.project, fake_openai)
    color = bench.concepts.get(name="color")
    fake_openai.script(
        reply(
            [
                GOOD_COLOR[0],
                color.examples[0],
                GOOD_COLOR[0],
                {"context": "A blue sun.", "true_statement": "Blue.", "false_statement": "blue"},
                {"context": "Pink snow.", "true_statement": " ", "false_statement": "x"},
            ]
        )
    )
    # when drafted
    result = triples.triples_draft(bench=bench, concept_ids=[color.pk], count=1)
    # then only the good one is stored, the four others are counted as unusable
    assert (result["invalid"], result["drafted"], len(fake_openai.chat_requests)) == (4, 1, 1)
    assert list(bench.triples.values_list("context", flat=True)) == [GOOD_COLOR[0]["context"]]


def test_offline_drafter_hands_out_the_concepts_bank_labelled_offline(bench):
    result = draft_offline(bench, names=("habitat",), count=4)
    assert result["drafted"] == 4
    rows = list(bench.triples.order_by("context_id"))
    bank = concepts.offline_bank("habitat")
    assert [t.context for t in rows] == [b["context"] for b in bank[:4]]
    assert {t.generation.provider_kind for t in rows} == {"offline"}
    # a second run drafts nothing: the concept is full
    assert draft_offline(bench, names=("habitat",), count=4)["drafted"] == 0
    # and asking for more than the bank holds stops at the bank
    assert draft_offline(bench, names=("habitat",), count=20)["drafted"] == 2


def test_triples_are_kept_with_two_of_three_accepts(bench):
    # given four drafted triples
    draft_offline(bench, names=("color",), count=4)
    # when three people review them with 3, 2, 1 and 0 accepts
    review_triples(bench, reviewers(3), {1: 3, 2: 2, 3: 1, 4: 0})
    # then the first two stay, the others are rejected, with their votes
    rows = {t.context_id: t for t in bench.triples.all()}
    assert [(rows[k].status, rows[k].accepts) for k in (1, 2, 3, 4)] == [
        ("kept", 3),
        ("kept", 2),
        ("rejected", 1),
        ("rejected", 0),
    ]
    assert rows[2].votes == {"accept": 2, "reject": 1}
    # and a kept triple's factual context starts as its commonsense statement (Sec. 4)
    assert rows[1].factual_context == rows[1].false_statement
    assert rows[3].factual_context == ""


def test_concept_edit_checks_examples_and_keeps_nothing_on_error(bench):
    concept = bench.concepts.get(name="size")
    before = list(concept.examples)
    bad = [dict(e) for e in before]
    bad[1]["false_statement"] = bad[1]["true_statement"]
    with pytest.raises(Invalid) as exc:
        benches.concept_update(
            concept=concept, description="x", image_hint="an image of x", examples=bad
        )
    assert exc.value.errors == [
        {"line": 0, "error": "example 2: the true and false statements are the same"}
    ]
    concept.refresh_from_db()
    assert concept.examples == before
    new = benches.concept_add(
        bench=bench,
        name="Sound",
        description="What things sound like.",
        image_hint="an image of a cat barking",
        examples=[
            _triple("A cat barks at the mailman.", "The cat barks.", "The cat meows."),
            _triple("A lion chirps.", "The lion chirps.", "The lion roars."),
            _triple("A cow quacks.", "The cow quacks.", "The cow moos."),
        ],
    )
    assert (new.name, new.position) == ("sound", 11)
    # the offline drafter knows only the paper's concepts and says so
    result = triples.triples_draft(
        bench=bench,
        concept_ids=[new.pk],
        count=2,
        provider=gateway.provider_offline(),
    )
    assert result["drafted"] == 0
    assert "no hand-written triples for the concept 'sound'" in result["errors"][0]
