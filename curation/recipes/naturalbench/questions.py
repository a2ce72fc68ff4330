"""Stages ``draft`` (App. A) and answer verification (Sec. 3): the App. A prompts through
``gateway.generate`` for every verified pair and question type (a draft whose JSON breaks the
prompt's rules is drafted again at once); each checked draft's four (image, question) items go
to a ``vqa_choice`` queue with the two candidate answers and "Unanswerable". The queue's outcome
handler keeps the draft only if every item is answered as intended by all annotators (unanimous
rule), else drafts the pair again, up to ``max_regenerations`` times, then gives up and records
why."""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction

from annotator.models import Task
from curation import gateway
from curation.models import Generation, LLMProvider
from curation.recipes.framework.declare import QueueSpec
from curation.recipes.framework.queues import image_payload, queue_ensure, task_row, tasks_link
from curation.recipes.framework.stages import in_rounds, stage_once
from evaluation.families.naturalbench import layout as nb

from . import prompts
from .models import ConfoundingPair, NaturalBenchPipeline, PairQuestionSet, QuestionDraft, VQAItem
from .pipelines import MULTIPLE_CHOICE

DRAFT_JOB = "naturalbench.draft"
ANSWER_HANDLER = "naturalbench.answered"
ANSWER_INSTRUCTIONS = (
    "Look at the image and answer the question with one of the candidate answers. "
    "Choose **Unanswerable** when the image does not let you answer it, or when the "
    "question is ambiguous. A question is kept only if every annotator picks the "
    "same, intended answer (NaturalBench Sec. 3)."
)
# Sec. 3: kept only if every annotator picks the intended answer; no escalation.
ANSWER_QUEUE = QueueSpec(
    field="answer_queue",
    kind="vqa_choice",
    title=lambda p: f"NaturalBench questions: {p.name}",
    handler=ANSWER_HANDLER,
    instructions=ANSWER_INSTRUCTIONS,
    redundancy=lambda p: p.annotators_per_item,
    max_redundancy=lambda p: p.annotators_per_item,
    rule="unanimous",
)


def question_sets_create(pipeline: NaturalBenchPipeline) -> int:
    """One PairQuestionSet per verified pair and chosen question type (idempotent)."""
    verified = list(
        pipeline.pairs.filter(state=ConfoundingPair.State.VERIFIED).values_list("pk", flat=True)
    )
    have = set(pipeline.question_sets.values_list("pair_id", "question_type"))
    new = [
        PairQuestionSet(pipeline=pipeline, pair_id=pk, question_type=qtype)
        for pk in verified
        for qtype in pipeline.question_types
        if (pk, qtype) not in have
    ]
    PairQuestionSet.objects.bulk_create(new, batch_size=2000, ignore_conflicts=True)
    return len(new)


@dataclass
class Drafted:
    generation: Generation | None
    draft: prompts.Draft | None
    problems: list[str]


def draft_generate(
    *, question_set: PairQuestionSet, attempt: int, provider=None, job_id=None, created_by=None
) -> Drafted:
    """One LLM call for a pair's two questions, checked against the prompt's rules."""
    pipeline = question_set.pipeline
    pair = question_set.pair
    variables = prompts.template_variables(
        question_type=question_set.question_type,
        language=pipeline.language,
        caption_1=pair.caption_0.text,
        caption_2=pair.caption_1.text,
    )
    generation = gateway.generate(
        template=prompts.template_name(question_set.question_type, pipeline.language),
        variables=variables,
        project=pipeline.project,
        provider=provider or gateway.provider_of(pipeline),
        purpose=f"naturalbench.{question_set.question_type}",
        # A new call per attempt: the seed moves on so a sampling model answers afresh.
        seed=pipeline.seed * 100 + attempt,
        job=job_id,
        created_by=created_by,
        item_key=f"nb-qset-{question_set.pk}-a{attempt}",
    )
    if generation.status != Generation.Status.OK:
        return Drafted(generation, None, [f"the drafter failed: {generation.error[:500]}"])
    try:
        return Drafted(
            generation, prompts.check_draft(generation.output, question_set.question_type), []
        )
    except prompts.DraftInvalid as exc:
        return Drafted(generation, None, exc.problems)


