"""Assembly and export of VLind-Bench (vlind-bench.txt Sec. 3–4, App. B–C; METRICS.md §4).

An instance is a kept triple with at least one good counterfactual image, a factual image and
both VP nouns; a context with no good image leaves the set (Sec. 4). Instances become rows of
the published ``data.json`` (same fields, same order, image ids 0–3 photorealistic, 4–7
illustration, 8–11 cartoon) and an archive laid out like the published data:

    data.json
    counterfactual/<concept>/<context_id>_<context>/<image id>.jpg
    factual/<concept>/<context_id>_<factual_context>/0.jpg
    tests.jsonl        the eight inputs per instance with the official prompts (CK, VP, CB, LP)
    appendix_b/        optional: the plain white image and the rendered CK / CB prompts

``dataset_publish`` freezes the rows as a published evaluation BenchmarkVersion (family vlind),
parsed by the evaluation app's own importer; ``version_zip`` rebuilds the archive of a frozen
version from its items, so a download later is the data that was published.
"""

from __future__ import annotations

import io
import json
import tempfile
import textwrap
import zipfile
from collections import defaultdict
from dataclasses import dataclass, field
from typing import IO

from django.db.models import Prefetch

from annotator.platform.errors import Invalid
from annotator.platform.jobs import job_enqueue
from annotator.platform.models import Job

from ...export_files import Progress, export_store, progress_for
from ...models import Image
from ...models.vlind import VLindBench, VLindImage, VLindTriple
from . import prompts, services

DATA_NAME = "data.json"
TESTS_NAME = "tests.jsonl"
# The published data.json's fields, in its order.
FIELDS = (
    "concept",
    "context_id",
    "context",
    "factual_context",
    "true_statement",
    "false_statement",
    "existent_noun",
    "non-existent_noun",
    "aggregated_human_label_good_images",
    "best_img_id",
)
# Kept in the published version's item data so its archive can be rebuilt exactly.
EXTRA_FIELDS = ("aggregated_human_label_good_images", "image_sha256", "factual_image_sha256")
README = """VLind-Bench test set built with Blindspot (vlind-bench.txt Sec. 3-4).

data.json            one object per instance, the published layout:
  concept, context_id, context (counterfactual), factual_context, true_statement (true in the
  context), false_statement (true by common sense), existent_noun, non-existent_noun,
  aggregated_human_label_good_images ({image id: accepts of 3 reviewers}; good with >= 2),
  best_img_id (the image VP and CB use).
counterfactual/<concept>/<context_id>_<context>/<id>.jpg   ids 0-3 photorealistic,
                     4-7 illustration, 8-11 cartoon; every reviewed image is here.
factual/<concept>/<context_id>_<factual_context>/0.jpg     the factual image (CK).
tests.jsonl          the eight inputs per instance with the official prompts (METRICS.md 4):
  a1/a2 CK on the factual image, b1/b2 VP and c1/c2 CB on the best image, d1/d2 LP on each
  good image; "expected" is the right answer.
appendix_b/          (when asked for) blank.png and the CK / CB prompts rendered as images
                     (App. B), one folder per instance.

Images that were not JPEG are re-encoded once as JPEG (quality 95) so every file is what its
.jpg name says. Import data.json on the evaluation app's page as family "VLind-Bench".
"""


def _safe_part(text: str) -> str:
    """A path part as the published folders name it, minus what a path cannot hold."""
    return " ".join(str(text).replace("/", "_").replace("\\", "_").replace("\0", "").split())


def counterfactual_dir(row: dict) -> str:
    return f"counterfactual/{row['concept']}/{row['context_id']}_{_safe_part(row['context'])}"


def factual_dir(row: dict) -> str:
    return f"factual/{row['concept']}/{row['context_id']}_{_safe_part(row['factual_context'])}"


@dataclass
class Instance:
    triple: VLindTriple
    reviewed: list[VLindImage]
    good: list[VLindImage]
    best: VLindImage


@dataclass
class Row:
    """One data.json entry and the images it names (id → SHA-256, and the factual one)."""

    data: dict
    images: dict[str, str] = field(default_factory=dict)
    factual: str = ""


def _triples(bench: VLindBench):
    return (
        bench.triples.filter(status=VLindTriple.Status.KEPT)
        .select_related("concept", "factual_image")
        .prefetch_related(
            Prefetch("images", queryset=VLindImage.objects.select_related("image").order_by("slot"))
        )
        .order_by("concept__position", "concept__name", "context_id")
    )


def instances(bench: VLindBench) -> list[Instance]:
    """The assembled instances, in concept order then context id (three queries)."""
    out = []
    for triple in _triples(bench):
        images = list(triple.images.all())
        reviewed = [i for i in images if i.status != VLindImage.Status.REVIEW]
        good = [i for i in images if i.status == VLindImage.Status.GOOD]
        best = services.best_of(triple, images)
        if best is None or triple.factual_image_id is None:
            continue
        if not (triple.existent_noun and triple.non_existent_noun):
            continue
        out.append(Instance(triple=triple, reviewed=reviewed, good=good, best=best))
    return out


