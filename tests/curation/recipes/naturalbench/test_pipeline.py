"""NaturalBench stages as services: settings, mining (Eq. 1 with the tiny scorer, the random
baseline, caption shortening), pair verification, drafting with the regeneration loop against the
fake LLM server, the unanimity rule, assembly and its refusals, skill tags by majority."""

from __future__ import annotations

import numpy as np
import pytest

from annotator.models import Task, TaskQueue
from annotator.platform.errors import Invalid
from annotator.platform.models import Job
from annotator.services import annotation_submit, assignment_claim
from curation import mining
from curation.embeddings import similarity
from curation.models import Caption, Generation, Sample
from curation.recipes.framework.registry import recipe_of
from curation.recipes.framework.stages import stage_start
from curation.recipes.naturalbench import mining as nb_mining
from curation.recipes.naturalbench import pairs, pipelines, questions, samples, tags
from curation.recipes.naturalbench.models import (
    ConfoundingPair,
    NaturalBenchPipeline,
    NaturalBenchSample,
    PairQuestionSet,
    QuestionDraft,
    VQAItem,
)
from curation.scorers import scorer_tiny
from tests.curation.recipes.naturalbench.helpers import (  # noqa: F401 - fixtures
    annotators,
    answer,
    intended,
    make_corpus,
    make_image,
    make_pipeline,
    media,
    nb_provider,
    verify_all,
)
from tests.factories import ProjectFactory
from tests.fake_openai import reply

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("media")]


def qa(question, c1, c2):
    return {"Question": question, "Caption1 Answer": c1, "Caption2 Answer": c2}


GOOD = {"0": qa("Is there a circle?", "Yes", "No"), "1": qa("Is there a star?", "No", "Yes")}
BAD = {"0": qa("Is there a circle?", "Yes", "No"), "1": qa("Is it a shape?", "Yes", "No")}


# --------------------------------------------------------------------------------------------
# settings
# --------------------------------------------------------------------------------------------
def test_settings_are_checked_and_nothing_is_written(project):
    corpus = make_corpus(project)
    other = make_corpus(ProjectFactory(), name="Elsewhere")
    with pytest.raises(Invalid) as caught:
        pipelines.pipeline_create(
            project=project,
            name=" ",
            corpus=other,
            method="eq1",
            scorers=[],
            question_types=["multiple_choice"],
            language="zh",
            max_regenerations=11,
        )
    assert [e["field"] for e in caught.value.errors] == [
        "name",
        "corpus",
        "scorers",
        "question_types",
        "max_regenerations",
    ]
    with pytest.raises(Invalid) as caught:
        pipelines.pipeline_create(
            project=project, name="Hindi", corpus=corpus, method="random", language="hi"
        )
    assert caught.value.errors[0]["error"] == (
        "Corpus 'Shapes' has 0 sample(s) with a caption in 'hi'; pairs need at least two."
    )
    assert NaturalBenchPipeline.objects.count() == 0


def test_mining_settings_are_fixed_once_pairs_exist(project):
    pipeline = make_pipeline(project, make_corpus(project))
    nb_mining.pairs_mine(pipeline=pipeline)
    with pytest.raises(Invalid, match=r"can no longer change \(seed\)"):
        pipelines.pipeline_update(pipeline=pipeline, seed=7)
    pipelines.pipeline_update(pipeline=pipeline, annotators_per_item=3, name="Renamed")
    pipeline.refresh_from_db()
    assert (pipeline.annotators_per_item, pipeline.name, pipeline.seed) == (3, "Renamed", 0)


