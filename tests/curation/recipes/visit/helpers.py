"""Shared pieces of the VisIT-Bench tests: the published files, people working the queues, an
uploaded answer image, a category (instruction family) with its seed example."""

from __future__ import annotations

import io
from pathlib import Path

from django.core.files.base import ContentFile
from django.core.files.storage import default_storage

from annotator import services as annotator_services
from annotator.platform import roles
from curation import assets
from curation.recipes.framework.exports import records_write
from curation.recipes.framework.publish import publish_object
from curation.recipes.framework.registry import recipe_for
from curation.recipes.visit import categories, export, prompts, publish, references
from curation.recipes.visit.models import VisitImage, VisitInstance
from evaluation import services as eval_services
from evaluation.families.visit import parse as visit_parse
from tests.curation.recipes.common import png_bytes
from tests.factories import UserFactory
from tests.paths import VISIT_BENCH

DATASET = VISIT_BENCH / "single_image_full_dataset.csv"
MODEL_FILES = {
    "LLaVA (13B)": VISIT_BENCH / "llava13b_output.csv",
    "InstructBLIP (13B)": VISIT_BENCH / "instruct_blip_13b_out.csv",
    "PandaGPT (13B)": VISIT_BENCH / "PandaGPT_13b_out.csv",
}
INSTRUCTION_TEXT = (
    "Instruction: How many red cubes would be left if I took two away?\n"
    "Image source: https://openverse.org/image/abc\n"
    "Image licence: CC BY 2.0\n"
)
CAPTION_TEXT = (
    "A white table holds seven small cubes: four red ones in a row on the left and three blue "
    "ones stacked on the right."
)


def read(path: Path) -> str:
    return path.read_text(encoding="utf-8-sig")


def dataset_export(pipeline, fmt: str) -> str:
    """The pipeline's current version as the dataset export writes it (CSV or JSONL)."""
    buffer = io.BytesIO()
    records = export.dataset_records(publish.version_of(pipeline), fmt=fmt)
    records_write(buffer, records, columns=visit_parse.PUBLISHED_COLUMNS, fmt=fmt)
    return buffer.getvalue().decode("utf-8")


def workers(project, n: int, prefix: str = "rater") -> list:
    people = [UserFactory(username=f"{prefix}{k}", role=roles.CROWDWORKER) for k in range(n)]
    project.members.add(*people)
    return people


def answer_all(queue, person, respond) -> int:
    """Claim and answer as ``person`` until the queue is empty for them."""
    answered = 0
    while True:
        queue.refresh_from_db()
        claim = annotator_services.assignment_claim(queue=queue, annotator=person)
        if claim.assignment is None:
            return answered
        annotator_services.annotation_submit(
            task_id=claim.assignment.task_id, annotator=person, response=respond(claim.assignment)
        )
        answered += 1


def uploaded(name: str, seed: int, task) -> str:
    """An image stored where the workspace stores a task's uploads; its URL as the response
    carries it."""
    folder = f"uploads/{task.queue_id}/{task.pk}"
    stored = default_storage.save(f"{folder}/{name}", ContentFile(png_bytes(seed)))
    return default_storage.url(stored)


def seed_category(pipeline, curator, name: str = "Counting", multi: bool = False):
    images = [categories.SeedImage(data=png_bytes(1), name="seed.png", licence="CC0", source="x")]
    if multi:
        images.append(categories.SeedImage(data=png_bytes(2), name="seed2.png"))
    return categories.category_create(
        pipeline=pipeline,
        name=name,
        description="Count objects in the image.",
        multi_image=multi,
        seed_instruction="How many apples are on the plate?",
        seed_response="There are five apples on the plate.",
        seed_images=images,
        created_by=curator,
    )


def import_model(version, name: str) -> None:
    """One of the published model output files, imported as a run of ``version``."""
    path = MODEL_FILES[name]
    eval_services.import_run(
        {
            "target": "predictions",
            "family": "visit",
            "version_id": version.pk,
            "model": name,
            "filename": path.name,
            "content": read(path),
            "compute": False,
        }
    )


def publish_version(pipeline, label: str = "v1", created_by=None):
    """Publish the instances with a final verdict as the publish form does (the framework)."""
    return publish_object(recipe_for(pipeline), pipeline, label=label, created_by=created_by)


def fetched(visit_image, seed: int) -> None:
    """The remote image stored as a successful fetch stores it (``fetch.images_fetch``), without
    the network: its bytes ingested with the URL as source, the row pointing at them."""
    image, _new = assets.image_ingest(
        data=png_bytes(seed, size=96), name=f"fetched-{seed}.png", source=visit_image.url
    )
    VisitImage.objects.filter(pk=visit_image.pk).update(image=image, fetch_error="")


def multi_image_caption_round_two(pipeline, curator, crowdworker, reviewer):
    """A crowd instance of a multi-image family (one upload, one 'Other image' URL, fetched
    later), captioned, drafted offline and sent back for a problem in the caption: its two
    round-2 caption tasks wait in the caption queue, both images stored. Returns the instance."""
    category = seed_category(pipeline, curator, name="Spot the difference", multi=True)
    categories.instruction_tasks_create(category=category, count=1, created_by=curator)
    claim = annotator_services.assignment_claim(
        queue=pipeline.instruction_queue, annotator=crowdworker
    )
    annotator_services.annotation_submit(
        task_id=claim.assignment.task_id,
        annotator=crowdworker,
        response={
            "text": INSTRUCTION_TEXT + "Other image: https://example.org/b.jpg\n",
            "image": uploaded("a.png", 5, claim.assignment.task),
        },
    )
    instance = pipeline.instances.get(origin=VisitInstance.Origin.CROWD)
    fetched(instance.images.get(position=1), seed=9)
    pipeline.refresh_from_db()
    answer_all(pipeline.caption_queue, crowdworker, lambda a: {"text": CAPTION_TEXT})
    references.references_draft(pipeline=pipeline)
    pipeline.refresh_from_db()
    answer_all(
        pipeline.review_queue,
        reviewer,
        lambda a: {"verdict": "reject", "reason": prompts.REASON_CAPTION, "comment": ""},
    )
    pipeline.refresh_from_db()
    instance.refresh_from_db()
    return instance
