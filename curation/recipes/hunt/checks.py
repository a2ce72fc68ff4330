"""Verification (NaturalBench Sec. 3): a blindspot's 2 × 2 sample goes, one (image, question)
per task, to the round's ``vqa_choice`` queue with "Yes", "No" (a two-option round: "A: <x>",
"B: <y>", as NaturalBench's answer check shows them) and "Unanswerable"; other people
than its author answer it (``verifiers`` of them, unanimous rule, no escalation). The sample is
validated only if every slot is answered as intended by all of them; the first slot that is not
rejects it. A validated sample earns its author the round's points."""

from __future__ import annotations

from django.utils import timezone

from annotator import services as annotator_services
from annotator.models import Task
from curation.recipes.framework.declare import QueueSpec
from curation.recipes.framework.queues import image_payload, queue_ensure, task_row, tasks_link
from evaluation.families.naturalbench import layout as nb

from . import criterion
from .models import HuntCandidate, HuntCheck, HuntRound

CHECK_HANDLER = "hunt.checked"
INSTRUCTIONS = (
    "Look at the image and answer the question. Choose **Unanswerable** when the image does not "
    "let you answer it or the question is ambiguous. A hunted item is kept only if everyone "
    "gives the intended answer on both images and both questions (NaturalBench Sec. 3)."
)
VERIFY_QUEUE = QueueSpec(
    field="verify_queue",
    kind="vqa_choice",
    title=lambda r: f"Hunt: verify the questions of {r.name}",
    handler=CHECK_HANDLER,
    instructions=INSTRUCTIONS,
    redundancy=lambda r: r.verifiers,
    max_redundancy=lambda r: r.verifiers,
    rule="unanimous",
)
SOURCE = "Blindspot hunt"


def images_in_order(candidate: HuntCandidate) -> tuple:
    """(image 0, image 1) of the 2 × 2: image 0 is the one where the question is "Yes" / "A"."""
    by_name = {"first": candidate.image, "partner": candidate.partner}
    return tuple(by_name[name] for name in criterion.image_order(candidate.answer))


def sample_record(round_: HuntRound, candidate: HuntCandidate) -> dict:
    """The published NaturalBench record (images as ``sha256:<hex>``), checked by the layout."""
    image_0, image_1 = images_in_order(candidate)
    return nb.sample_build(
        image_0=f"sha256:{image_0.sha256}",
        image_1=f"sha256:{image_1.sha256}",
        question_0=candidate.question,
        question_1=candidate.question_1,
        question_type=round_.question_type,
        answers=nb.expected_answers(round_.question_type),
        source=SOURCE,
        language="en",
    )


def label(question_type: str, answer: str) -> str:
    """How an answer (a0 / a1) reads for the round's question type: Yes / No, or A / B."""
    return nb.ANSWERS[question_type][0 if answer == criterion.A0 else 1]


def shown(question: str, question_type: str, answer: str) -> tuple[str, list[str], str]:
    """(question, choices, intended choice) as a verifier sees one slot: yes/no as is; two
    options as NaturalBench's answer check shows them, the question without its options and the
    choices "A: <x>", "B: <y>" (``answer`` is the slot's ground truth, Yes/No or A/B)."""
    if question_type != nb.MULTIPLE_CHOICE:
        return question, list(nb.ANSWERS[question_type]), answer
    text, option_a, option_b = nb.mc_options(question)
    choices = [f"A: {option_a}", f"B: {option_b}"]
    return text, choices, choices[0] if answer == "A" else choices[1]


def candidate_verify(round_: HuntRound, candidate: HuntCandidate) -> None:
    """Send the candidate's four slots to the verification queue, kept from its author (inside
    the caller's transaction, the candidate locked); sets ``state`` and ``record`` (unsaved)."""
    candidate.record = sample_record(round_, candidate)
    queue = round_.verify_queue or queue_ensure(round_, VERIFY_QUEUE)
    images = images_in_order(candidate)
    questions = (candidate.question, candidate.question_1)
    truth = nb.expected_answers(round_.question_type)
    slots = []
    for slot, answer in zip(nb.SAMPLE_KEYS, truth, strict=True):
        slots.append((slot, shown(questions[int(slot[1])], round_.question_type, answer)))
    checks = HuntCheck.objects.bulk_create(
        [HuntCheck(candidate=candidate, slot=slot, intended=view[2]) for slot, view in slots]
    )
    rows = []
    for check, (slot, (question, choices, _intended)) in zip(checks, slots, strict=True):
        payload = {
            "image": image_payload(images[int(slot[4])], "The image the question is about"),
            "question": question,
            "choices": choices,
            "language": "en",
        }
        rows.append((check, payload, f"hunt-{candidate.pk}-{check.slot}"))
    tasks_link(queue, rows)
    annotator_services.tasks_keep_from(
        task_ids=[c.task_id for c in checks], person=candidate.worker
    )
    candidate.state = HuntCandidate.State.VERIFYING


def check_record(task: Task, decision) -> HuntCheck | None:
    """Outcome handler of the verification queue (inside the submit's transaction)."""
    check = task_row(HuntCheck.objects.all(), task)
    if check is None or check.state != HuntCheck.State.OPEN:
        return check
    correct = bool(decision.decided and decision.label == check.intended)
    check.decide(decision, state=HuntCheck.State.CORRECT if correct else HuntCheck.State.FAILED)
    candidate = (
        HuntCandidate.objects.select_for_update(of=("self",))
        .select_related("round")
        .get(pk=check.candidate_id)
    )
    if candidate.state != HuntCandidate.State.VERIFYING:
        return check  # already rejected by another slot
    if not correct:
        chosen = ", ".join(f"{k} × {n}" for k, n in check.votes.items()) or "no answer"
        candidate.state = HuntCandidate.State.REJECTED
        candidate.error = f"{check.slot}: intended {check.intended!r}, verifiers chose {chosen}"
        candidate.save(update_fields=["state", "error", "updated_at"])
        return check
    passed = HuntCheck.objects.filter(candidate=candidate, state=HuntCheck.State.CORRECT).count()
    if passed == len(nb.SAMPLE_KEYS):
        candidate.state = HuntCandidate.State.VALIDATED
        candidate.points = candidate.round.points_per_item
        candidate.validated_at = timezone.now()
        candidate.save(update_fields=["state", "points", "validated_at", "updated_at"])
    return check
