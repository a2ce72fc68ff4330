"""NaturalBench pages (curators and admins): the pipelines of each project, a new pipeline's
settings, the funnel (samples → mismatched pairs → verified pairs → drafted questions → answered
and kept → assembled samples → tagged → exported) with a button per stage, and the lists behind
every count (pairs, questions, samples, versions with their card and files).

Reads go through ``selectors`` (project membership): a pipeline out of reach answers 404 exactly
like a missing one. Every POST starts a job (its card polls on the funnel page) or saves the
settings, then redirects back.
"""

from __future__ import annotations

from functools import partial

from django import forms
from django.contrib import messages
from django.core.paginator import Paginator
from django.db.models import Q
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_GET, require_POST

from annotator.platform import roles
from annotator.platform.errors import Invalid
from annotator.platform.files import DOWNLOAD_ROLES, downloadable_or_404, file_response
from annotator.platform.scoping import curated_project_or_404
from annotator.platform.views import error_context, grouped_by_project, start_job, state_chips

from ...models import (
    ConfoundingPair,
    Corpus,
    LLMProvider,
    NaturalBenchPipeline,
    NaturalBenchSample,
    PairQuestionSet,
    Scorer,
)
from . import prompts, selectors, services, skills

CURATOR = (roles.CURATOR,)  # admins pass every role check
PAGE_SIZE = 20
STAGE_LABELS = {
    "mine": gettext_lazy("Mine pairs"),
    "verify": gettext_lazy("Send pairs to verification"),
    "draft": gettext_lazy("Draft questions"),
    "assemble": gettext_lazy("Assemble samples"),
    "tag": gettext_lazy("Send to skill tagging"),
    "export": gettext_lazy("Export a version"),
}
TYPE_CHOICES = [
    (services.YES_NO, gettext_lazy("Yes-or-No")),
    (services.MULTIPLE_CHOICE, gettext_lazy("Multiple-Choice")),
]


# --------------------------------------------------------------------------------------------
# forms: shape only; services.pipeline_create / pipeline_update check the meaning
# --------------------------------------------------------------------------------------------
class PipelineForm(forms.Form):
    name = forms.CharField(max_length=200, label=gettext_lazy("Name"))
    corpus = forms.ModelChoiceField(queryset=Corpus.objects.none(), label=gettext_lazy("Corpus"))
    language = forms.CharField(
        max_length=35,
        initial="en",
        label=gettext_lazy("Caption language"),
        help_text=gettext_lazy("Captions in this language (BCP 47: en, zh, hi) are paired."),
    )
    method = forms.ChoiceField(
        choices=NaturalBenchPipeline.Method.choices,
        initial=NaturalBenchPipeline.Method.EQ1,
        label=gettext_lazy("Pairing"),
    )
    scorers = forms.ModelMultipleChoiceField(
        queryset=Scorer.objects.all(),
        required=False,
        widget=forms.CheckboxSelectMultiple,
        label=gettext_lazy("Scorers"),
        help_text=gettext_lazy("Eq. 1: keep the pairs every selected scorer mismatches."),
    )
    random_pairs = forms.IntegerField(
        required=False,
        min_value=1,
        label=gettext_lazy("Random pairs"),
        help_text=gettext_lazy("Random baseline only: how many (empty: as many as possible)."),
    )
    caption_max_chars = forms.IntegerField(
        required=False,
        min_value=services.MIN_CAPTION_CHARS,
        label=gettext_lazy("Caption length limit"),
        help_text=gettext_lazy(
            "Longer captions are shortened by the LLM before scoring (App. A: 230 for DOCCI)."
        ),
    )
    question_types = forms.MultipleChoiceField(
        choices=TYPE_CHOICES,
        initial=[services.YES_NO],
        widget=forms.CheckboxSelectMultiple,
        label=gettext_lazy("Question types"),
    )
    annotators_per_item = forms.IntegerField(
        min_value=1,
        max_value=services.MAX_PEOPLE,
        initial=2,
        label=gettext_lazy("Annotators per item"),
        help_text=gettext_lazy("The paper used two; a question is kept only if all agree."),
    )
    taggers_per_item = forms.IntegerField(
        min_value=1,
        max_value=services.MAX_PEOPLE,
        initial=3,
        label=gettext_lazy("Taggers per question"),
        help_text=gettext_lazy("Each skill tag is kept when a majority chose it."),
    )
    max_regenerations = forms.IntegerField(
        min_value=0,
        max_value=services.MAX_REGENERATIONS,
        initial=3,
        label=gettext_lazy("Maximum regenerations"),
        help_text=gettext_lazy("A failed pair is drafted again up to this many times (paper: 3)."),
    )
    seed = forms.IntegerField(min_value=0, initial=0, label=gettext_lazy("Seed"))
    provider = forms.ModelChoiceField(
        queryset=LLMProvider.objects.none(),
        required=False,
        label=gettext_lazy("LLM provider"),
        empty_label=gettext_lazy("The project's default"),
    )
    auto_regenerate = forms.BooleanField(
        required=False,
        initial=True,
        label=gettext_lazy("Draft again as soon as an item fails"),
    )

    def __init__(self, *args, project=None, locked: bool = False, **kwargs):
        super().__init__(*args, **kwargs)
        if locked:
            # Pairs exist: these settings decide them (the form keeps their saved values).
            for name in services.MINING_FIELDS:
                self.fields[name].disabled = True
        self.fields["corpus"].queryset = Corpus.objects.filter(project=project).order_by("name")
        self.fields["provider"].queryset = LLMProvider.objects.filter(
            Q(project=project) | Q(project__isnull=True)
        ).order_by("name")


