"""The VHExpansion pages the generic recipe pages do not serve: a set's import (a table and an
image archive, checked now and imported by a job, or the yes/no items of a NaturalBench version)
and what the funnel page shows beyond the generic context (``detail_context``).

Reads are scoped like every recipe page: a set out of reach answers 404 exactly like a missing
one.
"""

from __future__ import annotations

from django.contrib import messages
from django.db.models import Q
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_POST

from annotator.platform import roles
from annotator.platform.errors import Invalid
from annotator.platform.models import Job
from annotator.platform.scoping import curated_project_or_404, projects_for
from annotator.platform.views import error_context
from curation import gateway
from curation.models import Scorer
from curation.recipes.framework.registry import recipe_of
from curation.recipes.framework.views import detail_url
from evaluation.models import BenchmarkVersion

from . import case_sources, selectors
from .case_import import IMPORT_JOB, case_set_import_start
from .forms import ImportForm, NaturalBenchForm
from .negations import REVIEW_QUESTION, negation_template

SAMPLES = 6
FORMAT_LABELS = {
    "jsonl": gettext_lazy("JSONL + images (.zip)"),
    "llava": gettext_lazy("LLaVA conversations (.zip)"),
}


def detail_context(request: HttpRequest, case_set, base: dict) -> dict:
    """The funnel page's own names: the forms of its buttons, samples, the prompt and drafter."""
    stages = base["stages"]
    return {
        "formats": list(FORMAT_LABELS.items()),
        "review_question": REVIEW_QUESTION,
        "samples": selectors.sample_cases(case_set, limit=SAMPLES),
        "perturb_form": stages["perturb"]["form"],
        "adversarial_form": stages["adversarial"]["form"],
        "has_scorers": Scorer.objects.exists(),
        "queue": case_set.review_queue,
        "template": negation_template(),
        "provider": gateway.provider_for(case_set.project),
    }


def _naturalbench_versions(user):
    mine = Q(benchmark__project__in=projects_for(user)) | Q(benchmark__project__isnull=True)
    return (
        BenchmarkVersion.objects.filter(mine, benchmark__family=case_sources.NATURALBENCH)
        .select_related("benchmark")
        .order_by("benchmark__name", "-created_at")
    )


def _new_page(request, project, form, nb_form, error=None, status=200) -> HttpResponse:
    recent = Job.objects.filter(kind=IMPORT_JOB, project=project).order_by("-id")[:3]
    context = {"project": project, "form": form, "nb_form": nb_form, "error": error}
    return render(
        request, "curation/vhexpansion/new.html", {**context, "recent_jobs": recent}, status=status
    )


@roles.roles_required(roles.CURATOR)
def case_set_new(request: HttpRequest, project_id: int) -> HttpResponse:
    """Import a set from a JSONL/CSV file (+ image archive): checked now, imported in a job."""
    project = curated_project_or_404(request.user, project_id)
    nb_form = NaturalBenchForm(versions=_naturalbench_versions(request.user))
    if request.method != "POST":
        return _new_page(request, project, ImportForm(), nb_form)
    form = ImportForm(request.POST, request.FILES)
    if not form.is_valid():
        return _new_page(request, project, form, nb_form, status=400)
    try:
        job, n = case_set_import_start(
            project=project,
            name=form.cleaned_data["name"],
            table=form.cleaned_data["table"],
            archive=form.cleaned_data.get("archive"),
            description=form.cleaned_data.get("description", ""),
            created_by=request.user,
        )
    except Invalid as exc:
        return _new_page(request, project, form, nb_form, error=error_context(exc), status=400)
    messages.success(
        request,
        _("%(n)d test cases checked; job #%(job)d is importing them.") % {"n": n, "job": job.pk},
    )
    return redirect("curator-vhx-new", project.pk)


@roles.roles_required(roles.CURATOR)
@require_POST
def case_set_from_naturalbench(request: HttpRequest, project_id: int) -> HttpResponse:
    project = curated_project_or_404(request.user, project_id)
    nb_form = NaturalBenchForm(request.POST, versions=_naturalbench_versions(request.user))
    if not nb_form.is_valid():
        return _new_page(request, project, ImportForm(), nb_form, status=400)
    try:
        case_set = case_sources.case_set_from_naturalbench(
            project=project,
            name=nb_form.cleaned_data["name"],
            version=nb_form.cleaned_data["version"],
            created_by=request.user,
        )
    except Invalid as exc:
        error = error_context(exc)
        return _new_page(request, project, ImportForm(), nb_form, error=error, status=400)
    messages.success(request, _("Test cases created from NaturalBench."))
    return redirect(detail_url(recipe_of("vhexpansion"), case_set))
