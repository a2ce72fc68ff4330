"""VisIT-Bench instruction categories — the paper's "instruction families" (Sec. 2.1, Fig. 11),
the published dataset's ``instruction_category``; called categories in code so they are not
taken for evaluation's benchmark families. A category with its seed example, and the
instruction-generation tasks that ask people for new instructions of it, each with an uploaded,
licensed image; the task's outcome becomes an instance waiting for its captions. Pages and
messages keep the paper's word, "family"."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import urlparse

from django.core.files.storage import default_storage
from django.db import transaction
from django.utils import timezone

from annotator import services as annotator_services
from annotator.models import Task
from annotator.platform.errors import Invalid
from annotator.platform.models import taken_refused
from curation import assets
from curation.models import Image
from curation.recipes.framework.queues import queue_ensure
from evaluation.services import clean_name

from . import prompts
from .captions import caption_tasks_create, visit_tasks_create
from .models import (
    VisitCategory,
    VisitImage,
    VisitInstance,
    VisitPipeline,
    VisitReference,
    VisitTask,
)
from .pipelines import (
    INSTRUCTION_QUEUE,
    MAX_INSTRUCTION_TASKS,
    MAX_TEXT,
    clean_line,
    next_position,
    payload_images,
    remote_links,
    task_answer,
)


@dataclass
class SeedImage:
    """A seed example image: stored bytes (an upload) or a remote URL."""

    data: bytes | None = None
    name: str = ""
    url: str = ""
    source: str = ""
    licence: str = ""


def _check_seed(seed_images: Sequence[SeedImage], multi_image: bool) -> list[SeedImage]:
    seed_images = [s for s in seed_images if s.data or s.url]
    if not seed_images:
        raise Invalid("Give the example's image: upload it or paste its URL.")
    if multi_image and len(seed_images) < 2:
        raise Invalid("A multi-image family's example needs at least two images.")
    if not multi_image and len(seed_images) > 1:
        raise Invalid("A single-image family's example has exactly one image.")
    if len(seed_images) > 8:
        raise Invalid("At most 8 images per example.")
    for s in seed_images:
        if s.url and not s.data and urlparse(s.url).scheme not in ("http", "https"):
            raise Invalid(f"{s.url[:80]!r} is not an http(s) URL.")
    return seed_images


def _ingest(**fields) -> Image:
    """An image stored through ``assets.image_ingest``; a rejected file refuses with why."""
    try:
        image, _new = assets.image_ingest(**fields)
    except assets.ImageRejected as exc:
        raise Invalid(str(exc)) from None
    return image


def _store_seed(seed_images: Sequence[SeedImage], created_by) -> list[Image | None]:
    """The uploaded seed images stored (None where the image is a remote URL)."""
    return [
        None
        if s.data is None
        else _ingest(
            data=s.data,
            name=s.name or "seed",
            source=s.source,
            licence=s.licence,
            created_by=created_by,
        )
        for s in seed_images
    ]


def category_create(
    *,
    pipeline: VisitPipeline,
    name: str,
    description: str = "",
    multi_image: bool = False,
    seed_instruction: str,
    seed_response: str,
    seed_images: Sequence[SeedImage],
    created_by=None,
) -> VisitCategory:
    """A category with its seed example (image(s), instruction, example response; Sec. 2.1)."""
    name = clean_line(name, "family name", 200)
    instruction = clean_name(seed_instruction, "example instruction", 2000)
    response = clean_name(seed_response, "example response", MAX_TEXT)
    seed_images = _check_seed(seed_images, multi_image)
    taken = f"This pipeline already has a family “{name}”."
    if VisitCategory.objects.filter(pipeline=pipeline, name=name).exists():
        raise Invalid(taken)
    stored = _store_seed(seed_images, created_by)
    with taken_refused(taken):
        category = VisitCategory.objects.create(
            pipeline=pipeline,
            name=name,
            description=(description or "").strip(),
            multi_image=multi_image,
            origin=VisitCategory.Origin.AUTHORED,
            created_by=created_by,
        )
        seed = VisitInstance.objects.create(
            pipeline=pipeline,
            category=category,
            origin=VisitInstance.Origin.SEED,
            state=VisitInstance.State.SEED,
            position=next_position(pipeline),
            instruction=instruction,
            author=created_by,
        )
        VisitImage.objects.bulk_create(
            [
                VisitImage(instance=seed, position=k, image=image, url=s.url if not image else "")
                for k, (s, image) in enumerate(zip(seed_images, stored, strict=True))
            ]
        )
        VisitReference.objects.create(
            instance=seed,
            text=response,
            source=VisitReference.Source.SEED,
            verdict=VisitReference.Verdict.CORRECT,
            decided_at=timezone.now(),
        )
    assets.thumbnails_make(image_ids=[i.pk for i in stored if i is not None])
    return category


def category_example(category: VisitCategory) -> VisitInstance | None:
    """What crowdworkers imitate: the seed example, else the category's first verified instance
    (imported categories come without a separate seed)."""
    base = VisitInstance.objects.filter(category=category).prefetch_related("images__image")
    seed = base.filter(origin=VisitInstance.Origin.SEED).first()
    return seed or base.filter(state=VisitInstance.State.VERIFIED).order_by("position").first()


def _instruction_payload(category: VisitCategory, example: VisitInstance | None) -> dict:
    kind = "several images" if category.multi_image else "one image"
    payload: dict[str, Any] = {
        "prompt": (
            f"Instruction family: {category.name} ({kind}). "
            + (f"{category.description} " if category.description else "")
            + "Upload a permissively licensed image and write a NEW instruction of this family "
            "about it; fill in the three lines (Instruction, Image source, Image licence)."
        ),
        "draft": prompts.INSTRUCTION_DRAFT + ("Other image: \n" if category.multi_image else ""),
    }
    if example is not None:
        payload["images"] = payload_images(example)
        links = remote_links(example)
        reference = example.references.order_by("-round").first()
        payload["context"] = (
            f"Example instruction: {example.instruction}\n"
            f"Example response: {reference.text if reference else ''}"
            + (f"\nExample image(s): {' '.join(links)}" if links else "")
        )
    return payload


def instruction_tasks_create(*, category: VisitCategory, count: int, created_by=None) -> int:
    """``count`` instruction-generation tasks showing the category's example."""
    if not 1 <= count <= MAX_INSTRUCTION_TASKS:
        raise Invalid(f"Ask for between 1 and {MAX_INSTRUCTION_TASKS} new instructions.")
    pipeline = category.pipeline
    example = category_example(category)
    if example is None:
        raise Invalid(
            f"The family “{category.name}” has no example yet: create it with a seed example, or "
            "import verified instances of it."
        )
    queue = queue_ensure(pipeline, INSTRUCTION_QUEUE)
    payload = _instruction_payload(category, example)
    stamp = timezone.now().strftime("%Y%m%d%H%M%S%f")
    rows = [
        annotator_services.TaskRow(
            payload=payload, external_id=f"visit-instr-{category.pk}-{stamp}-{k}"
        )
        for k in range(count)
    ]
    with transaction.atomic():
        links = [{"category": category}] * count
        visit_tasks_create(queue, pipeline, VisitTask.Stage.INSTRUCTION, rows, links)
    return count


