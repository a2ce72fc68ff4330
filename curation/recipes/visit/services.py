"""VisIT-Bench services (visit-bench.txt Sec. 2–4, App. C–F). Keyword-only, each write atomic;
long work runs in ``jobs.py``; the evaluation app is reached only through its services.

Flow: a pipeline's instruction families (created, or imported from the published CSV) → people
write new instructions with an image (write_text + upload, licence and source required) → people
write instruction-conditioned captions (write_text, one per image) → the LLM drafts a reference
from caption + instruction (Sec. 2.1 prompt) → people verify it (review: correct / problem in the
caption, which sends the caption back / problem in the response, which discards) → the verified
instances are published as an evaluation version → model responses are imported there → sampled
(instance, model A, model B) tuples are rated by people (forced_choice, 5 votes) and fed to the
evaluation app as crowd votes → new models are submitted to the living leaderboard and judged by
the LLM judge in both orders (``evaluation.runners.judge_start``).
"""

from __future__ import annotations

import ipaddress
import json
import re
import socket
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import urlparse

from django.conf import settings
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.db import IntegrityError, transaction
from django.db.models import Max
from django.utils import timezone

from annotator import services as annotator_services
from annotator.models import Annotation, Task, TaskQueue
from annotator.platform import edge
from annotator.platform.errors import Conflict, Invalid
from annotator.platform.files import media_url
from annotator.platform.jobs import job_enqueue, job_progress
from annotator.platform.models import Job, Project

from ... import assets, corpus_import, gateway
from ...models import Generation, Image, LLMProvider
from ...models.visit import (
    VisitFamily,
    VisitImage,
    VisitInstance,
    VisitPair,
    VisitPipeline,
    VisitReference,
    VisitSubmission,
    VisitTask,
)
from . import prompts, sampling

IMPORT_JOB = "visit.import_dataset"
FETCH_JOB = "visit.fetch_images"
DRAFT_JOB = "visit.draft_references"
SYNC_JOB = "visit.sync_human_votes"
# The export job (export.py) has its own cards, newest per export, so it is not in JOB_KINDS.
EXPORT_JOB = "visit.export"
JOB_KINDS = (IMPORT_JOB, FETCH_JOB, DRAFT_JOB, SYNC_JOB)

INSTRUCTION_HANDLER = "visit.instruction"
CAPTION_HANDLER = "visit.caption"
REVIEW_HANDLER = "visit.review"
RATING_HANDLER = "visit.rating"

STAGE_INSTRUCTION = "instruction"
STAGE_CAPTION = "caption"
STAGE_REVIEW = "review"
STAGE_RATING = "rating"
QUEUE_FIELD = {
    STAGE_INSTRUCTION: "instruction_queue",
    STAGE_CAPTION: "caption_queue",
    STAGE_REVIEW: "review_queue",
    STAGE_RATING: "rating_queue",
}

REFERENCE = sampling.REFERENCE
MAX_TEXT = 5000
MAX_ERRORS = 200
MAX_TABLE_BYTES = 50 * 1024 * 1024
MAX_VOTES = 15
MAX_REVIEWERS = 9
MAX_INSTRUCTION_TASKS = 200
MAX_PAIRS_PER_CALL = 5000
FETCH_TIMEOUT_S = 3.0
FETCH_GIVE_UP_AFTER = 5  # unreachable images in a row: the network is down, keep the links
INSTRUCTION_MIN_LENGTH = 20


# ============================================================================================
# helpers
# ============================================================================================
class _Errors:
    def __init__(self) -> None:
        self.rows: list[dict] = []
        self.count = 0

    def add(self, line: int, error: str) -> None:
        self.count += 1
        if len(self.rows) < MAX_ERRORS:
            self.rows.append({"line": line, "error": error})

    def raise_if_any(self, message: str) -> None:
        if self.count:
            more = f" (the first {MAX_ERRORS} are listed)" if self.count > MAX_ERRORS else ""
            raise Invalid(f"{message}{more}", list(self.rows))


def _clean(value: str, what: str, limit: int, *, required: bool = True) -> str:
    value = " ".join((value or "").split())
    if required and not value:
        raise Invalid(f"Give the {what}.", [{"line": 0, "error": f"{what} is required"}])
    if len(value) > limit:
        raise Invalid(f"The {what} is longer than {limit} characters.")
    return value


def _text(value: str, what: str, limit: int = MAX_TEXT) -> str:
    value = (value or "").strip()
    if not value:
        raise Invalid(f"Give the {what}.", [{"line": 0, "error": f"{what} is required"}])
    if len(value) > limit:
        raise Invalid(f"The {what} is longer than {limit} characters.")
    return value


def image_url(visit_image: VisitImage) -> str:
    """Where an instance image is shown from: the stored copy, else its remote URL."""
    if visit_image.image_id and visit_image.image.file:
        return media_url(visit_image.image.file.name)
    return visit_image.url


def _payload_images(instance: VisitInstance) -> list[dict]:
    """Stored images only: a remote URL may not load for the person (it is listed as a link)."""
    out = []
    for k, img in enumerate(instance.images.all(), start=1):
        if img.image_id:
            out.append({"url": media_url(img.image.file.name), "alt": f"Image {k}"})
    return out


def _remote_links(instance: VisitInstance) -> list[str]:
    return [img.url for img in instance.images.all() if not img.image_id and img.url]


def _with_tiebreak(n: int) -> int:
    """An even number of reviewers can tie; a tie asks one more person."""
    return n + 1 if n % 2 == 0 else n


# ============================================================================================
# 1. Pipelines, queues and families
# ============================================================================================
def pipeline_create(
    *, project: Project, name: str, description: str = "", created_by=None
) -> VisitPipeline:
    name = _clean(name, "pipeline name", 200)
    try:
        with transaction.atomic():
            return VisitPipeline.objects.create(
                project=project,
                name=name,
                description=(description or "").strip(),
                created_by=created_by,
            )
    except IntegrityError:
        raise Invalid(f"This project already has a VisIT-Bench pipeline “{name}”.") from None