def _initial(pipeline: NaturalBenchPipeline) -> dict:
    fields = [f for f in services.FIELDS if f != "scorers"]
    data = {f: getattr(pipeline, f) for f in fields}
    data["scorers"] = list(pipeline.scorers.all())
    return data


def _back(pipeline) -> HttpResponse:
    return redirect("curator-nb-pipeline", pipeline.pk)


# --------------------------------------------------------------------------------------------
# pages
# --------------------------------------------------------------------------------------------
@roles.roles_required(*CURATOR)
@require_GET
def pipelines(request: HttpRequest) -> HttpResponse:
    """Every pipeline in reach, grouped by project."""
    groups = grouped_by_project(request.user, selectors.pipelines_for(request.user), "pipelines")
    return render(request, "curation/naturalbench/pipelines.html", {"groups": groups})


def _form_page(request, project, form, *, pipeline=None, error=None, status=200):
    return render(
        request,
        "curation/naturalbench/form.html",
        {"project": project, "form": form, "pipeline": pipeline, "error": error},
        status=status,
    )


def _settings(form: PipelineForm) -> dict:
    data = dict(form.cleaned_data)
    data["scorers"] = list(data["scorers"])
    return data


@roles.roles_required(*CURATOR)
def pipeline_new(request: HttpRequest, project_id: int) -> HttpResponse:
    project = curated_project_or_404(request.user, project_id)
    if request.method != "POST":
        form = PipelineForm(project=project, initial={"name": f"NaturalBench {project.name}"})
        return _form_page(request, project, form)
    form = PipelineForm(request.POST, project=project)
    if not form.is_valid():
        return _form_page(request, project, form, status=400)
    try:
        pipeline = services.pipeline_create(
            project=project, created_by=request.user, **_settings(form)
        )
    except Invalid as exc:
        return _form_page(request, project, form, error=error_context(exc), status=400)
    messages.success(request, _("Pipeline created. Mine pairs to start."))
    return _back(pipeline)


@roles.roles_required(*CURATOR)
def pipeline_settings(request: HttpRequest, pipeline_id: int) -> HttpResponse:
    pipeline = selectors.pipeline_or_404(request.user, pipeline_id)
    project = pipeline.project
    locked = pipeline.pairs.exists()
    if request.method != "POST":
        form = PipelineForm(project=project, initial=_initial(pipeline), locked=locked)
        return _form_page(request, project, form, pipeline=pipeline)
    form = PipelineForm(request.POST, project=project, initial=_initial(pipeline), locked=locked)
    if not form.is_valid():
        return _form_page(request, project, form, pipeline=pipeline, status=400)
    try:
        services.pipeline_update(pipeline=pipeline, **_settings(form))
    except Invalid as exc:
        return _form_page(
            request, project, form, pipeline=pipeline, error=error_context(exc), status=400
        )
    messages.success(request, _("Settings saved."))
    return _back(pipeline)


