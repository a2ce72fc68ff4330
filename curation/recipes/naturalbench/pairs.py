"""Stage ``verify`` (Sec. 3): mined pairs → a ``pair_verify`` queue; the queue's outcome handler
keeps a pair unless people say one caption describes both images."""

from __future__ import annotations

from annotator import services as annotator_services
from annotator.models import Task
from curation.recipes.framework.declare import QueueSpec
from curation.recipes.framework.queues import image_payload, queue_ensure, tasks_send, with_tiebreak

from .models import ConfoundingPair, NaturalBenchPipeline

PAIR_HANDLER = "naturalbench.pair_verified"
PAIR_QUESTION = "Could one of the two captions describe both images?"
PAIR_INSTRUCTIONS = (
    "Each item shows two images, each with its caption.\n\n"
    f"**{PAIR_QUESTION}** Answer *yes* (discard the pair) when either caption is "
    "also true of the other image; *no* (keep it) when each caption fits only its "
    "own image. These pairs become questions whose answers must differ between the "
    "two images (NaturalBench Sec. 3)."
)
PAIR_QUEUE = QueueSpec(
    field="pair_queue",
    kind="pair_verify",
    title=lambda p: f"NaturalBench pairs: {p.name}",
    handler=PAIR_HANDLER,
    instructions=PAIR_INSTRUCTIONS,
    redundancy=lambda p: p.annotators_per_item,
    max_redundancy=lambda p: with_tiebreak(p.annotators_per_item),
)


def _rows(pair: ConfoundingPair) -> list:
    images = [
        image_payload(pair.sample_0.image, "Image 1", caption=pair.caption_0.text),
        image_payload(pair.sample_1.image, "Image 2", caption=pair.caption_1.text),
    ]
    return [
        annotator_services.TaskRow(payload={"images": images}, external_id=f"nb-pair-{pair.pk}")
    ]


def _attach(pair: ConfoundingPair, tasks: dict) -> None:
    pair.state, pair.task_id = ConfoundingPair.State.REVIEW, tasks[f"nb-pair-{pair.pk}"]


def pairs_send_to_review(
    pipeline: NaturalBenchPipeline, *, job_id=None, chunk: int = 500, **_params
) -> dict:
    """Every mined pair becomes a ``pair_verify`` task (idempotent: sent pairs are skipped)."""
    todo = list(
        pipeline.pairs.filter(state=ConfoundingPair.State.MINED)
        .select_related("sample_0__image", "sample_1__image", "caption_0", "caption_1")
        .order_by("position")
    )
    return tasks_send(
        queue=queue_ensure(pipeline, PAIR_QUEUE),
        todo=todo,
        rows_of=_rows,
        still_todo=ConfoundingPair.objects.filter(state=ConfoundingPair.State.MINED),
        attach=_attach,
        fields=["state", "task"],
        job_id=job_id,
        what="pairs sent to verification",
        chunk=chunk,
    )


def pair_review_record(task: Task, decision) -> ConfoundingPair | None:
    """Outcome handler of the pair queue (inside the submit's transaction): the pair is kept only
    on a decided "keep"; "discard" or no decision discards it."""
    pair = ConfoundingPair.objects.select_for_update().filter(task_id=task.pk).first()
    if pair is None or pair.state != ConfoundingPair.State.REVIEW:
        return pair
    keep = bool(decision.decided and decision.label == "keep")
    state = ConfoundingPair.State.VERIFIED if keep else ConfoundingPair.State.DISCARDED
    pair.decide(decision, state=state, agreement=decision.agreement)
    return pair
