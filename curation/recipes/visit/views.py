"""VisIT-Bench's own pages; the generic recipe pages (list, new, detail, settings, the fetch /
draft / sync buttons, publish, exports) come from ``framework.urls``, and ``detail_context`` adds
what the pipeline page shows beyond the funnel. Curators: the dataset import, families,
instances, candidate responses, rated tuples and the judge. Researchers and curators: the living
leaderboard, where a new model's responses are submitted.

Reads go through ``selectors`` (project membership): a pipeline out of reach answers 404 exactly
like a missing one. Every POST starts a job or changes one thing, then redirects back; bad input
re-renders with the reason, never a 500.
"""

from __future__ import annotations

from functools import partial

from django.contrib import messages
from django.core.paginator import Paginator
from django.db.models import Q
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import path, reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST

from annotator.platform import roles
from annotator.platform.errors import Invalid, ServiceError
from annotator.platform.views import (
    error_context,
    first_error,
    form_page,
    perform,
    start_job,
    state_chips,
)
from evaluation.families.visit import board

from ... import gateway
from ...models import LLMProvider
from ..framework import views as framework_views
from ..framework.registry import recipe_of
from . import (
    dataset,
    export,
    families,
    forms,
    prompts,
    publish,
    ratings,
    references,
    selectors,
    submissions,
)
from .models import VisitInstance
from .pipelines import upload_text

CURATOR = (roles.CURATOR,)  # admins pass every role check
READERS = (roles.CURATOR, roles.RESEARCHER)
PAGE_SIZE = 25
MAX_UPLOAD = 50 * 1024 * 1024


def _url(pipeline, anchor: str = "") -> str:
    return framework_views.detail_url(recipe_of("visit"), pipeline, anchor)


def _back(pipeline, anchor: str = "") -> HttpResponse:
    return redirect(_url(pipeline, anchor))


def _providers(pipeline):
    projects = Q(project=None) | Q(project=pipeline.project)
    return LLMProvider.objects.filter(projects).order_by("name")


def _table2_rows(table: dict) -> list[dict]:
    """Table 2's three rows, in percent; None where a column has no rated reference."""
    rows = []
    for key, label in (
        ("correct_share", _("Reference correct (%)")),
        ("caption_share", _("Problem in caption (%)")),
        ("response_share", _("Problem in response (%)")),
    ):
        values = [table[c][key] for c in ("overall", "single", "multi")]
        rows.append({"label": label, "values": [None if v is None else 100 * v for v in values]})
    return rows


def detail_context(request: HttpRequest, pipeline, base: dict) -> dict:
    """What the pipeline page shows besides the generic funnel, buttons, jobs and forms."""
    table2 = selectors.verification_table(pipeline)
    version = publish.current_version(pipeline)
    leaders = selectors.leaderboard(pipeline)
    runs = list(version.runs.select_related("model").order_by("model__name")) if version else []
    return {
        "table2": table2,
        "table2_rows": _table2_rows(table2),
        "families": selectors.families(pipeline),
        "exports": [(what, fmt, label) for (what, fmt), label in export.EXPORT_LABELS.items()],
        "samples": selectors.sample_instances(pipeline),
        "import_form": forms.ImportForm(),
        "instructions_form": forms.InstructionsForm(),
        "generate_form": forms.GenerateForm(providers=_providers(pipeline)),
        "pairs_form": forms.PairsForm(initial={"votes": pipeline.votes_per_pair}),
        "judge_form": forms.JudgeForm(),
        "version": version,
        "runs": runs,
        "board": leaders,
        "bias": board.position_bias(pipeline.rating_queue_id),
        "fig8": board.category_win_rates(leaders),
        "template": references.reference_template(multi=False),
        "template_multi": references.reference_template(multi=True),
        "provider": pipeline.provider or gateway.provider_for(pipeline.project),
        "guidance": prompts.CAPTION_GUIDANCE,
    }


@roles.roles_required(*CURATOR)
@require_POST
def dataset_import(request: HttpRequest, pipeline_id: int) -> HttpResponse:
    pipeline = selectors.pipeline_or_404(request.user, pipeline_id)
    form = forms.ImportForm(request.POST, request.FILES)
    if not form.is_valid():
        messages.error(request, _("Choose the dataset CSV to import."))
        return _back(pipeline)
    try:
        job, n = dataset.dataset_import_start(
            pipeline=pipeline, upload=form.cleaned_data["file"], created_by=request.user
        )
    except ServiceError as exc:
        context = framework_views.detail_page_context(recipe_of("visit"), request, pipeline)
        context["import_error"] = error_context(exc)
        return render(request, "curation/visit/pipeline.html", context, status=400)
    messages.success(request, _("%(n)d rows checked; importing them.") % {"n": n})
    return _back(pipeline, f"job-{job.pk}")


