"""VHExpansion pages (curators and admins): the sets of each project, a set's import, and its
expansion funnel (cases → negations drafted → accepted → variants per perturbation →
adversarial done) with the buttons that start each job, sample thumbnails and the exports.

Reads go through ``selectors`` (project membership): a set out of reach answers 404 exactly like
a missing one. Every POST either starts a job (its card polls on the funnel page) or changes one
setting, then redirects back.
"""

from __future__ import annotations

from functools import partial

from django import forms
from django.contrib import messages
from django.core.paginator import Paginator
from django.db.models import Q
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from annotator.platform import roles
from annotator.platform.errors import Invalid
from annotator.platform.files import DOWNLOAD_ROLES, downloadable_or_404
from annotator.platform.models import Job
from annotator.platform.scoping import curated_project_or_404, projects_for
from annotator.platform.views import (
    error_context,
    first_error,
    funnel_context,
    grouped_by_project,
    job_cards,
    perform,
    start_job,
    state_chips,
)

from ... import gateway
from ...export_files import export_card, export_cards, newest_export, serve_export
from ...models import Scorer
from ...models.vhexpansion import VHCase, VHCaseSet
from ..framework.publish import PublishForm, publish_version
from . import export, selectors, services

CURATOR = (roles.CURATOR,)  # admins pass every role check
PAGE_SIZE = 25
SAMPLES = 6
JOB_LABELS = {
    services.IMPORT_JOB: gettext_lazy("Import"),
    services.NEGATE_JOB: gettext_lazy("Negations"),
    services.PERTURB_JOB: gettext_lazy("Common perturbations"),
    services.ADVERSARIAL_JOB: gettext_lazy("Adversarial"),
}


# --------------------------------------------------------------------------------------------
# forms: shape only; the services check the meaning
# --------------------------------------------------------------------------------------------
class ImportForm(forms.Form):
    name = forms.CharField(max_length=200, label=gettext_lazy("Name of the set"))
    table = forms.FileField(
        label=gettext_lazy("Test cases (JSONL or CSV)"),
        help_text=gettext_lazy(
            "One case per line: id, image, question, answer (yes/no), optional source, category "
            "and triggers_vh. image is a file of the archive, or sha256:<hex> of a stored image "
            "(or give image_id)."
        ),
        widget=forms.ClearableFileInput(attrs={"accept": ".jsonl,.ndjson,.json,.csv"}),
    )
    archive = forms.FileField(
        required=False,
        label=gettext_lazy("Images (zip or tar archive, optional)"),
        help_text=gettext_lazy("Not needed when every row names a stored image."),
        widget=forms.ClearableFileInput(attrs={"accept": ".zip,.tar,.gz,.tgz,.bz2,.xz"}),
    )
    description = forms.CharField(
        required=False,
        label=gettext_lazy("Description"),
        widget=forms.Textarea(attrs={"rows": 2}),
    )


