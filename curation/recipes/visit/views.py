"""VisIT-Bench's own pages (``PAGES``, served by the framework with the pipeline loaded); the
generic recipe pages (list, new, detail, settings, the fetch / draft / sync buttons, publish,
exports) come from ``framework.urls``, and ``detail_context`` adds what the pipeline page shows
beyond the funnel. Curators: the dataset import, families, instances, candidate responses, rated
tuples and the judge. Researchers and curators: the living leaderboard, where a new model's
responses are submitted.

The framework reaches the pipeline through project membership: one out of reach answers 404
exactly like a missing one. Every POST starts a job or changes one thing, then redirects back;
bad input re-renders with the reason, never a 500.
"""

from __future__ import annotations

from functools import partial

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _

from annotator.platform.errors import Invalid, ServiceError
from annotator.platform.views import (
    error_context,
    first_error,
    flash,
    form_page,
    job_news,
    perform,
    start_job,
)
from curation import gateway
from curation.gateway.selectors import providers_of
from curation.recipes.framework import views as framework_views
from curation.recipes.framework.declare import Page
from curation.recipes.framework.registry import recipe_for
from evaluation.families.visit import board

from . import categories, dataset, export, forms, ratings, references, selectors, submissions
from .pipelines import upload_text

MAX_UPLOAD = 50 * 1024 * 1024


def _url(pipeline, anchor: str = "") -> str:
    return framework_views.detail_url(recipe_for(pipeline), pipeline, anchor)


def _back(pipeline, anchor: str = "") -> HttpResponse:
    return redirect(_url(pipeline, anchor))


def detail_context(request: HttpRequest, pipeline, base: dict) -> dict:
    """What the pipeline page shows besides the generic funnel, buttons, jobs and forms."""
    table2 = selectors.verification_table(pipeline)
    leaders = selectors.leaderboard(pipeline)
    version = leaders["version"]
    runs = list(version.runs.select_related("model").order_by("model__name")) if version else []
    prompts_shown = references.reference_templates(project=pipeline.project, pin=False)
    return {
        "table2": table2,
        "table2_rows": board.verification_rows(table2),
        "categories": selectors.categories(pipeline),
        "exports": [(what, fmt, label) for (what, fmt), label in export.EXPORT_LABELS.items()],
        "samples": selectors.sample_instances(pipeline),
        "import_form": forms.ImportForm(),
        "generate_form": forms.GenerateForm(providers=providers_of(pipeline.project)),
        "pairs_form": forms.PairsForm(initial={"votes": pipeline.votes_per_pair}),
        "judge_form": forms.JudgeForm(),
        "version": version,
        "runs": runs,
        "board": leaders,
        "bias": board.position_bias(pipeline.rating_queue_id),
        "fig8": board.category_win_rates(leaders),
        "template": prompts_shown[False],
        "template_multi": prompts_shown[True],
        "provider": gateway.provider_of(pipeline),
    }


def dataset_import(request: HttpRequest, pipeline) -> HttpResponse:
    form = forms.ImportForm(request.POST, request.FILES)
    if not form.is_valid():
        messages.error(request, _("Choose the dataset CSV to import."))
        return _back(pipeline)
    try:
        job, n = dataset.dataset_import_start(
            pipeline=pipeline, upload=form.cleaned_data["file"], created_by=request.user
        )
    except ServiceError as exc:
        context = framework_views.detail_page_context(recipe_for(pipeline), request, pipeline)
        context["import_error"] = error_context(exc)
        return render(request, "visit/pipeline.html", context, status=400)
    flash(
        request,
        job_news(
            job,
            what=_("The import"),
            started=_("%(n)d rows checked; importing them.") % {"n": n},
            finished=_("%(n)d rows imported.") % {"n": n},
        ),
    )
    return _back(pipeline, f"job-{job.pk}")


def _seed_images(request: HttpRequest, form) -> list[categories.SeedImage]:
    images = []
    for upload in request.FILES.getlist("images"):
        if upload.size > MAX_UPLOAD:
            raise Invalid(_("%(name)s is larger than 50 MB.") % {"name": upload.name})
        images.append(
            categories.SeedImage(
                data=upload.read(),
                name=upload.name,
                licence=form.cleaned_data["licence"],
                source=form.cleaned_data["source"],
            )
        )
    for line in (form.cleaned_data.get("image_urls") or "").splitlines():
        if line.strip():
            images.append(categories.SeedImage(url=line.strip()[:2000]))
    return images


