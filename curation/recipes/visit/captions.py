"""VisIT-Bench instruction-conditioned captions (Sec. 2.1, Fig. 12): one caption task per image
of an instance and round (the caption queue's outcome handler is ``references.caption_record``:
when every image has its caption the instance waits for its reference draft)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from annotator import services as annotator_services
from curation.recipes.framework.queues import image_payload, queue_ensure, tasks_create

from .models import VisitImage, VisitInstance, VisitTask
from .pipelines import CAPTION_QUEUE


def _caption_payload(
    instance: VisitInstance, visit_image: VisitImage, images: Sequence[VisitImage], note: str
) -> dict:
    """The caption task of one image. A multi-image instance's task shows every image of it in
    order (its instruction is about all of them, Fig. 4), the one to describe marked as such;
    images not stored here are listed by their address."""
    n = len(images)
    which = f"image {visit_image.position + 1} of {n}" if n > 1 else "the image"
    payload: dict[str, Any] = {
        "prompt": (
            f"Instruction: {instance.instruction}\n\nDescribe {which} so that someone who only "
            "reads your caption could follow this instruction."
        ),
    }
    shown = [img for img in (images if n > 1 else [visit_image]) if img.image_id]
    if shown:
        payload["images"] = [_shown(img, visit_image, n) for img in shown]
    context = [f"Family: {instance.category.name}"]
    for img in images if n > 1 else [visit_image]:
        if not img.image_id:
            name = f"Image {img.position + 1}" if n > 1 else "The image"
            context.append(f"{name} is not stored here; open it at {img.url}")
    if note:
        context.append(note)
    payload["context"] = " · ".join(context)
    if visit_image.caption:
        payload["draft"] = visit_image.caption
    return payload


def _shown(img: VisitImage, described: VisitImage, n: int) -> dict:
    """One image of the task; in a multi-image task, captioned as the one to describe or not."""
    alt = f"Image {img.position + 1}"
    if n == 1:
        return image_payload(img.image, alt)
    mark = "describe this one" if img.pk == described.pk else "for context"
    return image_payload(img.image, f"{alt} of {n}", caption=f"Image {img.position + 1}: {mark}")


def visit_tasks_create(queue, pipeline, stage: str, rows: list, links: list[dict]) -> None:
    """A task per ``TaskRow`` of ``rows`` in ``queue``, each linked to the pipeline's ``stage`` by
    a VisitTask with its ``links`` entry (what the task is about)."""
    tasks = tasks_create(queue, rows)
    VisitTask.objects.bulk_create(
        [
            VisitTask(task_id=tasks[row.external_id], pipeline=pipeline, stage=stage, **link)
            for row, link in zip(rows, links, strict=True)
        ]
    )


def caption_tasks_create(instance: VisitInstance, note: str = "") -> int:
    """One caption task per image of the instance for its current round (Fig. 4)."""
    pipeline = instance.pipeline
    queue = queue_ensure(pipeline, CAPTION_QUEUE)
    images = list(instance.images.select_related("image").order_by("position"))
    rows = [
        annotator_services.TaskRow(
            payload=_caption_payload(instance, img, images, note),
            external_id=f"visit-caption-{img.pk}-r{instance.caption_round}",
        )
        for img in images
    ]
    links = [{"image": img, "round": instance.caption_round} for img in images]
    visit_tasks_create(queue, pipeline, VisitTask.Stage.CAPTION, rows, links)
    return len(rows)


def combined_caption(images: Sequence[VisitImage]) -> str:
    """One caption per image, labelled for multi-image instances (Fig. 4)."""
    if len(images) == 1:
        return images[0].caption.strip()
    return "\n".join(f"Image {k}: {img.caption.strip()}" for k, img in enumerate(images, start=1))