# --------------------------------------------------------------------------------------------
# mining
# --------------------------------------------------------------------------------------------
def test_eq1_mining_keeps_pairs_every_scorer_mismatches_with_their_four_s_values(project):
    # Given six samples, a seventh that shows sample 0's image again, and two scorers
    corpus = make_corpus(project, n=6)
    again = Sample.objects.create(
        corpus=corpus, image=make_image("red"), source_id="again", position=6
    )
    Caption.objects.create(sample=again, text="a red blot on a plain background")
    scorers = [scorer_tiny(label="tiny A"), scorer_tiny(label="tiny B")]
    pipeline = make_pipeline(project, corpus, method="eq1", scorers=scorers, seed=5)

    # When the pipeline mines
    stats = nb_mining.pairs_mine(pipeline=pipeline)

    # Then the kept pairs are exactly mining.mine_mismatches over both scorers' cached embeddings
    rows = nb_mining.mining_rows(pipeline)
    images = [r.image_id for r in rows]
    texts = [r.caption_id for r in rows]
    S = [similarity(scorer=s, image_ids=images, text_ids=texts) for s in scorers]
    n = len(rows)
    both = np.ones((n, n), dtype=bool)
    for s in S:
        d = np.diag(s)
        both &= mining.eq1_mismatch(d[:, None], s, s.T, d[None, :])
    same_image = np.asarray(images)[:, None] == np.asarray(images)[None, :]
    both &= ~same_image
    assert stats["mismatched_pairs"] == int(np.triu(both, 1).sum())
    pairs = list(pipeline.pairs.order_by("position"))
    assert len(pairs) == stats["pairs"] > 0
    position = {r.sample_id: k for k, r in enumerate(rows)}
    for pair in pairs:
        a, b = position[pair.sample_0_id], position[pair.sample_1_id]
        assert a < b and both[a, b]
        assert pair.caption_0_id == rows[a].caption_id
        assert [x["label"] for x in pair.scores] == ["tiny A", "tiny B"]
        for entry, s in zip(pair.scores, S, strict=True):
            expected = [s[a, a], s[a, b], s[b, a], s[b, b]]
            assert entry["s"] == pytest.approx(expected, abs=2e-3)
            assert entry["mismatched"] is True
    # one mismatch per sample: every sample with a mismatch is in a kept pair
    in_pairs = {position[p.sample_0_id] for p in pairs} | {position[p.sample_1_id] for p in pairs}
    assert in_pairs == {k for k in range(n) if both[k].any()}
    # and the image shown twice is never paired with itself
    assert not any({p.sample_0_id, p.sample_1_id} == {rows[0].sample_id, again.pk} for p in pairs)


def test_random_baseline_needs_no_scorer_and_is_seeded(project):
    pipeline = make_pipeline(project, make_corpus(project, n=8), random_pairs=3, seed=11)
    first = nb_mining.pairs_mine(pipeline=pipeline)
    kept = list(pipeline.pairs.values_list("sample_0", "sample_1"))
    nb_mining.pairs_mine(pipeline=pipeline)  # nothing verified yet: mining again replaces
    assert list(pipeline.pairs.values_list("sample_0", "sample_1")) == kept
    assert (first["method"], first["pairs"], first["mismatched_pairs"]) == ("random", 3, None)
    assert pipeline.pairs.first().scores == []


def test_long_captions_are_shortened_through_the_gateway_and_both_texts_are_kept(project):
    long = (
        "A red circle on a plain background. The circle sits near the middle of the frame and "
        "casts a faint shadow. Nothing else is in the picture."
    )
    corpus = make_corpus(project, n=4)
    Caption.objects.filter(sample__corpus=corpus, sample__position=0).update(text=long)
    pipeline = make_pipeline(project, corpus, caption_max_chars=60)

    stats = nb_mining.pairs_mine(pipeline=pipeline)

    caption = Caption.objects.get(sample__corpus=corpus, sample__position=0)
    assert caption.text == long
    assert caption.short_text == "A red circle on a plain background."
    generation = caption.short_generation
    assert (generation.template_name, generation.variables) == (
        "caption-shorten",
        {"caption": long, "max_chars": 60},
    )
    assert stats["shortened"] == {
        "limit": 60,
        "long": 1,
        "shortened": 1,
        "kept_before": 0,
        "failed": 0,
        "errors": [],
    }


# --------------------------------------------------------------------------------------------
# pair verification
# --------------------------------------------------------------------------------------------
def test_pairs_where_one_caption_describes_both_images_stop_here(project):
    pipeline = make_pipeline(project, make_corpus(project, n=6), random_pairs=3)
    nb_mining.pairs_mine(pipeline=pipeline)
    pairs.pairs_send_to_review(pipeline=pipeline)
    pipeline.refresh_from_db()
    a, b, c = annotators(project)
    first, second, third = pipeline.pairs.order_by("position")
    votes = {
        first.task_id: ["keep", "keep"],
        second.task_id: ["discard", "discard"],
        third.task_id: ["keep", "discard", "discard"],  # a tie asks a third person
    }
    for k, user in enumerate((a, b, c)):
        answer(pipeline.pair_queue, user, lambda task, k=k: {"decision": votes[task.pk][k]})

    states = dict(pipeline.pairs.values_list("position", "state"))
    assert states == {0: "verified", 1: "discarded", 2: "discarded"}
    assert pipeline.pairs.get(position=2).votes == {"discard": 2, "keep": 1}
    queue = pipeline.pair_queue
    assert (queue.kind, queue.rule, queue.redundancy, queue.max_redundancy) == (
        "pair_verify",
        "majority",
        2,
        3,
    )
    # only the verified pair gets questions
    questions.questions_draft(pipeline=pipeline)
    assert list(pipeline.question_sets.values_list("pair__position", flat=True)) == [0]


