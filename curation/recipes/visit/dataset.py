"""Import of the published VisIT-Bench CSV (``single_image_full_dataset.csv`` layout): categories
become families, rows instances with their image URL(s), caption and the published GPT-4 response
with its human rating; and captioned instances from elsewhere that wait for their reference."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import PurePosixPath
from urllib.parse import urlparse

from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.db import transaction
from django.utils import timezone

from annotator.platform import edge, structured
from annotator.platform.errors import Invalid, LineErrors
from annotator.platform.jobs import job_enqueue, job_progress
from annotator.platform.models import Job
from curation.corpora import uploads
from evaluation.families.visit import parse as visit_parse

from .models import VisitCategory, VisitImage, VisitInstance, VisitPipeline, VisitReference
from .pipelines import IMPORT_JOB, next_position, upload_text


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
            urls = structured.loads(cell)
        except structured.StructuredTextError:
            return []
        if not isinstance(urls, list):
            return []
        return [u.strip() for u in urls if isinstance(u, str) and u.strip()]
    return [cell] if cell else []


def _category(name: str) -> str:
    return (name or "Uncategorised").strip()[:200]


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


@dataclass
class DatasetRow(CaptionedRow):
    """A checked row of the published CSV: its instance, its line and its published columns."""

    line: int = 0
    data: dict = field(default_factory=dict)


def _dataset_row(item, record: dict, errors: LineErrors) -> DatasetRow | None:
    """One checked row (its problem added to ``errors`` instead, and None)."""
    urls = _image_cell(item.data.get("image", ""))
    bad = [u for u in urls if urlparse(u).scheme not in ("http", "https")]
    if not urls:
        return errors.add(item.line, "the image column holds no URL")
    if bad:
        return errors.add(item.line, f"the image {bad[0][:80]!r} is not an http(s) URL")
    if not item.data.get("caption", "").strip():
        return errors.add(item.line, "the instruction-conditioned caption is empty")
    meta_text = record.get("public_images_metadata", "") or ""
    try:
        # NaN / Infinity (pandas' missing values in the published file) become null:
        # PostgreSQL's jsonb cannot store them. The JSONL export holds the object itself.
        if not isinstance(meta_text, str):
            meta = meta_text
        else:
            meta = structured.loads(meta_text, nonfinite="null") if meta_text.strip() else {}
    except structured.StructuredTextError as exc:
        return errors.add(item.line, f"public_images_metadata: {exc.message}")
    problem = edge.row_problem({"public_images_metadata": meta, "image": urls})
    if problem:
        return errors.add(item.line, problem)
    return DatasetRow(
        category=item.data.get("category"),
        instruction=item.data["instruction"],
        caption=item.data["caption"],
        urls=urls,
        external_id=item.item_id,
        line=item.line,
        data=item.data,
        metadata={
            "public_images_metadata": meta if isinstance(meta, dict) else {"value": meta},
            "reference_output": item.data.get("reference_output", ""),
            "line": item.line,
        },
    )


def parse_dataset(content: str, filename: str = "") -> list[DatasetRow]:
    """The published CSV (or the JSONL export) checked through the evaluation app's parser (its
    instance ids, its 529-of-578 filter), plus the columns the export gives back
    (``public_images_metadata``)."""
    items = visit_parse.parse_items(content, filename)
    errors = LineErrors()
    _header, records = visit_parse.read_records(content, LineErrors())
    raw = dict(records)
    rows = [_dataset_row(item, raw.get(item.line, {}), errors) for item in items]
    errors.raise_if_any("The VisIT-Bench CSV has errors; nothing was imported.{more}")
    return [r for r in rows if r is not None]


def _categories(pipeline: VisitPipeline, wanted: Sequence[tuple[str, bool]], created_by):
    """{name: category} for (name, multi-image?) pairs: existing categories reused, the
    others created (imported) as their first row says."""
    categories = {f.name: f for f in pipeline.categories.all()}
    for name, multi in wanted:
        if name not in categories:
            categories[name] = VisitCategory.objects.create(
                pipeline=pipeline,
                name=name,
                multi_image=multi,
                origin=VisitCategory.Origin.IMPORTED,
                created_by=created_by,
            )
    return categories


def _check_new(pipeline: VisitPipeline, rows: Sequence[DatasetRow]) -> None:
    ids = [r.external_id for r in rows]
    existing = set(
        pipeline.instances.filter(external_id__in=ids).values_list("external_id", flat=True)
    )
    errors = LineErrors()
    for r in rows:
        if r.external_id in existing:
            errors.add(r.line, f"instance {r.external_id} is already in this pipeline")
    errors.raise_if_any("Some rows were imported before; nothing was imported.{more}")


def _instances_create(
    pipeline: VisitPipeline, rows: Sequence[CaptionedRow], states: Sequence[str], created_by
) -> list[VisitInstance]:
    """The imported instances of ``rows`` in ``states`` after the pipeline's last one, in their
    categories' families, with their remote images (a single image gets the caption)."""
    categories = _categories(
        pipeline, [(_category(r.category), len(r.urls) > 1) for r in rows], created_by
    )
    start = next_position(pipeline)
    instances = VisitInstance.objects.bulk_create(
        [
            VisitInstance(
                pipeline=pipeline,
                category=categories[_category(r.category)],
                origin=VisitInstance.Origin.IMPORTED,
                state=state,
                external_id=r.external_id,
                position=start + k,
                instruction=r.instruction,
                caption=r.caption,
                metadata=r.metadata or {},
            )
            for k, (r, state) in enumerate(zip(rows, states, strict=True))
        ],
        batch_size=1000,
    )
    if not all(i.pk for i in instances):  # backends without RETURNING
        new = pipeline.instances.filter(position__gte=start)
        by_position = dict(new.values_list("position", "pk"))
        for inst in instances:
            inst.pk = by_position[inst.position]
    images = [
        VisitImage(
            instance_id=inst.pk,
            position=k,
            url=url[:2000],
            caption=r.caption if len(r.urls) == 1 else "",
        )
        for r, inst in zip(rows, instances, strict=True)
        for k, url in enumerate(r.urls)
    ]
    VisitImage.objects.bulk_create(images, batch_size=1000)
    return instances


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
    _check_new(pipeline, rows)
    job_progress(job_id=job_id, done=0, total=len(rows), message="Writing")
    verdicts = [_verdict_of(r.data) for r in rows]
    states = [
        VisitInstance.State.VERIFIED
        if verdict == VisitReference.Verdict.CORRECT
        else VisitInstance.State.DISCARDED
        for verdict in verdicts
    ]
    now = timezone.now()
    with transaction.atomic():
        instances = _instances_create(pipeline, rows, states, created_by)
        references = [
            VisitReference(
                instance_id=inst.pk,
                round=1,
                text=r.data.get("reference", ""),
                source=(
                    VisitReference.Source.HUMAN
                    if r.data.get("reference_source") == "human"
                    else VisitReference.Source.IMPORTED
                ),
                verdict=verdict,
                decided_at=now,
            )
            for r, inst, verdict in zip(rows, instances, verdicts, strict=True)
        ]
        VisitReference.objects.bulk_create(references, batch_size=1000)
    job_progress(job_id=job_id, done=len(rows), message=f"Imported {len(rows)} instances")
    return {
        "instances": len(rows),
        "families": len({r.category for r in rows}),
        "verified": sum(1 for r in rows if r.data.get("gpt4_correct")),
    }


