"""The VisIT-Bench flow end to end with the fake LLM server: seed family → a crowdworker's
instruction with an uploaded image → caption → LLM reference (Sec. 2.1 prompt) → verification →
published version → model responses → sampled tuples → five crowd votes each → the evaluation
app's crowd-vote set with Elo and win-rate vs the reference. Plus the caption sent back on
"problem in the caption", and instruction answers refused without licence or source."""

from __future__ import annotations

import pytest

from annotator import services as annotator_services
from annotator.models import Task
from annotator.platform.errors import Invalid
from curation.models import Image
from curation.recipes.visit import (
    categories,
    pipelines,
    prompts,
    ratings,
    references,
)
from curation.recipes.visit.models import VisitImage, VisitInstance, VisitPair, VisitReference
from evaluation import parsed
from evaluation import services as eval_services
from evaluation.families.visit import parse as visit_parse
from evaluation.families.visit import sampling
from evaluation.models import JudgmentSet, PairJudgment
from evaluation.parsed import pair_key
from tests.curation.recipes.visit.helpers import (
    CAPTION_TEXT,
    INSTRUCTION_TEXT,
    answer_all,
    multi_image_caption_round_two,
    publish_version,
    seed_category,
    uploaded,
    workers,
)
from tests.fake_openai import reply

pytestmark = pytest.mark.django_db

REFERENCE_TEXT = "Two red cubes would be left: there are four, and you take two away."


def _write_instruction(pipeline, curator, crowdworker, text=INSTRUCTION_TEXT):
    category = seed_category(pipeline, curator)
    categories.instruction_tasks_create(category=category, count=1, created_by=curator)
    queue = pipeline.instruction_queue
    claim = annotator_services.assignment_claim(queue=queue, annotator=crowdworker)
    result = annotator_services.annotation_submit(
        task_id=claim.assignment.task_id,
        annotator=crowdworker,
        response={"text": text, "image": uploaded("cubes.png", 7, claim.assignment.task)},
    )
    return category, claim.assignment.task, result


def _caption(pipeline, crowdworker, text=CAPTION_TEXT):
    pipeline.refresh_from_db()
    return answer_all(pipeline.caption_queue, crowdworker, lambda a: {"text": text})


def _review(pipeline, reviewer, verdict="accept", reason=None, comment=""):
    pipeline.refresh_from_db()
    response = {"verdict": verdict, "comment": comment}
    if verdict == "accept":  # every criterion holds
        response["checked"] = list(range(len(pipeline.review_queue.config.get("criteria", []))))
    if reason:
        response["reason"] = reason
    return answer_all(pipeline.review_queue, reviewer, lambda a: dict(response))


def test_instruction_with_upload_becomes_an_instance_waiting_for_its_caption(
    pipeline, curator, crowdworker
):
    # given a family with its seed example and one instruction task
    # when a crowdworker uploads an image and fills in the three lines
    category, task, _result = _write_instruction(pipeline, curator, crowdworker)
    # then the instance holds the instruction, the stored image carries licence and source, and
    # one caption task waits in the caption queue
    instance = VisitInstance.objects.get(origin=VisitInstance.Origin.CROWD)
    assert instance.category == category
    assert instance.instruction == "How many red cubes would be left if I took two away?"
    assert instance.state == VisitInstance.State.CAPTIONING
    assert instance.author == crowdworker
    image = VisitImage.objects.get(instance=instance).image
    assert (image.licence, image.source) == ("CC BY 2.0", "https://openverse.org/image/abc")
    pipeline.refresh_from_db()
    caption_tasks = Task.objects.filter(queue=pipeline.caption_queue)
    assert caption_tasks.count() == 1
    payload = caption_tasks.get().payload
    assert payload["prompt"].startswith(f"Instruction: {instance.instruction}")
    assert payload["images"] == [{"url": image.file.url, "alt": "Image 1"}]
    # and the instruction task showed the family's example
    assert "Example instruction: How many apples are on the plate?" in task.payload["context"]
    assert task.payload["draft"] == prompts.INSTRUCTION_DRAFT