# --------------------------------------------------------------------------------------------
# drafting, answering, the regeneration loop
# --------------------------------------------------------------------------------------------
def one_verified_pair(project, **fields):
    pipeline = make_pipeline(project, make_corpus(project, n=4), random_pairs=1, **fields)
    nb_mining.pairs_mine(pipeline=pipeline)
    users = annotators(project)
    verify_all(pipeline, users)
    assert pipeline.pairs.get().state == "verified"
    return pipeline, users


def items_of(draft):
    return {item.key: item for item in draft.items.all()}


def test_regeneration_loop_with_the_fake_llm_bad_then_good(project, fake_openai):
    # Given a pair and an LLM that first breaks the prompt's rules, then answers well
    pipeline, (a, b, _c) = one_verified_pair(project)
    provider = nb_provider(fake_openai, project)
    pipelines.pipeline_update(pipeline=pipeline, provider=provider)
    fake_openai.script(reply(BAD), reply(GOOD))

    # When questions are drafted
    counts = questions.questions_draft(pipeline=pipeline)

    # Then the unusable draft is recorded and drafted again at once with a new call
    qset = pipeline.question_sets.get()
    first, second = qset.drafts.order_by("attempt")
    assert counts == {"created": 1, "drafts": 2, "invalid": 1, "answering": 1, "given_up": 0}
    assert (first.status, first.problems) == (
        "invalid",
        ["both questions are answered Yes for caption 1; one must be Yes and the other No"],
    )
    assert (second.status, second.question_0, second.question_1) == (
        "answering",
        "Is there a circle?",
        "Is there a star?",
    )
    assert [r["body"]["seed"] for r in fake_openai.chat_requests] == [1, 2]
    assert second.generation.model == "fake-model"
    assert (qset.state, qset.attempts) == ("answering", 2)
    # four (image, question) items with the layout's intended answers
    items = items_of(second)
    assert {k: i.intended for k, i in items.items()} == {
        "q0_i0": "Yes",
        "q0_i1": "No",
        "q1_i0": "No",
        "q1_i1": "Yes",
    }
    assert items["q0_i1"].image_id == qset.pair.sample_1.image_id
    task = Task.objects.get(pk=items["q0_i0"].task_id)
    assert task.payload["choices"] == ["Yes", "No"]
    assert task.payload["question"] == "Is there a circle?"

    # When one annotator finds an item unanswerable
    answer(pipeline.answer_queue, a, intended(pipeline))
    unanswerable = items["q1_i1"].task_id
    answer(
        pipeline.answer_queue,
        b,
        lambda t: {"answer": "Unanswerable"} if t.pk == unanswerable else intended(pipeline)(t),
    )

    # Then the draft is rejected with the reason and the pair waits for a new draft
    second.refresh_from_db()
    qset.refresh_from_db()
    assert second.status == "rejected"
    assert second.problems == ["q1_i1: intended 'Yes', annotators chose Yes × 1, Unanswerable × 1"]
    assert (qset.state, qset.reason) == ("pending", "Draft 2 failed: " + second.problems[0])

    # When it is drafted again (a new LLM call) and both annotators answer as intended
    fake_openai.script(reply(GOOD))
    questions.questions_draft(pipeline=pipeline)
    third = qset.drafts.get(attempt=3)
    answer(pipeline.answer_queue, a, intended(pipeline))
    answer(pipeline.answer_queue, b, intended(pipeline))

    # Then the question pair is kept after three drafts
    third.refresh_from_db()
    qset.refresh_from_db()
    assert (third.status, qset.state, qset.attempts, qset.reason) == ("kept", "kept", 3, "")
    assert len(fake_openai.chat_requests) == 3
    assert Generation.objects.filter(purpose="naturalbench.yes_no").count() == 3


