"""The NaturalBench pages the generic recipe pages do not serve: the frozen versions with their
card and files; what the funnel page shows beyond the generic context (``detail_context``) and
what the lists behind the funnel's counts (pairs, questions, samples: framework ``ItemList``s
declared in ``recipe.py``) count and add.

Reads are scoped like every recipe page: a pipeline out of reach answers 404 exactly like a
missing one.
"""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from annotator.platform.files import file_response
from curation import approx_mining
from curation.mining_cost import duration, mining_estimate
from curation.models import LLMProvider
from curation.recipes.framework.declare import DatasetFile, VersionFiles

from . import prompts, selectors, skills
from .models import NaturalBenchPipeline, QuestionType


def detail_context(request: HttpRequest, pipeline: NaturalBenchPipeline, base: dict) -> dict:
    """The funnel page's own names: the counts as ``f``, the models used and their flags."""
    scorers = list(pipeline.scorers.all())
    provider = pipeline.provider
    return {
        "f": base["funnel"],
        "scorers": scorers,
        "random_scorers": [s for s in scorers if s.random_weights],
        "provider_label": provider.name if provider else _("the project's default"),
        "offline": bool(provider and provider.kind == LLMProvider.Kind.OFFLINE),
        "language_name": prompts.language_name(pipeline.language),
        "type_labels": [
            label for value, label in QuestionType.choices if value in pipeline.question_types
        ],
        "skills_count": len(skills.TAGS),
        "cost": _mining_cost(pipeline, scorers),
    }


def _mining_cost(pipeline: NaturalBenchPipeline, scorers) -> dict:
    """The mining page's cost model (``curation.mining_cost``) for this corpus and scorers."""
    est = mining_estimate(
        pipeline.corpus.sample_count, [s.embed_dim for s in scorers], k=approx_mining.DEFAULT_K
    )
    return {
        "e": est,
        "exact_1": duration(est.exact_s),
        "exact_w": duration(est.exact_parallel_s),
        "approx": duration(est.approx_s),
        "recall_pct": f"{100 * est.recall:.1f}",
        "s_per_gflop": settings.BLINDSPOT_MINING_S_PER_GFLOP,
    }


def list_counts(group: str, choices) -> Callable:
    """An item list's counts: the funnel's ``group`` (a chip per state) and, as the list's total,
    the sum of its states (``all`` pairs, question ``sets``, assembled and refused samples)."""

    def counts(pipeline: NaturalBenchPipeline) -> tuple[dict, int]:
        found = selectors.funnel(pipeline)[group]
        return found, sum(found[state] for state, _label in choices)

    return counts


def draft_limit(pipeline: NaturalBenchPipeline, page, counts) -> dict:
    """The questions list's drafts per question set (the first and its regenerations)."""
    return {"limit": 1 + pipeline.max_regenerations}


def version_detail(request: HttpRequest, pipeline, version_id: int) -> HttpResponse:
    """A frozen version: its dataset card and the annotators' agreement at every stage."""
    version = get_object_or_404(pipeline.versions, pk=version_id)
    agreement = version.card.get("agreement") or {}
    stages = [
        (_("Pair verification"), agreement.get("pair_verification")),
        (_("Answer verification"), agreement.get("answer_verification")),
        (_("Skill tagging"), agreement.get("skill_tagging")),
    ]
    return render(
        request,
        "naturalbench/version.html",
        {"pipeline": pipeline, "version": version, "card": version.card, "agreement": stages},
    )


ZIP_LAYOUT = gettext_lazy(
    "naturalbench.jsonl: one 2 × 2 sample per line in NaturalBench's published fields (Index, "
    "Image_0/1, Question_0/1, Image_i_Question_q, Question_Type, Source, Language, Skills); "
    "images/<sha256>; NaturalBench-Retrieval/metadata.json and images/ (the human-verified "
    "pairs, scores[i][image][caption]); card.json; README.md."
)
ZIP_READS = gettext_lazy(
    "Baiqi-Li/NaturalBench: its VQA evaluation reads naturalbench.jsonl; its "
    "NaturalBench_Retrieval loader reads NaturalBench-Retrieval/ (root_dir = the unzipped folder)."
)
PARQUET_LAYOUT = gettext_lazy(
    "One row per sample, the same fields as naturalbench.jsonl with the two images embedded "
    "(Hugging Face Image features)."
)
PARQUET_READS = gettext_lazy('Hugging Face datasets: load_dataset("parquet", data_files=…).')


def version_files(pipeline, versions) -> dict[int, VersionFiles]:
    """The datasets pages: each frozen version's archive and Parquet file (by the evaluation
    version it made), with its content hash and its card page."""
    found = {}
    by_benchmark_version = pipeline.versions.filter(
        benchmark_version__in=[v.pk for v in versions]
    ).order_by("-created_at", "-id")
    for version in by_benchmark_version:
        stem = f"naturalbench-{pipeline.pk}-{version.label}"
        files = [
            DatasetFile(
                label=str(_("JSONL + images (.zip)")),
                url=reverse("curator-nb-download", args=[pipeline.pk, version.pk, "zip"]),
                filename=f"{stem}.zip",
                sha256=version.archive_sha256,
                size=_size(version.archive),
                layout=str(ZIP_LAYOUT),
                reads=str(ZIP_READS),
            )
        ]
        if version.parquet:
            files.append(
                DatasetFile(
                    label=str(_("Parquet")),
                    url=reverse("curator-nb-download", args=[pipeline.pk, version.pk, "parquet"]),
                    filename=f"{stem}.parquet",
                    sha256=version.parquet_sha256,
                    size=_size(version.parquet),
                    layout=str(PARQUET_LAYOUT),
                    reads=str(PARQUET_READS),
                )
            )
        card = reverse("curator-nb-version", args=[pipeline.pk, version.pk])
        found.setdefault(
            version.benchmark_version_id,
            VersionFiles(files=tuple(files), sha256=version.sha256, card_url=card),
        )
    return found


def _size(field) -> int | None:
    """The stored file's size, or None when storage cannot tell (the file is gone)."""
    try:
        return field.size
    except (OSError, ValueError):
        return None


def version_download(request: HttpRequest, pipeline, version_id: int, fmt: str) -> HttpResponse:
    """A frozen version's zip or Parquet file, for curators and researchers of the pipeline's
    project (anyone else: 404)."""
    version = get_object_or_404(pipeline.versions, pk=version_id)
    field = {"zip": version.archive, "parquet": version.parquet}.get(fmt)
    if not field:
        raise Http404
    name = f"naturalbench-{pipeline.pk}-{version.label}.{fmt}"
    content_type = "application/zip" if fmt == "zip" else "application/vnd.apache.parquet"
    return file_response(request, field.name, filename=name, content_type=content_type)