def instances_import_captioned(
    *, pipeline: VisitPipeline, rows: Sequence[CaptionedRow], created_by=None
) -> list[VisitInstance]:
    """Add captioned instances (families by category) that wait for their reference draft; the
    draft job then sends them to verification like crowd-written ones."""
    errors = LineErrors()
    for line, row in enumerate(rows, start=1):
        if not row.instruction.strip() or not row.caption.strip():
            errors.add(line, "an instance needs an instruction and a caption")
        if not row.urls or any(urlparse(u).scheme not in ("http", "https") for u in row.urls):
            errors.add(line, "every image must be an http(s) URL")
    errors.raise_if_any("Some instances cannot be added; nothing was added.{more}")
    rows = [
        replace(
            row,
            instruction=row.instruction.strip(),
            caption=row.caption.strip(),
            external_id=row.external_id[:200],
        )
        for row in rows
    ]
    with transaction.atomic():
        states = [VisitInstance.State.DRAFTING] * len(rows)
        return _instances_create(pipeline, rows, states, created_by)


def dataset_import_start(*, pipeline: VisitPipeline, upload, created_by=None) -> tuple[Job, int]:
    """Check the CSV now (line-numbered errors), import it in the ``visit.import_dataset`` job."""
    content = upload_text(upload)
    filename = PurePosixPath(str(getattr(upload, "name", "") or "")).name
    rows = parse_dataset(content, filename)
    taken = pipeline.instances.filter(external_id__in=[r.external_id for r in rows]).count()
    if taken:
        raise Invalid(f"{taken} of these rows are already in this pipeline; nothing was imported.")
    name = f"curation/uploads/visit-{pipeline.pk}-{timezone.now():%Y%m%d%H%M%S}.csv"
    with uploads.uploads_deleted_on_error([]) as stored:
        stored.append(default_storage.save(name, ContentFile(content.encode("utf-8"))))
        job = job_enqueue(
            kind=IMPORT_JOB,
            params={"pipeline_id": pipeline.pk, "upload": stored[0], "filename": filename},
            created_by=created_by,
            project=pipeline.project,
            total=len(rows),
        )
    return job, len(rows)


def dataset_import_run(
    pipeline: VisitPipeline, *, upload: str, filename: str = "", created_by=None, job_id=None
) -> dict:
    """The import job: the stored CSV is deleted when it succeeds or is refused (another failure
    keeps it for the job page's Retry)."""
    with uploads.uploads_kept_for_retry([upload]):
        with default_storage.open(upload, "rb") as handle:
            content = handle.read().decode("utf-8-sig")
        return dataset_import(
            pipeline=pipeline,
            content=content,
            filename=filename,
            created_by=created_by,
            job_id=job_id,
        )
