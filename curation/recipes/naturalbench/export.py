"""Frozen, content-hashed NaturalBench dataset versions (issue 5 §8).

One version = the pipeline's assembled samples at that moment, written once and never edited:

- a zip with ``naturalbench.jsonl`` (NaturalBench's published record layout, METRICS.md Sec. 1:
  Index, Image_0, Image_1, Question_0, Image_0_Question_0, Image_1_Question_0, Question_1,
  Image_0_Question_1, Image_1_Question_1, Question_Type, Source — plus Language and Skills
  [[q0 tags], [q1 tags]]), the image files under ``images/<sha256>.<ext>``, ``card.json``, a
  README, and NaturalBench-Retrieval (App. B) exactly as the official ``NaturalBench_Retrieval``
  dataset class (Baiqi-Li/NaturalBench, naturalbench_retrieval.py) reads it:
  ``NaturalBench-Retrieval/metadata.json``, one JSON array whose item i has integer ``index`` = i,
  ``image_0``, ``image_1`` (file names under ``NaturalBench-Retrieval/images/``), ``caption_0``,
  ``caption_1`` — the verified pairs in position order — and those images under
  ``NaturalBench-Retrieval/images/``;
- a Parquet file with the images embedded (Hugging Face ``Image`` features in the schema
  metadata), readable by ``datasets.load_dataset("parquet", data_files=...)``;
- a published evaluation BenchmarkVersion (family naturalbench) of the items read back from the
  same JSONL through the family's importer, so it is scoreable at once, published as every
  recipe publishes (the framework's ``publish_object``, the recipe's ``Publish``).

``sha256`` is the hash of the JSONL bytes; images are named by their own SHA-256, so it covers
them too. Zip members carry a fixed timestamp, so the same content gives the same archive bytes.
Everything streams: records are read in chunks, images copied file by file, Parquet written in
row groups of ``PARQUET_ROWS``.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import tempfile
import zipfile
from typing import IO, Any

from django.core.files.storage import default_storage
from django.db import transaction

from annotator.platform.errors import Invalid, ServiceError
from annotator.platform.jobs import job_progress
from curation.recipes.framework import archive
from curation.recipes.framework.archive import image_path, json_line
from curation.recipes.framework.publish import publish_object
from curation.recipes.framework.registry import recipe_for
from evaluation import importers
from evaluation.families.naturalbench import layout as nb
from evaluation.families.naturalbench import release as nb_release

from . import skills
from .card import card_build
from .models import ConfoundingPair, NaturalBenchPipeline, NaturalBenchSample, NaturalBenchVersion

FAMILY = "naturalbench"  # the evaluation family every export publishes to
JSONL_NAME = "naturalbench.jsonl"
# NaturalBench-Retrieval's published folder (naturalbench_retrieval.py: <root>/<RETRIEVAL_DIR>/).
RETRIEVAL_DIR = "NaturalBench-Retrieval/"
RETRIEVAL_NAME = RETRIEVAL_DIR + "metadata.json"
RETRIEVAL_IMAGES = RETRIEVAL_DIR + "images/"
CARD_NAME = "card.json"
README_NAME = "README.md"
PARQUET_ROWS = 64
FIELDS = nb_release.PARQUET_FIELDS
IMAGE_FIELDS = nb_release.IMAGE_COLUMNS

README = """NaturalBench dataset version (made with Blindspot).

naturalbench.jsonl          one sample per line, NaturalBench's published layout:
  Index                     sample number
  Image_0, Image_1          image files in this archive (images/<sha256>.<ext>)
  Question_0, Question_1    the two questions (multiple-choice text ends with
                            "\\nOption: A:<x>; B:<y>;")
  Image_i_Question_q        ground truth: q0 is Yes/A on image 0 and No/B on image 1, q1 the
                            reverse, so a blind answer scores at chance
  Question_Type             yes_no or multiple_choice
  Source                    the corpus the images and captions come from
  Language                  the questions' language
  Skills                    [[skills of question 0], [skills of question 1]] (App. C taxonomy;
                            an empty list: not tagged)
NaturalBench-Retrieval/     the human-verified pairs as an image-text retrieval benchmark, as
                            the official NaturalBench_Retrieval loader reads it
                            (root_dir = the folder holding NaturalBench-Retrieval/):
  metadata.json             one JSON array; item i: index (= i), image_0, image_1 (file names
                            under NaturalBench-Retrieval/images/), caption_0, caption_1
                            (caption_k describes image_k). Score tensors are
                            scores[i][image][caption], as the official get_retrieval_scores reads
  images/                   the pairs' images
card.json                   the dataset card: source, question types, language, samples, models
                            used, mismatched and verified pairs, prompts with their SHA-256,
                            annotator agreement per stage
