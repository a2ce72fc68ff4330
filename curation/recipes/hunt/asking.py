"""The models answer a candidate (a job, never in a web request): every target sees the
(image, question) of each slot, the blind model only the question; all calls run at once through
the LLM gateway (its timeouts and retries), each recorded as a Generation, and every answer is
read by the NaturalBench family's official parser (Sec. 4). Then the verdict
(``criterion.verdict``) says whom the candidate fooled.

Step ``first``: the worker's question on the first image. Step ``pair``: the question on the
partner image and the second question on both. After the first step's answers are stored (the
page shows them at once) the pool images nearest to the first are proposed as partners and the
question is compared with the round's earlier ones (``duplicates``).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction

from annotator.platform import wakeups
from curation import gateway
from curation.gateway import calls
from curation.gateway.images import prepare_image
from curation.gateway.service import generation_build, generation_prepare
from curation.models import Generation, Image, LLMProvider
from evaluation.compute import ItemData
from evaluation.families.naturalbench.prompts import BY_QUESTION_TYPE
from evaluation.prompts import ensure_templates
from evaluation.registry import family_of

from . import checks, criterion, duplicates, partners, rows
from .models import HuntAnswer, HuntCandidate, HuntRound, HuntTarget
from .standins import STANDIN_FOR, STANDIN_SPECS

ASK_JOB = "hunt.ask"
FIRST, PAIR = "first", "pair"
FAMILY = "naturalbench"
PARALLEL = 16  # calls in flight per candidate
# Answers that arrive within this of each other are stored and shown together: one write and
# one page update instead of one per answer, apart by less than a person can tell (~0.1 s).
GATHER_S = 0.1


def templates_ensure() -> None:
    """The prompts the hunt asks through: the family's official prompt of each question type
    (yes/no, two options) and the stand-ins'."""
    ensure_templates(list(BY_QUESTION_TYPE.values()))
    for spec in STANDIN_SPECS:
        gateway.template_ensure(**spec)


@dataclass(frozen=True)
class Ask:
    """One call: who answers which slot, with which image (None: the blind model)."""

    target: HuntTarget | None
    slot: str
    question: str
    image: Image | None


def _images(candidate: HuntCandidate) -> dict[str, Image]:
    out = {"first": candidate.image}
    if candidate.partner is not None:
        out["partner"] = candidate.partner
    return out


def asks_for(candidate: HuntCandidate, targets: list[HuntTarget], step: str) -> list[Ask]:
    """The calls of a step: each slot once per target (with its image) and once for the blind
    model (question only; NaturalBench evaluates a blind model per item, Sec. 4, Fig. 5)."""
    first_answer = candidate.answer
    images = _images(candidate)
    if step == FIRST:
        wanted = [(0, "first")]
    else:
        wanted = [(0, "partner"), (1, "first"), (1, "partner")]
    questions = (candidate.question, candidate.question_1)
    out = []
    for q, which in wanted:
        slot = criterion.slot_of(q, which, first_answer)
        for target in targets:
            out.append(Ask(target, slot, questions[q], images[which]))
        out.append(Ask(None, slot, questions[q], None))
    return out


class Planner:
    """Plans the calls of one step: each template read once, each image encoded once for all
    the calls that send it."""

    def __init__(self, round_: HuntRound, targets: list[HuntTarget], *, job_id, created_by):
        self.round, self.job_id, self.created_by = round_, job_id, created_by
        self.blind = round_.blind or gateway.provider_offline()
        # The round's question type's prompts, the project's pinned versions (one query).
        names = {BY_QUESTION_TYPE[round_.question_type]}
        if any(t.provider.kind == LLMProvider.Kind.OFFLINE for t in targets):
            names.add(STANDIN_FOR[round_.question_type])
        self.templates = gateway.templates_for(names, project=round_.project_id)
        self.images: dict = {}

    def _template(self, name: str):
        if name not in self.templates:
            self.templates[name] = gateway.template_for(name, project=self.round.project_id)
        return self.templates[name]

    def _image(self, image: Image):
        if image.pk not in self.images:
            try:
                self.images[image.pk] = prepare_image(image)
            except (OSError, ValueError):
                # Unreadable: each call records why (generation_prepare reads it again).
                self.images[image.pk] = image
        return self.images[image.pk]

    def plan(self, ask: Ask, key: str):
        variables = {"question": ask.question, "separator": ""}
        # The family's official prompt of the round's question type (Sec. 4).
        official = BY_QUESTION_TYPE[self.round.question_type]
        if ask.target is None:
            template, provider, images, seed = official, self.blind, (), 0
        else:
            provider = ask.target.provider
            offline = provider.kind == LLMProvider.Kind.OFFLINE
            template = STANDIN_FOR[self.round.question_type] if offline else official
            if offline:
                variables["image_sha256"] = ask.image.sha256
            images, seed = (self._image(ask.image),), ask.target.position
        return generation_prepare(
            template=self._template(template),
            variables=variables,
            project=self.round.project,
            provider=provider,
            purpose=f"hunt.{'blind' if ask.target is None else 'target'}",
            seed=seed,
            images=images,
            job=self.job_id,
            created_by=self.created_by,
            item_key=key,
        )