@pytest.mark.parametrize(
    ("text", "missing"),
    [
        (
            "Instruction: How many cubes?\nImage source: https://x.org/a\nImage licence: \n",
            "Fill in the line Image licence",
        ),
        (
            "Instruction: How many cubes are there?\nImage licence: CC0\n",
            "Fill in the line Image source",
        ),
    ],
)
def test_instruction_without_licence_or_source_is_refused_and_nothing_kept(
    pipeline, curator, crowdworker, text, missing
):
    # given an instruction task
    category = seed_category(pipeline, curator)
    categories.instruction_tasks_create(category=category, count=1, created_by=curator)
    queue = pipeline.instruction_queue
    claim = annotator_services.assignment_claim(queue=queue, annotator=crowdworker)
    images_before = Image.objects.count()
    # when the answer lacks the licence or the source
    with pytest.raises(Invalid) as exc:
        annotator_services.annotation_submit(
            task_id=claim.assignment.task_id,
            annotator=crowdworker,
            response={"text": text, "image": uploaded("x.png", 3, claim.assignment.task)},
        )
    # then the submission is refused with what is missing, and nothing was created
    assert exc.value.message.startswith(missing)
    assert not VisitInstance.objects.filter(origin=VisitInstance.Origin.CROWD).exists()
    assert Image.objects.count() == images_before
    assert Task.objects.get(pk=claim.assignment.task_id).state == Task.State.OPEN


def test_full_flow_to_crowd_elo_with_the_fake_llm(
    pipeline, curator, crowdworker, project, llm, fake_openai
):
    # given an instance written and captioned by a crowdworker
    _write_instruction(pipeline, curator, crowdworker)
    assert _caption(pipeline, crowdworker) == 1
    instance = VisitInstance.objects.get(origin=VisitInstance.Origin.CROWD)
    assert instance.state == VisitInstance.State.DRAFTING
    assert instance.caption == CAPTION_TEXT

    # when the LLM drafts the reference (the fake server answers)
    fake_openai.script(reply(REFERENCE_TEXT))
    counts = references.references_draft(pipeline=pipeline)

    # then it was asked with the paper's prompt, and the draft waits in review with provenance
    assert counts == {"drafted": 1, "failed": 0, "offline": 0}
    sent = fake_openai.chat_requests[0]["body"]["messages"][-1]["content"]
    assert sent == (
        f"Consider an image depicted by: '{CAPTION_TEXT}'. Now, briefly follow this instruction, "
        f"and you can add a short explanation: '{instance.instruction}'. Response:"
    )
    reference = VisitReference.objects.get(instance=instance)
    assert reference.text == REFERENCE_TEXT
    assert reference.generation.template_name == prompts.REFERENCE_TEMPLATE
    assert reference.generation.model == "fake-gpt-4"
    assert reference.offline is False
    instance.refresh_from_db()
    assert instance.state == VisitInstance.State.VERIFYING
    assert reference.task.payload["fields"]["Response"] == REFERENCE_TEXT

    # when a reviewer accepts it, the instance is verified and can be published
    reviewer = workers(project, 1, "reviewer")[0]
    assert _review(pipeline, reviewer) == 1
    instance.refresh_from_db()
    assert instance.state == VisitInstance.State.VERIFIED
    version = publish_version(pipeline, created_by=curator)
    assert (version.item_count, version.kept_count) == (1, 1)
    item = version.items.get()
    assert item.data["reference"] == REFERENCE_TEXT
    assert item.data["caption"] == CAPTION_TEXT
    assert item.item_id == visit_parse.visit_key(item.data["image"], instance.instruction)

    # and two models' responses are imported through the evaluation app
    for name, text in (("model-x", "Two."), ("model-y", "There are seven cubes.")):
        eval_services.run_import(
            version=version,
            model_name=name,
            rows=[parsed.PredictionRow(item_id=item.item_id, raw_output=text, line=1)],
        )

    # when every (instance, pair) tuple is sampled with 5 votes each and 5 people rate them:
    # the reference always wins, and model-x beats model-y 4 to 1
    assert ratings.pairs_sample(pipeline=pipeline, n=10, seed=3, votes=5) == 3
    raters = workers(project, 5)

    def prefer(rank):
        def respond(assignment):
            left, right = assignment.task.payload["candidates"]
            if assignment.presentation.get("swapped"):
                left, right = right, left
            return {"choice": "left" if rank(left["id"]) < rank(right["id"]) else "right"}

        return respond

    order = {sampling.REFERENCE: 0, "model-x": 1, "model-y": 2}
    for k, rater in enumerate(raters):
        ranks = dict(order)
        if k == 0:
            ranks.update({"model-x": 2, "model-y": 1})
        assert answer_all(pipeline.rating_queue, rater, prefer(ranks.__getitem__)) == 3

    # then each tuple has its five votes, un-swapped
    votes = {
        p.pair_key: (p.model_a, p.votes_a, p.model_b, p.votes_b, p.winner)
        for p in VisitPair.objects.all()
    }
    xy = votes[pair_key("model-x", "model-y")]
    assert sorted([(xy[0], xy[1]), (xy[2], xy[3])]) == [("model-x", 4), ("model-y", 1)]
    assert xy[4] == "model-x"

    # when the votes are given to the evaluation app
    result = ratings.human_votes_sync(pipeline=pipeline, rounds=50, text_metrics=False)

    # then one crowd-vote set holds the 3 tuples and 15 votes, rated with Elo and win-rate vs the
    # reference in the Table 3 layout
    assert result["pairs"] == 3
    human = JudgmentSet.objects.get(pk=result["judgment_set_id"])
    assert (human.kind, human.pair_count, human.provenance["votes"]) == ("human", 3, 15)
    assert PairJudgment.objects.filter(judgment_set=human).count() == 3
    players = {p["player"]: p for p in human.results["players"]}
    assert [p["player"] for p in human.results["players"]][0] == sampling.REFERENCE
    assert players["model-x"]["win_rate"]["wins"] == 0
    assert players["model-x"]["win_rate"]["n"] == 5
    assert players["model-x"]["matches"] == 10
    assert players["model-x"]["elo"] > players["model-y"]["elo"]
    assert human.results["strata"] == {"5/5": 2, "4/5": 1}

    # and a second sync replaces the set instead of adding another
    again = ratings.human_votes_sync(pipeline=pipeline, rounds=50, text_metrics=False)
    assert JudgmentSet.objects.filter(version=version, kind="human").count() == 1
    assert JudgmentSet.objects.get(pk=again["judgment_set_id"]).label == human.label


