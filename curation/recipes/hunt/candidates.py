"""A worker's moves in a hunt, each atomic and checked at the edge: submit a question on a pool
image (limits, rate, a duplicate of their own refused), pick the partner image and write the
second question, ask the models again after a failure. Each move that needs the models starts
the ``hunt.ask`` job after commit (a web worker never waits for a model)."""

from __future__ import annotations

from datetime import timedelta

from django.db import transaction
from django.utils import timezone

from annotator.platform import wakeups
from annotator.platform.errors import Conflict, Invalid, ServiceError
from annotator.platform.forms import ID_MAX
from annotator.platform.jobs import job_enqueue
from annotator.platform.models import Job
from curation.models import Image, Sample
from evaluation.families.naturalbench import layout as nb

from . import criterion, duplicates, rows
from .asking import ASK_JOB, FIRST, PAIR, wake_name
from .models import HuntCandidate, HuntRound

MAX_QUESTION = 300
MAX_OPTION = 80
# What a worker sends as the true answer on their picture, per question type: a0 / a1.
ANSWERS = {
    HuntRound.QuestionType.YES_NO: {"yes": criterion.A0, "no": criterion.A1},
    HuntRound.QuestionType.TWO_OPTION: {"a": criterion.A0, "b": criterion.A1},
}


class RateLimited(ServiceError):
    status = 429


def _question(text: str, what: str = "question") -> str:
    text = " ".join((text or "").split())
    if len(text) < 8:
        raise Invalid(f"Write a {what} of at least 8 characters.")
    if len(text) > MAX_QUESTION:
        raise Invalid(f"A {what} has at most {MAX_QUESTION} characters (this one {len(text)}).")
    return text


def _option(text: str, letter: str) -> str:
    text = " ".join((text or "").split())
    if not text:
        raise Invalid(f"Write option {letter}.")
    if len(text) > MAX_OPTION:
        raise Invalid(f"Option {letter} has at most {MAX_OPTION} characters.")
    if ";" in text:
        # The published text ends "Option: A:<x>; B:<y>;" (METRICS.md Sec. 1): ";" ends an option.
        raise Invalid(f"Option {letter} cannot contain ';' (it ends an option in the dataset).")
    return text


def question_text(round_: HuntRound, question: str, options=None, what: str = "question") -> str:
    """The question as published: yes/no as written; two options embedded after it as
    NaturalBench writes them ("<question>\nOption: A:<x>; B:<y>;", METRICS.md Sec. 1)."""
    question = _question(question, what)
    if round_.question_type != HuntRound.QuestionType.TWO_OPTION:
        return question
    option_a, option_b = options if options is not None and len(options) == 2 else ("", "")
    option_a, option_b = _option(option_a, "A"), _option(option_b, "B")
    if option_a.casefold() == option_b.casefold():
        raise Invalid("Options A and B must differ.")
    return nb.mc_question(question, option_a, option_b)


def answer_of(round_: HuntRound, answer: str) -> str:
    """a0 / a1 for the worker's answer ("yes"/"no", or "a"/"b" for two options)."""
    allowed = ANSWERS[round_.question_type]
    if answer not in allowed:
        if round_.question_type == HuntRound.QuestionType.TWO_OPTION:
            raise Invalid("Say which option, A or B, is true on this image.")
        raise Invalid("Say whether the answer on this image is Yes or No.")
    return allowed[answer]


def _image_id(image_id) -> int:
    """The posted image id as a number (whether it is in the pool is read with the limits)."""
    try:
        image_id = int(image_id)
    except (TypeError, ValueError):
        raise Invalid("Choose an image from the round's pool.") from None
    if not 1 <= image_id <= ID_MAX:
        raise Invalid("That image is not in this round's pool.")
    return image_id


def _in_pool(round_: HuntRound, image_id) -> Image:
    image_id = _image_id(image_id)
    in_pool = Sample.objects.filter(corpus_id=round_.corpus_id, image_id=image_id)
    found = Image.objects.filter(pk=image_id, pk__in=in_pool.values("image_id")).first()
    if found is None:
        raise Invalid("That image is not in this round's pool.")
    return found


def _ask(round_: HuntRound, candidate: HuntCandidate, step: str, worker) -> None:
    job = job_enqueue(
        kind=ASK_JOB,
        params={"round_id": round_.pk, "candidate_id": candidate.pk, "step": step},
        created_by=worker,
        project=round_.project,
        total=0,
    )
    HuntCandidate.objects.filter(pk=candidate.pk).update(job=job)
    candidate.job = job