def _parse(text: str, question_type: str) -> str | None:
    parse = family_of(FAMILY).parse_answer
    parsed = parse(ItemData("hunt", {"question_type": question_type}), {"q0_i0": text})
    return parsed[0]


def _answers_by(aliases: dict[int, str], rows) -> tuple[dict, dict]:
    targets: dict[str, dict] = {alias: {} for alias in aliases.values()}
    blind: dict[str, str | None] = {}
    for target_id, slot, parsed in rows:
        if target_id is None:
            blind[slot] = parsed or None
        else:
            targets[aliases[target_id]][slot] = parsed or None
    return targets, blind


def candidate_verdict(
    candidate: HuntCandidate, targets: list[HuntTarget], slots, answers=None
) -> dict:
    """The verdict over ``slots`` as stored on the candidate (JSON), from its stored answers
    (``answers``: the candidate's every answer, when the caller holds them all)."""
    aliases = {t.pk: t.alias for t in targets}
    if answers is None:
        rows = candidate.answers.values_list("target_id", "slot", "parsed")
    else:
        rows = [(a.target_id, a.slot, a.parsed) for a in answers]
    by_target, blind = _answers_by(aliases, rows)
    v = criterion.verdict(slots=tuple(slots), targets=by_target, blind=blind)
    return {
        "slots": list(v.slots),
        "fooled": v.fooled,
        "blind_correct": v.blind_correct,
        "blind_chance": v.blind_chance,
        "blind_solvable": v.blind_solvable,
        "blindspot": v.is_blindspot,
        "complete": v.complete,
    }


def _call_all(
    round_: HuntRound,
    candidate: HuntCandidate,
    asks: list[Ask],
    targets: list[HuntTarget],
    *,
    job_id,
    created_by,
):
    """Run every call at once (threads); the answers that arrive together (``GATHER_S``) are
    stored together (their Generations, then the answers, one INSERT each) and the page is
    woken. Returns the failed calls' errors and the answers stored."""
    planner = Planner(round_, targets, job_id=job_id, created_by=created_by)
    plans = {}
    for n, ask in enumerate(asks):
        who = "blind" if ask.target is None else f"t{ask.target.position}"
        plans[n] = planner.plan(ask, f"hunt-{candidate.pk}-{ask.slot}-{who}")
    todo = iter(plans.items())

    def next_call():
        entry = next(todo, None)
        return None if entry is None else (entry[0], entry[1].request)

    errors: list[str] = []
    stored: list[HuntAnswer] = []
    # These slots start afresh (asked again after failed calls, or run again after its worker
    # died with some answers stored: they would break the one-answer-a-slot constraint), in
    # the transaction that stores the first answers, not on the way to the calls.
    stale = HuntAnswer.objects.filter(candidate=candidate, slot__in={a.slot for a in asks})
    workers = max(1, min(PARALLEL, len(asks)))
    arrivals = calls.execute_concurrently(
        next_call, workers=workers, name="hunt", gather_s=GATHER_S
    )
    for arrived in arrivals:
        made = [(asks[n], generation_build(plans[n], result)) for n, result in arrived]
        answers = []
        for ask, generation in made:
            if generation.status != Generation.Status.OK:
                # A failed call is no answer (it would count as fooled): asked again.
                errors.append(f"{ask.slot}: {generation.error[:300]}")
                continue
            text = "" if generation.output is None else str(generation.output)
            parsed = _parse(text, round_.question_type)
            answers.append(
                HuntAnswer(
                    candidate=candidate,
                    target=ask.target,
                    slot=ask.slot,
                    generation=generation,
                    text=text[:2000],
                    parsed=parsed or "",
                    correct=criterion.correct(parsed, ask.slot),
                )
            )
        # Streamed to the page first (it shows them at once, without reading them back), then
        # stored; should storing fail, the item fails and the page, woken again, says so.
        if answers:
            wakeups.wake(wake_name(candidate.pk), streamed(job_id, answers))
        with transaction.atomic():
            if stale is not None:
                stale.delete()
                stale = None
            Generation.objects.bulk_create([generation for _ask, generation in made])
            HuntAnswer.objects.bulk_create(answers)
        stored.extend(answers)
    return errors, stored


STREAMED_TEXT = 200  # characters of an answer's text sent to the page (it shows 40)


def streamed(job_id, answers: list[HuntAnswer]) -> dict:
    """What a wake-up tells the item's page about answers just in (``StreamedAnswer``)."""
    return {
        "job": job_id,
        "answers": [
            {
                "target": a.target_id,
                "slot": a.slot,
                "parsed": a.parsed,
                "correct": a.correct,
                "text": a.text[:STREAMED_TEXT],
            }
            for a in answers
        ],
    }


@dataclass(frozen=True)
class StreamedAnswer:
    """An answer as a wake-up brought it to the page (the fields the page shows)."""

    target_id: int | None
    slot: str
    parsed: str
    correct: bool
    text: str


