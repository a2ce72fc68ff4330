"""The NaturalBench pages the generic recipe pages do not serve: the lists behind every funnel
count (pairs, questions, samples) and the frozen versions with their card and files; and what the
funnel page shows beyond the generic context (``detail_context``).

Reads are scoped like every recipe page: a pipeline out of reach answers 404 exactly like a
missing one.
"""

from __future__ import annotations

from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET

from annotator.platform import roles
from annotator.platform.files import DOWNLOAD_ROLES, downloadable_or_404, file_response
from annotator.platform.views import state_chips
from curation.models import LLMProvider
from curation.recipes.framework.registry import recipe_of
from curation.recipes.framework.selectors import object_or_404

from . import prompts, selectors, skills
from .models import (
    ConfoundingPair,
    NaturalBenchPipeline,
    NaturalBenchSample,
    PairQuestionSet,
    QuestionType,
)

PAGE_SIZE = 20


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
    }


def _pipeline(request: HttpRequest, pk: int) -> NaturalBenchPipeline:
    return object_or_404(recipe_of("naturalbench"), request.user, pk)


def _page(request, queryset):
    return Paginator(queryset, PAGE_SIZE).get_page(request.GET.get("page"))


def _state_list(request, name: str, pipeline, page, counts: dict, choices, **extra):
    """One of the lists behind the funnel's counts, with a chip per state."""
    context = {
        "pipeline": pipeline,
        "page": page,
        "state": request.GET.get("state", ""),
        "chips": state_chips(counts, choices),
        **extra,
    }
    return render(request, f"curation/naturalbench/{name}.html", context)


@roles.roles_required(roles.CURATOR)
@require_GET
def pairs(request: HttpRequest, pipeline_id: int) -> HttpResponse:
    pipeline = _pipeline(request, pipeline_id)
    page = _page(request, selectors.pairs_page(pipeline, state=request.GET.get("state", "")))
    counts = selectors.funnel(pipeline)["pairs"]
    choices = ConfoundingPair.State.choices
    return _state_list(request, "pairs", pipeline, page, counts, choices, total=counts["all"])


@roles.roles_required(roles.CURATOR)
@require_GET
def questions(request: HttpRequest, pipeline_id: int) -> HttpResponse:
    pipeline = _pipeline(request, pipeline_id)
    page = _page(
        request, selectors.question_sets_page(pipeline, state=request.GET.get("state", ""))
    )
    counts = selectors.funnel(pipeline)["questions"]
    limit = 1 + pipeline.max_regenerations
    choices = PairQuestionSet.State.choices
    return _state_list(
        request, "questions", pipeline, page, counts, choices, total=counts["sets"], limit=limit
    )


@roles.roles_required(roles.CURATOR)
@require_GET
def samples(request: HttpRequest, pipeline_id: int) -> HttpResponse:
    pipeline = _pipeline(request, pipeline_id)
    page = _page(request, selectors.samples_page(pipeline, state=request.GET.get("state", "")))
    for sample in page:
        sample.skill_labels = [
            skills.labels(tags) if tags is not None else None
            for tags in (sample.skills or [None, None])
        ]
    counts = selectors.funnel(pipeline)["samples"]
    total = counts["assembled"] + counts["refused"]
    choices = NaturalBenchSample.State.choices
    return _state_list(request, "samples", pipeline, page, counts, choices, total=total)


@roles.roles_required(roles.CURATOR)
@require_GET
def version_detail(request: HttpRequest, pipeline_id: int, version_id: int) -> HttpResponse:
    pipeline = _pipeline(request, pipeline_id)
    version = selectors.version_or_404(pipeline, version_id)
    agreement = version.card.get("agreement") or {}
    stages = [
        (_("Pair verification"), agreement.get("pair_verification")),
        (_("Answer verification"), agreement.get("answer_verification")),
        (_("Skill tagging"), agreement.get("skill_tagging")),
    ]
    return render(
        request,
        "curation/naturalbench/version.html",
        {"pipeline": pipeline, "version": version, "card": version.card, "agreement": stages},
    )


@roles.roles_required(*DOWNLOAD_ROLES)
@require_GET
def version_download(
    request: HttpRequest, pipeline_id: int, version_id: int, fmt: str
) -> HttpResponse:
    """A frozen version's zip or Parquet file, for curators and researchers of the pipeline's
    project (anyone else: 404)."""
    pipeline = downloadable_or_404(request.user, NaturalBenchPipeline.objects, pipeline_id)
    version = selectors.version_or_404(pipeline, version_id)
    field = {"zip": version.archive, "parquet": version.parquet}.get(fmt)
    if not field:
        raise Http404
    name = f"naturalbench-{pipeline.pk}-{version.label}.{fmt}"
    content_type = "application/zip" if fmt == "zip" else "application/vnd.apache.parquet"
    return file_response(request, field.name, filename=name, content_type=content_type)