def test_gives_up_after_the_last_regeneration_and_records_why(project, fake_openai):
    pipeline, _users = one_verified_pair(project, max_regenerations=1)
    pipelines.pipeline_update(pipeline=pipeline, provider=nb_provider(fake_openai, project))
    fake_openai.script(reply(BAD), reply({"0": GOOD["0"]}))

    counts = questions.questions_draft(pipeline=pipeline)

    qset = pipeline.question_sets.get()
    assert counts["given_up"] == 1
    assert (qset.state, qset.attempts) == ("given_up", 2)
    assert qset.reason.startswith("Gave up after 2 drafts. Last draft: the drafter failed: ")
    assert "required property" in qset.reason
    assert len(fake_openai.chat_requests) == 2
    questions.questions_draft(pipeline=pipeline)  # nothing left to draft: no new call
    assert len(fake_openai.chat_requests) == 2


def test_a_failed_item_on_the_last_draft_gives_up(project):
    pipeline, (a, b, _c) = one_verified_pair(project, max_regenerations=0)
    questions.questions_draft(pipeline=pipeline)
    for user in (a, b):
        answer(pipeline.answer_queue, user, lambda t: {"answer": "Unanswerable"})
    qset = pipeline.question_sets.get()
    assert qset.state == "given_up"
    assert qset.reason.startswith("Gave up after 1 draft. Last draft: q")
    assert qset.reason.endswith("annotators chose Unanswerable × 2")
    questions.questions_draft(pipeline=pipeline)
    assert qset.drafts.count() == 1


def test_a_failed_item_enqueues_one_drafting_job_when_regeneration_is_automatic(project):
    pipeline, (a, b, _c) = one_verified_pair(
        project, auto_regenerate=True, question_types=["yes_no", "multiple_choice"]
    )
    questions.questions_draft(pipeline=pipeline)
    answer(pipeline.answer_queue, a, lambda t: {"answer": "Unanswerable"})
    answer(pipeline.answer_queue, b, lambda t: {"answer": "Unanswerable"})
    assert pipeline.question_sets.filter(state="pending").count() == 2
    jobs = Job.objects.filter(kind=questions.DRAFT_JOB)
    assert [(j.status, j.params) for j in jobs] == [
        ("queued", {"pipeline_id": pipeline.pk, "regenerate": True})
    ]


@pytest.mark.parametrize(
    ("answers", "state", "votes"),
    [
        (["Yes", "Yes"], "correct", {"Yes": 2}),
        (["Yes", "No"], "failed", {"Yes": 1, "No": 1}),
        (["No", "No"], "failed", {"No": 2}),  # agreed, but not on the intended answer
        (["Unanswerable", "Unanswerable"], "failed", {"Unanswerable": 2}),
    ],
)
def test_an_item_is_kept_only_if_every_annotator_chooses_the_intended_answer(
    project, answers, state, votes
):
    pipeline, (a, b, _c) = one_verified_pair(project)
    questions.questions_draft(pipeline=pipeline)
    draft = QuestionDraft.objects.get()
    target = items_of(draft)["q0_i0"]  # intended: Yes
    for user, choice in zip((a, b), answers, strict=True):
        task = Task.objects.get(pk=target.task_id)
        claim = assignment_claim(queue=pipeline.answer_queue, annotator=user)
        while claim.task.pk != task.pk:
            claim = annotation_submit(
                task_id=claim.task.pk, annotator=user, response=intended(pipeline)(claim.task)
            ).next
        annotation_submit(task_id=task.pk, annotator=user, response={"answer": choice})
    target.refresh_from_db()
    assert (target.state, target.votes) == (state, votes)
    queue = TaskQueue.objects.get(pk=pipeline.answer_queue_id)
    assert (queue.rule, queue.redundancy, queue.max_redundancy) == ("unanimous", 2, 2)


# --------------------------------------------------------------------------------------------
# assembly and tags
# --------------------------------------------------------------------------------------------
def kept_pipeline(project, **fields):
    pipeline, users = one_verified_pair(project, **fields)
    questions.questions_draft(pipeline=pipeline)
    for user in users[:2]:
        answer(pipeline.answer_queue, user, intended(pipeline))
    assert set(pipeline.question_sets.values_list("state", flat=True)) == {"kept"}
    return pipeline, users