def _seed_images(request: HttpRequest, form) -> list[families.SeedImage]:
    images = []
    for upload in request.FILES.getlist("images"):
        if upload.size > MAX_UPLOAD:
            raise Invalid(_("%(name)s is larger than 50 MB.") % {"name": upload.name})
        images.append(
            families.SeedImage(
                data=upload.read(),
                name=upload.name,
                licence=form.cleaned_data["licence"],
                source=form.cleaned_data["source"],
            )
        )
    for line in (form.cleaned_data.get("image_urls") or "").splitlines():
        if line.strip():
            images.append(families.SeedImage(url=line.strip()[:2000]))
    return images


@roles.roles_required(*CURATOR)
def family_new(request: HttpRequest, pipeline_id: int) -> HttpResponse:
    pipeline = selectors.pipeline_or_404(request.user, pipeline_id)
    form = forms.FamilyForm(request.POST or None, request.FILES or None)

    def save(data: dict):
        return families.family_create(
            pipeline=pipeline,
            name=data["name"],
            description=data["description"],
            multi_image=data["multi_image"],
            seed_instruction=data["seed_instruction"],
            seed_response=data["seed_response"],
            seed_images=_seed_images(request, form),
            created_by=request.user,
        )

    return form_page(
        request,
        form,
        save,
        "curation/visit/family_new.html",
        {"pipeline": pipeline},
        done=lambda family: (
            _("Family “%(name)s” created with its example.") % {"name": family.name}
        ),
        then=_url(pipeline, "families"),
    )


@roles.roles_required(*CURATOR)
@require_POST
def instructions(request: HttpRequest, pipeline_id: int, family_id: int) -> HttpResponse:
    pipeline = selectors.pipeline_or_404(request.user, pipeline_id)
    family = selectors.family_or_404(pipeline, family_id)
    form = forms.InstructionsForm(request.POST)
    if not form.is_valid():
        messages.error(request, _("Ask for between 1 and 200 new instructions."))
        return _back(pipeline, "families")
    create = partial(
        families.instruction_tasks_create,
        family=family,
        count=form.cleaned_data["count"],
        created_by=request.user,
    )
    done = _("%(n)d instruction tasks of “%(name)s” wait for crowdworkers.")
    return perform(
        request,
        create,
        back=_url(pipeline, "families"),
        done=lambda n: done % {"n": n, "name": family.name},
    )


@roles.roles_required(*CURATOR)
@require_GET
def instances(request: HttpRequest, pipeline_id: int) -> HttpResponse:
    pipeline = selectors.pipeline_or_404(request.user, pipeline_id)
    state = request.GET.get("state", "")
    try:
        family = int(request.GET.get("family") or 0) or None
    except ValueError:
        family = None
    rows = selectors.instances_page(pipeline, state=state, family=family)
    funnel = selectors.funnel(pipeline)
    choices = [c for c in VisitInstance.State.choices if c[0] != VisitInstance.State.SEED]
    context = {
        "pipeline": pipeline,
        "page": Paginator(rows, PAGE_SIZE).get_page(request.GET.get("page")),
        "state": state,
        "family": family,
        "chips": state_chips(funnel["states"], choices),
        "funnel": funnel,
        "families": selectors.families(pipeline),
    }
    return render(request, "curation/visit/instances.html", context)


def _posted(request, form, invalid: str) -> dict | None:
    """The POSTed form's data, or None after saying why it is not valid."""
    if form.is_valid():
        return form.cleaned_data
    messages.error(request, invalid % {"e": first_error(form)})
    return None


@roles.roles_required(*CURATOR)
@require_POST
def generate(request: HttpRequest, pipeline_id: int) -> HttpResponse:
    pipeline = selectors.pipeline_or_404(request.user, pipeline_id)
    form = forms.GenerateForm(request.POST, providers=_providers(pipeline))
    data = _posted(request, form, _("Choose a model: %(e)s"))
    if data is None:
        return _back(pipeline, "responses")
    start = partial(
        submissions.responses_generate_start,
        pipeline=pipeline,
        provider=data["provider"],
        limit=data.get("limit"),
        created_by=request.user,
    )
    message = _("The model is answering the verified instances.")
    page = _url(pipeline)
    return start_job(
        request, start, page=page, refused_at="responses", message=message, job_page=True
    )


