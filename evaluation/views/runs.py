"""Runs of a version: starting a model (or scorer) run, importing one, its page, recomputing."""

from __future__ import annotations

import json
from functools import partial

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from annotator.platform import roles
from annotator.platform.errors import ServiceError
from annotator.platform.models import Job
from annotator.platform.views import error_context, flash, job_news, start_job

from .. import runners, selectors, services
from ..registry import family_of
from .benchmarks import run_form, version_page
from .common import EVALUATE, READ, abilities, import_page
from .forms import RunImportForm, ScorerRunForm


def _start(request: HttpRequest, version, form) -> Job:
    data = form.cleaned_data
    common = {
        "version": version,
        "created_by": request.user,
        "limit": data["limit"],
        "label": data["label"],
        "model_name": data["model_name"],
    }
    if isinstance(form, ScorerRunForm):
        return runners.score_model_start(scorer=data["scorer"], **common)
    return runners.run_model_start(
        provider=data["provider"], seed=data["seed"], options=form.options(), **common
    )


@require_POST
@roles.roles_required(*EVALUATE)
def run_model(request: HttpRequest, version_id: int) -> HttpResponse:
    """Start (or resume) a model run on the version; the page shows its progress card."""
    version = selectors.version_for_user_or_404(request.user, version_id, allowed=EVALUATE)
    form = run_form(request, version, request.POST)
    if form is None:
        raise Http404("No runner for this benchmark family.")
    error = None
    if form.is_valid():
        try:
            job = _start(request, version, form)
        except ServiceError as exc:
            error = error_context(exc)
        else:
            news = job_news(
                job,
                what=_("The run"),
                started=_("The run has started; its progress is shown below the runs."),
                finished=_("The run finished; its scores are in the leaderboard."),
            )
            flash(request, news)
            return redirect(reverse("eval-version", args=[version.pk]) + "#active-runs")
    return version_page(request, version, form=form, error=error, status=400)


@roles.roles_required(*READ)
def run_detail(request: HttpRequest, run_id: int) -> HttpResponse:
    run = selectors.run_for_user_or_404(request.user, run_id)
    specs = family_of(run.version.benchmark.family).spec_map()
    results = [
        {"m": m, "spec": specs.get(m.metric), "details": json.dumps(m.details, ensure_ascii=False)}
        for m in run.metric_results.all()
    ]
    predictions = run.predictions.select_related("item").order_by("item__position")[:20]
    return render(
        request,
        "evaluation/run.html",
        {"run": run, "results": results, "predictions": predictions, **abilities(request)},
    )


@roles.roles_required(*EVALUATE)
def run_import(request: HttpRequest, version_id: int) -> HttpResponse:
    version = selectors.version_for_user_or_404(request.user, version_id, allowed=EVALUATE)
    family = family_of(version.benchmark.family)
    return import_page(
        request,
        RunImportForm(request.POST or None, request.FILES or None, option=family.prediction_option),
        partial(services.run_import_start, version=version),
        _("%(n)d predictions checked; importing and computing metrics."),
        _("%(n)d predictions imported and their metrics computed."),
        formats={family.key: family.formats},
        target="predictions",
        version=version,
    )


@require_POST
@roles.roles_required(*EVALUATE)
def run_compute(request: HttpRequest, run_id: int) -> HttpResponse:
    run = selectors.run_for_user_or_404(request.user, run_id, allowed=EVALUATE)
    return start_job(
        request,
        partial(services.compute_enqueue, run=run, created_by=request.user),
        page=reverse("eval-version", args=[run.version_id]),
        what=_("Computing metrics for %(run)s") % {"run": run.model.name},
        finished=_("Metrics for %(run)s computed.") % {"run": run.model.name},
        job_page=True,
    )
