"""The expanded set (vhexpansion.txt Sec. 3, Sec. 5.4): originals + accepted negations + every
perturbed variant, as (case, negated case) pairs per perturbation.

Three outlets, one row builder (``expanded_set``):
- a zip with ``vhexpansion.jsonl`` and ``images/`` — the evaluation app's VH item layout
  (``evaluation.families.vhexpansion.parse.parse_items``: id, pair_id, image, question, answer,
  negated, perturbation, source) plus the links (case_id, negation_of, variant_of, image_sha256);
- a zip with ``llava.json`` and ``images/`` — LLaVA-style conversations for fine-tuning (Sec. 5.4);
- ``published_items``: a published evaluation BenchmarkVersion of family ``vhexpansion``, made
  through the evaluation services, so accuracy, symmetric accuracy and new successful VH cases
  come out per perturbation (Tables 3–5).

Only negations people accepted are ever read here: a rejected, discarded or unreviewed negation
cannot reach any outlet, and a case without an accepted negation is left out (symmetric
accuracy needs the pair).
"""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import IO

from annotator.platform.errors import Invalid
from curation.export_files import Progress, export_store, progress_for
from curation.models import Image
from curation.recipes.framework import archive
from evaluation import importers

from .models import VHCaseSet, VHNegation, VHVariant

EXPORT_JOB = "vhexpansion.export"
JSONL_NAME = "vhexpansion.jsonl"
LLAVA_NAME = "llava.json"
FAMILY = "vhexpansion"  # the evaluation family the expanded set publishes to
FORMATS = ("jsonl", "llava")
NOTHING_TO_EXPORT = (
    "Nothing to export yet: no case has an accepted negation. Draft negations and let "
    "people review them first."
)
# Item fields beyond the evaluation layout, kept in the published version's item data.
LINK_FIELDS = ("case_id", "category", "image_sha256", "negation_of", "variant_of", "derivation")
README = """VHExpansion expanded test set (Blindspot).

vhexpansion.jsonl: one test case per line.
  id            item id: <case id>:<perturbation>:q (original question) or :neg (negation)
  pair_id       <case id>:<perturbation>; each pair holds the case and its negation
  image         path of the image in this archive
  question      the yes/no question (negated for negated = true)
  answer        yes / no
  negated       true for the negation of the case (Sec. 3.1: question and answer flipped)
  perturbation  original, gaussian_noise, brightness, defocus_blur, jpeg_compression,
                ifgsm or pgd (Sec. 3.2, App. C)
  source        the source dataset of the case
  case_id       the original test case this row comes from
  negation_of   (negated rows) the id of the row it negates
  variant_of    (perturbed rows) the id of the same question on the original image
  image_sha256  SHA-256 of the image file; derivation: the perturbation and its parameters

Import it on the evaluation app's import page as family "VHExpansion", then import a model's
predictions ({"id": ..., "output": "..."} per line) to get accuracy, symmetric accuracy and the
number of new successful VH test cases per perturbation.
"""


ORIGINAL = "original"
# Column order of Tables 4-5: the original, the four common perturbations (App. C), I-FGSM, PGD.
PERTURBATION_ORDER = (
    ORIGINAL,
    "gaussian_noise",
    "brightness",
    "defocus_blur",
    "jpeg_compression",
    "ifgsm",
    "pgd",
)
# Only the labels the default spelling ("_" → " ", a capital: Gaussian noise …) gets wrong.
PERTURBATION_LABELS = {"jpeg_compression": "JPEG compression", "ifgsm": "I-FGSM", "pgd": "PGD"}


def perturbation_label(name: str) -> str:
    return PERTURBATION_LABELS.get(name, name.replace("_", " ").capitalize())


def perturbation_sort_key(name: str) -> tuple[int, str]:
    if name in PERTURBATION_ORDER:
        return (PERTURBATION_ORDER.index(name), "")
    return (len(PERTURBATION_ORDER), name)


def item_id(external_id: str, perturbation: str, *, negated: bool) -> str:
    return f"{external_id}:{perturbation}:{'neg' if negated else 'q'}"


@dataclass
class Expanded:
    rows: list[dict] = field(default_factory=list)
    images: dict[str, Image] = field(default_factory=dict)  # archive path → Image