"""


def _assembled(pipeline: NaturalBenchPipeline):
    return NaturalBenchSample.objects.filter(
        pipeline=pipeline, state=NaturalBenchSample.State.ASSEMBLED
    ).select_related("image_0", "image_1")


def sample_row(sample: NaturalBenchSample) -> dict[str, Any]:
    """The published record of an assembled sample, images as archive paths."""
    row = {field: sample.record.get(field) for field in nb.RECORD_FIELDS}
    row["Image_0"] = image_path(sample.image_0)
    row["Image_1"] = image_path(sample.image_1)
    row["Language"] = sample.record.get("Language") or sample.pipeline.language
    row["Skills"] = [skills.labels(tags or []) for tags in (sample.skills or [None, None])]
    return row


def _write_records(pipeline, fh: IO[bytes], images: set[int]) -> tuple[str, int]:
    """Samples in Index order, read ``archive.CHUNK`` at a time (memory stays flat)."""
    digest = hashlib.sha256()
    n = 0
    for sample in _assembled(pipeline).order_by("index").iterator(chunk_size=archive.CHUNK):
        sample.pipeline = pipeline
        line = json_line(sample_row(sample))
        digest.update(line)
        fh.write(line)
        images.update((sample.image_0_id, sample.image_1_id))
        n += 1
    return digest.hexdigest(), n


def retrieval_record(index: int, pair: ConfoundingPair) -> dict[str, Any]:
    """Item ``index`` of NaturalBench-Retrieval's metadata.json (naturalbench_retrieval.py reads
    index, image_0, image_1, caption_0, caption_1; images relative to its images/ folder)."""
    return {
        "index": index,
        "image_0": image_path(pair.sample_0.image).removeprefix("images/"),
        "image_1": image_path(pair.sample_1.image).removeprefix("images/"),
        "caption_0": pair.caption_0.text,
        "caption_1": pair.caption_1.text,
    }


def _write_retrieval(pipeline, fh: IO[bytes], images: set[int]) -> int:
    """metadata.json: the verified pairs in position order, one JSON array, streamed."""
    pairs = (
        pipeline.pairs.filter(state=ConfoundingPair.State.VERIFIED)
        .select_related("sample_0__image", "sample_1__image", "caption_0", "caption_1")
        .order_by("position", "pk")
    )
    n = 0
    fh.write(b"[")
    for pair in pairs.iterator(chunk_size=archive.CHUNK):
        fh.write(b",\n" if n else b"\n")
        fh.write(json.dumps(retrieval_record(n, pair), ensure_ascii=False).encode("utf-8"))
        images.update((pair.sample_0.image_id, pair.sample_1.image_id))
        n += 1
    fh.write(b"\n]\n")
    return n


# --------------------------------------------------------------------------------------------
# Files
# --------------------------------------------------------------------------------------------
def _write_zip(
    fh: IO[bytes], tmp: str, *, card: dict, images: set[int], retrieval_images: set[int]
) -> None:
    """The README, the card, the records and metadata.json written in ``tmp``, the samples'
    images, and the retrieval pairs' images again under NaturalBench-Retrieval/images/ (the
    official loader reads them there)."""
    with zipfile.ZipFile(fh, "w") as zf:
        archive.zip_member(zf, README_NAME, io.BytesIO(README.encode("utf-8")))
        text = json.dumps(card, ensure_ascii=False, indent=2).encode("utf-8")
        archive.zip_member(zf, CARD_NAME, io.BytesIO(text))
        for name in (JSONL_NAME, RETRIEVAL_NAME):
            with open(os.path.join(tmp, os.path.basename(name)), "rb") as source:
                archive.zip_member(zf, name, source)
        archive.zip_images(zf, images)
        archive.zip_images(zf, retrieval_images, under=RETRIEVAL_DIR)


def parquet_schema():
    """NaturalBench's published Parquet layout (the family's features; images embedded)."""
    return archive.features_schema(nb_release.parquet_features())


def _next_label(pipeline) -> str:
    labels = set(pipeline.versions.values_list("label", flat=True))
    n = len(labels) + 1
    while f"v{n}" in labels:
        n += 1
    return f"v{n}"


def _step(job_id, done: int, message: str) -> None:
    """The export job's progress: ``done`` of its four steps."""
    job_progress(job_id=job_id, done=done, total=4, message=message)


