"""Pairwise judgments of a version whose family has them (``family.pairwise``): the judgment
sets with their ratings and agreement, importing judgments, running the family's LLM judge."""

from __future__ import annotations

from functools import partial

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from annotator.platform import roles
from annotator.platform.errors import ServiceError
from annotator.platform.views import error_context, flash, job_news, start_job

from .. import plots, selectors, services
from ..models import BenchmarkVersion, JudgmentSet
from ..registry import family_of
from .common import EVALUATE, READ, abilities, import_page
from .forms import JudgeForm, JudgmentImportForm


def _pairwise_version(request: HttpRequest, version_id: int, allowed=READ) -> BenchmarkVersion:
    """Pairwise judgments belong to versions of a family that has them; others answer 404."""
    version = selectors.version_for_user_or_404(request.user, version_id, allowed=allowed)
    if family_of(version.benchmark.family).pairwise is None:
        raise Http404
    return version


def judgment_plots(sets: list) -> dict[int, str]:
    """An Elo whisker chart per judgment set with results (bootstrap median and 95% interval)."""
    out = {}
    for judgment_set in sets:
        results = judgment_set.results or {}
        players = results.get("players") or []
        if not players:
            continue
        out[judgment_set.pk] = plots.whisker_chart(
            [p["model"] for p in players],
            [float(p["elo"]) for p in players],
            [p["low"] for p in players],
            [p["high"] for p in players],
            title=_("%(label)s: Elo with bootstrap 95%% interval") % {"label": judgment_set.label},
            x_label=_("Elo (median of %(n)d bootstrap rounds)") % {"n": results.get("rounds", 0)},
            reference=results.get("reference_elo"),
            reference_label=_("reference"),
        )
    return out


def _judge_form(request: HttpRequest, version: BenchmarkVersion, data=None):
    if not selectors.can(request.user, EVALUATE):
        return None
    judge = family_of(version.benchmark.family).pairwise.judge
    players = judge.player_names(version) if judge else []
    if not players:
        return None
    initial = {"label": _("LLM judge"), "model": players[0]}
    return JudgeForm(
        data,
        user=request.user,
        project=version.benchmark.project,
        judge=judge,
        players=players,
        initial=initial,
    )


@roles.roles_required(*READ)
def judgments(request: HttpRequest, version_id: int) -> HttpResponse:
    version = _pairwise_version(request, version_id)
    return _judgments_page(request, version)


@require_POST
@roles.roles_required(*EVALUATE)
def judge_run(request: HttpRequest, version_id: int) -> HttpResponse:
    """Sample pairs for one model with a seed and judge them in both orders in a job."""
    version = _pairwise_version(request, version_id, EVALUATE)
    form = _judge_form(request, version, request.POST)
    if form is None:
        raise Http404("No model has responses on this version yet.")
    error = None
    if form.is_valid():
        data = form.cleaned_data
        try:
            job, pairs = services.judge_start(
                version=version,
                judge=family_of(version.benchmark.family).pairwise.judge,
                options=data,
                provider=data["provider"],
                created_by=request.user,
            )
        except ServiceError as exc:
            error = error_context(exc)
        else:
            n = {"n": len(pairs)}
            news = job_news(
                job,
                what=_("Judging"),
                started=_("Judging %(n)d pairs in both orders; progress is shown below.") % n,
                finished=_("%(n)d pairs judged in both orders.") % n,
            )
            flash(request, news)
            return redirect(reverse("eval-judgments", args=[version.pk]) + "#active-judges")
    return _judgments_page(request, version, form=form, error=error, status=400)


def _judgments_page(
    request: HttpRequest, version: BenchmarkVersion, *, form=None, error=None, status=200
) -> HttpResponse:
    sets = list(selectors.judgment_sets(version))
    for judgment_set in sets:
        judgment_set.rows = [
            {
                "p": p,
                "elo": {"value": p["elo"], "low": p["low"], "high": p["high"], "n": p["matches"]},
            }
            for p in (judgment_set.results or {}).get("players", [])
        ]
    pairwise = family_of(version.benchmark.family).pairwise
    plot = pairwise.agreement_plot or (lambda agreement: "")
    agreement = [
        {"set": s, "data": s.results["agreement"], "svg": plot(s.results["agreement"])}
        for s in sets
        if (s.results or {}).get("agreement")
    ]
    return render(
        request,
        "evaluation/judgments.html",
        {
            "heading": _("Pairwise judgments"),
            "version": version,
            "sets": sets,
            "plots": judgment_plots(sets),
            "agreement": agreement,
            "strata": pairwise.strata,
            "intro": family_of(version.benchmark.family).templates.judgments_intro,
            "pending": any(
                s.results_computed_at is None and s.status == JudgmentSet.Status.SUCCEEDED
                for s in sets
            ),
            "judge_form": form if form is not None else _judge_form(request, version),
            "can_export": pairwise.export is not None,
            # Where the reference came from, when the family says (drafted, published, …).
            "reference_label": pairwise.reference_label(version.pk)
            if pairwise.reference_label
            else "",
            "judge_error": error,
            "active_judges": [s for s in sets if s.job is not None and not s.job.is_finished],
            **abilities(request),
        },
        status=status,
    )


@roles.roles_required(*EVALUATE)
def judgments_import(request: HttpRequest, version_id: int) -> HttpResponse:
    version = _pairwise_version(request, version_id, EVALUATE)
    return import_page(
        request,
        JudgmentImportForm(request.POST or None, request.FILES or None),
        partial(services.judgments_import_start, version=version),
        _("%(n)d judged pairs checked; importing and rating them."),
        _("%(n)d judged pairs imported and rated."),
        formats=family_of(version.benchmark.family).pairwise.formats,
        target="judgments",
        version=version,
    )


@require_POST
@roles.roles_required(*EVALUATE)
def judgments_compute(request: HttpRequest, version_id: int) -> HttpResponse:
    version = _pairwise_version(request, version_id, EVALUATE)
    return start_job(
        request,
        partial(services.judgments_compute_enqueue, version=version, created_by=request.user),
        page=reverse("eval-judgments", args=[version.pk]),
        what=_("Rating the judgment sets"),
        started=_("Rating the judgment sets again."),
        finished=_("The judgment sets are rated again."),
        job_page=True,
    )


@roles.roles_required(*READ)
def judgments_export(request: HttpRequest, version_id: int, set_id: int) -> HttpResponse:
    """A judgment set in the paper's own judgments layout (``pairwise.export``, the file the
    paper's own code reads); a set of another version, or none, answers 404."""
    version = _pairwise_version(request, version_id)
    export = family_of(version.benchmark.family).pairwise.export
    judgment_set = version.judgment_sets.filter(pk=set_id).first()
    if export is None or judgment_set is None:
        raise Http404
    name, text = export(judgment_set)
    response = HttpResponse(text, content_type="application/json; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response