def pipeline_settings(
    *,
    pipeline: VisitPipeline,
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
        if votes_per_pair is not None and pipeline.rating_queue_id:
            annotator_services.queue_update(
                queue=pipeline.rating_queue,
                redundancy=votes_per_pair,
                max_redundancy=votes_per_pair,
            )
        if reviewers is not None:
            queue = queue_ensure(pipeline=pipeline, stage=STAGE_REVIEW)
            annotator_services.queue_update(
                queue=queue, redundancy=reviewers, max_redundancy=_with_tiebreak(reviewers)
            )
    return pipeline


def _queue_spec(pipeline: VisitPipeline, stage: str) -> dict:
    name = pipeline.name
    if stage == STAGE_INSTRUCTION:
        return {
            "kind": "write_text",
            "title": f"VisIT-Bench · New instructions: {name}",
            "instructions": prompts.INSTRUCTION_GUIDANCE,
            "config": {
                "min_length": INSTRUCTION_MIN_LENGTH,
                "max_length": 3000,
                "require_image": True,
            },
            "redundancy": 1,
            "max_redundancy": 1,
            "outcome_handler": INSTRUCTION_HANDLER,
        }
    if stage == STAGE_CAPTION:
        return {
            "kind": "write_text",
            "title": f"VisIT-Bench · Instruction-conditioned captions: {name}",
            "instructions": prompts.CAPTION_GUIDANCE,
            "config": {"min_length": pipeline.caption_min_length, "max_length": MAX_TEXT},
            "redundancy": 1,
            "max_redundancy": 1,
            "outcome_handler": CAPTION_HANDLER,
        }
    if stage == STAGE_REVIEW:
        return {
            "kind": "review",
            "title": f"VisIT-Bench · Verify references: {name}",
            "instructions": prompts.REVIEW_GUIDANCE,
            "config": {"criteria": prompts.REVIEW_CRITERIA, "reason_codes": prompts.REVIEW_REASONS},
            "redundancy": 1,
            "max_redundancy": 1,
            "outcome_handler": REVIEW_HANDLER,
        }
    return {
        "kind": "forced_choice",
        "title": f"VisIT-Bench · Which response is better: {name}",
        "instructions": prompts.RATING_GUIDANCE,
        "config": {},
        "redundancy": pipeline.votes_per_pair,
        # "5 crowdworker judgements each" (Sec. 4.2): a fixed number, no escalation.
        "max_redundancy": pipeline.votes_per_pair,
        "outcome_handler": RATING_HANDLER,
    }


def queue_ensure(*, pipeline: VisitPipeline, stage: str) -> TaskQueue:
    """The pipeline's queue of one stage, created on first use (under the pipeline's row lock,
    so two first tasks at once make one queue)."""
    field = QUEUE_FIELD[stage]
    with transaction.atomic():
        locked = (
            VisitPipeline.objects.select_for_update(of=("self",))
            .select_related(field)
            .get(pk=pipeline.pk)
        )
        queue = getattr(locked, field)
        if queue is None:
            spec = _queue_spec(locked, stage)
            queue = annotator_services.queue_create(
                project=locked.project,
                rule=TaskQueue.Rule.MAJORITY,
                **spec,
            )
            VisitPipeline.objects.filter(pk=pipeline.pk).update(**{field: queue})
    setattr(pipeline, field, queue)
    return queue


def _next_position(pipeline: VisitPipeline) -> int:
    last = pipeline.instances.aggregate(n=Max("position"))["n"]
    return 0 if last is None else last + 1


@dataclass
class SeedImage:
    """A seed example image: stored bytes (an upload) or a remote URL."""

    data: bytes | None = None
    name: str = ""
    url: str = ""
    source: str = ""
    licence: str = ""


def family_create(
    *,
    pipeline: VisitPipeline,
    name: str,
    description: str = "",
    multi_image: bool = False,
    seed_instruction: str,
    seed_response: str,
    seed_images: Sequence[SeedImage],
    created_by=None,
) -> VisitFamily:
    """A family with its seed example (image(s), instruction, example response; Sec. 2.1)."""
    name = _clean(name, "family name", 200)
    instruction = _text(seed_instruction, "example instruction", 2000)
    response = _text(seed_response, "example response")
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
    if VisitFamily.objects.filter(pipeline=pipeline, name=name).exists():
        raise Invalid(f"This pipeline already has a family “{name}”.")
    stored: list[Image | None] = []
    for s in seed_images:
        if s.data is None:
            stored.append(None)
            continue
        try:
            image, _new = assets.image_ingest(
                data=s.data,
                name=s.name or "seed",
                source=s.source,
                licence=s.licence,
                created_by=created_by,
            )
        except assets.ImageRejected as exc:
            raise Invalid(str(exc)) from None
        stored.append(image)
    try:
        with transaction.atomic():
            family = VisitFamily.objects.create(
                pipeline=pipeline,
                name=name,
                description=(description or "").strip(),
                multi_image=multi_image,
                origin=VisitFamily.Origin.AUTHORED,
                created_by=created_by,
            )
            seed = VisitInstance.objects.create(
                pipeline=pipeline,
                family=family,
                origin=VisitInstance.Origin.SEED,
                state=VisitInstance.State.SEED,
                position=_next_position(pipeline),
                instruction=instruction,
                author=created_by,
            )
            VisitImage.objects.bulk_create(
                [
                    VisitImage(
                        instance=seed, position=k, image=image, url=s.url if not image else ""
                    )
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
    except IntegrityError:
        raise Invalid(f"This pipeline already has a family “{name}”.") from None
    assets.thumbnails_make(image_ids=[i.pk for i in stored if i is not None])
    return family


def family_example(family: VisitFamily) -> VisitInstance | None:
    """What crowdworkers imitate: the seed example, else the family's first verified instance
    (imported categories come without a separate seed)."""
    base = VisitInstance.objects.filter(family=family).prefetch_related("images__image")
    seed = base.filter(origin=VisitInstance.Origin.SEED).first()
    return seed or base.filter(state=VisitInstance.State.VERIFIED).order_by("position").first()


def _example_reference(instance: VisitInstance) -> str:
    ref = instance.references.order_by("-round").first()
    return ref.text if ref else ""


# ============================================================================================
# 1b. Import of the published dataset CSV (categories → families, rows → instances)
# ============================================================================================
def _verdict_of(data: dict) -> str:
    if data.get("gpt4_correct"):
        return VisitReference.Verdict.CORRECT
    if data.get("problem_in_caption"):
        return VisitReference.Verdict.CAPTION
    if data.get("problem_in_gpt4"):
        return VisitReference.Verdict.RESPONSE
    return VisitReference.Verdict.INCORRECT


def _image_cell(cell: str) -> list[str]:
    """The ``image`` column: one URL, or (multi-image rows) a JSON array of URLs."""
    cell = (cell or "").strip()
    if cell.startswith("["):
        try:
            urls = json.loads(cell)
        except json.JSONDecodeError:
            return []
        return [u.strip() for u in urls if isinstance(u, str) and u.strip()]
    return [cell] if cell else []


@dataclass
class DatasetRow:
    line: int
    item_id: str
    data: dict
    urls: list[str]
    metadata: dict


def parse_dataset(content: str, filename: str = "") -> list[DatasetRow]:
    """The published CSV (``single_image_full_dataset.csv`` layout) checked through the
    evaluation app's parser (its instance ids, its 529-of-578 filter), plus the columns the
    export gives back (``public_images_metadata``)."""
    from evaluation import importers

    items = importers.parse_visit_items(content, filename)
    errors = _Errors()
    _header, records = importers.read_csv(content, importers.Errors())
    raw = dict(records)
    rows = []
    for item in items:
        record = raw.get(item.line, {})
        urls = _image_cell(item.data.get("image", ""))
        if not urls:
            errors.add(item.line, "the image column holds no URL")
            continue
        bad = [u for u in urls if urlparse(u).scheme not in ("http", "https")]
        if bad:
            errors.add(item.line, f"the image {bad[0][:80]!r} is not an http(s) URL")
            continue
        if not item.data.get("caption", "").strip():
            errors.add(item.line, "the instruction-conditioned caption is empty")
            continue
        meta_text = record.get("public_images_metadata", "") or ""
        try:
            # NaN / Infinity (pandas' missing values in the published file) become null:
            # PostgreSQL's jsonb cannot store them.
            meta = (
                json.loads(meta_text, parse_constant=lambda _c: None) if meta_text.strip() else {}
            )
        except json.JSONDecodeError:
            errors.add(item.line, "public_images_metadata is not valid JSON")
            continue
        problem = edge.row_problem({"public_images_metadata": meta, "image": urls})
        if problem:
            errors.add(item.line, problem)
            continue
        rows.append(
            DatasetRow(
                line=item.line,
                item_id=item.item_id,
                data=item.data,
                urls=urls,
                metadata={
                    "public_images_metadata": meta if isinstance(meta, dict) else {"value": meta},
                    "reference_output": item.data.get("reference_output", ""),
                    "line": item.line,
                },
            )
        )
    errors.raise_if_any("The VisIT-Bench CSV has errors; nothing was imported.")
    return rows


def dataset_import(
    *,
    pipeline: VisitPipeline,
    content: str,
    filename: str = "",
    created_by=None,
    job_id: int | None = None,
) -> dict:
    """All or nothing: every category becomes a family (reused when it exists), every row an
    instance with its image URL(s), its caption and the published GPT-4 response with its human
    rating (verified, or discarded with the reason of Table 2)."""
    rows = parse_dataset(content, filename)
    existing = set(
        pipeline.instances.filter(external_id__in=[r.item_id for r in rows]).values_list(
            "external_id", flat=True
        )
    )
    if existing:
        errors = _Errors()
        for r in rows:
            if r.item_id in existing:
                errors.add(r.line, f"instance {r.item_id} is already in this pipeline")
        errors.raise_if_any("Some rows were imported before; nothing was imported.")
    if job_id:
        job_progress(job_id=job_id, done=0, total=len(rows), message="Writing")
    now = timezone.now()
    with transaction.atomic():
        families = {f.name: f for f in pipeline.families.all()}
        for r in rows:
            category = (r.data.get("category") or "Uncategorised").strip()[:200]
            if category not in families:
                families[category] = VisitFamily.objects.create(
                    pipeline=pipeline,
                    name=category,
                    multi_image=len(r.urls) > 1,
                    origin=VisitFamily.Origin.IMPORTED,
                    created_by=created_by,
                )
        start = _next_position(pipeline)
        instances = VisitInstance.objects.bulk_create(
            [
                VisitInstance(
                    pipeline=pipeline,
                    family=families[(r.data.get("category") or "Uncategorised").strip()[:200]],
                    origin=VisitInstance.Origin.IMPORTED,
                    state=(
                        VisitInstance.State.VERIFIED
                        if _verdict_of(r.data) == VisitReference.Verdict.CORRECT
                        else VisitInstance.State.DISCARDED
                    ),
                    external_id=r.item_id,
                    position=start + k,
                    instruction=r.data["instruction"],
                    caption=r.data["caption"],
                    metadata=r.metadata,
                )
                for k, r in enumerate(rows)
            ],
            batch_size=1000,
        )
        if not all(i.pk for i in instances):  # backends without RETURNING
            by_id = dict(
                pipeline.instances.filter(external_id__in=[r.item_id for r in rows]).values_list(
                    "external_id", "pk"
                )
            )
            for inst in instances:
                inst.pk = by_id[inst.external_id]
        images, references = [], []
        for r, inst in zip(rows, instances, strict=True):
            single = len(r.urls) == 1
            for k, url in enumerate(r.urls):
                images.append(
                    VisitImage(
                        instance_id=inst.pk,
                        position=k,
                        url=url[:2000],
                        caption=r.data["caption"] if single else "",
                    )
                )
            references.append(
                VisitReference(
                    instance_id=inst.pk,
                    round=1,
                    text=r.data.get("reference", ""),
                    source=VisitReference.Source.IMPORTED,
                    verdict=_verdict_of(r.data),
                    decided_at=now,
                )
            )
        VisitImage.objects.bulk_create(images, batch_size=1000)
        VisitReference.objects.bulk_create(references, batch_size=1000)
    if job_id:
        job_progress(job_id=job_id, done=len(rows), message=f"Imported {len(rows)} instances")
    return {
        "instances": len(rows),
        "families": len({r.data.get("category") for r in rows}),
        "verified": sum(1 for r in rows if r.data.get("gpt4_correct")),
    }


@dataclass
class CaptionedRow:
    """An instruction about remote image(s) with its instruction-conditioned caption, no
    reference yet (e.g. instances collected elsewhere whose references are to be drafted)."""

    category: str
    instruction: str
    caption: str
    urls: list[str]
    external_id: str = ""
    metadata: dict | None = None


def instances_import_captioned(
    *, pipeline: VisitPipeline, rows: Sequence[CaptionedRow], created_by=None
) -> list[VisitInstance]:
    """Add captioned instances (families by category) that wait for their reference draft; the
    draft job then sends them to verification like crowd-written ones."""
    errors = _Errors()
    for line, row in enumerate(rows, start=1):
        if not row.instruction.strip() or not row.caption.strip():
            errors.add(line, "an instance needs an instruction and a caption")
        if not row.urls or any(urlparse(u).scheme not in ("http", "https") for u in row.urls):
            errors.add(line, "every image must be an http(s) URL")
    errors.raise_if_any("Some instances cannot be added; nothing was added.")
    out = []
    with transaction.atomic():
        families = {f.name: f for f in pipeline.families.all()}
        position = _next_position(pipeline)
        for row in rows:
            name = (row.category or "Uncategorised").strip()[:200]
            if name not in families:
                families[name] = VisitFamily.objects.create(
                    pipeline=pipeline,
                    name=name,
                    multi_image=len(row.urls) > 1,
                    origin=VisitFamily.Origin.IMPORTED,
                    created_by=created_by,
                )
            instance = VisitInstance.objects.create(
                pipeline=pipeline,
                family=families[name],
                origin=VisitInstance.Origin.IMPORTED,
                state=VisitInstance.State.DRAFTING,
                external_id=row.external_id[:200],
                position=position,
                instruction=row.instruction.strip(),
                caption=row.caption.strip(),
                metadata=row.metadata or {},
            )
            position += 1
            VisitImage.objects.bulk_create(
                [
                    VisitImage(
                        instance=instance,
                        position=k,
                        url=url[:2000],
                        caption=row.caption.strip() if len(row.urls) == 1 else "",
                    )
                    for k, url in enumerate(row.urls)
                ]
            )
            out.append(instance)
    return out


def upload_text(upload) -> str:
    if upload is None:
        raise Invalid("Choose the file to upload.")
    name = PurePosixPath(str(getattr(upload, "name", "") or "upload")).name
    if upload.size > MAX_TABLE_BYTES:
        raise Invalid(f"{name} is larger than {MAX_TABLE_BYTES // 2**20} MB.")
    upload.seek(0)
    try:
        return edge.decode_utf8(upload.read())
    except edge.NotUtf8 as exc:
        raise Invalid(f"{name} is not UTF-8 text ({exc}).") from None


def dataset_import_start(*, pipeline: VisitPipeline, upload, created_by=None) -> tuple[Job, int]:
    """Check the CSV now (line-numbered errors), import it in the ``visit.import_dataset`` job."""
    content = upload_text(upload)
    filename = PurePosixPath(str(getattr(upload, "name", "") or "")).name
    rows = parse_dataset(content, filename)
    taken = pipeline.instances.filter(external_id__in=[r.item_id for r in rows]).count()
    if taken:
        raise Invalid(f"{taken} of these rows are already in this pipeline; nothing was imported.")
    with corpus_import.uploads_deleted_on_error([]) as stored:
        stored.append(
            default_storage.save(
                f"curation/uploads/visit-{pipeline.pk}-{timezone.now():%Y%m%d%H%M%S}.csv",
                ContentFile(content.encode("utf-8")),
            )
        )
        job = job_enqueue(
            kind=IMPORT_JOB,
            params={"pipeline_id": pipeline.pk, "upload": stored[0], "filename": filename},
            created_by=created_by,
            project=pipeline.project,
            total=len(rows),
        )
    return job, len(rows)


def dataset_import_run(*, params: dict, created_by=None, job_id: int | None = None) -> dict:
    """The import job: the stored CSV is deleted when it succeeds or is refused (another failure
    keeps it for the job page's Retry)."""
    pipeline = VisitPipeline.objects.get(pk=params["pipeline_id"])
    with corpus_import.uploads_kept_for_retry([params["upload"]]):
        with default_storage.open(params["upload"], "rb") as handle:
            content = handle.read().decode("utf-8-sig")
        return dataset_import(
            pipeline=pipeline,
            content=content,
            filename=params.get("filename", ""),
            created_by=created_by,
            job_id=job_id,
        )


# ============================================================================================
# 1c. Remote images: fetched when reachable, otherwise kept as links
# ============================================================================================
class FetchFailed(Exception):
    """A remote image could not be fetched; ``reason`` is shown next to its link."""

    def __init__(self, reason: str, *, unreachable: bool = False):
        super().__init__(reason)
        self.reason = reason
        self.unreachable = unreachable


def fetch_remote(url: str, *, timeout: float = FETCH_TIMEOUT_S, max_bytes: int | None = None):
    """The bytes at an http(s) URL within ``timeout`` seconds. Hosts on private, loopback or
    link-local networks are refused (a dataset URL must not reach into the server's network)."""
    max_bytes = max_bytes or assets.max_image_bytes()
    parsed = urlparse(url)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise FetchFailed("not an http(s) URL")
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    try:
        infos = socket.getaddrinfo(parsed.hostname, port, type=socket.SOCK_STREAM)
    except OSError as exc:
        raise FetchFailed(f"host not reachable ({exc})"[:300], unreachable=True) from None
    for info in infos:
        address = ipaddress.ip_address(info[4][0])
        if not address.is_global:
            raise FetchFailed("refused: the host is on a private or local network")
    request = urllib.request.Request(url, headers={"User-Agent": "Blindspot (dataset image)"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310
            data = response.read(max_bytes + 1)
    except urllib.error.HTTPError as exc:
        raise FetchFailed(f"HTTP {exc.code}") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise FetchFailed(f"not reachable ({reason})"[:300], unreachable=True) from None
    if len(data) > max_bytes:
        raise FetchFailed(f"larger than {max_bytes // 2**20} MB")
    return data


def _remote_name(url: str) -> str:
    """A file name without a suffix (dots become underscores): the bytes decide the format."""
    stem = PurePosixPath(urlparse(url).path).stem
    return re.sub(r"[^A-Za-z0-9_-]+", "_", stem)[:100] or "image"


def _licence_of(instance: VisitInstance) -> tuple[str, str]:
    meta = (instance.metadata or {}).get("public_images_metadata") or {}
    return str(meta.get("License", "") or ""), str(meta.get("Author", "") or "")


def images_fetch(
    *, pipeline: VisitPipeline, job_id: int | None = None, retry_failed: bool = False
) -> dict:
    """Fetch the remote images not stored yet. Stops after a few unreachable hosts in a row
    (no network: the rest stay links, each page says so). Idempotent: stored ones are skipped."""
    todo = VisitImage.objects.filter(
        instance__pipeline=pipeline, image__isnull=True
    ).select_related("instance")
    if not retry_failed:
        todo = todo.filter(fetch_error="")
    todo = list(todo.order_by("instance__position", "position"))
    if job_id:
        job_progress(job_id=job_id, done=0, total=len(todo), message="Fetching")
    fetched = failed = streak = 0
    stopped = ""
    new_ids = []
    for done, visit_image in enumerate(todo, start=1):
        try:
            data = fetch_remote(visit_image.url)
            licence, author = _licence_of(visit_image.instance)
            image, _new = assets.image_ingest(
                data=data,
                # The content decides the format: a URL's suffix is often wrong.
                name=_remote_name(visit_image.url),
                source=visit_image.url,
                licence=licence,
                attribution=author,
            )
        except (FetchFailed, assets.ImageRejected) as exc:
            reason = exc.reason if isinstance(exc, FetchFailed) else str(exc)
            VisitImage.objects.filter(pk=visit_image.pk).update(fetch_error=reason[:300])
            failed += 1
            streak = streak + 1 if getattr(exc, "unreachable", False) else 0
            if streak >= FETCH_GIVE_UP_AFTER:
                stopped = (
                    f"Stopped after {streak} unreachable images in a row: the network seems "
                    f"down; {len(todo) - done} images stay links."
                )
                break
        else:
            VisitImage.objects.filter(pk=visit_image.pk).update(image=image, fetch_error="")
            new_ids.append(image.pk)
            fetched += 1
            streak = 0
        if job_id and done % 10 == 0:
            job_progress(job_id=job_id, done=done, message=f"{fetched} fetched, {failed} failed")
    assets.thumbnails_make(image_ids=new_ids)
    if job_id:
        job_progress(
            job_id=job_id,
            done=len(todo),
            message=stopped or f"{fetched} fetched, {failed} kept as links",
        )
    return {"fetched": fetched, "failed": failed, "stopped": stopped}


def images_fetch_start(*, pipeline: VisitPipeline, created_by=None, retry_failed=True) -> Job:
    n = VisitImage.objects.filter(instance__pipeline=pipeline, image__isnull=True).count()
    if not n:
        raise Invalid("Every image of this pipeline is stored already.")
    return job_enqueue(
        kind=FETCH_JOB,
        params={"pipeline_id": pipeline.pk, "retry_failed": bool(retry_failed)},
        created_by=created_by,
        project=pipeline.project,
        total=n,
    )


# ============================================================================================
# 2. Instruction generation (Sec. 2.1, Fig. 11)
# ============================================================================================
def _instruction_payload(family: VisitFamily, example: VisitInstance | None) -> dict:
    kind = "several images" if family.multi_image else "one image"
    payload: dict[str, Any] = {
        "prompt": (
            f"Instruction family: {family.name} ({kind}). "
            + (f"{family.description} " if family.description else "")
            + "Upload a permissively licensed image and write a NEW instruction of this family "
            "about it; fill in the three lines (Instruction, Image source, Image licence)."
        ),
        "draft": prompts.INSTRUCTION_DRAFT + ("Other image: \n" if family.multi_image else ""),
    }
    if example is not None:
        payload["images"] = _payload_images(example)
        links = _remote_links(example)
        payload["context"] = (
            f"Example instruction: {example.instruction}\n"
            f"Example response: {_example_reference(example)}"
            + (f"\nExample image(s): {' '.join(links)}" if links else "")
        )
    return payload


def instruction_tasks_create(*, family: VisitFamily, count: int, created_by=None) -> int:
    """``count`` instruction-generation tasks showing the family's example."""
    if not 1 <= count <= MAX_INSTRUCTION_TASKS:
        raise Invalid(f"Ask for between 1 and {MAX_INSTRUCTION_TASKS} new instructions.")
    pipeline = family.pipeline
    example = family_example(family)
    if example is None:
        raise Invalid(
            f"The family “{family.name}” has no example yet: create it with a seed example, or "
            "import verified instances of it."
        )
    queue = queue_ensure(pipeline=pipeline, stage=STAGE_INSTRUCTION)
    payload = _instruction_payload(family, example)
    stamp = timezone.now().strftime("%Y%m%d%H%M%S%f")
    rows = [
        annotator_services.TaskRow(
            payload=payload, external_id=f"visit-instr-{family.pk}-{stamp}-{k}"
        )
        for k in range(count)
    ]
    with transaction.atomic():
        annotator_services.tasks_bulk_create(queue=queue, rows=rows)
        tasks = Task.objects.filter(queue=queue, external_id__in=[r.external_id for r in rows])
        VisitTask.objects.bulk_create(
            [
                VisitTask(
                    task=t, pipeline=pipeline, stage=VisitTask.Stage.INSTRUCTION, family=family
                )
                for t in tasks
            ]
        )
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


def _answers(task: Task) -> list[Annotation]:
    return list(
        Annotation.objects.filter(task=task, is_gold=False)
        .select_related("annotator")
        .order_by("id")
    )


def instruction_record(*, task: Task, decision) -> VisitInstance | None:
    """The instruction task's outcome (inside the submit's transaction): store the image with its
    licence and source, create the instance and its caption task(s). Anything missing refuses the
    submission with a message, so nothing half-done is kept."""
    link = (
        VisitTask.objects.select_related("family__pipeline__project")
        .filter(task_id=task.pk, stage=VisitTask.Stage.INSTRUCTION)
        .first()
    )
    answers = _answers(task)
    if link is None or not answers:
        return None
    answer = answers[-1]
    response = answer.response or {}
    try:
        form = prompts.parse_instruction_form(response.get("text", ""))
    except prompts.FormProblem as exc:
        raise Invalid(str(exc)) from None
    family = link.family
    total = 1 + len(form.other_images)
    if family.multi_image and total < 2:
        raise Invalid(
            "This family asks for several images: upload one and list the others as "
            "'Other image: <URL>' lines."
        )
    if not family.multi_image and form.other_images:
        raise Invalid("This family takes one image: remove the 'Other image' lines.")
    name = _upload_name(response.get("image") or "", task)
    if not name or not default_storage.exists(name):
        raise Invalid("Upload the image the instruction is about.")
    with default_storage.open(name, "rb") as handle:
        data = handle.read()
    try:
        image, _new = assets.image_ingest(
            data=data,
            name=PurePosixPath(name).name,
            source=form.source,
            licence=form.licence,
            attribution=answer.annotator.get_username(),
            created_by=answer.annotator,
        )
    except assets.ImageRejected as exc:
        raise Invalid(str(exc)) from None
    pipeline = family.pipeline
    instance = VisitInstance.objects.create(
        pipeline=pipeline,
        family=family,
        origin=VisitInstance.Origin.CROWD,
        state=VisitInstance.State.CAPTIONING,
        position=_next_position(pipeline),
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
    _caption_tasks_create(instance)
    return instance


# ============================================================================================
# 3. Instruction-conditioned captions (Sec. 2.1, Fig. 12)
# ============================================================================================
def _caption_payload(instance: VisitInstance, visit_image: VisitImage, n: int, note: str) -> dict:
    which = f"image {visit_image.position + 1} of {n}" if n > 1 else "the image"
    payload: dict[str, Any] = {
        "prompt": (
            f"Instruction: {instance.instruction}\n\nDescribe {which} so that someone who only "
            "reads your caption could follow this instruction."
        ),
    }
    if visit_image.image_id:
        payload["images"] = [
            {
                "url": media_url(visit_image.image.file.name),
                "alt": f"Image {visit_image.position + 1}",
            }
        ]
    context = [f"Family: {instance.family.name}"]
    if not visit_image.image_id:
        context.append(f"The image is not stored here; open it at {visit_image.url}")
    if note:
        context.append(note)
    payload["context"] = " · ".join(context)
    if visit_image.caption:
        payload["draft"] = visit_image.caption
    return payload


def _caption_tasks_create(instance: VisitInstance, note: str = "") -> int:
    """One caption task per image of the instance for its current round (Fig. 4)."""
    pipeline = instance.pipeline
    queue = queue_ensure(pipeline=pipeline, stage=STAGE_CAPTION)
    images = list(instance.images.select_related("image").order_by("position"))
    rows = [
        annotator_services.TaskRow(
            payload=_caption_payload(instance, img, len(images), note),
            external_id=f"visit-caption-{img.pk}-r{instance.caption_round}",
        )
        for img in images
    ]
    annotator_services.tasks_bulk_create(queue=queue, rows=rows)
    tasks = {
        t.external_id: t
        for t in Task.objects.filter(queue=queue, external_id__in=[r.external_id for r in rows])
    }
    VisitTask.objects.bulk_create(
        [
            VisitTask(
                task=tasks[row.external_id],
                pipeline=pipeline,
                stage=VisitTask.Stage.CAPTION,
                image=img,
                round=instance.caption_round,
            )
            for row, img in zip(rows, images, strict=True)
        ]
    )
    return len(rows)


def combined_caption(images: Sequence[VisitImage]) -> str:
    """One caption per image, labelled for multi-image instances (Fig. 4)."""
    if len(images) == 1:
        return images[0].caption.strip()
    return "\n".join(f"Image {k}: {img.caption.strip()}" for k, img in enumerate(images, start=1))


def caption_record(*, task: Task, decision) -> VisitInstance | None:
    """A caption task's outcome: store the caption; when every image of the instance has its
    caption of this round, the instance waits for its reference draft (a job drafts it)."""
    link = (
        VisitTask.objects.select_related("image__instance__pipeline")
        .filter(task_id=task.pk, stage=VisitTask.Stage.CAPTION)
        .first()
    )
    answers = _answers(task)
    if link is None or not answers:
        return None
    instance = VisitInstance.objects.select_for_update().get(pk=link.image.instance_id)
    if instance.state != VisitInstance.State.CAPTIONING or link.round != instance.caption_round:
        return instance
    text = (answers[-1].response or {}).get("text", "").strip()
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
    _draft_later(instance.pipeline)
    return instance


# ============================================================================================
# 4. References: LLM draft (Sec. 2.1 prompt) and human verification (Figs. 13–14, Table 2)
# ============================================================================================
def _draft_later(pipeline: VisitPipeline) -> None:
    """One queued drafting job per pipeline picks up every captioned instance (after commit)."""
    waiting = Job.objects.filter(
        kind=DRAFT_JOB, status=Job.Status.QUEUED, params__pipeline_id=pipeline.pk
    ).exists()
    if not waiting:
        job_enqueue(kind=DRAFT_JOB, params={"pipeline_id": pipeline.pk}, project=pipeline.project)


def reference_template(*, multi: bool):
    prompts.templates_ensure()
    name = prompts.REFERENCE_MULTI_TEMPLATE if multi else prompts.REFERENCE_TEMPLATE
    return gateway.template_current(name)


def reference_generate(
    *, instance: VisitInstance, provider: LLMProvider | None = None, job_id=None, created_by=None
) -> Generation:
    """One reference draft through the gateway (provenance in the Generation)."""
    images = instance.images.count()
    multi = images > 1
    variables = {"caption": instance.caption, "instruction": instance.instruction}
    if multi:
        variables["count"] = images
    return gateway.generate(
        template=reference_template(multi=multi),
        variables=variables,
        project=instance.pipeline.project,
        provider=provider or instance.pipeline.provider,
        purpose=prompts.REFERENCE_PURPOSE,
        seed=instance.caption_round,
        job=job_id,
        created_by=created_by,
        item_key=f"visit-ref-{instance.pk}-r{instance.caption_round}",
    )


def _drafter_label(generation: Generation) -> str:
    if generation.is_offline:
        return "offline rule-based drafter (no LLM configured; demo only)"
    return generation.model


def _review_payload(instance: VisitInstance, reference: VisitReference, drafter: str) -> dict:
    fields = {
        "Family": instance.family.name,
        "Instruction": instance.instruction,
        "Instruction-conditioned caption": instance.caption,
        "Response": reference.text,
        "Drafted by": drafter,
    }
    links = _remote_links(instance)
    if links:
        fields["Image links (not stored here)"] = " ".join(links)
    payload: dict[str, Any] = {"title": prompts.REVIEW_QUESTION, "fields": fields}
    images = _payload_images(instance)
    if images:
        payload["images"] = images
    return payload


def reference_record(
    *, instance: VisitInstance, generation: Generation, queue: TaskQueue
) -> VisitReference | None:
    """Store a draft and put it in review (one transaction); a failed draft is noted on the
    instance, which stays waiting for a retry."""
    with transaction.atomic():
        instance = (
            VisitInstance.objects.select_for_update()
            .select_related("family", "pipeline")
            .get(pk=instance.pk)
        )
        if instance.state != VisitInstance.State.DRAFTING:
            return None
        text = generation.output if isinstance(generation.output, str) else ""
        text = text.strip()
        if generation.status != Generation.Status.OK or not text:
            instance.draft_error = (generation.error or "The drafter returned no text.")[:2000]
            instance.save(update_fields=["draft_error"])
            return None
        reference, _created = VisitReference.objects.update_or_create(
            instance=instance,
            round=instance.caption_round,
            defaults={
                "text": text[:20000],
                "source": VisitReference.Source.LLM,
                "generation": generation,
                "offline": generation.is_offline,
                "verdict": VisitReference.Verdict.PENDING,
            },
        )
        row = annotator_services.TaskRow(
            payload=_review_payload(instance, reference, _drafter_label(generation)),
            external_id=f"visit-ref-{reference.pk}",
        )
        annotator_services.tasks_bulk_create(queue=queue, rows=[row])
        task = Task.objects.get(queue=queue, external_id=row.external_id)
        VisitReference.objects.filter(pk=reference.pk).update(task=task)
        reference.task = task
        instance.state = VisitInstance.State.VERIFYING
        instance.draft_error = ""
        instance.save(update_fields=["state", "draft_error"])
    return reference


def references_draft(
    *,
    pipeline: VisitPipeline,
    provider: LLMProvider | None = None,
    job_id: int | None = None,
    created_by=None,
) -> dict:
    """Draft the reference of every instance waiting for one and send it to review. LLM calls
    happen outside any transaction. Idempotent: instances already in review are skipped."""
    queue = queue_ensure(pipeline=pipeline, stage=STAGE_REVIEW)
    prompts.templates_ensure()
    instances = list(
        pipeline.instances.filter(state=VisitInstance.State.DRAFTING)
        .select_related("pipeline__project", "pipeline__provider", "family")
        .order_by("position", "id")
    )
    if job_id:
        job_progress(job_id=job_id, done=0, total=len(instances), message="Drafting")
    counts = {"drafted": 0, "failed": 0, "offline": 0}
    for done, instance in enumerate(instances, start=1):
        generation = reference_generate(
            instance=instance, provider=provider, job_id=job_id, created_by=created_by
        )
        reference = reference_record(instance=instance, generation=generation, queue=queue)
        if reference is not None:
            counts["drafted"] += 1
            counts["offline"] += int(reference.offline)
        else:
            counts["failed"] += int(generation.status != Generation.Status.OK)
        if job_id:
            job_progress(
                job_id=job_id,
                done=done,
                message=f"{counts['drafted']} in review, {counts['failed']} failed",
            )
    return counts


def references_draft_start(*, pipeline: VisitPipeline, created_by=None) -> Job:
    todo = pipeline.instances.filter(state=VisitInstance.State.DRAFTING).count()
    if not todo:
        raise Invalid("No instance waits for its reference: captions come first.")
    return job_enqueue(
        kind=DRAFT_JOB,
        params={"pipeline_id": pipeline.pk},
        created_by=created_by,
        project=pipeline.project,
        total=todo,
    )


def _review_verdict(decision, answers: Sequence[Annotation]) -> str:
    if decision.decided and decision.label == "accept":
        return VisitReference.Verdict.CORRECT
    reasons = Counter(
        (a.response or {}).get("reason")
        for a in answers
        if (a.response or {}).get("verdict") == "reject" and (a.response or {}).get("reason")
    )
    if not reasons:
        return VisitReference.Verdict.INCORRECT
    # Most named reason; a tie goes to the caption, the problem a rewrite can fix.
    best = sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0] != prompts.REASON_CAPTION))[0]
    return {
        prompts.REASON_CAPTION: VisitReference.Verdict.CAPTION,
        prompts.REASON_RESPONSE: VisitReference.Verdict.RESPONSE,
    }.get(best[0], VisitReference.Verdict.INCORRECT)


def reference_review_record(*, task: Task, decision) -> VisitReference | None:
    """The review queue's outcome: correct → verified; problem in the response (or no reason) →
    discarded; problem in the caption → the caption task again (with the old caption as the
    draft and the reviewers' comments), or discarded when the rewrites are used up."""
    reference = (
        VisitReference.objects.select_for_update()
        .select_related("instance__pipeline", "instance__family")
        .filter(task_id=task.pk)
        .first()
    )
    if reference is None or reference.verdict != VisitReference.Verdict.PENDING:
        return reference
    answers = _answers(task)
    verdict = _review_verdict(decision, answers)
    comments = [a.response.get("comment", "") for a in answers if (a.response or {}).get("comment")]
    reference.verdict = verdict
    reference.votes = dict(decision.counts or {})
    reference.comments = comments
    reference.decided_at = timezone.now()
    reference.save(update_fields=["verdict", "votes", "comments", "decided_at"])
    instance = VisitInstance.objects.select_for_update().get(pk=reference.instance_id)
    pipeline = reference.instance.pipeline
    if verdict == VisitReference.Verdict.CORRECT:
        instance.state = VisitInstance.State.VERIFIED
        instance.save(update_fields=["state"])
    elif verdict == VisitReference.Verdict.CAPTION and (
        instance.caption_round <= pipeline.max_caption_rounds
    ):
        instance.caption_round += 1
        instance.state = VisitInstance.State.CAPTIONING
        instance.save(update_fields=["caption_round", "state"])
        instance.pipeline = pipeline
        note = "A reviewer found that the caption misses something the instruction needs."
        if comments:
            note += " Their comment: " + " / ".join(comments)[:500]
        _caption_tasks_create(instance, note=note)
    else:
        instance.state = VisitInstance.State.DISCARDED
        instance.save(update_fields=["state"])
    return reference


# ============================================================================================
# 5. Publishing a version of the evaluation app, and its players' responses
# ============================================================================================
def version_of(pipeline: VisitPipeline):
    """The pipeline's current evaluation version, or Invalid saying to publish first."""
    from evaluation.models import BenchmarkVersion

    version = (
        BenchmarkVersion.objects.select_related("benchmark").filter(pk=pipeline.version_id).first()
        if pipeline.version_id
        else None
    )
    if version is None:
        raise Invalid("Publish the verified instances as a version first.")
    return version


def _image_column(urls: list[str]) -> str:
    return urls[0] if len(urls) == 1 else json.dumps(urls)


def version_rows(pipeline: VisitPipeline) -> list:
    """Item rows of every instance with a final verdict, in the published layout (the evaluation
    app's VisIT-Bench item data) and in pipeline order. Kept for leaderboards: correct only."""
    from evaluation import importers

    instances = (
        pipeline.instances.exclude(origin=VisitInstance.Origin.SEED)
        .filter(state__in=[VisitInstance.State.VERIFIED, VisitInstance.State.DISCARDED])
        .select_related("family")
        .prefetch_related("images__image", "references")
        .order_by("position", "id")
    )
    rows = []
    used: set[str] = {x.external_id for x in instances if x.external_id}
    for line, instance in enumerate(instances, start=1):
        references = sorted(instance.references.all(), key=lambda r: r.round)
        if not references or references[-1].verdict == VisitReference.Verdict.PENDING:
            continue
        reference = references[-1]
        urls = [image_url(img) for img in instance.images.all()]
        image = _image_column(urls)
        item_id = instance.external_id
        if not item_id:
            # The evaluation app's id of (image, instruction); a repeat gets "~2", "~3".
            key = importers.visit_key(image, instance.instruction)
            item_id, k = key, 1
            while item_id in used:
                k += 1
                item_id = f"{key}~{k}"
            used.add(item_id)
        verdict = reference.verdict
        metadata = instance.metadata or {}
        data = {
            "category": instance.family.name,
            "image": image,
            "images": urls,
            "instruction": instance.instruction,
            "caption": instance.caption,
            "reference": reference.text,
            "reference_output": metadata.get("reference_output", ""),
            "gpt4_correct": verdict == VisitReference.Verdict.CORRECT,
            "problem_in_caption": verdict == VisitReference.Verdict.CAPTION,
            "problem_in_gpt4": verdict == VisitReference.Verdict.RESPONSE,
            "public_images_metadata": metadata.get("public_images_metadata", {}),
            "multi_image": len(urls) > 1,
            "instance": instance.pk,
            "reference_source": "offline drafter" if reference.offline else reference.source,
        }
        kept = verdict == VisitReference.Verdict.CORRECT
        rows.append((instance, importers.ItemRow(item_id=item_id, data=data, line=line, kept=kept)))
    return rows


def version_publish(
    *, pipeline: VisitPipeline, label: str, benchmark_name: str = "", created_by=None
):
    """Freeze the instances with a final verdict as a VisIT-Bench version of the evaluation app
    (items in the published layout; only verified ones count on leaderboards). New instances
    later go into a new version."""
    from evaluation import services as eval_services
    from evaluation.models import Family

    rows = version_rows(pipeline)
    if not rows:
        raise Invalid("No instance has a verified (or rejected) reference yet: nothing to publish.")
    # Benchmark names are unique per project: the pipeline's project's benchmark of this name
    # gets the version, whatever other projects call theirs.
    name = _clean(benchmark_name or pipeline.name, "benchmark name", 200)
    with transaction.atomic():
        version = eval_services.benchmark_version_create(
            family=Family.VISIT,
            name=name,
            project=pipeline.project,
            label=label,
            rows=[row for _inst, row in rows],
            publish=True,
            source=f"Blindspot VisIT-Bench pipeline #{pipeline.pk}",
            created_by=created_by,
        )
        for instance, row in rows:
            if not instance.external_id:
                VisitInstance.objects.filter(pk=instance.pk).update(external_id=row.item_id)
        VisitPipeline.objects.filter(pk=pipeline.pk).update(
            version_id=version.pk, human_set_id=None
        )
    pipeline.version_id, pipeline.human_set_id = version.pk, None
    return version


def responses_of(version) -> dict[str, dict[str, str]]:
    """{item id: {player: response}} over the version's verified (kept) instances: the
    reference and every run's answers, as the judge runner sees them (``judge_players``)."""
    from evaluation import runners

    ids = dict(version.items.filter(kept=True).values_list("pk", "item_id"))
    responses: dict[str, dict[str, str]] = {item_id: {} for item_id in ids.values()}
    for player, answers in runners.judge_players(version).items():
        for item_pk, text in answers.items():
            if item_pk in ids:
                responses[ids[item_pk]][player] = text
    return responses


# ============================================================================================
# 6. Human pairwise evaluation (Sec. 4.2, Fig. 15) fed to the evaluation app
# ============================================================================================
def _rating_payload(instance: VisitInstance, item_data: dict, a: str, ra: str, b: str, rb: str):
    payload: dict[str, Any] = {
        "instruction": item_data.get("instruction") or instance.instruction,
        "caption": item_data.get("caption") or instance.caption,
        "category": item_data.get("category", ""),
        "candidates": [{"id": a, "text": ra}, {"id": b, "text": rb}],
    }
    images = _payload_images(instance)
    if images:
        payload["images"] = images
    links = _remote_links(instance)
    if links:
        payload["source_image"] = links[0]
    return payload


def pairs_sample(
    *, pipeline: VisitPipeline, n: int, seed: int = 0, votes: int | None = None, created_by=None
) -> int:
    """Sample ``n`` new (instance, model A, model B) tuples among the version's verified
    instances (the reference counts as a model) into the forced-choice queue, ``votes`` people
    each, sides randomised per person by the queue (and un-swapped when recorded)."""
    if not 1 <= n <= MAX_PAIRS_PER_CALL:
        raise Invalid(f"Sample between 1 and {MAX_PAIRS_PER_CALL} tuples at a time.")
    if votes is not None and votes != pipeline.votes_per_pair:
        pipeline = pipeline_settings(pipeline=pipeline, votes_per_pair=votes)
    version = version_of(pipeline)
    responses = responses_of(version)
    players = {p for r in responses.values() for p in r}
    if len(players) < 2:
        raise Invalid(
            "Only the reference has responses: import at least one model's responses for this "
            "version first."
        )
    exclude = set(
        VisitPair.objects.filter(pipeline=pipeline, version_id=version.pk).values_list(
            "item_id", "pair_key"
        )
    )
    tuples = sampling.rating_tuples(responses, n=n, seed=seed, exclude=exclude)
    if not tuples:
        raise Invalid("Every (instance, pair of models) of this version is sampled already.")
    queue = queue_ensure(pipeline=pipeline, stage=STAGE_RATING)
    items = {
        item_id: data
        for item_id, data in version.items.filter(
            item_id__in=[t.instance_id for t in tuples]
        ).values_list("item_id", "data")
    }
    instances = {
        i.pk: i
        for i in VisitInstance.objects.filter(
            pk__in=[items[t.instance_id].get("instance") for t in tuples]
        ).prefetch_related("images__image")
    }
    with transaction.atomic():
        pairs = []
        for t in tuples:
            pairs.append(
                VisitPair.objects.create(
                    pipeline=pipeline,
                    instance=instances[items[t.instance_id]["instance"]],
                    version_id=version.pk,
                    item_id=t.instance_id,
                    model_a=t.model_a,
                    model_b=t.model_b,
                    pair_key=sampling.pair_key(t.model_a, t.model_b),
                    response_a=responses[t.instance_id][t.model_a],
                    response_b=responses[t.instance_id][t.model_b],
                    seed=seed,
                )
            )
        rows = [
            annotator_services.TaskRow(
                payload=_rating_payload(
                    p.instance, items[p.item_id], p.model_a, p.response_a, p.model_b, p.response_b
                ),
                external_id=f"visit-pair-{p.pk}",
            )
            for p in pairs
        ]
        annotator_services.tasks_bulk_create(queue=queue, rows=rows)
        tasks = dict(
            Task.objects.filter(
                queue=queue, external_id__in=[r.external_id for r in rows]
            ).values_list("external_id", "pk")
        )
        for p in pairs:
            VisitPair.objects.filter(pk=p.pk).update(task_id=tasks[f"visit-pair-{p.pk}"])
    return len(pairs)


def pair_rating_record(*, task: Task, decision) -> VisitPair | None:
    """A rated tuple: votes per response (the kind un-swaps the sides), the majority winner, and
    a sync of the crowd votes to the evaluation app (one queued job per pipeline)."""
    pair = (
        VisitPair.objects.select_for_update(of=("self",))
        .select_related("pipeline__project")
        .filter(task_id=task.pk)
        .first()
    )
    if pair is None or pair.decided_at is not None:
        return pair
    counts = decision.counts or {}
    pair.votes_a = int(counts.get(pair.model_a, 0))
    pair.votes_b = int(counts.get(pair.model_b, 0))
    if pair.votes_a == pair.votes_b:
        pair.winner = "tie"
    else:
        pair.winner = pair.model_a if pair.votes_a > pair.votes_b else pair.model_b
    pair.decided_at = timezone.now()
    pair.save(update_fields=["votes_a", "votes_b", "winner", "decided_at"])
    _sync_later(pair.pipeline)
    return pair


def _sync_later(pipeline: VisitPipeline) -> None:
    """One queued sync job per pipeline carries every vote decided until it runs."""
    waiting = Job.objects.filter(
        kind=SYNC_JOB, status=Job.Status.QUEUED, params__pipeline_id=pipeline.pk
    ).exists()
    if not waiting:
        job_enqueue(kind=SYNC_JOB, params={"pipeline_id": pipeline.pk}, project=pipeline.project)


def human_set_label(pipeline: VisitPipeline) -> str:
    return f"Crowd votes · {pipeline.name}"[:120]


def human_votes_sync(
    *,
    pipeline: VisitPipeline,
    rounds: int | None = None,
    text_metrics: bool = True,
    job_id: int | None = None,
) -> dict:
    """Give the evaluation app this pipeline's rated tuples as one crowd-vote judgment set (the
    published ``visit_bench_human_preferences`` semantics: votes per response, majority winner),
    replacing the one it gave before, then rate every judgment set of the version: Elo and
    win-rate vs the reference (Table 3) and each judge's agreement with the crowd by 5/5, 4/5,
    3/5 stratum (Fig. 7) are computed by ``evaluation.services.judgments_compute``."""
    from evaluation import importers
    from evaluation import services as eval_services
    from evaluation.models import JudgmentSet

    version = version_of(pipeline)
    pairs = list(
        VisitPair.objects.filter(
            pipeline=pipeline, version_id=version.pk, decided_at__isnull=False
        ).order_by("decided_at", "id")
    )
    items = {
        item_id: data
        for item_id, data in version.items.filter(
            item_id__in={p.item_id for p in pairs}
        ).values_list("item_id", "data")
    }
    rows = [
        importers.JudgmentRow(
            line=k,
            image=items[p.item_id].get("image", ""),
            instruction=items[p.item_id].get("instruction", ""),
            model_a=p.model_a,
            model_b=p.model_b,
            response_a=p.response_a,
            response_b=p.response_b,
            votes_a=p.votes_a,
            votes_b=p.votes_b,
            winner=p.winner if p.winner in (p.model_a, p.model_b) else "tie",
        )
        for k, p in enumerate(pairs, start=1)
    ]
    with transaction.atomic():
        locked = VisitPipeline.objects.select_for_update().get(pk=pipeline.pk)
        previous = JudgmentSet.objects.filter(pk=locked.human_set_id, version=version).first()
        label = human_set_label(locked)
        if previous is not None:
            label = previous.label
            # Replaced as a whole: the votes only grow, and the evaluation app has no append for
            # crowd sets (judgment_record is the LLM judge's two-order record).
            previous.delete()
        elif JudgmentSet.objects.filter(version=version, label=label).exists():
            label = f"{label} #{locked.pk}"[:120]
        new_set = None
        if rows:
            new_set = eval_services.judgment_set_import(
                version=version,
                kind=JudgmentSet.Kind.HUMAN,
                label=label,
                parsed=importers.JudgmentFile(
                    rows=rows, votes=sum(r.votes_a + r.votes_b for r in rows)
                ),
                judge="crowd (Blindspot forced choice)",
                provenance={
                    "pipeline_id": locked.pk,
                    "rating_queue_id": locked.rating_queue_id,
                    "source": "Blindspot VisIT-Bench pipeline (forced_choice queue)",
                },
                job=Job.objects.filter(pk=job_id).first() if job_id else None,
            )
        VisitPipeline.objects.filter(pk=locked.pk).update(
            human_set_id=new_set.pk if new_set else None
        )
    pipeline.human_set_id = new_set.pk if new_set else None
    if job_id:
        job_progress(job_id=job_id, done=1, total=2, message=f"{len(rows)} rated tuples; rating")
    results = {}
    if rows:
        results = eval_services.judgments_compute(
            version=version,
            rounds=rounds or int(getattr(settings, "BLINDSPOT_VISIT_ROUNDS", 1000)),
            text_metrics=text_metrics,
        )
    return {"pairs": len(rows), "judgment_set_id": pipeline.human_set_id, "sets": len(results)}


def human_votes_sync_start(*, pipeline: VisitPipeline, created_by=None) -> Job:
    version_of(pipeline)
    if not VisitPair.objects.filter(pipeline=pipeline, decided_at__isnull=False).exists():
        raise Invalid("No tuple has all its votes yet.")
    return job_enqueue(
        kind=SYNC_JOB,
        params={"pipeline_id": pipeline.pk},
        created_by=created_by,
        project=pipeline.project,
        total=2,
    )


# ============================================================================================
# 7. Living leaderboard (Sec. 1, App. F)
# ============================================================================================
_ID_KEYS = ("instance_id", "item_id", "id")
_IMAGE_KEYS = ("image", "image_url")
_RESPONSE_KEYS = ("response", "prediction", "output", "model_output")


@dataclass
class SubmissionRow:
    line: int
    instance_id: str = ""
    image: str = ""
    instruction: str = ""
    response: str = ""


def _first_key(obj: dict, keys: Iterable[str]) -> str | None:
    return next((k for k in keys if k in obj), None)


def parse_submission(content: str, filename: str = "") -> list[SubmissionRow]:
    """A new model's responses: CSV or JSONL rows naming the instance by ``instance_id`` (the
    version's item id) or by ``image`` + ``instruction`` (as in the published files), with the
    text in ``response`` (or ``prediction`` / ``output``, or the one extra column of the
    published model-output layout). Every problem comes back with its line."""
    from evaluation import importers

    errors = _Errors()
    table_errors = importers.Errors()
    is_csv = filename.lower().endswith(".csv") or (
        not filename.lower().endswith((".jsonl", ".json", ".ndjson"))
        and not content.lstrip().startswith(("{", "["))
    )
    if is_csv:
        header, records = importers.read_csv(content, table_errors)
        columns = set(header)
        response_col = _first_key(dict.fromkeys(header), _RESPONSE_KEYS) or (
            importers.visit_output_column(header) or ""
        )
        if header:
            has_id = bool(columns & set(_ID_KEYS))
            has_pair = bool(columns & set(_IMAGE_KEYS)) and "instruction" in columns
            missing = []
            if not (has_id or has_pair):
                missing.append("instance_id (or image and instruction)")
            if not response_col:
                missing.append("response")
            if missing:
                errors.add(1, f"missing columns: {', '.join(missing)}")
    else:
        records = importers.read_jsonl(content, table_errors)
        response_col = ""
    for problem in table_errors.rows:
        errors.add(problem["line"], problem["error"])
    errors.raise_if_any("The submission has errors; nothing was stored.")
    rows = []
    for line, obj in records:
        row = SubmissionRow(line=line)
        id_key = _first_key(obj, _ID_KEYS)
        image_key = _first_key(obj, _IMAGE_KEYS)
        if id_key and str(obj[id_key] or "").strip():
            row.instance_id = str(obj[id_key]).strip()
        elif image_key and obj.get("instruction"):
            row.image = str(obj[image_key] or "").strip()
            row.instruction = str(obj["instruction"])
        else:
            errors.add(line, "missing field instance_id (or image and instruction)")
            continue
        key = response_col or _first_key(obj, _RESPONSE_KEYS)
        value = obj.get(key) if key else None
        if value is None:
            errors.add(line, "missing field response")
            continue
        if not isinstance(value, str):
            errors.add(line, f"response must be text, got {type(value).__name__}")
            continue
        if len(value) > 20000:
            errors.add(line, "response is longer than 20000 characters")
            continue
        row.response = value
        rows.append(row)
    errors.raise_if_any("The submission has errors; nothing was stored.")
    if not rows:
        raise Invalid("The file holds no responses.", [{"line": 0, "error": "no rows"}])
    return rows


def match_submission(version, rows: Sequence[SubmissionRow]) -> list[tuple[SubmissionRow, str]]:
    """Each row's item id in ``version``: unknown instances and duplicate rows are line errors.
    A repeated (image, instruction) maps to the version's repeated instance (``key~2``) as the
    published files do, and is a duplicate only when the version holds it fewer times."""
    from evaluation import importers

    item_ids = set(version.items.values_list("item_id", flat=True))
    errors = _Errors()
    first: dict[str, int] = {}
    seen: Counter[str] = Counter()
    out = []
    for row in rows:
        if row.instance_id:
            item_id = row.instance_id
            if item_id not in item_ids:
                errors.add(row.line, f"unknown instance {item_id!r} (not in {version.label})")
                continue
        else:
            key = importers.visit_key(row.image, row.instruction)
            seen[key] += 1
            item_id = key if seen[key] == 1 else f"{key}~{seen[key]}"
            if item_id not in item_ids:
                if key in item_ids:
                    errors.add(
                        row.line,
                        f"duplicate row: this image and instruction are already on line "
                        f"{first.get(key, '?')}",
                    )
                else:
                    errors.add(
                        row.line,
                        "unknown instance: image and instruction match no instance of "
                        f"{version.label}",
                    )
                continue
        if item_id in first:
            errors.add(
                row.line, f"duplicate row for instance {item_id!r} (first on line {first[item_id]})"
            )
            continue
        first[item_id] = row.line
        out.append((row, item_id))
    errors.raise_if_any("The submission does not match this version; nothing was stored.")
    return out


def leaderboard_label(pipeline: VisitPipeline) -> str:
    return f"Living leaderboard · {pipeline.name}"[:120]


def _rating_options() -> dict:
    """Bootstrap rounds and text metrics of the judge's rating step (settings, for the demo)."""
    return {
        "rounds": int(getattr(settings, "BLINDSPOT_VISIT_ROUNDS", 1000)),
        "text_metrics": bool(getattr(settings, "BLINDSPOT_VISIT_TEXT_METRICS", True)),
    }


def _players(version) -> set[str]:
    from evaluation.models import ModelRun

    return {REFERENCE} | set(
        ModelRun.objects.filter(version=version).values_list("model__name", flat=True)
    )


def _judge_provider(pipeline: VisitPipeline, provider: LLMProvider | None) -> LLMProvider:
    return provider or pipeline.provider or gateway.provider_for(pipeline.project)


def submission_format(content: str, filename: str) -> str:
    name = filename.lower()
    if name.endswith((".jsonl", ".ndjson", ".json")):
        return "jsonl"
    if name.endswith(".csv"):
        return "csv"
    return "jsonl" if content.lstrip().startswith(("{", "[")) else "csv"


def submission_create(
    *,
    pipeline: VisitPipeline,
    model_name: str,
    content: str,
    filename: str = "",
    seed: int = 0,
    reference_pairs: int | None = None,
    provider: LLMProvider | None = None,
    created_by=None,
) -> VisitSubmission:
    """Import a new model's responses as a run of the pipeline's version, pair them (seeded) with
    the reference and a random other model per instance (``runners.judge_pairs_sample``, 150
    instances by default), and start the LLM judge in both orders on the pipeline's leaderboard
    set (``runners.judge_start``, which rates the version when it ends). All or nothing: a bad
    file, or a judge still busy with the previous submission, stores nothing."""
    from evaluation import importers, runners
    from evaluation import services as eval_services

    version = version_of(pipeline)
    model_name = _clean(model_name, "model name", 200)
    if model_name in _players(version):
        raise Conflict(f"“{model_name}” is already on this leaderboard; name the new model anew.")
    n = runners.DEFAULT_JUDGE_INSTANCES if reference_pairs is None else int(reference_pairs)
    if not 1 <= n <= 10000:
        raise Invalid("Reference pairs must be between 1 and 10000.")
    rows = parse_submission(content, filename)
    matched = match_submission(version, rows)
    label = leaderboard_label(pipeline)
    judge = _judge_provider(pipeline, provider)
    with transaction.atomic():
        run = eval_services.run_import(
            version=version,
            model_name=model_name,
            rows=[
                importers.PredictionRow(item_id=item_id, raw_output=row.response, line=row.line)
                for row, item_id in matched
            ],
            prompt_settings={"source_file": filename, "submitted_to": "living leaderboard"},
            seed=seed,
            created_by=created_by,
        )
        pairs = runners.judge_pairs_sample(version=version, model=model_name, n=n, seed=seed)
        job = runners.judge_start(
            version=version,
            judgment_set_name=label,
            pairs=pairs,
            provider=judge,
            created_by=created_by,
            seed=seed,
            pairing={"model": model_name, "instances": n, "seed": seed},
            **_rating_options(),
        )
        submission = VisitSubmission.objects.create(
            pipeline=pipeline,
            model_name=model_name,
            filename=filename[:255],
            format=submission_format(content, filename),
            rows=len(matched),
            version_id=version.pk,
            run_id=run.pk,
            judgment_set_label=label,
            judge_job=job,
            seed=seed,
            reference_pairs=n,
            pairs=pairs,
            created_by=created_by,
        )
    return submission


def leaderboard_judge_existing(
    *,
    pipeline: VisitPipeline,
    seed: int = 0,
    reference_pairs: int | None = None,
    provider: LLMProvider | None = None,
    created_by=None,
) -> Job:
    """Start the leaderboard from the version's models already imported: each is paired as a
    submission would be (seed + its rank among the models), duplicates dropped, one judge run."""
    from evaluation import runners

    version = version_of(pipeline)
    n = runners.DEFAULT_JUDGE_INSTANCES if reference_pairs is None else int(reference_pairs)
    players = runners.judge_players(version)
    models = sorted(p for p in players if p != REFERENCE)
    if not models:
        raise Invalid("Import some models' responses for this version first.")
    seen: set[tuple[str, str]] = set()
    pairs = []
    for k, model in enumerate(models):
        if not players[model]:
            continue
        for pair in runners.judge_pairs_sample(
            version=version, model=model, n=n, seed=seed + k, players=players
        ):
            key = (pair["instance_id"], sampling.pair_key(pair["a_model"], pair["b_model"]))
            if key not in seen:
                seen.add(key)
                pairs.append(pair)
    if not pairs:
        raise Invalid("No verified instance has responses to compare.")
    return runners.judge_start(
        version=version,
        judgment_set_name=leaderboard_label(pipeline),
        pairs=pairs,
        provider=_judge_provider(pipeline, provider),
        created_by=created_by,
        seed=seed,
        pairing={"model": ", ".join(models), "instances": n, "seed": seed},
        **_rating_options(),
    )


def responses_generate_start(
    *, pipeline: VisitPipeline, provider: LLMProvider, limit: int | None = None, created_by=None
) -> Job:
    """Candidate responses from a VLM through the evaluation app's runner (Sec. 5)."""
    from evaluation import runners

    return runners.run_model_start(
        version=version_of(pipeline),
        provider=provider,
        created_by=created_by,
        limit=limit,
        **_rating_options(),
    )