def _files(
    pipeline, tmp: str, *, card: dict, images: tuple[set[int], set[int]], label, sha256, job_id
):
    """The zip and the Parquet file, written in ``tmp`` from its records and stored:
    ({field: storage name}, {field: SHA-256 of the file}). ``images``: the samples' and the
    retrieval pairs' image ids."""
    _step(job_id, 1, f"Writing the archive ({len(images[0] | images[1])} images)")
    zip_path = os.path.join(tmp, "export.zip")
    with open(zip_path, "wb") as fh:
        _write_zip(fh, tmp, card=card, images=images[0], retrieval_images=images[1])
    _step(job_id, 2, "Writing Parquet")
    parquet_path = os.path.join(tmp, "export.parquet")
    with open(os.path.join(tmp, JSONL_NAME), "rb") as records:
        archive.parquet_write(
            parquet_path,
            records,
            schema=parquet_schema(),
            image_fields=IMAGE_FIELDS,
            rows=PARQUET_ROWS,
        )
    stem = f"naturalbench-{pipeline.pk}-{label}-{sha256[:12]}"
    files = {"archive": (zip_path, f"{stem}.zip"), "parquet": (parquet_path, f"{stem}.parquet")}
    hashes = {field: archive.file_sha256(path) for field, (path, _name) in files.items()}
    _step(job_id, 3, "Storing the files and the evaluation version")
    stored = {
        field: archive.store_file(path, f"exports/naturalbench/{pipeline.pk}/{name}")
        for field, (path, name) in files.items()
    }
    return stored, hashes


def version_export(
    *, pipeline: NaturalBenchPipeline, label: str | None = None, job_id=None, created_by=None
) -> NaturalBenchVersion:
    """Freeze the assembled samples as a new version (or return the version that already holds
    exactly this content). Refuses an empty export and a label in use."""
    label = (label or "").strip() or _next_label(pipeline)
    if len(label) > 60:
        raise Invalid("The version label is longer than 60 characters.")
    if pipeline.versions.filter(label=label).exists():
        raise Invalid(f"This pipeline already has a version {label!r}.")
    with tempfile.TemporaryDirectory(prefix="nb-export-") as tmp:
        records_path = os.path.join(tmp, JSONL_NAME)
        retrieval_path = os.path.join(tmp, os.path.basename(RETRIEVAL_NAME))
        images: set[int] = set()
        retrieval_images: set[int] = set()
        _step(job_id, 0, "Writing the records")
        with open(records_path, "w+b") as records:
            sha256, n = _write_records(pipeline, records, images)
        if not n:
            raise Invalid("No assembled sample to export yet: assemble kept questions first.")
        existing = pipeline.versions.filter(sha256=sha256).first()
        if existing is not None:
            _step(job_id, 4, f"Unchanged since version {existing.label}: nothing new to export")
            return existing
        with open(retrieval_path, "w+b") as retrieval:
            n_pairs = _write_retrieval(pipeline, retrieval, retrieval_images)
        card = card_build(pipeline, sha256=sha256, samples=n, pairs=n_pairs)
        stored, hashes = _files(
            pipeline,
            tmp,
            card=card,
            images=(images, retrieval_images),
            label=label,
            sha256=sha256,
            job_id=job_id,
        )
        with open(records_path, encoding="utf-8") as fh:
            jsonl_text = fh.read()
    card["files"] = {field: {"name": stored[field], "sha256": hashes[field]} for field in stored}
    try:
        with transaction.atomic():
            benchmark_version = _evaluation_version(
                pipeline, label=label, sha256=sha256, jsonl=jsonl_text, created_by=created_by
            )
            card["benchmark_version_id"] = benchmark_version.pk
            version = NaturalBenchVersion.objects.create(
                pipeline=pipeline,
                label=label,
                sha256=sha256,
                sample_count=n,
                card=card,
                archive=stored["archive"],
                archive_sha256=hashes["archive"],
                parquet=stored["parquet"],
                parquet_sha256=hashes["parquet"],
                benchmark_version_id=benchmark_version.pk,
                job_id=job_id,
                created_by=created_by,
            )
    except BaseException:
        for name in stored.values():
            default_storage.delete(name)
        raise
    _step(job_id, 4, f"Version {label}: {n} samples, sha256 {sha256[:12]}")
    return version


def benchmark_name(pipeline: NaturalBenchPipeline) -> str:
    """The benchmark a pipeline's first export publishes to: "<project slug> · <pipeline name>"."""
    return f"{pipeline.project.slug} · {pipeline.name}"[:200]


def _evaluation_version(pipeline, *, label: str, sha256: str, jsonl: str, created_by=None):
    """A published BenchmarkVersion of the pipeline's benchmark (family naturalbench) holding the
    items of the export's JSONL, read back through the family's importer."""
    rows = importers.parse_items(FAMILY, jsonl, JSONL_NAME)
    try:
        return publish_object(
            recipe_for(pipeline),
            pipeline,
            label=label,
            items=rows,
            source=f"Blindspot NaturalBench pipeline {pipeline.pk}, sha256 {sha256}",
            created_by=created_by,
        )
    except ServiceError as exc:
        raise Invalid(f"The evaluation version could not be made: {exc.message}") from exc


def version_export_run(pipeline, *, job_id=None, created_by=None, label=None, **_params) -> dict:
    """The export stage's job: a version, or the one that already holds this content."""
    version = version_export(pipeline=pipeline, label=label, job_id=job_id, created_by=created_by)
    return {
        "version_id": version.pk,
        "label": version.label,
        "sha256": version.sha256,
        "samples": version.sample_count,
        "benchmark_version_id": version.benchmark_version_id,
    }