def test_assembly_builds_the_published_layout(project):
    pipeline, _users = kept_pipeline(project, question_types=["yes_no", "multiple_choice"])
    assert samples.samples_assemble(pipeline=pipeline) == {"assembled": 2, "refused": 0}
    assert samples.samples_assemble(pipeline=pipeline) == {"assembled": 0, "refused": 0}
    pair = pipeline.pairs.get()
    yes_no = pipeline.samples.get(question_type="yes_no")
    draft = yes_no.draft
    assert yes_no.record == {
        "Index": 0,
        "Image_0": f"sha256:{pair.sample_0.image.sha256}",
        "Image_1": f"sha256:{pair.sample_1.image.sha256}",
        "Question_0": draft.question_0,
        "Image_0_Question_0": "Yes",
        "Image_1_Question_0": "No",
        "Question_1": draft.question_1,
        "Image_0_Question_1": "No",
        "Image_1_Question_1": "Yes",
        "Question_Type": "yes_no",
        "Source": "Shapes",
        "Language": "en",
    }
    mc = pipeline.samples.get(question_type="multiple_choice")
    assert (mc.index, mc.record["Image_0_Question_0"], mc.record["Image_0_Question_1"]) == (
        1,
        "A",
        "B",
    )
    assert mc.record["Question_0"].endswith(f"; B:{pair.caption_1.text};")


def test_assembly_refuses_a_broken_sample_and_records_why(project):
    pipeline, _users = kept_pipeline(project)
    draft = QuestionDraft.objects.get(status="kept")
    # a kept draft whose items no longer fit the layout (e.g. edited by hand in the database)
    VQAItem.objects.filter(draft=draft, key="q0_i1").update(answer="Yes")
    draft.question_1 = draft.question_0
    draft.save(update_fields=["question_1"])

    assert samples.samples_assemble(pipeline=pipeline) == {"assembled": 0, "refused": 1}

    sample = NaturalBenchSample.objects.get()
    assert (sample.state, sample.index) == ("refused", None)
    assert sample.problems == [
        "Question_0 and Question_1 are the same question",
        "Question_0 has the same answer (Yes) on both images; "
        "its answer must change with the image",
    ]


def test_skill_tags_are_kept_per_tag_by_majority(project):
    pipeline, users = kept_pipeline(project, taggers_per_item=3)
    samples.samples_assemble(pipeline=pipeline)
    assert tags.skills_send_to_tagging(pipeline=pipeline)["sent"] == 1
    assert tags.skills_send_to_tagging(pipeline=pipeline)["sent"] == 0
    pipeline.refresh_from_db()
    sample = pipeline.samples.get()
    choices = {
        sample.tag_task_0_id: [["animal", "color"], ["animal"], ["animal", "counting"]],
        sample.tag_task_1_id: [["logic"], ["shape"], ["color"]],  # no majority for any tag
    }
    for k, user in enumerate(users):
        answer(pipeline.tag_queue, user, lambda t, k=k: {"tags": choices[t.pk][k]})

    sample.refresh_from_db()
    assert sample.skills == [["animal"], []]
    assert sample.tag_agreement[0] == pytest.approx((1 / 2 + 1 + 1 / 2) / 3)
    queue = pipeline.tag_queue
    assert (queue.kind, queue.rule, queue.redundancy, queue.config["max_tags"]) == (
        "skill_tags",
        "majority",
        3,
        8,
    )
    payload = Task.objects.get(pk=sample.tag_task_1_id).payload
    assert payload["questions"] == [sample.record["Question_1"]]
    assert len(payload["images"]) == 2


def test_states_of_every_stage_add_up(project):
    pipeline, _users = kept_pipeline(project)
    assert ConfoundingPair.objects.filter(pipeline=pipeline, state="verified").count() == 1
    assert PairQuestionSet.objects.get().attempts == 1


def test_mining_is_refused_before_a_job_when_a_scorers_weights_are_missing(project):
    from curation.models import Scorer

    missing = Scorer.objects.create(
        label="no weights here", model_name="ViT-B-32", checkpoint_path="/nonexistent/ckpt.pt"
    )
    pipeline = make_pipeline(project, make_corpus(project), method="eq1", scorers=[missing])
    with pytest.raises(Invalid, match="the checkpoint file /nonexistent/ckpt.pt does not exist"):
        stage_start(recipe_of("naturalbench"), "mine", pipeline)
    assert Job.objects.count() == 0