def expanded_set(*, case_set: VHCaseSet) -> Expanded:
    """Rows of the expanded set in case order; per case the original image first, then each
    perturbation in table order."""
    out = Expanded()
    accepted = {
        n.case_id: n
        for n in VHNegation.objects.filter(
            case__case_set=case_set, status=VHNegation.Status.ACCEPTED
        ).select_related("case__image")
    }
    variants_qs = VHVariant.objects.filter(case_id__in=list(accepted)).select_related("image")
    variants: dict[int, list[VHVariant]] = {}
    for variant in variants_qs:
        variants.setdefault(variant.case_id, []).append(variant)
    for negation in sorted(accepted.values(), key=lambda n: n.case.position):
        case = negation.case
        images = [(ORIGINAL, case.image, None)] + [
            (v.perturbation, v.image, v.params)
            for v in sorted(
                variants.get(case.pk, []), key=lambda v: perturbation_sort_key(v.perturbation)
            )
        ]
        for perturbation, image, derivation in images:
            path = archive.image_path(image)
            out.images[path] = image
            common = {
                "pair_id": f"{case.external_id}:{perturbation}",
                "image": path,
                "perturbation": perturbation,
                "source": case.source_dataset,
                "category": case.category,
                "case_id": case.external_id,
                "image_sha256": image.sha256,
            }
            original_row = item_id(case.external_id, perturbation, negated=False)
            if perturbation != ORIGINAL:
                common["variant_of"] = item_id(case.external_id, ORIGINAL, negated=False)
                common["derivation"] = derivation or {}
            out.rows.append(
                {
                    "id": original_row,
                    **common,
                    "question": case.question,
                    "answer": case.answer,
                    "negated": False,
                }
            )
            out.rows.append(
                {
                    "id": item_id(case.external_id, perturbation, negated=True),
                    **common,
                    "question": negation.question,
                    "answer": negation.answer,
                    "negated": True,
                    "negation_of": original_row,
                }
            )
    return out


def jsonl_text(rows: Sequence[dict]) -> str:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)


def llava_conversations(rows: Sequence[dict]) -> list[dict]:
    """LLaVA's fine-tuning layout (Sec. 5.4): one human turn with the image token and the
    question, one model turn with the answer."""
    return [
        {
            "id": row["id"],
            "image": row["image"],
            "conversations": [
                {"from": "human", "value": f"<image>\n{row['question']}"},
                {"from": "gpt", "value": row["answer"].capitalize()},
            ],
        }
        for row in rows
    ]


def write_zip(
    fh: IO[bytes],
    *,
    expanded: Expanded,
    fmt: str = "jsonl",
    progress: Progress | None = None,
) -> None:
    """Write the zip of the expanded set with its images into ``fh`` (members with the framework's
    fixed timestamp: the same set gives the same bytes); ``progress(done, total)`` counts the
    images. The one builder behind the export job."""
    if fmt == "jsonl":
        files = {JSONL_NAME: jsonl_text(expanded.rows), "README.txt": README}
    else:
        data = llava_conversations(expanded.rows)
        files = {LLAVA_NAME: json.dumps(data, ensure_ascii=False, indent=1)}
    with zipfile.ZipFile(fh, "w") as zf:
        for name, text in files.items():
            archive.zip_member(zf, name, io.BytesIO(text.encode("utf-8")))
        archive.zip_images(zf, [image.pk for image in expanded.images.values()], progress)


# --------------------------------------------------------------------------------------------
# Export jobs: the zip is written by a job and stored (curation/export_files.py)
# --------------------------------------------------------------------------------------------
def export_check(case_set: VHCaseSet, params: dict) -> int:
    """Before an export job is enqueued, and again when it runs: a known format and something
    to export."""
    if params.get("fmt") not in FORMATS:
        raise Invalid(f"Unknown export format {params.get('fmt')!r}; choose jsonl or llava.")
    accepted = VHNegation.objects.filter(case__case_set=case_set, status=VHNegation.Status.ACCEPTED)
    if not accepted.exists():
        raise Invalid(NOTHING_TO_EXPORT)
    return 0


def export_run(case_set: VHCaseSet, *, fmt: str, job_id: int, created_by=None, **_params) -> dict:
    """The body of the export job: build the zip (images counted) and store it."""
    export_check(case_set, {"fmt": fmt})
    expanded = expanded_set(case_set=case_set)
    stored = export_store(
        job_id=job_id,
        recipe="vhexpansion",
        object_id=case_set.pk,
        filename=f"vhexpansion-{case_set.pk}-{fmt}.zip",
        content_type="application/zip",
        write=lambda fh: write_zip(fh, expanded=expanded, fmt=fmt, progress=progress_for(job_id)),
    )
    return {
        **stored,
        "case_set_id": case_set.pk,
        "fmt": fmt,
        "rows": len(expanded.rows),
        "images": len(expanded.images),
    }


def published_items(case_set: VHCaseSet) -> list:
    """The expanded set as the items of a published version of the set's evaluation benchmark
    (family vhexpansion; ``framework.publish`` makes it), built from the same JSONL an export
    holds and parsed by the evaluation app's own importer."""
    expanded = expanded_set(case_set=case_set)
    if not expanded.rows:
        raise Invalid(
            "Nothing to publish yet: no case has an accepted negation.",
            [{"line": 0, "error": "no accepted negation"}],
        )
    items = importers.parse_items(FAMILY, jsonl_text(expanded.rows), JSONL_NAME)
    by_id = {row["id"]: row for row in expanded.rows}
    for item in items:
        row = by_id[item.item_id]
        item.data.update({key: row[key] for key in LINK_FIELDS if key in row})
    return items