def row_of(instance: Instance) -> Row:
    t = instance.triple
    data = {
        "concept": t.concept.name,
        "context_id": t.context_id,
        "context": t.context,
        "factual_context": t.factual_context or t.false_statement,
        "true_statement": t.true_statement,
        "false_statement": t.false_statement,
        "existent_noun": t.existent_noun,
        "non-existent_noun": t.non_existent_noun,
        "aggregated_human_label_good_images": {str(i.slot): i.accepts for i in instance.reviewed},
        "best_img_id": str(instance.best.slot),
    }
    return Row(
        data=data,
        images={str(i.slot): i.image.sha256 for i in instance.reviewed},
        factual=t.factual_image.sha256,
    )


def rows_of(bench: VLindBench) -> list[Row]:
    return [row_of(i) for i in instances(bench)]


def data_json(rows: list[Row]) -> str:
    """The published file: a JSON list, four-space indent like the official tools write it."""
    return json.dumps([r.data for r in rows], ensure_ascii=False, indent=4)


def good_ids(row: dict) -> list[str]:
    votes = row["aggregated_human_label_good_images"]
    return [k for k, v in votes.items() if v >= services.MIN_ACCEPTS]


def test_inputs(row: dict) -> list[dict]:
    """The eight inputs of one instance (Sec. 3; the official runner's keys and prompts)."""
    from evaluation.metrics import vlind

    item = f"{row['concept']}/{row['context_id']}"
    cf = counterfactual_dir(row)
    best = f"{cf}/{row['best_img_id']}.jpg"
    factual = f"{factual_dir(row)}/0.jpg"
    t, f = row["true_statement"], row["false_statement"]
    out = [
        ("a1_image", "CK", factual, vlind.ck_prompt(f), "True"),
        ("a2_image", "CK", factual, vlind.ck_prompt(t), "False"),
        ("b1", "VP", best, vlind.vp_prompt(prompts.vp_statement(row["existent_noun"])), "True"),
        (
            "b2",
            "VP",
            best,
            vlind.vp_prompt(prompts.vp_statement(row["non-existent_noun"])),
            "False",
        ),
        ("c1_image", "CB", best, vlind.cb_prompt(row["context"], t), "True"),
        ("c2_image", "CB", best, vlind.cb_prompt(row["context"], f), "False"),
    ]
    for image_id in good_ids(row):
        path = f"{cf}/{image_id}.jpg"
        out.append((f"d1/{image_id}", "LP", path, vlind.lp_prompt(t), "True"))
        out.append((f"d2/{image_id}", "LP", path, vlind.lp_prompt(f), "False"))
    return [
        {"id": item, "key": k, "test": test, "image": image, "prompt": prompt, "expected": exp}
        for k, test, image, prompt, exp in out
    ]


def _jpeg(image: Image) -> bytes:
    with image.file.storage.open(image.file.name, "rb") as handle:
        raw = handle.read()
    if image.format == "JPEG":
        return raw
    from PIL import Image as PILImage

    with PILImage.open(io.BytesIO(raw)) as img:
        buf = io.BytesIO()
        img.convert("RGB").save(buf, "JPEG", quality=95)
    return buf.getvalue()


def rendered_prompt(text: str) -> bytes:
    """App. B: the prompt in black on a 1024×1024 white image (80 characters a line)."""
    from PIL import Image as PILImage
    from PIL import ImageDraw, ImageFont

    img = PILImage.new("RGB", (1024, 1024), (255, 255, 255))
    draw = ImageDraw.Draw(img)
    wrapped = "\n".join(
        line for para in text.split("\n") for line in (textwrap.wrap(para, width=80) or [""])
    )
    draw.text((10, 10), wrapped, fill=(0, 0, 0), font=ImageFont.load_default(size=25))
    buf = io.BytesIO()
    img.save(buf, "PNG")
    return buf.getvalue()


def blank_image() -> bytes:
    from PIL import Image as PILImage

    buf = io.BytesIO()
    PILImage.new("RGB", (1024, 1024), (255, 255, 255)).save(buf, "PNG")
    return buf.getvalue()


def _stored_images(rows: list[Row]) -> dict[str, Image]:
    """The images the rows name, by SHA-256; refuses an empty export and lost images."""
    if not rows:
        raise Invalid(
            "Nothing to export yet: no instance is assembled. An instance needs a kept triple, "
            "a good image, a factual image and both VP nouns."
        )
    shas = {s for r in rows for s in [*r.images.values(), r.factual]}
    by_sha = {i.sha256: i for i in Image.objects.filter(sha256__in=shas)}
    missing = sorted(shas - set(by_sha))
    if missing:
        raise Invalid(f"{len(missing)} images of this set are no longer stored.")
    return by_sha