class NaturalBenchForm(forms.Form):
    name = forms.CharField(max_length=200, label=gettext_lazy("Name of the set"))
    version = forms.ModelChoiceField(
        queryset=None, label=gettext_lazy("NaturalBench version"), empty_label=None
    )

    def __init__(self, *args, versions=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["version"].queryset = versions


class SettingsForm(forms.Form):
    reviewers = forms.IntegerField(
        min_value=1,
        max_value=services.MAX_REVIEWERS,
        label=gettext_lazy("Reviewers per negation (N)"),
        help_text=gettext_lazy(
            "The paper used four annotators; an even N breaks ties with one more."
        ),
    )
    max_attempts = forms.IntegerField(
        min_value=1,
        max_value=services.MAX_ATTEMPTS,
        label=gettext_lazy("Drafts per case"),
        help_text=gettext_lazy(
            "A rejected negation is drafted again until this many, then dropped."
        ),
    )


class PerturbForm(forms.Form):
    perturbations = forms.MultipleChoiceField(
        choices=(), widget=forms.CheckboxSelectMultiple, label=gettext_lazy("Perturbations")
    )
    seed = forms.IntegerField(initial=0, min_value=0, label=gettext_lazy("Seed (noise)"))

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["perturbations"].choices = [
            (name, services.perturbation_label(name)) for name in services.common_perturbations()
        ]


class AdversarialForm(forms.Form):
    scorer = forms.ModelChoiceField(
        queryset=Scorer.objects.all(),
        label=gettext_lazy("Vision encoder (scorer)"),
        empty_label=None,
    )
    method = forms.ChoiceField(
        choices=[("ifgsm", "I-FGSM"), ("pgd", "PGD")], label=gettext_lazy("Method")
    )
    branch = forms.ChoiceField(
        choices=[
            (services.BRANCH_CASE, gettext_lazy("Per case (import column)")),
            (services.BRANCH_RUN, gettext_lazy("From a model run")),
            (services.BRANCH_NONE, gettext_lazy("No case triggers VH")),
            (services.BRANCH_ALL, gettext_lazy("Every case triggers VH")),
        ],
        label=gettext_lazy("Which branch of Eq. 1"),
        help_text=gettext_lazy(
            "A case that triggers VH is pulled close (100 steps); one that does not is pushed "
            "away (500 steps). Per case: the import's triggers_vh column, unknown counts as no."
        ),
    )
    run = forms.ModelChoiceField(
        queryset=None, required=False, label=gettext_lazy("Model run"), empty_label="—"
    )
    steps = forms.IntegerField(
        required=False,
        min_value=1,
        max_value=5000,
        label=gettext_lazy("Steps (empty: the paper's 500 / 100)"),
    )
    seed = forms.IntegerField(initial=0, min_value=0, label=gettext_lazy("Seed"))

    def __init__(self, *args, runs=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["run"].queryset = runs


# --------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------
def _runs_for(case_set):
    from evaluation.models import ModelRun

    return (
        ModelRun.objects.filter(version__in=export.published_versions(case_set))
        .select_related("model", "version")
        .order_by("-created_at")
    )


def _naturalbench_versions(user):
    from evaluation.models import BenchmarkVersion, Family

    mine = Q(benchmark__project__in=projects_for(user)) | Q(benchmark__project__isnull=True)
    return (
        BenchmarkVersion.objects.filter(mine, benchmark__family=Family.NATURALBENCH)
        .select_related("benchmark")
        .order_by("benchmark__name", "-created_at")
    )


def _url(case_set) -> str:
    return reverse("curator-vhx-set", args=[case_set.pk])


def _back(case_set) -> HttpResponse:
    return redirect(_url(case_set))


def _start(request: HttpRequest, case_set, start, what: str) -> HttpResponse:
    return start_job(request, start, page=_url(case_set), what=what)


# --------------------------------------------------------------------------------------------
# pages
# --------------------------------------------------------------------------------------------
@roles.roles_required(*CURATOR)
@require_GET
def case_sets(request: HttpRequest) -> HttpResponse:
    """Every set in reach, grouped by project."""
    sets = selectors.case_sets_with_counts(request.user)
    groups = grouped_by_project(request.user, sets, "sets")
    return render(request, "curation/vhexpansion/sets.html", {"groups": groups})


def _new_page(request, project, form, nb_form, error=None, status=200) -> HttpResponse:
    recent = Job.objects.filter(kind=services.IMPORT_JOB, project=project).order_by("-id")[:3]
    return render(
        request,
        "curation/vhexpansion/new.html",
        {
            "project": project,
            "form": form,
            "nb_form": nb_form,
            "error": error,
            "recent_jobs": recent,
        },
        status=status,
    )


@roles.roles_required(*CURATOR)
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
        job, n = services.case_set_import_start(
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


@roles.roles_required(*CURATOR)
@require_POST
def case_set_from_naturalbench(request: HttpRequest, project_id: int) -> HttpResponse:
    project = curated_project_or_404(request.user, project_id)
    nb_form = NaturalBenchForm(request.POST, versions=_naturalbench_versions(request.user))
    if not nb_form.is_valid():
        return _new_page(request, project, ImportForm(), nb_form, status=400)
    try:
        case_set = services.case_set_from_naturalbench(
            project=project,
            name=nb_form.cleaned_data["name"],
            version=nb_form.cleaned_data["version"],
            created_by=request.user,
        )
    except Invalid as exc:
        return _new_page(
            request, project, ImportForm(), nb_form, error=error_context(exc), status=400
        )
    messages.success(request, _("Test cases created from NaturalBench."))
    return _back(case_set)


def _detail_context(request: HttpRequest, case_set) -> dict:
    jobs = selectors.latest_jobs(case_set)
    queue = case_set.review_queue
    runs = _runs_for(case_set)
    scorers = list(Scorer.objects.all())
    perturb_form = PerturbForm(initial={"perturbations": services.common_perturbations()})
    return {
        "case_set": case_set,
        **funnel_context(selectors.funnel(case_set), jobs, "cases"),
        "jobs": job_cards(jobs, JOB_LABELS)
        + _export_cards(case_set, export.latest_exports(case_set)),
        "formats": list(FORMAT_LABELS.items()),
        "review_question": services.REVIEW_QUESTION,
        "samples": selectors.sample_cases(case_set, limit=SAMPLES),
        "settings_form": SettingsForm(
            initial={
                "reviewers": queue.redundancy if queue else services.DEFAULT_REVIEWERS,
                "max_attempts": case_set.max_attempts,
            }
        ),
        "perturb_form": perturb_form,
        "adversarial_form": AdversarialForm(
            runs=runs, initial={"scorer": next((s.pk for s in scorers if s.is_default), None)}
        ),
        "has_scorers": bool(scorers),
        "publish_form": PublishForm(
            initial={"label": f"v{export.published_versions(case_set).count() + 1}"}
        ),
        "versions": list(export.published_versions(case_set).select_related("benchmark")[:5]),
        "queue": queue,
        "template": services.negation_template(),
        "provider": gateway.provider_for(case_set.project),
    }


@roles.roles_required(*CURATOR)
@require_GET
def case_set_detail(request: HttpRequest, set_id: int) -> HttpResponse:
    """The expansion funnel; ``?part=funnel`` is the fragment htmx polls while a job runs."""
    case_set = selectors.case_set_or_404(request.user, set_id)
    if request.GET.get("part") == "funnel":
        funnel = funnel_context(
            selectors.funnel(case_set), selectors.latest_jobs(case_set), "cases"
        )
        return render(
            request, "curation/vhexpansion/_funnel.html", {"case_set": case_set, **funnel}
        )
    return render(request, "curation/vhexpansion/set.html", _detail_context(request, case_set))


@roles.roles_required(*CURATOR)
@require_POST
def case_set_settings(request: HttpRequest, set_id: int) -> HttpResponse:
    case_set = selectors.case_set_or_404(request.user, set_id)
    form = SettingsForm(request.POST)
    if not form.is_valid():
        messages.error(request, _("Reviewers and drafts must be whole numbers from 1 to 10."))
        return _back(case_set)
    save = partial(
        services.case_set_settings,
        case_set=case_set,
        reviewers=form.cleaned_data["reviewers"],
        max_attempts=form.cleaned_data["max_attempts"],
    )
    return perform(request, save, back=_url(case_set), done=_("Review settings saved."))


@roles.roles_required(*CURATOR)
@require_POST
def negate(request: HttpRequest, set_id: int) -> HttpResponse:
    case_set = selectors.case_set_or_404(request.user, set_id)
    start = partial(services.negations_draft_start, case_set=case_set, created_by=request.user)
    return _start(request, case_set, start, _("Drafting negations"))


@roles.roles_required(*CURATOR)
@require_POST
def perturb(request: HttpRequest, set_id: int) -> HttpResponse:
    case_set = selectors.case_set_or_404(request.user, set_id)
    form = PerturbForm(request.POST)
    if not form.is_valid():
        messages.error(request, _("Choose at least one perturbation."))
        return _back(case_set)
    start = partial(
        services.variants_perturb_start,
        case_set=case_set,
        perturbations=form.cleaned_data["perturbations"],
        seed=form.cleaned_data["seed"] or 0,
        created_by=request.user,
    )
    return _start(request, case_set, start, _("Common perturbations"))


@roles.roles_required(*CURATOR)
@require_POST
def adversarial(request: HttpRequest, set_id: int) -> HttpResponse:
    case_set = selectors.case_set_or_404(request.user, set_id)
    form = AdversarialForm(request.POST, runs=_runs_for(case_set))
    if not form.is_valid():
        messages.error(
            request, _("The attack settings are not valid: %(e)s") % {"e": first_error(form)}
        )
        return _back(case_set)
    data = form.cleaned_data
    start = partial(
        services.variants_adversarial_start,
        case_set=case_set,
        scorer=data["scorer"],
        method=data["method"],
        branch=data["branch"],
        run_id=data["run"].pk if data.get("run") else None,
        steps=data.get("steps"),
        seed=data.get("seed") or 0,
        created_by=request.user,
    )
    return _start(request, case_set, start, _("Adversarial perturbation"))


@roles.roles_required(*CURATOR)
@require_POST
def publish(request: HttpRequest, set_id: int) -> HttpResponse:
    case_set = selectors.case_set_or_404(request.user, set_id)
    return publish_version(
        request,
        partial(export.expanded_publish, case_set=case_set),
        back=_url(case_set),
        done=lambda version: (
            _("Published %(n)d test cases as %(label)s.")
            % {"n": version.item_count, "label": version}
        ),
    )


FORMAT_LABELS = {
    "jsonl": gettext_lazy("JSONL + images (.zip)"),
    "llava": gettext_lazy("LLaVA conversations (.zip)"),
}


def _export_label(job: Job) -> str:
    fmt = job.params.get("fmt", "")
    return _("Export: %(format)s") % {"format": FORMAT_LABELS.get(fmt, fmt)}


def _export_cards(case_set, jobs) -> list:
    def card_url(job: Job) -> str:
        return reverse("curator-vhx-export-file", args=[case_set.pk, job.pk]) + "?part=card"

    def file_url(job: Job) -> str:
        return reverse("curator-vhx-export-file", args=[case_set.pk, job.pk])

    return export_cards(jobs, label=_export_label, card_url=card_url, file_url=file_url)


@roles.roles_required(*DOWNLOAD_ROLES)
@require_http_methods(["GET", "POST"])
def download(request: HttpRequest, set_id: int, fmt: str) -> HttpResponse:
    """POST (curators) starts a job that writes the expanded set as a zip with its images (JSONL
    in the evaluation layout, or LLaVA JSON); GET (curators and researchers of the set's
    project) serves the newest finished one of that format, or goes back saying to start one."""
    if request.method == "POST":
        case_set = selectors.case_set_or_404(request.user, set_id)
        start = partial(export.export_start, case_set=case_set, fmt=fmt, created_by=request.user)
        return start_job(
            request,
            start,
            page=_url(case_set),
            message=_("Export started: its card shows progress, then the download link."),
        )
    case_set = downloadable_or_404(request.user, VHCaseSet.objects, set_id)
    if fmt not in export.FORMATS:
        messages.error(request, _("Unknown export format; choose jsonl or llava."))
        return _back(case_set)
    job = export.newest_finished_export(case_set, fmt)
    return newest_export(request, job, page=_url(case_set) + "#export-title", what=fmt.upper())


@roles.roles_required(*DOWNLOAD_ROLES)
@require_GET
def export_file(request: HttpRequest, set_id: int, job_id: int) -> HttpResponse:
    """The file an export job wrote, for curators and researchers of the set's project (404
    saying why when it is not finished, failed or not this set's); ``?part=card`` is its card,
    polled while the job runs."""
    case_set = downloadable_or_404(request.user, VHCaseSet.objects, set_id)
    job = export.export_jobs(case_set).filter(pk=job_id).first()
    if request.GET.get("part") == "card" and job is not None:
        [(label, job)] = _export_cards(case_set, [job])
        return export_card(request, label, job)
    return serve_export(request, job, back=_url(case_set) + "#export-title")


@roles.roles_required(*CURATOR)
@require_GET
def cases(request: HttpRequest, set_id: int) -> HttpResponse:
    """Every case with its negation attempts and their review, filtered by state."""
    case_set = selectors.case_set_or_404(request.user, set_id)
    state = request.GET.get("state", "")
    page = Paginator(selectors.cases_page(case_set, state=state), PAGE_SIZE).get_page(
        request.GET.get("page")
    )
    funnel = selectors.funnel(case_set)
    chips = state_chips(funnel["states"], VHCase.NegationState.choices)
    return render(
        request,
        "curation/vhexpansion/cases.html",
        {"case_set": case_set, "page": page, "state": state, "chips": chips, "funnel": funnel},
    )
