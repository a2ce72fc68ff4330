"""VisIT-Bench instruction-conditioned captions (Sec. 2.1, Fig. 12): one caption task per image
of an instance and round; when every image has its caption the instance waits for its reference
draft, which one queued drafting job per pipeline picks up."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from annotator import services as annotator_services
from annotator.models import Task

from ..framework.queues import image_payload, queue_ensure, tasks_create
from ..framework.registry import recipe_of
from ..framework.stages import stage_once
from .models import VisitImage, VisitInstance, VisitTask
from .pipelines import CAPTION_QUEUE, task_answer


def _caption_payload(instance: VisitInstance, visit_image: VisitImage, n: int, note: str) -> dict:
    which = f"image {visit_image.position + 1} of {n}" if n > 1 else "the image"
    payload: dict[str, Any] = {
        "prompt": (
            f"Instruction: {instance.instruction}\n\nDescribe {which} so that someone who only "
            "reads your caption could follow this instruction."
        ),
    }
    if visit_image.image_id:
        payload["images"] = [image_payload(visit_image.image, f"Image {visit_image.position + 1}")]
    context = [f"Family: {instance.family.name}"]
    if not visit_image.image_id:
        context.append(f"The image is not stored here; open it at {visit_image.url}")
    if note:
        context.append(note)
    payload["context"] = " · ".join(context)
    if visit_image.caption:
        payload["draft"] = visit_image.caption
    return payload


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
            payload=_caption_payload(instance, img, len(images), note),
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


def caption_record(task: Task, decision) -> VisitInstance | None:
    """A caption task's outcome: store the caption; when every image of the instance has its
    caption of this round, the instance waits for its reference draft (a job drafts it)."""
    link, answer = task_answer(task, VisitTask.Stage.CAPTION, "image__instance__pipeline")
    if link is None:
        return None
    instance = VisitInstance.objects.select_for_update().get(pk=link.image.instance_id)
    if instance.state != VisitInstance.State.CAPTIONING or link.round != instance.caption_round:
        return instance
    text = (answer.response or {}).get("text", "").strip()
    VisitImage.objects.filter(pk=link.image_id).update(caption=text)
    waiting = VisitTask.objects.filter(
        stage=VisitTask.Stage.CAPTION,
        image__instance=instance,
        round=instance.caption_round,
        task__state=Task.State.OPEN,
    ).exclude(task_id=task.pk)
    if waiting.exists():
        return instance
    images = list(instance.images.order_by("position"))
    instance.caption = combined_caption(images)
    instance.state = VisitInstance.State.DRAFTING
    instance.draft_error = ""
    instance.save(update_fields=["caption", "state", "draft_error"])
    # One queued drafting job per pipeline picks up every captioned instance (after commit).
    stage_once(recipe_of("visit"), "draft", instance.pipeline)
    return instance