def _upload_name(url: str, task: Task) -> str | None:
    """The storage name behind the workspace's upload URL for this task (it stores uploads as
    ``uploads/<queue>/<task>/…``); a URL pointing anywhere else is not this answer's upload."""
    path = urlparse(url or "").path
    folder = f"uploads/{task.queue_id}/{task.pk}/"
    at = path.find("/" + folder)
    if at < 0:
        return None
    name = path[at + 1 :]
    return name if "/../" not in name and PurePosixPath(name).name else None


def instruction_record(task: Task, decision) -> VisitInstance | None:
    """The instruction task's outcome (inside the submit's transaction): store the image with its
    licence and source, create the instance and its caption task(s). Anything missing refuses the
    submission with a message, so nothing half-done is kept."""
    link, answer = task_answer(task, VisitTask.Stage.INSTRUCTION, "category__pipeline__project")
    if link is None:
        return None
    response = answer.response or {}
    form = prompts.parse_instruction_form(response.get("text", ""))
    category = link.category
    total = 1 + len(form.other_images)
    if category.multi_image and total < 2:
        raise Invalid(
            "This family asks for several images: upload one and list the others as "
            "'Other image: <URL>' lines."
        )
    if not category.multi_image and form.other_images:
        raise Invalid("This family takes one image: remove the 'Other image' lines.")
    name = _upload_name(response.get("image") or "", task)
    if not name or not default_storage.exists(name):
        raise Invalid("Upload the image the instruction is about.")
    with default_storage.open(name, "rb") as handle:
        data = handle.read()
    image = _ingest(
        data=data,
        name=PurePosixPath(name).name,
        source=form.source,
        licence=form.licence,
        attribution=answer.annotator.get_username(),
        created_by=answer.annotator,
    )
    pipeline = category.pipeline
    instance = VisitInstance.objects.create(
        pipeline=pipeline,
        category=category,
        origin=VisitInstance.Origin.CROWD,
        state=VisitInstance.State.CAPTIONING,
        position=next_position(pipeline),
        instruction=form.instruction,
        author=answer.annotator,
        metadata={
            "public_images_metadata": {"source": form.source, "License": form.licence},
            "instruction_task": task.pk,
        },
    )
    VisitImage.objects.bulk_create(
        [VisitImage(instance=instance, position=0, image=image)]
        + [
            VisitImage(instance=instance, position=k, url=url[:2000])
            for k, url in enumerate(form.other_images, start=1)
        ]
    )
    assets.thumbnails_make(image_ids=[image.pk])
    caption_tasks_create(instance)
    return instance
