"""VLind-Bench images (Sec. 4, App. A, App. C): counterfactual images in three styles, uploaded
(or generated, ``generation``) into a triple's slots, each reviewed (good with at least two
accepts); the curator's best image; and the factual image with its context."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from django.db import transaction
from django.db.models import Prefetch, QuerySet

from annotator.models import Task, TaskQueue
from annotator.platform.errors import Invalid
from curation import assets
from curation.models import Generation, Image
from curation.recipes.framework.queues import image_payload, queue_ensure, tasks_link

from . import prompts
from .benches import IMAGE_QUESTION, IMAGE_QUEUE, review_decided
from .models import VLindImage, VLindTriple


def with_images(triples: QuerySet[VLindTriple]) -> QuerySet[VLindTriple]:
    """``triples`` in concept order with their concept, factual image and generation, and
    their images by slot (three queries)."""
    images = VLindImage.objects.select_related("image", "generation").order_by("slot")
    return (
        triples.select_related("concept", "factual_image", "generation")
        .prefetch_related(Prefetch("images", queryset=images))
        .order_by("concept__position", "concept__name", "context_id")
    )


def free_slots(triple: VLindTriple, style: str, per_style: int) -> list[int]:
    taken = set(triple.images.values_list("slot", flat=True))
    return [s for s in prompts.slots_of_style(style, per_style) if s not in taken]


def _image_payload(image: VLindImage) -> dict:
    triple = image.triple
    return {
        "title": IMAGE_QUESTION,
        "images": [image_payload(image.image, f"{image.style} image of the context")],
        "text": f"Concept: {triple.concept.name} · style: {image.style}",
        "fields": {
            "Context": triple.context,
            "True statement": triple.true_statement,
            "False statement": triple.false_statement,
        },
    }


def image_record(
    triple: VLindTriple,
    slot: int,
    image: Image,
    origin: str,
    *,
    generation: Generation | None = None,
    created_by=None,
    queue: TaskQueue | None = None,
) -> VLindImage:
    """A counterfactual image in ``slot`` (its style follows from the slot) and its review."""
    queue = queue or queue_ensure(triple.bench, IMAGE_QUEUE)
    with transaction.atomic():
        row = VLindImage.objects.create(
            triple=triple,
            slot=slot,
            style=prompts.style_of_slot(slot),
            image=image,
            origin=origin,
            generation=generation,
            created_by=created_by,
        )
        row.triple = triple
        tasks_link(queue, [(row, _image_payload(row), f"vlind-image-{row.pk}")])
    return row


def require_kept(triple: VLindTriple) -> None:
    if triple.status != VLindTriple.Status.KEPT:
        raise Invalid(
            f"Only a kept triple gets images: this one is {triple.get_status_display().lower()}."
        )


@dataclass
class Upload:
    name: str
    data: bytes


def _check_uploads(files: Sequence[Upload], *, taken: dict[str, int] | None = None) -> list:
    """Decode every file before anything is stored; line-numbered errors naming each file."""
    errors: list[dict] = []
    normalised = []
    seen: dict[str, str] = {}
    for k, upload in enumerate(files, start=1):
        try:
            norm = assets.image_normalise(data=upload.data, name=upload.name)
        except assets.ImageRejected as exc:
            errors.append({"line": k, "error": str(exc)})
            continue
        if norm.sha256 in seen:
            problem = f"the same picture as {seen[norm.sha256]}"
        elif taken and norm.sha256 in taken:
            problem = f"already image {taken[norm.sha256]} of this triple"
        else:
            seen[norm.sha256] = upload.name
            normalised.append(norm)
            continue
        errors.append({"line": k, "error": f"{upload.name}: {problem}"})
    if errors:
        raise Invalid("Some files were refused; nothing was stored.", errors)
    return normalised


def images_upload(
    *, triple: VLindTriple, style: str, files: Sequence[Upload], created_by=None
) -> list[VLindImage]:
    """Upload counterfactual images of one style into the triple's free slots. Every file is
    validated first (Pillow decode, limits, duplicates); any refusal stores nothing."""
    require_kept(triple)
    if style not in prompts.STYLES:
        raise Invalid(f"Unknown style {style!r}: choose photorealistic, illustration or cartoon.")
    if not files:
        raise Invalid("Choose at least one image file.")
    bench = triple.bench
    free = free_slots(triple, style, bench.images_per_style)
    if len(files) > len(free):
        raise Invalid(
            f"The {style} style has {len(free)} free slot{'s' if len(free) != 1 else ''} of "
            f"{bench.images_per_style}; {len(files)} files were sent. Nothing was stored."
        )
    taken = dict(triple.images.values_list("image__sha256", "slot"))
    _check_uploads(files, taken=taken)
    queue = queue_ensure(bench, IMAGE_QUEUE)
    rows: list[VLindImage] = []
    origin = VLindImage.Origin.UPLOAD
    with transaction.atomic():
        for upload, slot in zip(files, free, strict=False):
            image, _new = assets.image_ingest(
                data=upload.data,
                name=upload.name,
                source=f"upload · VLind-Bench {bench.name}"[:500],
                created_by=created_by,
            )
            rows.append(
                image_record(triple, slot, image, origin, created_by=created_by, queue=queue)
            )
    assets.thumbnails_make(image_ids=[r.image_id for r in rows])
    return rows


def image_review_record(task: Task, decision) -> None:
    """The image queue's outcome: good with ≥ 2 accepts; the accept count is the published
    ``aggregated_human_label_good_images`` value of this image id."""
    status = VLindImage.Status
    review_decided(VLindImage, task, decision, kept=status.GOOD, rejected=status.BAD)


def best_of(triple: VLindTriple, images: Iterable[VLindImage]) -> VLindImage | None:
    """The curator's pick when it is good, else the good image with the most accepts (lowest
    image id on a tie); None without a good image."""
    good = [i for i in images if i.status == VLindImage.Status.GOOD]
    if not good:
        return None
    picked = next((i for i in good if i.pk == triple.best_image_id), None)
    return picked or min(good, key=lambda i: (-i.accepts, i.slot))


def best_image_pick(*, triple: VLindTriple, image_id: int | None) -> VLindTriple:
    """Choose the best image (Sec. 3: VP and CB use it); None: back to the most accepts."""
    if image_id is not None:
        chosen = triple.images.filter(pk=image_id).first()
        if chosen is None:
            raise Invalid("That image does not belong to this triple.")
        if chosen.status != VLindImage.Status.GOOD:
            raise Invalid("Only a good image (≥ 2 accepts) can be the best image.")
    VLindTriple.objects.filter(pk=triple.pk).update(best_image_id=image_id)
    triple.best_image_id = image_id
    return triple


def factual_upload(
    *,
    triple: VLindTriple,
    upload: Upload | None,
    factual_context: str | None = None,
    created_by=None,
) -> VLindTriple:
    """The factual image (CK shows it) and/or the factual context it depicts."""
    require_kept(triple)
    if upload is None and factual_context is None:
        raise Invalid("Choose the factual image, or edit the factual context.")
    fields = []
    if factual_context is not None:
        text = " ".join(factual_context.split())
        if not text or len(text) > prompts.MAX_TEXT:
            raise Invalid(f"The factual context must be 1–{prompts.MAX_TEXT} characters.")
        triple.factual_context = text
        fields.append("factual_context")
    if upload is not None:
        _check_uploads([upload])
        image, _new = assets.image_ingest(
            data=upload.data,
            name=upload.name,
            source=f"upload · VLind-Bench {triple.bench.name} (factual)"[:500],
            created_by=created_by,
        )
        triple.factual_image = image
        fields.append("factual_image")
        assets.thumbnails_make(image_ids=[image.pk])
    triple.save(update_fields=fields)
    return triple
