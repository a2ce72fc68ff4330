"""What VHExpansion adds to the generic recipe pages: the new page's second way in (a set from
the yes/no items of a NaturalBench version; its first, a file import checked now and imported by
a job, is the generic new page) and what the funnel page shows (``detail_context``).

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
from curation.recipes.framework.views import detail_url, new_page_context
from evaluation.models import BenchmarkVersion

from . import case_sources, selectors
from .forms import ImportForm, NaturalBenchForm
from .negations import REVIEW_QUESTION, negation_template

SAMPLES = 6
FORMAT_LABELS = {
    "jsonl": gettext_lazy("JSONL + images (.zip)"),
    "llava": gettext_lazy("LLaVA conversations (.zip)"),
}


def detail_context(request: HttpRequest, case_set, base: dict) -> dict:
    """The funnel page's own names: samples, the question reviewers are asked, the prompt and
    the drafter."""
    return {
        "review_question": REVIEW_QUESTION,
        "samples": selectors.sample_cases(case_set, limit=SAMPLES),
        "has_scorers": Scorer.objects.exists(),
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


def new_context(request: HttpRequest, project) -> dict:
    """The new page's second way in: a set from a NaturalBench version."""
    return {"nb_form": NaturalBenchForm(versions=_naturalbench_versions(request.user))}


def imported(job: Job) -> str:
    """The message after an upload was checked (the job's total: the cases + one step)."""
    return _("%(n)d test cases checked; job #%(job)d is importing them.") % {
        "n": job.total - 1,
        "job": job.pk,
    }


@roles.roles_required(roles.CURATOR)
@require_POST
def case_set_from_naturalbench(request: HttpRequest, project_id: int) -> HttpResponse:
    project, recipe = curated_project_or_404(request.user, project_id), recipe_of("vhexpansion")
    nb_form = NaturalBenchForm(request.POST, versions=_naturalbench_versions(request.user))
    error = None
    if nb_form.is_valid():
        try:
            case_set = case_sources.case_set_from_naturalbench(
                project=project,
                name=nb_form.cleaned_data["name"],
                version=nb_form.cleaned_data["version"],
                created_by=request.user,
            )
        except Invalid as exc:
            error = error_context(exc)
        else:
            messages.success(request, _("Test cases created from NaturalBench."))
            return redirect(detail_url(recipe, case_set))
    context = {"project": project, "form": ImportForm(project=project), "error": error}
    context.update(new_page_context(recipe, request, project), nb_form=nb_form)
    return render(request, "curation/vhexpansion/new.html", context, status=400)
