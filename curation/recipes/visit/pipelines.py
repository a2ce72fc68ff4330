"""VisIT-Bench pipelines (visit-bench.txt Sec. 2–4, App. C–F): the recipe's names (job kinds,
outcome handlers, queue stages, limits), its pipelines and settings, its four queues, and the
small helpers every stage shares. Keyword-only services, each write atomic.

Flow: a pipeline's instruction categories (``categories``, or imported: ``dataset``) → people write
new instructions with an image → instruction-conditioned captions (``captions``) → the LLM drafts
a reference people verify (``references``) → the verified instances are published as an
evaluation version (``publish``) → sampled (instance, model A, model B) tuples are rated by people
and fed to the evaluation app as crowd votes (``ratings``) → new models are submitted to the
living leaderboard and judged by the LLM judge in both orders (``submissions``).
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.db.models import Max

from annotator import services as annotator_services
from annotator.models import Annotation, Task
from annotator.platform.errors import Invalid
from annotator.platform.files import media_url
from annotator.platform.models import Project, taken_refused
from curation import corpora
from curation.models import LLMProvider
from curation.recipes.framework.declare import QueueSpec
from curation.recipes.framework.queues import (
    image_payload,
    queue_ensure,
    queues_follow,
    with_tiebreak,
)
from evaluation.services import clean_name

from . import prompts
from .models import VisitImage, VisitInstance, VisitPipeline, VisitTask

IMPORT_JOB = "visit.import_dataset"
FETCH_JOB = "visit.fetch_images"
DRAFT_JOB = "visit.draft_references"
SYNC_JOB = "visit.sync_human_votes"
EXPORT_JOB = "visit.export"

INSTRUCTION_HANDLER = "visit.instruction"
CAPTION_HANDLER = "visit.caption"
REVIEW_HANDLER = "visit.review"
RATING_HANDLER = "visit.rating"

MAX_TEXT = 5000
MAX_TABLE_BYTES = 50 * 1024 * 1024
MAX_VOTES = 15
MAX_REVIEWERS = 9
MAX_INSTRUCTION_TASKS = 200
MAX_PAIRS_PER_CALL = 5000
FETCH_GIVE_UP_AFTER = 5  # unreachable images in a row: the network is down, keep the links
INSTRUCTION_MIN_LENGTH = 20


def _title(what: str):
    return lambda pipeline: f"VisIT-Bench · {what}: {pipeline.name}"


INSTRUCTION_QUEUE = QueueSpec(
    field="instruction_queue",
    kind="write_text",
    title=_title("New instructions"),
    handler=INSTRUCTION_HANDLER,
    instructions=prompts.INSTRUCTION_GUIDANCE,
    config={"min_length": INSTRUCTION_MIN_LENGTH, "max_length": 3000, "require_image": True},
    max_redundancy=1,
)
CAPTION_QUEUE = QueueSpec(
    field="caption_queue",
    kind="write_text",
    title=_title("Instruction-conditioned captions"),
    handler=CAPTION_HANDLER,
    instructions=prompts.CAPTION_GUIDANCE,
    config=lambda p: {"min_length": p.caption_min_length, "max_length": MAX_TEXT},
    max_redundancy=1,
)
REVIEW_QUEUE = QueueSpec(
    field="review_queue",
    kind="review",
    title=_title("Verify references"),
    handler=REVIEW_HANDLER,
    instructions=prompts.REVIEW_GUIDANCE,
    config={"criteria": prompts.REVIEW_CRITERIA, "reason_codes": prompts.REVIEW_REASONS},
    max_redundancy=1,
)
# "5 crowdworker judgements each" (Sec. 4.2): a fixed number, no escalation.
RATING_QUEUE = QueueSpec(
    field="rating_queue",
    kind="forced_choice",
    title=_title("Which response is better"),
    handler=RATING_HANDLER,
    instructions=prompts.RATING_GUIDANCE,
    redundancy=lambda p: p.votes_per_pair,
    max_redundancy=lambda p: p.votes_per_pair,
)
QUEUES = (INSTRUCTION_QUEUE, CAPTION_QUEUE, REVIEW_QUEUE, RATING_QUEUE)


def clean_line(value: str, what: str, limit: int) -> str:
    """``value`` on one line (white space folded), required, at most ``limit`` characters."""
    return clean_name(" ".join((value or "").split()), what, limit)


def image_url(visit_image: VisitImage) -> str:
    """Where an instance image is shown from: the stored copy, else its remote URL."""
    if visit_image.image_id and visit_image.image.file:
        return media_url(visit_image.image.file.name)
    return visit_image.url


def payload_images(instance: VisitInstance) -> list[dict]:
    """Stored images only: a remote URL may not load for the person (it is listed as a link)."""
    images = enumerate(instance.images.all(), start=1)
    return [image_payload(img.image, f"Image {k}") for k, img in images if img.image_id]


def remote_links(instance: VisitInstance) -> list[str]:
    return [img.url for img in instance.images.all() if not img.image_id and img.url]


def pipeline_create(
    *, project: Project, name: str, description: str = "", created_by=None
) -> VisitPipeline:
    name = clean_line(name, "pipeline name", 200)
    with taken_refused(f"This project already has a VisIT-Bench pipeline “{name}”."):
        return VisitPipeline.objects.create(
            project=project,
            name=name,
            description=(description or "").strip(),
            created_by=created_by,
        )


def pipeline_settings(
    pipeline: VisitPipeline,
    *,
    caption_min_length: int | None = None,
    max_caption_rounds: int | None = None,
    votes_per_pair: int | None = None,
    reviewers: int | None = None,
    provider: LLMProvider | None | Any = ...,
) -> VisitPipeline:
    """Caption length, caption rewrites, votes per tuple, reviewers per reference, drafter."""
    with transaction.atomic():
        pipeline = VisitPipeline.objects.select_for_update().get(pk=pipeline.pk)
        fields = []
        if caption_min_length is not None:
            if not 1 <= caption_min_length <= 2000:
                raise Invalid("The minimum caption length must be between 1 and 2000 characters.")
            pipeline.caption_min_length = caption_min_length
            fields.append("caption_min_length")
        if max_caption_rounds is not None:
            if not 0 <= max_caption_rounds <= 5:
                raise Invalid("Caption rewrites must be between 0 and 5.")
            pipeline.max_caption_rounds = max_caption_rounds
            fields.append("max_caption_rounds")
        if votes_per_pair is not None:
            if not 1 <= votes_per_pair <= MAX_VOTES:
                raise Invalid(f"Votes per tuple must be between 1 and {MAX_VOTES}.")
            pipeline.votes_per_pair = votes_per_pair
            fields.append("votes_per_pair")
        if provider is not ...:
            pipeline.provider = provider
            fields.append("provider")
        if reviewers is not None and not 1 <= reviewers <= MAX_REVIEWERS:
            raise Invalid(f"Reviewers per reference must be between 1 and {MAX_REVIEWERS}.")
        if fields:
            pipeline.save(update_fields=fields)
        if caption_min_length is not None and pipeline.caption_queue_id:
            queue = pipeline.caption_queue
            annotator_services.queue_update(
                queue=queue, config={**queue.config, "min_length": caption_min_length}
            )
        if votes_per_pair is not None:
            queues_follow(pipeline, [RATING_QUEUE])
        if reviewers is not None:
            queue = queue_ensure(pipeline, REVIEW_QUEUE)
            annotator_services.queue_update(
                queue=queue, redundancy=reviewers, max_redundancy=with_tiebreak(reviewers)
            )
    return pipeline


def next_position(pipeline: VisitPipeline) -> int:
    last = pipeline.instances.aggregate(n=Max("position"))["n"]
    return 0 if last is None else last + 1


def upload_text(upload) -> str:
    """An uploaded table (the dataset CSV, a submission) as UTF-8 text of at most 50 MB."""
    return corpora.upload_text(upload, MAX_TABLE_BYTES)


def answers_of(task: Task) -> list[Annotation]:
    return list(
        Annotation.objects.filter(task=task, is_gold=False)
        .select_related("annotator")
        .order_by("id")
    )


def task_answer(task: Task, stage: str, related: str) -> tuple[VisitTask | None, Annotation | None]:
    """What a write_text task of ``stage`` is about (its VisitTask, ``related`` loaded) and its
    newest answer; (None, None) when either is missing."""
    link = VisitTask.objects.select_related(related).filter(task_id=task.pk, stage=stage).first()
    answers = answers_of(task)
    if link is None or not answers:
        return None, None
    return link, answers[-1]