def streamed_answers(candidate: HuntCandidate, woken: list) -> list[StreamedAnswer] | None:
    """The answers the wake-ups ``woken`` brought for the candidate's current job, or None when
    one of them said something else (or nothing): then the page reads the item afresh."""
    out = []
    for data in woken:
        if not isinstance(data, dict) or not isinstance(data.get("answers"), list):
            return None
        if data.get("job") != candidate.job_id:
            continue  # an earlier step's, already stored
        try:
            out.extend(
                StreamedAnswer(
                    target_id=a["target"],
                    slot=str(a["slot"]),
                    parsed=str(a["parsed"]),
                    correct=bool(a["correct"]),
                    text=str(a["text"]),
                )
                for a in data["answers"]
            )
        except (KeyError, TypeError):
            return None
    return out


def ask_run(round_: HuntRound, *, job_id=None, created_by=None, candidate_id: int, step: str):
    """The job: the models answer ``step`` of the candidate; then its verdict and next state."""
    # The step's reads, hand-written (``rows``): the job's path to the models' calls.
    candidate = rows.candidate_with_images(round_.pk, candidate_id)
    if candidate is None:
        raise HuntCandidate.DoesNotExist(f"candidate {candidate_id} of round {round_.pk}")
    candidate.round = round_
    waiting = HuntCandidate.State.ASKING if step == FIRST else HuntCandidate.State.PAIRING
    if candidate.state != waiting:
        return {"skipped": f"candidate is {candidate.state}"}
    targets = rows.targets_with_providers(round_.pk)
    asks = asks_for(candidate, targets, step)
    try:
        errors, stored = _call_all(
            round_, candidate, asks, targets, job_id=job_id, created_by=created_by
        )
    except Exception as exc:
        # The page must not wait for ever: the item says what went wrong, the job fails too.
        _failed(candidate, waiting, candidate.verdict, [f"{type(exc).__name__}: {exc}"])
        wakeups.wake(wake_name(candidate.pk))
        raise
    slots = criterion.pair_slots(second_question=step == PAIR)
    answers = None  # the pair's verdict also reads the first step's answers
    if step == FIRST:
        # The first step's slot is the candidate's only one, its answers all stored just now
        # (a step asked again starts its slots afresh).
        slots, answers = (criterion.first_image_slot(candidate.answer),), stored
    verdict = candidate_verdict(candidate, targets, slots, answers)
    if errors:
        _failed(candidate, waiting, verdict, errors)
    elif step == FIRST:
        _first_done(round_, candidate, verdict)
    else:
        _pair_done(round_, candidate, verdict)
    wakeups.wake(wake_name(candidate.pk))
    return {"calls": len(asks), "failed": len(errors), "verdict": verdict}


def wake_name(candidate_id: int) -> str:
    """What the item's page waits on (``annotator.platform.wakeups``)."""
    return f"hunt:{candidate_id}"


def _failed(candidate: HuntCandidate, waiting: str, verdict: dict, errors: list[str]) -> None:
    """Some calls failed after the gateway's retries: the worker may ask again (the answers
    that arrived are kept; only the missing ones are asked)."""
    error = f"{len(errors)} model call(s) failed: " + "; ".join(errors[:3])
    HuntCandidate.objects.filter(pk=candidate.pk, state=waiting).update(
        state=HuntCandidate.State.FAILED, verdict=verdict, error=error[:2000]
    )


def _first_done(round_: HuntRound, candidate: HuntCandidate, verdict: dict) -> None:
    """Store the first verdict with the partners proposed and a near-duplicate of an earlier
    question of the round flagged (one write; the page shows the answers already)."""
    # Only earlier questions of a length that can come near (the round's others never can).
    fewest, most = duplicates.lengths_within(len(candidate.normal))
    earlier = rows.earlier_questions(round_.pk, candidate.pk, fewest, most)
    try:
        match = duplicates.closest(candidate.question, earlier)
    finally:
        earlier.close()  # a duplicate ends the scan early: the cursor is closed now
    fields = {
        "verdict": verdict,
        "neighbours": partners.nearest(round_, candidate.image, k=round_.neighbours),
        "state": HuntCandidate.State.PARTNER,
        "error": "",
    }
    if match is not None:
        fields.update(duplicate_of_id=match.key, duplicate_score=match.score)
    HuntCandidate.objects.filter(pk=candidate.pk, state=HuntCandidate.State.ASKING).update(**fields)


def _pair_done(round_: HuntRound, candidate: HuntCandidate, verdict: dict) -> None:
    """A blindspot goes to people for verification as a 2 × 2 sample; anything else stops."""
    with transaction.atomic():
        fresh = HuntCandidate.objects.select_for_update().get(pk=candidate.pk)
        if fresh.state != HuntCandidate.State.PAIRING:
            return
        fresh.verdict, fresh.blindspot, fresh.error = verdict, verdict["blindspot"], ""
        if verdict["blindspot"]:
            checks.candidate_verify(round_, fresh)
        else:
            fresh.state = HuntCandidate.State.NOT_BLINDSPOT
        fresh.save(update_fields=["verdict", "blindspot", "error", "state", "record", "updated_at"])
