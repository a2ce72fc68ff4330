"""A published hunt version as NaturalBench's Parquet file (METRICS.md Sec. 1; the layout of the
Hugging Face release BaiqiL/NaturalBench, which Baiqi-Li/NaturalBench's evaluation loads with
``datasets.load_dataset``): one row per validated 2 × 2 sample — Index (the candidate), the two
images embedded as Hugging Face ``Image`` structs, the questions (two-option ones with their
options as published), the four answers in the published layout, Question_Type, Source, then
Language and Skills — the same columns and features as NaturalBench's own exports
(``evaluation.families.naturalbench.release``). Rows are the version's frozen items, read back
through the family's layout check; the hunt's provenance stays in the version and the JSONL
export."""

from __future__ import annotations

import os
import shutil
import tempfile
from typing import IO

from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from annotator.platform.errors import Invalid
from curation.export_files import export_store
from curation.models import Image
from curation.recipes.framework import archive
from curation.recipes.framework.publish import published_versions
from curation.recipes.framework.registry import recipe_for
from evaluation.families.naturalbench import layout as nb
from evaluation.families.naturalbench import release as nb_release

from .models import HuntRound

ROWS = 64  # rows per Parquet row group
LAYOUT = gettext_lazy(
    "NaturalBench's published Parquet layout, one row per validated 2 × 2 sample: Index, Image_0 "
    "and Image_1 (embedded), Question_0, Image_0_Question_0, Image_1_Question_0, Question_1, "
    "Image_0_Question_1, Image_1_Question_1, Question_Type (yes_no or multiple_choice, options "
    "embedded in the question), Source, Language, Skills."
)
READS = gettext_lazy(
    "datasets.load_dataset('parquet') and Baiqi-Li/NaturalBench's naturalbench_vqa.py "
    "(SUFFIX_FOR_VQA, extract_answer, get_scores), unchanged."
)


def version_of(round_: HuntRound, version_id):
    """The round's published version ``version_id`` (None: its newest), else Invalid."""
    versions = published_versions(recipe_for(round_), round_)
    version = versions.first() if version_id is None else versions.filter(pk=version_id).first()
    if version is None:
        if version_id is None:
            raise Invalid("Publish a version first: the Parquet file holds a published version.")
        raise Invalid("That version is not one of this round's.")
    return version


def _sha(ref: str) -> str:
    return ref.removeprefix("sha256:")


def record_of(item_id: str, data: dict, paths: dict[str, str]) -> dict:
    """The published record of one frozen item (checked by the family's layout), images as
    their archive paths."""
    record = nb.sample_build(
        index=int(item_id),
        image_0=paths[_sha(data["image_0"])],
        image_1=paths[_sha(data["image_1"])],
        question_0=data["question_0"],
        question_1=data["question_1"],
        question_type=data["question_type"],
        answers=nb.expected_answers(data["question_type"]),
        source=data.get("source", ""),
        language=data.get("language") or "en",
    )
    record["Skills"] = data.get("skills") or [[], []]
    return {field: record[field] for field in nb_release.PARQUET_FIELDS}


def version_records(version) -> list[dict]:
    """The version's items as published records, in Index order."""
    rows = list(version.items.values_list("item_id", "data"))
    shas = {_sha(d[key]) for _id, d in rows for key in ("image_0", "image_1")}
    paths = {i.sha256: archive.image_path(i) for i in Image.objects.filter(sha256__in=shas)}
    missing = shas - set(paths)
    if missing:
        raise Invalid(f"{len(missing)} image(s) of this version are no longer stored.")
    records = [record_of(item_id, data, paths) for item_id, data in rows]
    return sorted(records, key=lambda r: r["Index"])


def _write(records: list[dict], fh: IO[bytes]) -> None:
    with tempfile.TemporaryDirectory(prefix="hunt-parquet-") as tmp:
        lines = os.path.join(tmp, "records.jsonl")
        with open(lines, "w+b") as source:
            for record in records:
                source.write(archive.json_line(record))
            path = os.path.join(tmp, "export.parquet")
            archive.parquet_write(
                path,
                source,
                schema=archive.features_schema(nb_release.parquet_features()),
                image_fields=nb_release.IMAGE_COLUMNS,
                rows=ROWS,
            )
        with open(path, "rb") as written:
            shutil.copyfileobj(written, fh)


def parquet_check(round_: HuntRound, params: dict) -> int:
    return version_of(round_, params.get("version_id")).item_count


def parquet_label(params: dict) -> str:
    return _("Version #%(id)s as NaturalBench Parquet") % {"id": params.get("version_id")}


def parquet_run(round_: HuntRound, *, job_id: int, version_id=None) -> dict:
    """The export job's body: the version's records and images as one Parquet file."""
    version = version_of(round_, version_id)
    records = version_records(version)
    stored = export_store(
        job_id=job_id,
        recipe="hunt",
        object_id=round_.pk,
        filename=f"hunt-round-{round_.pk}-{version.label}.parquet",
        content_type="application/vnd.apache.parquet",
        write=lambda fh: _write(records, fh),
    )
    return {**stored, "version_id": version.pk, "samples": len(records)}