def _detail_context(pipeline: NaturalBenchPipeline) -> dict:
    counts = selectors.funnel(pipeline)
    jobs = selectors.latest_jobs(pipeline)
    stages = []
    for stage, label in STAGE_LABELS.items():
        job = jobs.get(stage)
        stages.append(
            {
                "stage": stage,
                "label": label,
                "blocker": services.stage_blocker(pipeline, stage, counts),
                "job": job,
                "busy": job is not None and not job.is_finished,
            }
        )
    scorers = list(pipeline.scorers.all())
    provider = pipeline.provider
    return {
        "pipeline": pipeline,
        "f": counts,
        "stages": {s["stage"]: s for s in stages},
        "jobs": [s for s in stages if s["job"] is not None],
        "running": any(s["busy"] for s in stages),
        "scorers": scorers,
        "random_scorers": [s for s in scorers if s.random_weights],
        "provider_label": provider.name if provider else _("the project's default"),
        "offline": bool(provider and provider.kind == LLMProvider.Kind.OFFLINE),
        "language_name": prompts.language_name(pipeline.language),
        "type_labels": [label for value, label in TYPE_CHOICES if value in pipeline.question_types],
        "max_bar": max(counts["corpus"]["samples"], 1),
        "skills_count": len(skills.TAGS),
    }


@roles.roles_required(*CURATOR)
@require_GET
def pipeline_detail(request: HttpRequest, pipeline_id: int) -> HttpResponse:
    """The funnel; ``?part=funnel`` is the fragment htmx polls while a job runs."""
    pipeline = selectors.pipeline_or_404(request.user, pipeline_id)
    context = _detail_context(pipeline)
    if request.GET.get("part") == "funnel":
        return render(request, "curation/naturalbench/_funnel.html", context)
    return render(request, "curation/naturalbench/pipeline.html", context)


@roles.roles_required(*CURATOR)
@require_POST
def stage_start(request: HttpRequest, pipeline_id: int, stage: str) -> HttpResponse:
    pipeline = selectors.pipeline_or_404(request.user, pipeline_id)
    if stage not in services.STAGES:
        raise Http404
    params = {}
    if stage == "export" and request.POST.get("label", "").strip():
        params["label"] = request.POST["label"].strip()[:60]
    return start_job(
        request,
        partial(
            services.stage_start,
            pipeline=pipeline,
            stage=stage,
            created_by=request.user,
            params=params,
        ),
        page=reverse("curator-nb-pipeline", args=[pipeline.pk]),
        message=lambda job: (
            _("%(what)s: job #%(n)d started.") % {"what": STAGE_LABELS[stage], "n": job.pk}
        ),
    )


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


@roles.roles_required(*CURATOR)
@require_GET
def pairs(request: HttpRequest, pipeline_id: int) -> HttpResponse:
    pipeline = selectors.pipeline_or_404(request.user, pipeline_id)
    page = _page(request, selectors.pairs_page(pipeline, state=request.GET.get("state", "")))
    counts = selectors.funnel(pipeline)["pairs"]
    choices = ConfoundingPair.State.choices
    return _state_list(request, "pairs", pipeline, page, counts, choices, total=counts["all"])


@roles.roles_required(*CURATOR)
@require_GET
def questions(request: HttpRequest, pipeline_id: int) -> HttpResponse:
    pipeline = selectors.pipeline_or_404(request.user, pipeline_id)
    state = request.GET.get("state", "")
    page = _page(request, selectors.question_sets_page(pipeline, state=state))
    counts = selectors.funnel(pipeline)["questions"]
    limit = 1 + pipeline.max_regenerations
    choices = PairQuestionSet.State.choices
    return _state_list(
        request, "questions", pipeline, page, counts, choices, total=counts["sets"], limit=limit
    )


@roles.roles_required(*CURATOR)
@require_GET
def samples(request: HttpRequest, pipeline_id: int) -> HttpResponse:
    pipeline = selectors.pipeline_or_404(request.user, pipeline_id)
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


@roles.roles_required(*CURATOR)
@require_GET
def version_detail(request: HttpRequest, pipeline_id: int, version_id: int) -> HttpResponse:
    pipeline = selectors.pipeline_or_404(request.user, pipeline_id)
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
