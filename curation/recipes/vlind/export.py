"""Assembly and export of VLind-Bench (vlind-bench.txt Sec. 3–4, App. B–C; METRICS.md §4).

An instance is a kept triple with at least one good counterfactual image, a factual image and
both VP nouns; a context with no good image leaves the set (Sec. 4). Instances become rows of
the published ``data.json`` and an archive laid out like the published data (``archive``).

``published_items`` are the rows frozen as a published evaluation BenchmarkVersion (family
vlind), parsed by the evaluation app's own importer; the export of a frozen version rebuilds its
archive from its items, so a download later is the data that was published.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from django.http import Http404
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from annotator.platform.errors import Invalid
from curation.export_files import export_store, progress_for
from curation.models import Image
from curation.recipes.framework.publish import published_versions
from curation.recipes.framework.registry import recipe_for
from evaluation import importers
from evaluation.families.vlind.parse import DATA_FIELDS

from .archive import DATA_NAME, Row, data_json, image_count, write_zip
from .models import VLindBench, VLindImage, VLindTriple
from .selectors import triples_page

# The datasets pages: what the archive holds and what reads it (archive.py's layout).
ARCHIVE_LAYOUT = gettext_lazy(
    "data.json: the published rows (same fields and order; image ids 0–3 photorealistic, 4–7 "
    "illustration, 8–11 cartoon); counterfactual/<concept>/<context_id>_<context>/<id>.jpg; "
    "factual/<concept>/<context_id>_<factual_context>/0.jpg; tests.jsonl (the eight inputs per "
    "instance with the official CK, VP, CB and LP prompts); appendix_b/ when asked for."
)
ARCHIVE_READS = gettext_lazy(
    "klee972/VLind-Bench: its evaluation reads data.json and the image folders unchanged "
    "(root = the unzipped folder)."
)


@dataclass
class Instance:
    triple: VLindTriple
    reviewed: list[VLindImage]
    good: list[VLindImage]
    best: VLindImage


def instances(bench: VLindBench, triples: list[VLindTriple] | None = None) -> list[Instance]:
    """The assembled instances (``selectors``' stage "assembled"), in concept order then context
    id (three queries), among ``triples`` when given (the bench's ``triples_page``, read once)."""
    out = []
    for triple in triples_page(bench, stage="assembled") if triples is None else triples:
        if triple.stage != "assembled":
            continue
        images = triple.image_list
        reviewed = [i for i in images if i.status != VLindImage.Status.REVIEW]
        good = [i for i in images if i.status == VLindImage.Status.GOOD]
        out.append(Instance(triple=triple, reviewed=reviewed, good=good, best=triple.best))
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


def stored_images(rows: list[Row]) -> dict[str, Image]:
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
    """The benchmark a bench's first publish makes (later ones go to ``bench.benchmark``)."""
    return f"{bench.name} · {bench.project.slug}"[:200]


def published_items(bench: VLindBench) -> list:
    """The items of a published version (family vlind; the framework's ``publish_object``
    freezes them as a version of the bench's benchmark): the assembled instances, parsed from
    the very data.json an export holds by the evaluation app's importer, with what rebuilds
    their archive later."""
    rows = rows_of(bench)
    if not rows:
        raise Invalid(
            "Nothing to freeze yet: no instance is assembled.",
            [{"line": 0, "error": "no assembled instance"}],
        )
    items = importers.parse_items("vlind", data_json(rows), DATA_NAME)
    for item, row in zip(items, rows, strict=True):
        item.data["aggregated_human_label_good_images"] = row.data[
            "aggregated_human_label_good_images"
        ]
        item.data["image_sha256"] = row.images
        item.data["factual_image_sha256"] = row.factual
    return items


def version_rows(version) -> list[Row]:
    """The rows a frozen version holds (its items' data, in position order)."""
    return [
        Row(
            data={key: d.get(key, "") for key in DATA_FIELDS},
            images=dict(d.get("image_sha256") or {}),
            factual=d.get("factual_image_sha256", ""),
        )
        for d in version.items.order_by("position").values_list("data", flat=True)
    ]


# --------------------------------------------------------------------------------------------
# Export jobs: the archive is written by a job and stored (curation/export_files.py)
# --------------------------------------------------------------------------------------------
def export_filename(bench: VLindBench, *, version=None, appendix_b: bool = False) -> str:
    label = f"-{version.label}" if version is not None else ""
    return f"vlind-bench-{bench.pk}{label}{'-appendix-b' if appendix_b else ''}.zip"


def _version_of(bench: VLindBench, version_id: int | None):
    if version_id is None:
        return None
    version = published_versions(recipe_for(bench), bench).filter(pk=version_id).first()
    if version is None:
        raise Invalid("That version is not one of this bench's.")
    return version


def _rows_for(bench: VLindBench, version_id: int | None) -> tuple[Any, list[Row]]:
    """The frozen version ``version_id`` of the bench and its rows (None: the assembly's)."""
    version = _version_of(bench, version_id)
    return version, version_rows(version) if version is not None else rows_of(bench)


def export_params(bench: VLindBench, kwargs: dict, data) -> dict:
    """The export's variant: a frozen version of this bench (404 if not its) or the current
    assembly, with or without App. B."""
    version_id = kwargs.get("version_id")
    try:
        _version_of(bench, version_id)
    except Invalid:
        raise Http404 from None
    return {"version_id": version_id, "appendix_b": data.get("appendix_b") == "1"}


def export_check(bench: VLindBench, params: dict) -> int:
    """Before the export job: there is something to export, every image of it still stored."""
    _version, rows = _rows_for(bench, params.get("version_id"))
    stored_images(rows)
    return 0


def export_label(params: dict) -> str:
    version_id = params.get("version_id")
    what = _("version #%(id)d") % {"id": version_id} if version_id else _("current assembly")
    if params.get("appendix_b"):
        what = _("%(what)s with App. B") % {"what": what}
    return _("Export: %(what)s") % {"what": what}


def export_run(
    bench: VLindBench, *, version_id: int | None = None, appendix_b: bool = False, job_id, **_kw
) -> dict:
    """The body of the export job: build the archive (images counted) and store it."""
    version, rows = _rows_for(bench, version_id)
    by_sha = stored_images(rows)
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