def _items(
    question_set: PairQuestionSet, draft: QuestionDraft, checked: prompts.Draft
) -> list[VQAItem]:
    """The four (image, question) items in SAMPLE_KEYS order with their intended answers."""
    pair = question_set.pair
    images = (pair.sample_0.image, pair.sample_1.image)
    questions = (draft.question_0, draft.question_1)
    items = []
    for key, answer in zip(
        nb.SAMPLE_KEYS, nb.expected_answers(question_set.question_type), strict=True
    ):
        q, i = int(key[1]), int(key[4])
        shown = questions[q]
        if question_set.question_type == MULTIPLE_CHOICE:
            shown = nb.mc_options(shown)[0]
            choices = checked.choices[f"q{q}"]
            intended = choices[0] if answer == "A" else choices[1]
        else:
            choices = ["Yes", "No"]
            intended = answer
        items.append(
            VQAItem(
                draft=draft,
                key=key,
                image=images[i],
                question=shown,
                choices=choices,
                intended=intended,
                answer=answer,
            )
        )
    return items


def _item_payload(item: VQAItem, language: str) -> dict:
    return {
        "image": image_payload(item.image, "The image the question is about"),
        "question": item.question,
        "choices": item.choices,
        "language": language,
    }


def _drafts(n: int) -> str:
    return f"{n} draft" if n == 1 else f"{n} drafts"


def _limit(pipeline: NaturalBenchPipeline) -> int:
    return 1 + pipeline.max_regenerations


def _failed(qset: PairQuestionSet, pipeline: NaturalBenchPipeline, problem: str, why: str):
    """After a failed draft: given up if it was the last one allowed, else waiting for the next."""
    if qset.attempts >= _limit(pipeline):
        qset.state = PairQuestionSet.State.GIVEN_UP
        qset.reason = f"Gave up after {_drafts(qset.attempts)}. Last draft: {problem}"
    else:
        qset.state = PairQuestionSet.State.PENDING
        qset.reason = f"{why}: {problem}"


def draft_record(*, question_set: PairQuestionSet, attempt: int, drafted: Drafted):
    """Store one attempt (one transaction). A checked draft's items go to the answer queue; an
    invalid one leaves the set waiting for the next attempt, or gives up after the last."""
    pipeline = question_set.pipeline
    queue = pipeline.answer_queue or queue_ensure(pipeline, ANSWER_QUEUE)
    with transaction.atomic():
        qset = (
            PairQuestionSet.objects.select_for_update(of=("self",))
            .select_related("pair__sample_0__image", "pair__sample_1__image")
            .get(pk=question_set.pk)
        )
        if qset.state != PairQuestionSet.State.PENDING or qset.attempts != attempt - 1:
            return None  # another job drafted this set meanwhile
        checked = drafted.draft
        draft = QuestionDraft.objects.create(
            question_set=qset,
            attempt=attempt,
            generation=drafted.generation,
            status=QuestionDraft.Status.ANSWERING if checked else QuestionDraft.Status.INVALID,
            problems=drafted.problems,
            question_0=checked.question_0 if checked else "",
            question_1=checked.question_1 if checked else "",
        )
        qset.attempts = attempt
        if checked is None:
            _failed(qset, pipeline, "; ".join(drafted.problems), f"Draft {attempt} was not usable")
        else:
            items = VQAItem.objects.bulk_create(_items(qset, draft, checked))
            tasks_link(
                queue,
                [
                    (item, _item_payload(item, pipeline.language), f"nb-item-{draft.pk}-{item.key}")
                    for item in items
                ],
            )
            qset.state = PairQuestionSet.State.ANSWERING
            qset.reason = ""
        qset.save(update_fields=["attempts", "state", "reason", "updated_at"])
    return draft


