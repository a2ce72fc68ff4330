"""Importing a corpus all or nothing: plan (parse the manifest, find every image it names),
then read, validate and store the images, then write every row in one transaction.

Every line is checked first and every problem is reported with its line
(``annotator.platform.errors.Invalid``); images are decoded and validated before any row is
written; blobs written for an import that fails are deleted. A manifest is made for its import,
so each of its files must be found; COCO and Flickr caption files describe whole datasets, so
their images that the source does not hold are skipped and counted.
"""

from __future__ import annotations

import time
import uuid
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from django.db import IntegrityError, transaction
from django.utils.text import slugify

from annotator.platform.errors import Invalid, LineErrors
from annotator.platform.jobs import ProgressFn, job_progress
from annotator.platform.models import Project

from .. import assets
from ..models import Caption, Corpus, Sample
from .formats import parse_rows
from .manifest_rows import ManifestRow, Reading, language_normalise, refuse_if_any
from .sources import (
    Index,
    Source,
    find_manifest,
    is_image_name,
    is_junk,
    max_manifest_bytes,
    too_large,
)

PROGRESS_EVERY = 25


@dataclass
class ImportPlan:
    format: str
    manifest_name: str
    rows: list[ManifestRow]
    members: list[str]  # the source's name of each row's image
    missing: int = 0
    uncaptioned: int = 0
    ignored: int = 0
    lines_of: dict[str, list] = field(default_factory=dict)


def corpus_plan(
    *, source: Source, reading: Reading, manifest: bytes | None = None, manifest_name: str = ""
) -> ImportPlan:
    """Parse the manifest and find every image it names; Invalid lists every problem."""
    try:
        reading = replace(reading, language=language_normalise(reading.language))
    except ValueError as exc:
        raise Invalid(f"Default language: {exc}.") from None
    if manifest is None:
        manifest_name = find_manifest(source)
        member = source.read(manifest_name, max_manifest_bytes())
        if member.data is None:
            raise Invalid(f"{manifest_name}: {member.error}.")
        manifest = member.data
    elif len(manifest) > max_manifest_bytes():
        raise Invalid(
            f"{manifest_name or 'The manifest'}: {too_large(len(manifest), max_manifest_bytes())}."
        )
    # Bad lines and files the source lacks are reported together, in line order.
    errors = LineErrors()
    parsed = parse_rows(content=manifest, filename=manifest_name, reading=reading, errors=errors)
    images = [n for n in source.names() if not is_junk(n) and n != manifest_name]
    index = Index(images)
    rows: list[ManifestRow] = []
    members: list[str] = []
    lines_of: dict[str, list] = defaultdict(list)
    missing = 0
    for row in parsed.rows:
        member, problem = index.resolve(row.file)
        if problem:
            errors.add(row.line, problem)
        elif member is None:
            if row.optional:
                missing += 1
            else:
                errors.add(row.line, f"“{row.file}” is not in {source.label}")
        else:
            rows.append(row)
            members.append(member)
            lines_of[member].append(row.line)
    refuse_if_any(errors, manifest_name or "the manifest", in_order=True)
    if not parsed.rows:
        raise Invalid(
            f"{manifest_name or 'The manifest'} has no captioned image; nothing was imported."
        )
    if not rows:
        raise Invalid(
            f"None of the {len(parsed.rows)} images named by {manifest_name or 'the manifest'} "
            f"is in {source.label}; nothing was imported."
        )
    ignored = sum(1 for n in images if is_image_name(n) and n not in lines_of)
    return ImportPlan(
        format=parsed.format,
        manifest_name=manifest_name,
        rows=rows,
        members=members,
        missing=missing,
        uncaptioned=parsed.uncaptioned,
        ignored=ignored,
        lines_of=dict(lines_of),
    )


def corpus_slug(*, project: Project, name: str, slug: str = "") -> str:
    """The slug a new corpus would get; Invalid when the name is empty or already taken."""
    name = (name or "").strip()
    if not name:
        raise Invalid("Give the corpus a name.")
    if len(name) > 200:
        raise Invalid("The corpus name is longer than 200 characters.")
    slug = (
        slugify(slug or name, allow_unicode=False)[:80].strip("-")
        or f"corpus-{uuid.uuid4().hex[:8]}"
    )
    taken = Corpus.objects.filter(project=project, slug=slug).first()
    if taken is not None:
        raise Invalid(
            f"This project already has a corpus “{taken.name}” ({slug}); choose another name."
        )
    return slug


class _Progress:
    """The import's progress, on its job's row and to ``also`` (a command's terminal bar)."""

    def __init__(self, job_id: int | None, total: int, also: ProgressFn | None = None):
        self.job_id, self.total, self.also, self.last = job_id, total, also, 0.0

    def __call__(self, done: int, message: str, force: bool = False) -> None:
        if self.job_id is None and self.also is None:
            return
        now = time.monotonic()
        if force or done % PROGRESS_EVERY == 0 or now - self.last > 1.0:
            self.last = now
            job_progress(job_id=self.job_id, done=done, total=self.total, message=message)
            if self.also is not None:
                self.also(done, self.total, message)


