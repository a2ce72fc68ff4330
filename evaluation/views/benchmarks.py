"""Benchmarks and their versions: the list, a version's page (items, runs, the run form),
importing a version and publishing it."""

from __future__ import annotations

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from annotator.platform import roles

from .. import prompts, selectors, services
from ..models import BenchmarkVersion, ModelRun
from ..registry import ScorerRunner, families, family_of
from .common import CURATE, READ, abilities, import_page
from .forms import RunModelForm, ScorerRunForm, VersionImportForm


@roles.roles_required(*READ)
def benchmarks(request: HttpRequest) -> HttpResponse:
    items = list(selectors.benchmarks_visible(request.user))
    examples = [f.templates.benchmarks_example for f in families()]
    return render(
        request,
        "evaluation/benchmarks.html",
        {
            "benchmarks": items,
            "example": next((e for e in examples if e), ""),
            **abilities(request),
        },
    )


def run_form(request: HttpRequest, version: BenchmarkVersion, data=None):
    """The family's run form (a scorer's, or a model's with the family's options), or None."""
    if not selectors.can(request.user, selectors.EVALUATE):
        return None
    runner = family_of(version.benchmark.family).runner
    if runner is None:
        return None
    if isinstance(runner, ScorerRunner):
        return ScorerRunForm(data)
    return RunModelForm(data, user=request.user, version=version)


def version_page(
    request: HttpRequest, version: BenchmarkVersion, *, form=None, error=None, status=200
) -> HttpResponse:
    family = family_of(version.benchmark.family)
    page = Paginator(selectors.version_items(version), 50).get_page(request.GET.get("page"))
    runs = list(selectors.runs_list(version).order_by("id"))
    active = [
        r
        for r in runs
        if r.source == ModelRun.Source.RUNNER and r.job is not None and not r.job.is_finished
    ]
    return render(
        request,
        "evaluation/version.html",
        {
            "version": version,
            "page": page,
            "runs": runs,
            "family": family,
            "pairwise": family.pairwise is not None,
            "scorer": isinstance(family.runner, ScorerRunner),
            "run_form": form if form is not None else run_form(request, version),
            "run_error": error,
            "active_runs": active,
            "blind_label": prompts.BLIND_BASELINE_LABEL,
            "family_context": family.version_context(version) if family.version_context else {},
            **abilities(request),
        },
        status=status,
    )


@roles.roles_required(*READ)
def version_detail(request: HttpRequest, version_id: int) -> HttpResponse:
    return version_page(request, selectors.version_for_user_or_404(request.user, version_id))


@roles.roles_required(*CURATE)
def version_import(request: HttpRequest) -> HttpResponse:
    return import_page(
        request,
        VersionImportForm(request.POST or None, request.FILES or None, user=request.user),
        services.version_import_start,
        _("%(n)d items checked; the import job is running."),
        _("%(n)d items imported."),
        formats={f.key: f.formats for f in families()},
        target="items",
    )


@require_POST
@roles.roles_required(*CURATE)
def version_publish(request: HttpRequest, version_id: int) -> HttpResponse:
    version = selectors.version_for_user_or_404(request.user, version_id, allowed=CURATE)
    services.version_publish(version=version)
    messages.success(request, _("Published: the items of this version are now frozen."))
    return redirect(reverse("eval-version", args=[version.pk]))