def image_count(rows: list[Row], *, appendix_b: bool = False) -> int:
    """Image files the archive holds: every reviewed counterfactual image and the factual one
    per row, plus (App. B) the white image and four rendered prompts per row."""
    n = sum(len(r.images) + 1 for r in rows)
    return n + (1 + 4 * len(rows) if appendix_b else 0)


def write_zip(
    fh: IO[bytes],
    rows: list[Row],
    *,
    by_sha: dict[str, Image],
    appendix_b: bool = False,
    progress: Progress | None = None,
) -> None:
    """Write the archive (layout in the module docstring) into ``fh``; ``progress(done,
    total)`` counts the image files. The one builder behind the export job and ``zip_rows``."""
    total, done = image_count(rows, appendix_b=appendix_b), 0

    def image(zf: zipfile.ZipFile, path: str, data: bytes, **kwargs) -> None:
        nonlocal done
        zf.writestr(path, data, **kwargs)
        done += 1
        if progress:
            progress(done, total)

    if progress:
        progress(0, total)
    with zipfile.ZipFile(fh, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(DATA_NAME, data_json(rows))
        zf.writestr("README.txt", README)
        tests = [line for r in rows for line in test_inputs(r.data)]
        zf.writestr(TESTS_NAME, "".join(json.dumps(t, ensure_ascii=False) + "\n" for t in tests))
        for r in rows:
            cf = counterfactual_dir(r.data)
            for image_id, sha in sorted(r.images.items(), key=lambda kv: int(kv[0])):
                data = _jpeg(by_sha[sha])
                image(zf, f"{cf}/{image_id}.jpg", data, compress_type=zipfile.ZIP_STORED)
            data = _jpeg(by_sha[r.factual])
            image(zf, f"{factual_dir(r.data)}/0.jpg", data, compress_type=zipfile.ZIP_STORED)
        if appendix_b:
            image(zf, "appendix_b/blank.png", blank_image())
            for r in rows:
                folder = f"appendix_b/rendered/{r.data['concept']}/{r.data['context_id']}"
                for t in test_inputs(r.data):
                    if t["key"] in ("a1_image", "a2_image", "c1_image", "c2_image"):
                        image(zf, f"{folder}/{t['key'][:2]}.png", rendered_prompt(t["prompt"]))


def zip_rows(rows: list[Row], *, appendix_b: bool = False) -> IO[bytes]:
    """The archive in a temporary file positioned at 0."""
    by_sha = _stored_images(rows)
    tmp = tempfile.SpooledTemporaryFile(max_size=32 * 2**20)
    write_zip(tmp, rows, by_sha=by_sha, appendix_b=appendix_b)
    tmp.seek(0)
    return tmp


def export_zip(*, bench: VLindBench, appendix_b: bool = False) -> IO[bytes]:
    return zip_rows(rows_of(bench), appendix_b=appendix_b)


# --------------------------------------------------------------------------------------------
# Statistics (Table 1) and the frozen versions
# --------------------------------------------------------------------------------------------
def table1(bench: VLindBench, found: list[Instance] | None = None) -> dict:
    """Table 1: instance triples and images per concept (images: good counterfactual ones plus
    the factual one, as the paper counts 2,576 = 2,274 + 302)."""
    found = instances(bench) if found is None else found
    per: dict[str, dict[str, int]] = defaultdict(lambda: {"triples": 0, "cf": 0, "images": 0})
    for inst in found:
        cell = per[inst.triple.concept.name]
        cell["triples"] += 1
        cell["cf"] += len(inst.good)
        cell["images"] += len(inst.good) + 1
    names = list(bench.concepts.order_by("position", "name").values_list("name", flat=True))
    names += sorted(set(per) - set(names))
    columns = [{"concept": n, **per.get(n, {"triples": 0, "cf": 0, "images": 0})} for n in names]
    total = {k: sum(c[k] for c in columns) for k in ("triples", "cf", "images")}
    return {"columns": columns, "total": total}


def benchmark_name(bench: VLindBench) -> str:
    return f"{bench.name} · {bench.project.slug}"[:200]


def dataset_publish(*, bench: VLindBench, label: str, created_by=None):
    """Freeze the assembled instances as a published evaluation version (family vlind), parsed
    from the very data.json an export holds by ``evaluation.importers``."""
    from evaluation import importers
    from evaluation import services as evaluation_services
    from evaluation.models import Family

    rows = rows_of(bench)
    if not rows:
        raise Invalid(
            "Nothing to freeze yet: no instance is assembled.",
            [{"line": 0, "error": "no assembled instance"}],
        )
    items = importers.parse_items(Family.VLIND, data_json(rows), DATA_NAME)
    for item, row in zip(items, rows, strict=True):
        item.data["aggregated_human_label_good_images"] = row.data[
            "aggregated_human_label_good_images"
        ]
        item.data["image_sha256"] = row.images
        item.data["factual_image_sha256"] = row.factual
    return evaluation_services.benchmark_version_create(
        family=Family.VLIND,
        name=benchmark_name(bench),
        project=bench.project,
        label=label,
        rows=items,
        publish=True,
        source=f"vlind bench {bench.pk}: {bench.name}",
        created_by=created_by,
    )


def published_versions(bench: VLindBench):
    from evaluation.models import BenchmarkVersion, Family

    return BenchmarkVersion.objects.filter(
        benchmark__project=bench.project_id,
        benchmark__family=Family.VLIND,
        benchmark__name=benchmark_name(bench),
    ).order_by("-created_at", "-id")


def version_rows(version) -> list[Row]:
    """The rows a frozen version holds (its items' data, in position order)."""
    rows = []
    for item in version.items.order_by("position"):
        d = item.data
        data = {key: d.get(key, "") for key in FIELDS}
        rows.append(
            Row(
                data=data,
                images=dict(d.get("image_sha256") or {}),
                factual=d.get("factual_image_sha256", ""),
            )
        )
    return rows


def version_zip(version, *, appendix_b: bool = False) -> IO[bytes]:
    return zip_rows(version_rows(version), appendix_b=appendix_b)


# --------------------------------------------------------------------------------------------
# Export jobs: the archive is written by a job and stored (curation/export_files.py)
# --------------------------------------------------------------------------------------------
def export_filename(bench: VLindBench, *, version=None, appendix_b: bool = False) -> str:
    label = f"-{version.label}" if version is not None else ""
    return f"vlind-bench-{bench.pk}{label}{'-appendix-b' if appendix_b else ''}.zip"


def _version_of(bench: VLindBench, version_id: int | None):
    if version_id is None:
        return None
    version = published_versions(bench).filter(pk=version_id).first()
    if version is None:
        raise Invalid("That version is not one of this bench's.")
    return version


def _rows_for(bench: VLindBench, version) -> list[Row]:
    return version_rows(version) if version is not None else rows_of(bench)


def export_start(
    *, bench: VLindBench, version=None, appendix_b: bool = False, created_by=None
) -> Job:
    """Check that there is something to export (the current assembly, or a frozen version of
    this bench), then enqueue the export job."""
    if version is not None:
        _version_of(bench, version.pk)
    _stored_images(_rows_for(bench, version))
    return job_enqueue(
        kind=services.EXPORT_JOB,
        params={
            "bench_id": bench.pk,
            "version_id": version.pk if version is not None else None,
            "appendix_b": bool(appendix_b),
        },
        created_by=created_by,
        project=bench.project,
    )


def export_run(*, bench: VLindBench, version_id: int | None, appendix_b: bool, job_id: int) -> dict:
    """The body of the export job: build the archive (images counted) and store it."""
    version = _version_of(bench, version_id)
    rows = _rows_for(bench, version)
    by_sha = _stored_images(rows)
    stored = export_store(
        job_id=job_id,
        recipe="vlind",
        object_id=bench.pk,
        filename=export_filename(bench, version=version, appendix_b=appendix_b),
        content_type="application/zip",
        write=lambda fh: write_zip(
            fh, rows, by_sha=by_sha, appendix_b=appendix_b, progress=progress_for(job_id)
        ),
    )
    return {
        **stored,
        "bench_id": bench.pk,
        "version_id": version_id,
        "appendix_b": appendix_b,
        "instances": len(rows),
        "images": image_count(rows, appendix_b=appendix_b),
    }


def export_jobs(bench: VLindBench):
    return (
        Job.objects.select_related("created_by")
        .filter(kind=services.EXPORT_JOB, params__bench_id=bench.pk)
        .order_by("-created_at", "-id")
    )


def latest_exports(bench: VLindBench, *, limit: int = 4) -> list[Job]:
    """The newest export job of each kind of export (current or a version, with or without
    App. B), newest first, at most ``limit`` (one query)."""
    newest: dict[tuple, Job] = {}
    for job in export_jobs(bench)[:20]:
        key = (job.params.get("version_id"), bool(job.params.get("appendix_b")))
        newest.setdefault(key, job)
    return list(newest.values())[:limit]


def newest_finished_export(
    bench: VLindBench, *, version_id: int | None = None, appendix_b: bool = False
) -> Job | None:
    return (
        export_jobs(bench)
        .filter(
            status=Job.Status.SUCCEEDED,
            params__version_id=version_id,
            params__appendix_b=bool(appendix_b),
        )
        .order_by("-finished_at", "-id")
        .first()
    )