def corpus_import(
    *,
    project: Project,
    name: str,
    source: Source,
    manifest: bytes | None = None,
    manifest_name: str = "",
    fmt: str = "auto",
    language: str = "en",
    licence: str = "",
    source_url: str = "",
    description: str = "",
    slug: str = "",
    created_by=None,
    job_id: int | None = None,
    thumbnails: str = "job",
    progress: ProgressFn | None = None,
) -> dict:
    """Import a corpus all or nothing; returns counts. ``thumbnails``: "job", "inline" or "none";
    ``progress(done, total, message)`` hears what the job's row shows (a command's bar).

    Images are decoded and stored first, outside the transaction (so progress is visible and
    no transaction stays open for minutes); then every row is written in one transaction.
    On any failure the blobs this import wrote, and no row references, are deleted.
    """
    slug = corpus_slug(project=project, name=name, slug=slug)
    plan = corpus_plan(
        source=source,
        reading=Reading(fmt, language, licence),
        manifest=manifest,
        manifest_name=manifest_name,
    )
    wanted = len(plan.lines_of)
    report = _Progress(job_id, total=wanted + 1, also=progress)
    report(0, f"Reading {wanted} images", force=True)
    written: list[str] = []
    try:
        entries = _store_images(plan, source, source_url, report, written)
        report(wanted, "Writing samples and captions", force=True)
        with transaction.atomic():
            corpus = Corpus(
                project=project,
                name=name.strip(),
                slug=slug,
                description=description,
                source=source_url[:500],
                licence=licence[:200],
                created_by=created_by,
            )
            counts = _write(corpus, plan=plan, entries=entries)
            image_ids = counts.pop("image_ids")
            if thumbnails == "job":
                # The Job row is written with the import; Celery is told once it commits.
                assets.thumbnails_start(image_ids=image_ids, project=project, created_by=created_by)
    except BaseException:
        assets.blobs_discard(written)
        raise
    if thumbnails == "inline":
        assets.thumbnails_make(image_ids=image_ids)
    report(wanted + 1, f"Imported {counts['samples']} samples", force=True)
    return {
        "corpus_id": corpus.pk,
        "format": plan.format,
        "manifest": plan.manifest_name,
        **counts,
        "skipped_missing_images": plan.missing,
        "skipped_uncaptioned": plan.uncaptioned,
        "ignored_files": plan.ignored,
    }


def images_read(
    source: Source, lines_of: Mapping[str, list], written: list[str], *, meta, progress
) -> tuple[dict[str, assets.ImageEntry], LineErrors]:
    """Read, validate and store the images ``lines_of`` names (each with its lines), in name
    order: each blob this call writes is appended to ``written`` (the caller deletes them if the
    import fails); after the first bad image the rest is only checked. ``meta(name)`` gives an
    image's ImageEntry fields (source, licence…), ``progress(done)`` follows each image. The
    entries by name, and the problems by the first line naming the image (the caller refuses)."""
    errors = LineErrors()
    entries: dict[str, assets.ImageEntry] = {}
    for done, member in enumerate(source.read_many(sorted(lines_of), assets.max_image_bytes()), 1):
        line = lines_of[member.name][0]
        if member.data is None:
            errors.add(line, f"{member.name}: {member.error}")
        else:
            try:
                norm = assets.image_normalise(data=member.data, name=member.name)
            except assets.ImageRejected as exc:
                errors.add(line, str(exc))
            else:
                if not errors.count and assets.blob_save(norm.path, norm.data):
                    written.append(norm.path)
                entries[member.name] = assets.ImageEntry.of(
                    norm, original_name=member.name, **meta(member.name)
                )
        progress(done)
    return entries, errors


def _store_images(
    plan: ImportPlan, source: Source, source_url: str, progress: _Progress, written: list[str]
) -> dict[str, assets.ImageEntry]:
    """Read, validate and store every image the plan names (``images_read``); refuses with
    every bad image."""
    first_row: dict[str, ManifestRow] = {}
    for row, member in zip(plan.rows, plan.members, strict=True):
        first_row.setdefault(member, row)

    def meta(name: str) -> dict:
        row = first_row[name]
        return {
            "source": row.source or source_url,
            "licence": row.licence,
            "attribution": row.attribution,
        }

    wanted = len(plan.lines_of)
    entries, errors = images_read(
        source,
        plan.lines_of,
        written,
        meta=meta,
        progress=lambda done: progress(done, f"Checked {done} of {wanted} images"),
    )
    refuse_if_any(errors, f"the images of {source.label}")
    return entries


def _write(corpus: Corpus, *, plan: ImportPlan, entries: dict[str, assets.ImageEntry]) -> dict:
    """Save the new ``corpus`` with its images, samples and captions; returns the counts."""
    # In manifest order: an image named twice takes the metadata of its first row.
    by_sha, new = assets.images_register(
        entries=[entries[m] for m in dict.fromkeys(plan.members)], created_by=corpus.created_by
    )
    try:
        with transaction.atomic():
            corpus.save(force_insert=True)
    except IntegrityError:
        raise Invalid(
            f"This project already has a corpus “{corpus.slug}”; choose another name."
        ) from None
    samples = [
        Sample(
            corpus=corpus,
            image=by_sha[entries[member].sha256],
            source_id=row.source_id,
            licence=row.licence,
            position=i,
        )
        for i, (row, member) in enumerate(zip(plan.rows, plan.members, strict=True))
    ]
    Sample.objects.bulk_create(samples, batch_size=1000)
    captions = [
        Caption(sample=sample, text=cap.text, language=cap.language, position=j)
        for sample, row in zip(samples, plan.rows, strict=True)
        for j, cap in enumerate(row.captions)
    ]
    Caption.objects.bulk_create(captions, batch_size=2000)
    Corpus.objects.filter(pk=corpus.pk).update(
        sample_count=len(samples), caption_count=len(captions)
    )
    corpus.sample_count, corpus.caption_count = len(samples), len(captions)
    image_ids = sorted({img.pk for img in by_sha.values()})
    return {
        "samples": len(samples),
        "captions": len(captions),
        "images_new": len(new),
        "images_reused": len(by_sha) - len(new),
        "image_ids": image_ids,
    }