def test_problem_in_the_caption_sends_the_caption_back_then_discards(
    pipeline, curator, crowdworker, project
):
    # given a drafted reference (offline drafter: no LLM configured) in review
    pipelines.pipeline_settings(pipeline=pipeline, max_caption_rounds=1)
    _write_instruction(pipeline, curator, crowdworker)
    _caption(pipeline, crowdworker)
    assert references.references_draft(pipeline=pipeline) == {
        "drafted": 1,
        "failed": 0,
        "offline": 1,
    }
    instance = VisitInstance.objects.get(origin=VisitInstance.Origin.CROWD)
    first = VisitReference.objects.get(instance=instance)
    assert "offline rule-based drafter" in first.task.payload["fields"]["Drafted by"]
    reviewer = workers(project, 1, "reviewer")[0]

    # when the reviewer rejects it for a problem in the caption
    _review(pipeline, reviewer, "reject", prompts.REASON_CAPTION, "Say the cubes' colours.")

    # then the reference is marked so, and the caption task comes back with the old caption as
    # its draft and the reviewer's comment
    first.refresh_from_db()
    instance.refresh_from_db()
    assert first.verdict == VisitReference.Verdict.CAPTION
    assert (instance.state, instance.caption_round) == (VisitInstance.State.CAPTIONING, 2)
    again = Task.objects.get(queue=pipeline.caption_queue, state=Task.State.OPEN)
    assert again.payload["draft"] == CAPTION_TEXT
    assert "Their comment: Say the cubes' colours." in again.payload["context"]

    # when the caption is rewritten, drafted again and again rejected for the caption
    _caption(pipeline, crowdworker, CAPTION_TEXT + " The cubes are glossy.")
    references.references_draft(pipeline=pipeline)
    _review(pipeline, reviewer, "reject", prompts.REASON_CAPTION)

    # then the rewrites are used up and the instance is discarded, both verdicts recorded
    instance.refresh_from_db()
    assert instance.state == VisitInstance.State.DISCARDED
    assert list(
        VisitReference.objects.filter(instance=instance).values_list("round", "verdict")
    ) == [(1, "caption"), (2, "caption")]
    assert not Task.objects.filter(queue=pipeline.caption_queue, state=Task.State.OPEN).exists()


def test_problem_in_the_response_discards(pipeline, curator, crowdworker, project):
    # given a drafted reference in review
    _write_instruction(pipeline, curator, crowdworker)
    _caption(pipeline, crowdworker)
    references.references_draft(pipeline=pipeline)
    # when the reviewer rejects it for a problem in the response
    _review(pipeline, workers(project, 1, "r")[0], "reject", prompts.REASON_RESPONSE)
    # then the instance is discarded and no caption task is made
    instance = VisitInstance.objects.get(origin=VisitInstance.Origin.CROWD)
    assert instance.state == VisitInstance.State.DISCARDED
    assert instance.references.get().verdict == VisitReference.Verdict.RESPONSE
    assert Task.objects.filter(queue=pipeline.caption_queue).count() == 1