def candidate_submit(
    *, round_: HuntRound, worker, image_id, question: str, answer: str, options=None
) -> HuntCandidate:
    """A new candidate: the worker's question and its answer on a pool image ("yes"/"no"; in a
    two-option round the two ``options`` and "a"/"b")."""
    if round_.state != HuntRound.State.OPEN:
        raise Conflict("This round is closed.")
    question = question_text(round_, question, options)
    answer = answer_of(round_, answer)
    image_id = _image_id(image_id)
    normal = duplicates.normal_form(question)
    with transaction.atomic():
        # The worker's row locked, their limits and own duplicates, and the pool: one statement.
        mine = rows.worker_limits(
            round_=round_,
            worker_id=worker.pk,
            image_id=image_id,
            normal=normal,
            since=timezone.now() - timedelta(minutes=1),
        )
        if not mine["in_pool"]:
            raise Invalid("That image is not in this round's pool.")
        if mine["written"] >= round_.max_items_per_worker:
            raise Conflict(
                f"You have written the {round_.max_items_per_worker} questions this round allows."
            )
        if mine["recent"] >= round_.max_per_minute:
            raise RateLimited(
                f"At most {round_.max_per_minute} questions a minute: wait a moment and submit "
                "again (your text is still in the box)."
            )
        if mine["same"]:
            raise Conflict("You already asked this question about this image.")
        candidate = HuntCandidate.objects.create(
            round=round_,
            worker=worker,
            image_id=image_id,
            question=question,
            answer=answer,
            normal=normal,
        )
        _ask(round_, candidate, FIRST, worker)
    return candidate


def candidate_pair(
    *, candidate: HuntCandidate, worker, partner_id, question_1: str, options_1=None
) -> HuntCandidate:
    """The partner image (where the first question's answer flips) and the second question
    (whose answer on the first image is the opposite of the first's; two options: its own
    ``options_1``, the first's swapped by default): the 2 × 2 is asked."""
    round_ = candidate.round
    question_1 = question_text(round_, question_1, options_1, "second question")
    if duplicates.normal_form(question_1) == candidate.normal:
        raise Invalid("The second question must differ from the first.")
    partner = _in_pool(round_, partner_id)
    if partner.pk == candidate.image_id:
        raise Invalid("The partner must be another image than the first.")
    with transaction.atomic():
        fresh = HuntCandidate.objects.select_for_update().get(pk=candidate.pk)
        if fresh.state != HuntCandidate.State.PARTNER:
            raise Conflict("This question is not waiting for a partner image.")
        fresh.partner, fresh.question_1 = partner, question_1
        fresh.state = HuntCandidate.State.PAIRING
        fresh.save(update_fields=["partner", "question_1", "state", "updated_at"])
        _ask(round_, fresh, PAIR, worker)
    return fresh


def candidate_ask_again(*, candidate: HuntCandidate, worker) -> HuntCandidate:
    """After failed calls: the step that failed is asked again (answers that arrived are kept
    and asked again too, under the same slots)."""
    with transaction.atomic():
        fresh = HuntCandidate.objects.select_for_update().get(pk=candidate.pk)
        if fresh.state != HuntCandidate.State.FAILED:
            raise Conflict("Only a question whose model calls failed can be asked again.")
        step = PAIR if fresh.partner_id else FIRST
        fresh.state = HuntCandidate.State.PAIRING if step == PAIR else HuntCandidate.State.ASKING
        fresh.save(update_fields=["state", "updated_at"])
        _ask(candidate.round, fresh, step, worker)
    return fresh


def candidate_job_failed(*, job_id: int, error: str) -> None:
    """The platform failed the models' job of a candidate still waiting for it (its worker
    stopped; an error the job did not handle): the candidate fails with the job's error, so its
    worker may ask again and the round's lists and dashboard no longer count it as answering;
    its page is told once the failure is committed."""
    running = (HuntCandidate.State.ASKING, HuntCandidate.State.PAIRING)
    waiting = HuntCandidate.objects.filter(job_id=job_id, state__in=running)
    ids = list(waiting.values_list("pk", flat=True))
    if not ids:
        return  # the job had moved it on already (or failed it itself)
    text = f"The models' job failed: {error or 'no reason was given'}"[:2000]
    waiting.filter(pk__in=ids).update(state=HuntCandidate.State.FAILED, error=text)
    transaction.on_commit(lambda: [wakeups.wake(wake_name(pk)) for pk in ids])


def candidate_settle(candidate: HuntCandidate) -> HuntCandidate:
    """A candidate the models were answering whose job failed without moving it on (its worker
    died: the platform fails the job once its heartbeats stop) becomes failed, saying why, so
    that its worker can ask again instead of watching "…" for ever. ``candidate.job`` is read
    with it (select_related) by the pages that call this."""
    job = candidate.job
    running = (HuntCandidate.State.ASKING, HuntCandidate.State.PAIRING)
    if candidate.state not in running or job is None or job.status != Job.Status.FAILED:
        return candidate
    error = f"The models' job failed: {job.error or 'no reason was given'}"[:2000]
    HuntCandidate.objects.filter(pk=candidate.pk, state=candidate.state, job=job).update(
        state=HuntCandidate.State.FAILED, error=error
    )
    candidate.state, candidate.error = HuntCandidate.State.FAILED, error
    return candidate