def category_new(request: HttpRequest, pipeline) -> HttpResponse:
    form = forms.CategoryForm(request.POST or None, request.FILES or None)

    def save(data: dict):
        return categories.category_create(
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
        "visit/category_new.html",
        {"pipeline": pipeline},
        done=lambda category: (
            _("Family “%(name)s” created with its example.") % {"name": category.name}
        ),
        then=_url(pipeline, "families"),
    )


def instructions(request: HttpRequest, pipeline, family_id: int) -> HttpResponse:
    category = get_object_or_404(pipeline.categories, pk=family_id)
    done = _("%(n)d instruction tasks of “%(name)s” wait for crowdworkers.")
    return _form_post(
        request,
        pipeline,
        forms.InstructionsForm(request.POST),
        _("Ask for between 1 and 200 new instructions."),
        "families",
        partial(categories.instruction_tasks_create, category=category),
        done=lambda n: done % {"n": n, "name": category.name},
    )


def category_param(query) -> dict:
    """The instances page's ``?family=`` filter (a category's id; anything else: every one)."""
    try:
        return {"category": int(query.get("family") or 0) or None}
    except ValueError:
        return {"category": None}


def _form_post(request, pipeline, form, invalid: str, anchor: str, call, *, done=None, job=None):
    """A button's POSTed form: when not valid, back to ``anchor`` saying ``invalid`` (``%(e)s``:
    the first error); else ``call(**fields, created_by=…)``, a change (``done``, as ``perform``)
    or, with ``job`` (``start_job``'s what, started, finished), a job (its page next)."""
    if not form.is_valid():
        messages.error(request, invalid % {"e": first_error(form)})
        return _back(pipeline, anchor)
    call = partial(call, **form.cleaned_data, created_by=request.user)
    if job is None:
        return perform(request, call, back=_url(pipeline, anchor), done=done)
    page = _url(pipeline)
    return start_job(request, call, page=page, refused_at=anchor, job_page=True, **job)


def generate(request: HttpRequest, pipeline) -> HttpResponse:
    return _form_post(
        request,
        pipeline,
        forms.GenerateForm(request.POST, providers=providers_of(pipeline.project)),
        _("Choose a model: %(e)s"),
        "responses",
        partial(submissions.responses_generate_start, pipeline=pipeline),
        job={
            "what": _("Generating the responses"),
            "started": _("The model is answering the verified instances."),
            "finished": _("The model answered the verified instances."),
        },
    )


def pairs(request: HttpRequest, pipeline) -> HttpResponse:
    done = _("%(n)d tuples wait for raters.")
    return _form_post(
        request,
        pipeline,
        forms.PairsForm(request.POST),
        _("The sampling is not valid: %(e)s"),
        "ratings",
        partial(ratings.pairs_sample, pipeline=pipeline),
        done=lambda n: done % {"n": n},
    )


def judge(request: HttpRequest, pipeline) -> HttpResponse:
    return _form_post(
        request,
        pipeline,
        forms.JudgeForm(request.POST),
        _("The judge settings are not valid: %(e)s"),
        "leaderboard",
        partial(submissions.leaderboard_judge_existing, pipeline=pipeline),
        job={
            "what": _("Judging"),
            "started": _("The LLM judge compares the models in both orders."),
            "finished": _("The LLM judge compared the models in both orders."),
        },
    )


def _leaderboard_page(request, pipeline, form, error=None, status=200) -> HttpResponse:
    leaders = selectors.leaderboard(pipeline)
    if request.GET.get("part") == "board":
        context = {"pipeline": pipeline, "board": leaders}
        return render(request, "visit/_board.html", context)
    api_url = request.build_absolute_uri(reverse("api-visit-submissions", args=[pipeline.pk]))
    context = {
        "pipeline": pipeline,
        "board": leaders,
        "fig8": board.category_win_rates(leaders),
        "form": form,
        "error": error,
        "api_url": api_url,
    }
    return render(request, "visit/leaderboard.html", context, status=status)


def leaderboard(request: HttpRequest, pipeline) -> HttpResponse:
    """The LLM judge's ratings (Table 4 layout) and crowd ratings (Table 3); a researcher
    submits a new model's responses here (or through the API)."""
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


PAGES = (
    Page("import/", dataset_import, "curator-visit-import", ("POST",)),
    Page("families/new/", category_new, "curator-visit-family-new", None),
    Page(
        "families/<int:family_id>/instructions/",
        instructions,
        "curator-visit-instructions",
        ("POST",),
    ),
    Page("generate/", generate, "curator-visit-generate", ("POST",)),
    Page("pairs/", pairs, "curator-visit-pairs", ("POST",)),
    Page("judge/", judge, "curator-visit-judge", ("POST",)),
    Page("leaderboard/", leaderboard, "curator-visit-leaderboard", None, readers=True),
)