def questions_draft(
    pipeline: NaturalBenchPipeline,
    *,
    job_id=None,
    created_by=None,
    provider: LLMProvider | None = None,
    rounds: int = 3,
    **_params,  # an automatic regeneration's job carries "regenerate": True
) -> dict:
    """Draft questions for every question set waiting for one (new, or whose last draft failed
    with regenerations left). The LLM is called outside any transaction; an unusable draft is
    drafted again at once. Later rounds pick up sets that failed while the job ran."""
    prompts.templates_ensure()
    queue_ensure(pipeline, ANSWER_QUEUE)
    created = question_sets_create(pipeline)
    provider = provider or gateway.provider_of(pipeline)
    counts = {"created": created, "drafts": 0, "invalid": 0, "answering": 0, "given_up": 0}
    waiting = (
        pipeline.question_sets.filter(
            state=PairQuestionSet.State.PENDING, question_type__in=pipeline.question_types
        )
        .select_related("pipeline__project", "pair__caption_0", "pair__caption_1")
        .order_by("pair__position", "question_type")
    )

    def progress() -> str:
        return (
            f"{counts['answering']} drafts answering, {counts['invalid']} unusable, "
            f"{counts['given_up']} given up"
        )

    todo = in_rounds(
        lambda _round: list(waiting.all()),
        rounds=rounds,
        job_id=job_id,
        message="Drafting questions",
        progress=progress,
    )
    for qset in todo:
        if qset.attempts >= _limit(pipeline):
            # Its drafts were used up by failed answers: nothing left to try.
            PairQuestionSet.objects.filter(pk=qset.pk, state=PairQuestionSet.State.PENDING).update(
                state=PairQuestionSet.State.GIVEN_UP,
                reason=f"Gave up after {_drafts(qset.attempts)}. {qset.reason}".strip(),
            )
        for attempt in range(qset.attempts + 1, _limit(pipeline) + 1):
            drafted = draft_generate(
                question_set=qset,
                attempt=attempt,
                provider=provider,
                job_id=job_id,
                created_by=created_by,
            )
            draft = draft_record(question_set=qset, attempt=attempt, drafted=drafted)
            if draft is None:
                break
            counts["drafts"] += 1
            if draft.status == QuestionDraft.Status.ANSWERING:
                counts["answering"] += 1
                break
            counts["invalid"] += 1
        else:  # no attempt was left, or the last one was unusable
            counts["given_up"] += 1
    return counts


def answer_record(task: Task, decision) -> VQAItem | None:
    """Outcome handler of the answer queue (inside the submit's transaction).

    An item passes only on a unanimous decision for the intended answer. The first failing item
    rejects its draft: the pair is drafted again while regenerations remain, else given up with
    the reason. When all four items pass, the draft (and its question set) is kept."""
    item = task_row(VQAItem.objects.select_related("draft"), task)
    if item is None or item.state != VQAItem.State.OPEN:
        return item
    correct = bool(decision.decided and decision.label == item.intended)
    item.decide(decision, state=VQAItem.State.CORRECT if correct else VQAItem.State.FAILED)

    draft = QuestionDraft.objects.select_for_update().get(pk=item.draft_id)
    if draft.status != QuestionDraft.Status.ANSWERING:
        return item  # already rejected by another item
    qset = (
        PairQuestionSet.objects.select_for_update(of=("self",))
        .select_related("pipeline")
        .get(pk=draft.question_set_id)
    )
    pipeline = qset.pipeline
    if not correct:
        chosen = ", ".join(f"{k} × {n}" for k, n in item.votes.items()) or "no answer"
        problem = (
            f"{item.key}: intended {item.intended!r}, annotators chose {chosen}"
            if decision.decided or item.votes
            else f"{item.key}: no decision"
        )
        draft.status = QuestionDraft.Status.REJECTED
        draft.problems = [*draft.problems, problem]
        draft.save(update_fields=["status", "problems"])
        if qset.state == PairQuestionSet.State.ANSWERING:
            _failed(qset, pipeline, problem, f"Draft {draft.attempt} failed")
            qset.save(update_fields=["state", "reason", "updated_at"])
            if qset.state == PairQuestionSet.State.PENDING and pipeline.auto_regenerate:
                # One queued drafting job per pipeline picks up every set whose draft failed
                # (enqueued after the submit commits).
                stage_once(questions_draft, pipeline, regenerate=True)
        return item
    passed = VQAItem.objects.filter(draft=draft, state=VQAItem.State.CORRECT).count()
    if passed == len(nb.SAMPLE_KEYS):
        draft.status = QuestionDraft.Status.KEPT
        draft.save(update_fields=["status"])
        if qset.state == PairQuestionSet.State.ANSWERING:
            qset.state = PairQuestionSet.State.KEPT
            qset.reason = ""
            qset.save(update_fields=["state", "reason", "updated_at"])
    return item
