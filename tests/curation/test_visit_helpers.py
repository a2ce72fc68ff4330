"""Shared pieces of the VisIT-Bench tests: the recipe's URLs mounted like curation/urls.py and the
project's API urls will mount them, small images, a pipeline, people working the queues.

Fixtures are imported by name into the test modules that use them.
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.urls import include, path
from PIL import Image as PILImage

from annotator import services as annotator_services
from annotator.platform import roles
from blindspot.urls import urlpatterns as project_urls
from curation.models import LLMProvider
from curation.recipes.visit import services
from tests.factories import UserFactory
from tests.paths import VISIT_BENCH

urlpatterns = [
    path("curate/", include("curation.recipes.visit.urls")),
    path("api/visit/", include("curation.recipes.visit.api_urls")),
    *project_urls,
]

DATASET = VISIT_BENCH / "single_image_full_dataset.csv"
MODEL_FILES = {
    "LLaVA (13B)": VISIT_BENCH / "llava13b_output.csv",
    "InstructBLIP (13B)": VISIT_BENCH / "instruct_blip_13b_out.csv",
    "PandaGPT (13B)": VISIT_BENCH / "PandaGPT_13b_out.csv",
}


def png_bytes(seed: int, size: int = 24) -> bytes:
    rng = np.random.default_rng(seed)
    pixels = rng.integers(0, 256, size=(size, size, 3), dtype=np.uint8)
    buf = io.BytesIO()
    PILImage.fromarray(pixels).save(buf, "PNG")
    return buf.getvalue()


def read(path: Path) -> str:
    return path.read_text(encoding="utf-8-sig")


@pytest.fixture
def media(settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path / "media")
    settings.BLINDSPOT_VISIT_ROUNDS = 50
    settings.BLINDSPOT_VISIT_TEXT_METRICS = False
    return tmp_path / "media"


@pytest.fixture
def pipeline(project, curator, media):
    return services.pipeline_create(project=project, name="VisIT sample", created_by=curator)


@pytest.fixture
def llm(fake_openai, project):
    """The project's default LLM: the fake OpenAI-compatible server."""
    return LLMProvider.objects.create(
        project=project,
        name="fake",
        base_url=fake_openai.base_url,
        api_key="sk-test",
        model="fake-gpt-4",
        timeout_s=2.0,
        max_retries=1,
        is_default=True,
    )


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


def seed_family(pipeline, curator, name: str = "Counting", multi: bool = False):
    images = [services.SeedImage(data=png_bytes(1), name="seed.png", licence="CC0", source="x")]
    if multi:
        images.append(services.SeedImage(data=png_bytes(2), name="seed2.png"))
    return services.family_create(
        pipeline=pipeline,
        name=name,
        description="Count objects in the image.",
        multi_image=multi,
        seed_instruction="How many apples are on the plate?",
        seed_response="There are five apples on the plate.",
        seed_images=images,
        created_by=curator,
    )


INSTRUCTION_TEXT = (
    "Instruction: How many red cubes would be left if I took two away?\n"
    "Image source: https://openverse.org/image/abc\n"
    "Image licence: CC BY 2.0\n"
)
CAPTION_TEXT = (
    "A white table holds seven small cubes: four red ones in a row on the left and three blue "
    "ones stacked on the right."
)