@roles.roles_required(*CURATOR)
@require_POST
def pairs(request: HttpRequest, pipeline_id: int) -> HttpResponse:
    pipeline = selectors.pipeline_or_404(request.user, pipeline_id)
    invalid = _("The sampling is not valid: %(e)s")
    data = _posted(request, forms.PairsForm(request.POST), invalid)
    if data is None:
        return _back(pipeline, "ratings")
    sample = partial(ratings.pairs_sample, pipeline=pipeline, created_by=request.user, **data)
    done = _("%(n)d tuples wait for raters.")
    return perform(request, sample, back=_url(pipeline, "ratings"), done=lambda n: done % {"n": n})


@roles.roles_required(*CURATOR)
@require_POST
def judge(request: HttpRequest, pipeline_id: int) -> HttpResponse:
    pipeline = selectors.pipeline_or_404(request.user, pipeline_id)
    invalid = _("The judge settings are not valid: %(e)s")
    data = _posted(request, forms.JudgeForm(request.POST), invalid)
    if data is None:
        return _back(pipeline, "leaderboard")
    start = partial(
        submissions.leaderboard_judge_existing, pipeline=pipeline, created_by=request.user, **data
    )
    message = _("The LLM judge compares the models in both orders.")
    page = _url(pipeline)
    return start_job(
        request, start, page=page, refused_at="leaderboard", message=message, job_page=True
    )


def _leaderboard_page(request, pipeline, form, error=None, status=200) -> HttpResponse:
    leaders = selectors.leaderboard(pipeline)
    if request.GET.get("part") == "board":
        context = {"pipeline": pipeline, "board": leaders}
        return render(request, "curation/visit/_board.html", context)
    api_url = request.build_absolute_uri(reverse("api-visit-submissions", args=[pipeline.pk]))
    context = {
        "pipeline": pipeline,
        "board": leaders,
        "fig8": board.category_win_rates(leaders),
        "form": form,
        "error": error,
        "api_url": api_url,
    }
    return render(request, "curation/visit/leaderboard.html", context, status=status)


@roles.roles_required(*READERS)
def leaderboard(request: HttpRequest, pipeline_id: int) -> HttpResponse:
    """The LLM judge's ratings (Table 4 layout) and crowd ratings (Table 3); a researcher
    submits a new model's responses here (or through the API)."""
    pipeline = selectors.pipeline_or_404(request.user, pipeline_id, manage=False)
    if request.method != "POST":
        return _leaderboard_page(request, pipeline, forms.SubmissionForm())
    form = forms.SubmissionForm(request.POST, request.FILES)
    if not form.is_valid():
        return _leaderboard_page(request, pipeline, form, status=400)
    upload = form.cleaned_data["file"]
    try:
        submission = submissions.submission_create(
            pipeline=pipeline,
            model_name=form.cleaned_data["model"],
            content=upload_text(upload),
            filename=upload.name,
            seed=form.cleaned_data["seed"],
            reference_pairs=form.cleaned_data["reference_pairs"],
            created_by=request.user,
        )
    except ServiceError as exc:
        error = error_context(exc)
        return _leaderboard_page(request, pipeline, form, error=error, status=exc.status)
    messages.success(
        request,
        _("%(n)d responses of %(model)s stored; the judge compares %(p)d pairs in both orders.")
        % {"n": submission.rows, "model": submission.model_name, "p": len(submission.pairs)},
    )
    return redirect(reverse("curator-visit-leaderboard", args=[pipeline.pk]) + "#submissions")


def urls() -> list:
    """The recipe's own routes under ``curate/`` (names and paths as they always were)."""
    at = "visit/<int:pipeline_id>/"
    return [
        path(f"{at}import/", dataset_import, name="curator-visit-import"),
        path(f"{at}families/new/", family_new, name="curator-visit-family-new"),
        path(
            f"{at}families/<int:family_id>/instructions/",
            instructions,
            name="curator-visit-instructions",
        ),
        path(f"{at}instances/", instances, name="curator-visit-instances"),
        path(f"{at}generate/", generate, name="curator-visit-generate"),
        path(f"{at}pairs/", pairs, name="curator-visit-pairs"),
        path(f"{at}judge/", judge, name="curator-visit-judge"),
        path(f"{at}leaderboard/", leaderboard, name="curator-visit-leaderboard"),
    ]
