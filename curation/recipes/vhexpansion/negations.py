"""Negation (vhexpansion.txt Sec. 3.1, Fig. 3) and its review: the gateway drafts ¬x_Q (the
offline rule-based negator when the LLM fails), people check it in the set's ``review`` queue, the
queue's outcome handler accepts it, or rejects it and the case is drafted again (at most
``max_attempts`` times) or dropped."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.db.models import Max

from annotator.models import Task, TaskQueue
from annotator.platform.errors import Invalid
from curation import gateway
from curation.models import Generation, LLMProvider
from curation.recipes.framework import queues
from curation.recipes.framework.declare import QueueSpec
from curation.recipes.framework.stages import in_rounds, stage_once

from .case_import import MAX_QUESTION
from .models import VHCase, VHCaseSet, VHNegation

NEGATE_JOB = "vhexpansion.draft_negations"
# The gateway's defaults seed this template with the Fig. 3 text; its offline rule has this name.
NEGATION_TEMPLATE = "vhexpansion-negation"
NEGATION_PURPOSE = "vhexpansion.negation"
OUTCOME_HANDLER = "vhexpansion.negation_review"
REVIEW_QUESTION = (
    "Is this exactly the negation of the original question, with nothing else changed?"
)
REVIEW_CRITERIA = [
    "The meaning is reversed (“Is it false that …” or “a/an” → “no”).",
    "Nothing else changed: tense, order of clauses, pronouns, letter case.",
    "For this image the answer flips.",
]
REVIEW_REASONS = [
    {"code": "not_negation", "label": "Not a negation"},
    {"code": "changed", "label": "Something else changed"},
    {"code": "answer", "label": "The answer would not flip"},
    {"code": "garbled", "label": "Ungrammatical or garbled"},
]
DEFAULT_REVIEWERS = 3
MAX_REVIEWERS = 10
MAX_ATTEMPTS = 10
REVIEW_INSTRUCTIONS = (
    "Each item shows a yes/no question about the image and the negated question an "
    "LLM drafted from it.\n\n"
    f"**{REVIEW_QUESTION}**\n\n"
    "Accept only if the new question asks the opposite (by “Is it false that …” or "
    "by turning “a/an” into “no”) and changes nothing else: not the tense, the order "
    "of clauses, the pronouns or the case of letters. Its answer must be the "
    "opposite of the original answer."
)
REVIEW_QUEUE = QueueSpec(
    field="review_queue",
    kind="review",
    title=lambda case_set: f"VHExpansion negations: {case_set.name}",
    handler=OUTCOME_HANDLER,
    instructions=REVIEW_INSTRUCTIONS,
    config={"criteria": REVIEW_CRITERIA, "reason_codes": REVIEW_REASONS},
    redundancy=DEFAULT_REVIEWERS,
    max_redundancy=queues.with_tiebreak(DEFAULT_REVIEWERS),
)
_LABEL_PREFIX = re.compile(
    r"^(?:negated|rephrased|negation|new)?\s*(?:question)?\s*:\s*", re.IGNORECASE
)


def flip(answer: str) -> str:
    """¬y_A (Sec. 3.1)."""
    return "no" if answer == "yes" else "yes"


def case_set_settings(
    case_set: VHCaseSet, *, reviewers: int | None = None, max_attempts: int | None = None
) -> VHCaseSet:
    """N people per negation (the review queue's redundancy) and the drafting attempts per case."""
    with transaction.atomic():
        case_set = VHCaseSet.objects.select_for_update().get(pk=case_set.pk)
        if max_attempts is not None:
            if not 1 <= max_attempts <= MAX_ATTEMPTS:
                raise Invalid(f"Attempts per case must be between 1 and {MAX_ATTEMPTS}.")
            case_set.max_attempts = max_attempts
            case_set.save(update_fields=["max_attempts"])
        if reviewers is not None:
            queues.queue_people_set(
                case_set, REVIEW_QUEUE, reviewers, most=MAX_REVIEWERS, what="Reviewers per negation"
            )
    return case_set


def negation_template(project=None):
    """The negation prompt ``project`` renders (its pinned version; seeded with the Fig. 3 text
    by the gateway). Only reads: the first call pins it."""
    return gateway.template_for(NEGATION_TEMPLATE, project=project, pin=False)


def clean_negation(text: Any) -> str:
    """The negated question out of a model's reply: its first line, without quotes or a label."""
    if not isinstance(text, str):
        return ""
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    if not lines:
        return ""
    first = _LABEL_PREFIX.sub("", lines[0]).strip()
    first = first.strip("\"'`“”‘’ ").strip()
    return " ".join(first.split())[:MAX_QUESTION]


def _same_question(a: str, b: str) -> bool:
    def norm(s: str) -> str:
        return " ".join(s.casefold().split()).rstrip(" ?.")

    return norm(a) == norm(b)


@dataclass
class Draft:
    question: str
    generation: Generation | None
    fallback: bool
    error: str = ""


def negation_generate(
    *, case: VHCase, attempt: int, provider: LLMProvider | None = None, job_id=None, created_by=None
) -> Draft:
    """One negation through the gateway; the offline rule-based negator answers when the
    configured LLM fails (and is the provider itself when no LLM is configured)."""
    project = case.case_set.project
    common = {
        "template": NEGATION_TEMPLATE,
        "variables": {"question": case.question},
        "project": project,
        "purpose": NEGATION_PURPOSE,
        "seed": attempt,
        "job": job_id,
        "created_by": created_by,
        "item_key": f"vhcase-{case.pk}-a{attempt}",
    }
    generation = gateway.generate(provider=provider, **common)
    fallback = False
    if generation.status != Generation.Status.OK and not generation.is_offline:
        first_error = generation.error
        generation = gateway.generate(provider=gateway.provider_offline(), **common)
        fallback = True
        if generation.status != Generation.Status.OK:
            return Draft("", generation, True, f"LLM: {first_error} · offline: {generation.error}")
    if generation.status != Generation.Status.OK:
        return Draft("", generation, fallback, generation.error)
    text = clean_negation(generation.output)
    if not text:
        return Draft("", generation, fallback, "The drafter returned no question.")
    return Draft(text, generation, fallback)


def _review_payload(case: VHCase, negation: VHNegation) -> dict:
    return {
        "title": REVIEW_QUESTION,
        "images": [queues.image_payload(case.image, f"Image of test case {case.external_id}")],
        "fields": {
            "Original question": case.question,
            "Original answer": case.get_answer_display(),
            "Negated question": negation.question,
            "Negated answer": negation.get_answer_display(),
        },
    }


def _next_attempt(case: VHCase) -> int:
    last = case.negations.aggregate(n=Max("attempt"))["n"] or 0
    return last + 1


def negation_record(
    *, case: VHCase, draft: Draft, attempt: int, queue: TaskQueue
) -> VHNegation | None:
    """Store a draft and put it in review (one transaction). Discards (no review) a draft that
    repeats the original or an earlier rejected attempt; drops the case when attempts run out."""
    with transaction.atomic():
        case = (
            VHCase.objects.select_for_update().select_related("case_set", "image").get(pk=case.pk)
        )
        if case.negation_state not in (VHCase.NegationState.PENDING, VHCase.NegationState.FAILED):
            return None  # another job drafted it meanwhile
        if attempt != _next_attempt(case):
            return None
        if not draft.question:
            case.negation_state = VHCase.NegationState.FAILED
            case.negation_error = draft.error[:2000]
            case.save(update_fields=["negation_state", "negation_error"])
            return None
        rejected = case.negations.filter(status=VHNegation.Status.REJECTED)
        earlier = list(rejected.values_list("question", flat=True))
        note = ""
        if _same_question(draft.question, case.question):
            note = "The draft repeats the original question."
        elif any(_same_question(draft.question, q) for q in earlier):
            note = "The draft repeats a rejected negation."
        negation = VHNegation.objects.create(
            case=case,
            attempt=attempt,
            question=draft.question,
            answer=flip(case.answer),
            generation=draft.generation,
            fallback=draft.fallback,
            status=VHNegation.Status.DISCARDED if note else VHNegation.Status.REVIEW,
            note=note,
        )
        case.negation_error = ""
        if note:
            # Never reviewed; the attempt counts, so a deterministic drafter cannot loop.
            exhausted = attempt >= case.case_set.max_attempts
            case.negation_state = (
                VHCase.NegationState.DROPPED if exhausted else VHCase.NegationState.PENDING
            )
        else:
            payload = _review_payload(case, negation)
            queues.tasks_link(queue, [(negation, payload, f"vhx-negation-{negation.pk}")])
            case.negation_state = VHCase.NegationState.REVIEW
        case.save(update_fields=["negation_state", "negation_error"])
    return negation


def negations_draft(
    case_set: VHCaseSet,
    *,
    case_ids: Sequence[int] | None = None,
    retry_failed: bool = True,
    provider: LLMProvider | None = None,
    job_id: int | None = None,
    created_by=None,
    rounds: int = 3,
    **_params,  # an automatic redraft's job carries "regenerate": True
) -> dict:
    """Draft negations for every case that needs one (not drafted yet, rejected with attempts
    left, or failed) and send them to review. Calls the LLM outside any transaction. Runs a few
    rounds so cases rejected while it ran are picked up too. Idempotent."""
    queue = queues.queue_ensure(case_set, REVIEW_QUEUE)
    negation_template()  # seed the Fig. 3 prompt before the first call
    first = [VHCase.NegationState.PENDING]
    if retry_failed:
        first.append(VHCase.NegationState.FAILED)
    counts = {"drafted": 0, "in_review": 0, "discarded": 0, "failed": 0, "fallback": 0}

    def todo(round_: int) -> list[VHCase]:  # later rounds: fresh rejections only
        states = first if round_ == 0 else [VHCase.NegationState.PENDING]
        cases = case_set.cases.filter(negation_state__in=states)
        if case_ids is not None:
            cases = cases.filter(pk__in=list(case_ids))
        return list(cases.select_related("case_set__project", "image").order_by("position"))

    def progress() -> str:  # no report after a case dropped for want of attempts
        return "" if dropped else f"{counts['in_review']} in review, {counts['failed']} failed"

    cases = in_rounds(todo, rounds=rounds, job_id=job_id, message="Drafting", progress=progress)
    for case in cases:
        attempt = _next_attempt(case)
        dropped = attempt > case_set.max_attempts
        if dropped:
            VHCase.objects.filter(pk=case.pk).update(negation_state=VHCase.NegationState.DROPPED)
            continue
        draft = negation_generate(
            case=case, attempt=attempt, provider=provider, job_id=job_id, created_by=created_by
        )
        negation = negation_record(case=case, draft=draft, attempt=attempt, queue=queue)
        counts["drafted"] += int(bool(draft.question))
        counts["fallback"] += int(draft.fallback and bool(draft.question))
        counts["failed"] += int(not draft.question)
        if negation is not None:
            key = "discarded" if negation.status == VHNegation.Status.DISCARDED else "in_review"
            counts[key] += 1
    return counts


def negations_check(case_set: VHCaseSet, params: dict) -> int:
    """Before the drafting job: the review queue exists and some case needs a draft (the job's
    total)."""
    queues.queue_ensure(case_set, REVIEW_QUEUE)
    todo = case_set.cases.filter(
        negation_state__in=[VHCase.NegationState.PENDING, VHCase.NegationState.FAILED]
    ).count()
    if not todo:
        raise Invalid("Every case already has a negation in review, accepted or dropped.")
    return todo


def negation_review_record(task: Task, decision) -> VHNegation | None:
    """The review queue's outcome (called by the engine inside the submit's transaction).

    Accepted only on a decided "accept"; a rejection or no decision rejects the negation, and the
    case is drafted again while attempts remain, else dropped. Never reaches an export unless
    accepted."""
    negation = (
        VHNegation.objects.select_for_update()
        .select_related("case__case_set")
        .filter(task_id=task.pk)
        .first()
    )
    if negation is None or negation.status != VHNegation.Status.REVIEW:
        return negation
    accepted = bool(decision.decided and decision.label == "accept")
    negation.decide(
        decision, status=VHNegation.Status.ACCEPTED if accepted else VHNegation.Status.REJECTED
    )
    case = negation.case
    if accepted:
        case.negation_state = VHCase.NegationState.ACCEPTED
    elif negation.attempt >= case.case_set.max_attempts:
        case.negation_state = VHCase.NegationState.DROPPED
    else:
        case.negation_state = VHCase.NegationState.PENDING
    VHCase.objects.filter(pk=case.pk).update(negation_state=case.negation_state)
    if case.negation_state == VHCase.NegationState.PENDING:
        # One queued drafting job per set picks up every rejected case (enqueued after commit).
        stage_once(negations_draft, case.case_set, regenerate=True)
    return negation