def test_multi_image_family_makes_one_caption_task_per_image(pipeline, curator, crowdworker):
    # given a multi-image family
    category = seed_category(pipeline, curator, name="Spot the difference", multi=True)
    categories.instruction_tasks_create(category=category, count=1, created_by=curator)
    claim = annotator_services.assignment_claim(
        queue=pipeline.instruction_queue, annotator=crowdworker
    )
    # when the crowdworker uploads one image and lists another by URL
    annotator_services.annotation_submit(
        task_id=claim.assignment.task_id,
        annotator=crowdworker,
        response={
            "text": INSTRUCTION_TEXT + "Other image: https://example.org/b.jpg\n",
            "image": uploaded("a.png", 5, claim.assignment.task),
        },
    )
    # then each image gets its own caption task; the combined caption labels them
    pipeline.refresh_from_db()
    instance = VisitInstance.objects.get(origin=VisitInstance.Origin.CROWD)
    tasks = Task.objects.filter(queue=pipeline.caption_queue).order_by("id")
    assert [t.payload["prompt"].split("Describe ")[1][:16] for t in tasks] == [
        "image 1 of 2 so ",
        "image 2 of 2 so ",
    ]
    assert "open it at https://example.org/b.jpg" in tasks[1].payload["context"]
    answers = iter(["The left photo shows a cat.", "The right photo shows two cats."])
    answer_all(pipeline.caption_queue, crowdworker, lambda a: {"text": next(answers) * 3})
    instance.refresh_from_db()
    assert instance.state == VisitInstance.State.DRAFTING
    assert instance.caption.splitlines()[0].startswith("Image 1: The left photo shows a cat.")
    assert instance.caption.splitlines()[1].startswith("Image 2: The right photo shows two cats.")


def test_an_image_url_of_another_upload_is_refused(pipeline, curator, crowdworker):
    # given two instruction tasks; the first one's upload exists
    category = seed_category(pipeline, curator)
    categories.instruction_tasks_create(category=category, count=2, created_by=curator)
    claim = annotator_services.assignment_claim(
        queue=pipeline.instruction_queue, annotator=crowdworker
    )
    other = Task.objects.filter(queue=pipeline.instruction_queue).exclude(
        pk=claim.assignment.task_id
    )[0]
    # when the answer points at a file stored for the other task
    with pytest.raises(Invalid) as exc:
        annotator_services.annotation_submit(
            task_id=claim.assignment.task_id,
            annotator=crowdworker,
            response={"text": INSTRUCTION_TEXT, "image": uploaded("y.png", 4, other)},
        )
    # then it is refused: only this task's own upload counts
    assert exc.value.message == "Upload the image the instruction is about."
    assert not VisitInstance.objects.filter(origin=VisitInstance.Origin.CROWD).exists()


def test_every_caption_task_of_a_multi_image_instance_shows_all_its_images(
    pipeline, curator, crowdworker, project
):
    # given a multi-image instance whose second image (a URL at first) was fetched later, its
    # caption sent back by the reviewer
    reviewer = workers(project, 1, "reviewer")[0]
    instance = multi_image_caption_round_two(pipeline, curator, crowdworker, reviewer)
    first_round = Task.objects.filter(queue=pipeline.caption_queue).order_by("id")[:2]
    # then the first round showed the stored image and listed the other by its address
    assert [len(t.payload["images"]) for t in first_round] == [1, 1]
    assert all(
        "Image 2 is not stored here; open it at https://example.org/b.jpg" in t.payload["context"]
        for t in first_round
    )
    # and the reference review showed both images
    review = Task.objects.get(queue=pipeline.review_queue)
    assert [i["alt"] for i in review.payload["images"]] == ["Image 1", "Image 2"]
    # and each task of the second round shows both images, in order, the one to describe marked
    again = list(Task.objects.filter(queue=pipeline.caption_queue, state=Task.State.OPEN))
    assert (instance.caption_round, len(again)) == (2, 2)
    stored = [img.image for img in instance.images.order_by("position")]
    for k, task in enumerate(sorted(again, key=lambda t: t.payload["prompt"])):
        shown = task.payload["images"]
        assert [i["alt"] for i in shown] == ["Image 1 of 2", "Image 2 of 2"]
        assert [i["url"].rsplit("/", 1)[-1] for i in shown] == [
            s.file.name.rsplit("/", 1)[-1] for s in stored
        ]
        marks = [i["caption"].split(": ")[1] for i in shown]
        assert marks == ["for context"] * k + ["describe this one"] + ["for context"] * (1 - k)
        assert "not stored here" not in task.payload["context"]
