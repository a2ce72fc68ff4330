"""VisIT-Bench pages. Curators (and admins): the pipelines of their projects, a pipeline's funnel
(families → instructions → captions → references → verified → rated tuples → leaderboard) with the
buttons that start each step, its families, instances and exports. Researchers and curators: the
living leaderboard, where a new model's responses are submitted.

Reads go through ``selectors`` (project membership): a pipeline out of reach answers 404 exactly
like a missing one. Every POST starts a job (its card polls on the page) or changes one thing,
then redirects back; bad input re-renders with the reason, never a 500.
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
from annotator.platform.errors import ServiceError
from annotator.platform.files import DOWNLOAD_ROLES, downloadable_or_404
from annotator.platform.models import Job
from annotator.platform.scoping import curated_project_or_404
from annotator.platform.views import (
    error_context,
    first_error,
    form_page,
    funnel_context,
    grouped_by_project,
    job_cards,
    perform,
    refuse,
    start_job,
    state_chips,
)

from ...export_files import export_card, export_cards, newest_export, serve_export
from ...models import LLMProvider
from ...models.visit import VisitInstance, VisitPipeline
from ..framework.publish import PublishForm as LabelForm
from ..framework.publish import publish_version
from . import export, prompts, selectors, services

CURATOR = (roles.CURATOR,)  # admins pass every role check
READERS = (roles.CURATOR, roles.RESEARCHER)
PAGE_SIZE = 25
MAX_UPLOAD = 50 * 1024 * 1024
JOB_LABELS = {
    services.IMPORT_JOB: gettext_lazy("Dataset import"),
    services.FETCH_JOB: gettext_lazy("Image fetch"),
    services.DRAFT_JOB: gettext_lazy("Reference drafts"),
    services.SYNC_JOB: gettext_lazy("Crowd votes → ratings"),
}


# --------------------------------------------------------------------------------------------
# forms: shape only; the services check the meaning
# --------------------------------------------------------------------------------------------
class PipelineForm(forms.Form):
    name = forms.CharField(max_length=200, label=gettext_lazy("Name"))
    description = forms.CharField(
        required=False, label=gettext_lazy("Description"), widget=forms.Textarea(attrs={"rows": 2})
    )


class ImportForm(forms.Form):
    file = forms.FileField(
        label=gettext_lazy("Published dataset CSV"),
        help_text=gettext_lazy(
            "single_image_full_dataset.csv layout: instruction_category, image, instruction, "
            "image_dense_captions (or instruction_conditioned_caption), gpt4_prediction, "
            "human_ratings_*, public_images_metadata."
        ),
        widget=forms.ClearableFileInput(attrs={"accept": ".csv"}),
    )


class FamilyForm(forms.Form):
    name = forms.CharField(max_length=200, label=gettext_lazy("Family name"))
    description = forms.CharField(
        required=False,
        label=gettext_lazy("Description"),
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text=gettext_lazy("The skill it tests, e.g. “Count objects and reason about them”."),
    )
    multi_image = forms.BooleanField(
        required=False, label=gettext_lazy("Multi-image (instances have several images)")
    )
    seed_instruction = forms.CharField(
        label=gettext_lazy("Example instruction"), widget=forms.Textarea(attrs={"rows": 2})
    )
    seed_response = forms.CharField(
        label=gettext_lazy("Example response"), widget=forms.Textarea(attrs={"rows": 3})
    )
    images = forms.FileField(
        required=False,
        label=gettext_lazy("Example image(s)"),
        widget=forms.ClearableFileInput(attrs={"accept": "image/*"}),
    )
    image_urls = forms.CharField(
        required=False,
        label=gettext_lazy("…or image URLs, one per line"),
        widget=forms.Textarea(attrs={"rows": 2}),
    )
    licence = forms.CharField(
        required=False, max_length=200, label=gettext_lazy("Licence of the uploaded image(s)")
    )
    source = forms.CharField(
        required=False, max_length=500, label=gettext_lazy("Source of the uploaded image(s)")
    )


class InstructionsForm(forms.Form):
    count = forms.IntegerField(
        min_value=1, max_value=services.MAX_INSTRUCTION_TASKS, initial=10, label=gettext_lazy("N")
    )


class SettingsForm(forms.Form):
    caption_min_length = forms.IntegerField(
        min_value=1, max_value=2000, label=gettext_lazy("Shortest caption (characters)")
    )
    max_caption_rounds = forms.IntegerField(
        min_value=0, max_value=5, label=gettext_lazy("Caption rewrites after a caption problem")
    )
    reviewers = forms.IntegerField(
        min_value=1, max_value=services.MAX_REVIEWERS, label=gettext_lazy("Reviewers per reference")
    )
    votes_per_pair = forms.IntegerField(
        min_value=1, max_value=services.MAX_VOTES, label=gettext_lazy("Votes per tuple")
    )


class PublishForm(LabelForm):
    benchmark = forms.CharField(
        max_length=200,
        required=False,
        label=gettext_lazy("Benchmark name"),
        help_text=gettext_lazy("Empty: the pipeline's name."),
    )


class ProviderChoice(forms.ModelChoiceField):
    def label_from_instance(self, obj: LLMProvider) -> str:
        from evaluation import runners

        return runners.provider_label(obj)


class GenerateForm(forms.Form):
    provider = ProviderChoice(queryset=LLMProvider.objects.none(), label=gettext_lazy("Model"))
    limit = forms.IntegerField(
        required=False, min_value=1, label=gettext_lazy("Instances (empty: all verified)")
    )

    def __init__(self, *args, providers=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["provider"].queryset = providers


class PairsForm(forms.Form):
    n = forms.IntegerField(
        min_value=1, max_value=services.MAX_PAIRS_PER_CALL, initial=20, label=gettext_lazy("Tuples")
    )
    votes = forms.IntegerField(
        min_value=1, max_value=services.MAX_VOTES, initial=5, label=gettext_lazy("Votes each")
    )
    seed = forms.IntegerField(min_value=0, initial=0, label=gettext_lazy("Seed"))


class JudgeForm(forms.Form):
    reference_pairs = forms.IntegerField(
        min_value=1, max_value=10000, initial=150, label=gettext_lazy("Instances per model")
    )
    seed = forms.IntegerField(min_value=0, initial=0, label=gettext_lazy("Seed"))


class SubmissionForm(forms.Form):
    model = forms.CharField(max_length=200, label=gettext_lazy("Model name"))
    file = forms.FileField(
        label=gettext_lazy("Responses (CSV or JSONL)"),
        widget=forms.ClearableFileInput(attrs={"accept": ".csv,.jsonl,.ndjson,.json"}),
    )
    reference_pairs = forms.IntegerField(
        min_value=1,
        max_value=10000,
        initial=150,
        label=gettext_lazy("Instances judged against the reference"),
    )
    seed = forms.IntegerField(min_value=0, initial=0, label=gettext_lazy("Seed (pairing)"))


# --------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------
def _url(pipeline, anchor: str = "") -> str:
    url = reverse("curator-visit-pipeline", args=[pipeline.pk])
    return url + (f"#{anchor}" if anchor else "")


def _back(pipeline, anchor: str = "") -> HttpResponse:
    return redirect(_url(pipeline, anchor))


def _providers(pipeline):
    return LLMProvider.objects.filter(Q(project=None) | Q(project=pipeline.project)).order_by(
        "name"
    )


def _version(pipeline):
    try:
        return services.version_of(pipeline)
    except ServiceError:
        return None


# --------------------------------------------------------------------------------------------
# pipelines
# --------------------------------------------------------------------------------------------
@roles.roles_required(*CURATOR)
@require_GET
def pipelines(request: HttpRequest) -> HttpResponse:
    pipelines = selectors.pipelines_with_counts(request.user)
    groups = grouped_by_project(request.user, pipelines, "pipelines")
    return render(request, "curation/visit/pipelines.html", {"groups": groups})


@roles.roles_required(*CURATOR)
def pipeline_new(request: HttpRequest, project_id: int) -> HttpResponse:
    project = curated_project_or_404(request.user, project_id)
    return form_page(
        request,
        PipelineForm(request.POST or None),
        lambda data: services.pipeline_create(project=project, created_by=request.user, **data),
        "curation/visit/new.html",
        {"project": project},
        done=_("Pipeline created."),
        then=_url,
    )


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


def _detail_context(request: HttpRequest, pipeline) -> dict:
    table2 = selectors.verification_table(pipeline)
    jobs = selectors.latest_jobs(pipeline)
    version = _version(pipeline)
    board = selectors.leaderboard(pipeline)
    runs = []
    if version is not None:
        runs = list(version.runs.select_related("model").order_by("model__name"))
    return {
        "pipeline": pipeline,
        **funnel_context(selectors.funnel(pipeline), jobs),
        "table2": table2,
        "table2_rows": _table2_rows(table2),
        "families": selectors.families(pipeline),
        "jobs": job_cards(jobs, JOB_LABELS)
        + _export_cards(pipeline, export.latest_exports(pipeline)),
        "exports": [(what, fmt, label) for (what, fmt), label in EXPORT_LABELS.items()],
        "samples": selectors.sample_instances(pipeline),
        "import_form": ImportForm(),
        "instructions_form": InstructionsForm(),
        "settings_form": SettingsForm(
            initial={
                "caption_min_length": pipeline.caption_min_length,
                "max_caption_rounds": pipeline.max_caption_rounds,
                "reviewers": pipeline.review_queue.redundancy if pipeline.review_queue else 1,
                "votes_per_pair": pipeline.votes_per_pair,
            }
        ),
        "publish_form": PublishForm(
            initial={"label": f"v{_version_count(pipeline) + 1}", "benchmark": pipeline.name}
        ),
        "generate_form": GenerateForm(providers=_providers(pipeline)),
        "pairs_form": PairsForm(initial={"votes": pipeline.votes_per_pair}),
        "judge_form": JudgeForm(),
        "version": version,
        "runs": runs,
        "board": board,
        "bias": selectors.position_bias(pipeline),
        "fig8": selectors.category_win_rates(board),
        "template": services.reference_template(multi=False),
        "template_multi": services.reference_template(multi=True),
        "provider": pipeline.provider or _default_provider(pipeline),
        "guidance": prompts.CAPTION_GUIDANCE,
    }


def _default_provider(pipeline):
    from ... import gateway

    return gateway.provider_for(pipeline.project)


def _version_count(pipeline) -> int:
    from evaluation.models import BenchmarkVersion

    return BenchmarkVersion.objects.filter(
        source=f"Blindspot VisIT-Bench pipeline #{pipeline.pk}"
    ).count()


@roles.roles_required(*CURATOR)
@require_GET
def pipeline_detail(request: HttpRequest, pipeline_id: int) -> HttpResponse:
    """The funnel and every step's button; ``?part=funnel`` is the fragment htmx polls."""
    pipeline = selectors.pipeline_or_404(request.user, pipeline_id)
    if request.GET.get("part") == "funnel":
        funnel = funnel_context(selectors.funnel(pipeline), selectors.latest_jobs(pipeline))
        return render(request, "curation/visit/_funnel.html", {"pipeline": pipeline, **funnel})
    return render(request, "curation/visit/pipeline.html", _detail_context(request, pipeline))


@roles.roles_required(*CURATOR)
@require_POST
def pipeline_settings(request: HttpRequest, pipeline_id: int) -> HttpResponse:
    pipeline = selectors.pipeline_or_404(request.user, pipeline_id)
    form = SettingsForm(request.POST)
    if not form.is_valid():
        messages.error(request, _("The settings are not valid: %(e)s") % {"e": first_error(form)})
        return _back(pipeline)
    save = partial(services.pipeline_settings, pipeline=pipeline, **form.cleaned_data)
    return perform(request, save, back=_url(pipeline), done=_("Settings saved."))


@roles.roles_required(*CURATOR)
@require_POST
def dataset_import(request: HttpRequest, pipeline_id: int) -> HttpResponse:
    pipeline = selectors.pipeline_or_404(request.user, pipeline_id)
    form = ImportForm(request.POST, request.FILES)
    if not form.is_valid():
        messages.error(request, _("Choose the dataset CSV to import."))
        return _back(pipeline)
    try:
        job, n = services.dataset_import_start(
            pipeline=pipeline, upload=form.cleaned_data["file"], created_by=request.user
        )
    except ServiceError as exc:
        context = _detail_context(request, pipeline)
        context["import_error"] = error_context(exc)
        return render(request, "curation/visit/pipeline.html", context, status=400)
    messages.success(request, _("%(n)d rows checked; importing them.") % {"n": n})
    return _back(pipeline, f"job-{job.pk}")


@roles.roles_required(*CURATOR)
@require_POST
def images_fetch(request: HttpRequest, pipeline_id: int) -> HttpResponse:
    pipeline = selectors.pipeline_or_404(request.user, pipeline_id)
    start = partial(services.images_fetch_start, pipeline=pipeline, created_by=request.user)
    return start_job(request, start, page=_url(pipeline), what=_("Fetching the remote images"))


# --------------------------------------------------------------------------------------------
# families and instances
# --------------------------------------------------------------------------------------------
def _seed_images(request: HttpRequest, form: FamilyForm) -> list[services.SeedImage]:
    images = []
    for upload in request.FILES.getlist("images"):
        if upload.size > MAX_UPLOAD:
            raise services.Invalid(_("%(name)s is larger than 50 MB.") % {"name": upload.name})
        images.append(
            services.SeedImage(
                data=upload.read(),
                name=upload.name,
                licence=form.cleaned_data["licence"],
                source=form.cleaned_data["source"],
            )
        )
    for line in (form.cleaned_data.get("image_urls") or "").splitlines():
        if line.strip():
            images.append(services.SeedImage(url=line.strip()[:2000]))
    return images


@roles.roles_required(*CURATOR)
def family_new(request: HttpRequest, pipeline_id: int) -> HttpResponse:
    pipeline = selectors.pipeline_or_404(request.user, pipeline_id)
    form = FamilyForm(request.POST or None, request.FILES or None)

    def save(data: dict):
        return services.family_create(
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
    form = InstructionsForm(request.POST)
    if not form.is_valid():
        messages.error(request, _("Ask for between 1 and 200 new instructions."))
        return _back(pipeline, "families")
    return perform(
        request,
        partial(
            services.instruction_tasks_create,
            family=family,
            count=form.cleaned_data["count"],
            created_by=request.user,
        ),
        back=_url(pipeline, "families"),
        done=lambda n: (
            _("%(n)d instruction tasks of “%(name)s” wait for crowdworkers.")
            % {"n": n, "name": family.name}
        ),
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
    page = Paginator(
        selectors.instances_page(pipeline, state=state, family=family), PAGE_SIZE
    ).get_page(request.GET.get("page"))
    funnel = selectors.funnel(pipeline)
    choices = [c for c in VisitInstance.State.choices if c[0] != VisitInstance.State.SEED]
    chips = state_chips(funnel["states"], choices)
    return render(
        request,
        "curation/visit/instances.html",
        {
            "pipeline": pipeline,
            "page": page,
            "state": state,
            "family": family,
            "chips": chips,
            "funnel": funnel,
            "families": selectors.families(pipeline),
        },
    )


# --------------------------------------------------------------------------------------------
# references, publishing, responses, human ratings
# --------------------------------------------------------------------------------------------
@roles.roles_required(*CURATOR)
@require_POST
def draft(request: HttpRequest, pipeline_id: int) -> HttpResponse:
    pipeline = selectors.pipeline_or_404(request.user, pipeline_id)
    start = partial(services.references_draft_start, pipeline=pipeline, created_by=request.user)
    return start_job(request, start, page=_url(pipeline), what=_("Drafting references"))


@roles.roles_required(*CURATOR)
@require_POST
def publish(request: HttpRequest, pipeline_id: int) -> HttpResponse:
    pipeline = selectors.pipeline_or_404(request.user, pipeline_id)
    return publish_version(
        request,
        lambda benchmark, **args: services.version_publish(
            pipeline=pipeline, benchmark_name=benchmark, **args
        ),
        form_class=PublishForm,
        back=_url(pipeline, "publish"),
        done=lambda version: (
            _("Published %(n)d instances (%(k)d verified) as %(v)s.")
            % {"n": version.item_count, "k": version.kept_count, "v": version}
        ),
        then=_url(pipeline, "responses"),
    )


@roles.roles_required(*CURATOR)
@require_POST
def generate(request: HttpRequest, pipeline_id: int) -> HttpResponse:
    pipeline = selectors.pipeline_or_404(request.user, pipeline_id)
    form = GenerateForm(request.POST, providers=_providers(pipeline))
    if not form.is_valid():
        messages.error(request, _("Choose a model: %(e)s") % {"e": first_error(form)})
        return _back(pipeline, "responses")
    start = partial(
        services.responses_generate_start,
        pipeline=pipeline,
        provider=form.cleaned_data["provider"],
        limit=form.cleaned_data.get("limit"),
        created_by=request.user,
    )
    return start_job(
        request,
        start,
        page=_url(pipeline),
        refused_at="responses",
        message=_("The model is answering the verified instances."),
        job_page=True,
    )


@roles.roles_required(*CURATOR)
@require_POST
def pairs(request: HttpRequest, pipeline_id: int) -> HttpResponse:
    pipeline = selectors.pipeline_or_404(request.user, pipeline_id)
    form = PairsForm(request.POST)
    if not form.is_valid():
        messages.error(request, _("The sampling is not valid: %(e)s") % {"e": first_error(form)})
        return _back(pipeline, "ratings")
    return perform(
        request,
        partial(
            services.pairs_sample,
            pipeline=pipeline,
            n=form.cleaned_data["n"],
            votes=form.cleaned_data["votes"],
            seed=form.cleaned_data["seed"],
            created_by=request.user,
        ),
        back=_url(pipeline, "ratings"),
        done=lambda n: _("%(n)d tuples wait for raters.") % {"n": n},
    )


@roles.roles_required(*CURATOR)
@require_POST
def sync(request: HttpRequest, pipeline_id: int) -> HttpResponse:
    pipeline = selectors.pipeline_or_404(request.user, pipeline_id)
    start = partial(services.human_votes_sync_start, pipeline=pipeline, created_by=request.user)
    return start_job(
        request, start, page=_url(pipeline), refused_at="ratings", what=_("Rating the crowd votes")
    )


@roles.roles_required(*CURATOR)
@require_POST
def judge(request: HttpRequest, pipeline_id: int) -> HttpResponse:
    pipeline = selectors.pipeline_or_404(request.user, pipeline_id)
    form = JudgeForm(request.POST)
    if not form.is_valid():
        messages.error(
            request, _("The judge settings are not valid: %(e)s") % {"e": first_error(form)}
        )
        return _back(pipeline, "leaderboard")
    start = partial(
        services.leaderboard_judge_existing,
        pipeline=pipeline,
        seed=form.cleaned_data["seed"],
        reference_pairs=form.cleaned_data["reference_pairs"],
        created_by=request.user,
    )
    return start_job(
        request,
        start,
        page=_url(pipeline),
        refused_at="leaderboard",
        message=_("The LLM judge compares the models in both orders."),
        job_page=True,
    )


EXPORT_LABELS = {
    ("dataset", "csv"): gettext_lazy("Dataset (CSV)"),
    ("dataset", "jsonl"): gettext_lazy("Dataset (JSONL)"),
    ("preferences", "csv"): gettext_lazy("Human preferences (CSV)"),
}


def _export_label(job: Job) -> str:
    key = (job.params.get("what"), job.params.get("fmt"))
    return _("Export: %(what)s") % {"what": EXPORT_LABELS.get(key, "?")}


def _export_cards(pipeline, jobs) -> list:
    def card_url(job: Job) -> str:
        return reverse("curator-visit-export-file", args=[pipeline.pk, job.pk]) + "?part=card"

    def file_url(job: Job) -> str:
        return reverse("curator-visit-export-file", args=[pipeline.pk, job.pk])

    return export_cards(jobs, label=_export_label, card_url=card_url, file_url=file_url)


@roles.roles_required(*DOWNLOAD_ROLES)
@require_http_methods(["GET", "POST"])
def download(request: HttpRequest, pipeline_id: int, what: str, fmt: str) -> HttpResponse:
    """POST (curators) starts a job writing the version in the published layout (CSV / JSONL)
    or the crowd's votes (CSV); GET (curators and researchers of the pipeline's project) serves
    the newest finished one, or goes back saying to start one."""
    if request.method == "POST":
        pipeline = selectors.pipeline_or_404(request.user, pipeline_id)
        start = partial(
            export.export_start, pipeline=pipeline, what=what, fmt=fmt, created_by=request.user
        )
        return start_job(
            request,
            start,
            page=_url(pipeline),
            refused_at="export",
            message=_("Export started: its card shows progress, then the download link."),
        )
    pipeline = downloadable_or_404(request.user, VisitPipeline.objects, pipeline_id)
    if (what, fmt) not in export.EXPORTS:
        refuse(request, services.Invalid(_("Unknown export.")))
        return _back(pipeline, "export")
    job = export.newest_finished_export(pipeline, what, fmt)
    label = str(EXPORT_LABELS[(what, fmt)])
    return newest_export(request, job, page=_url(pipeline, "export"), what=label)


@roles.roles_required(*DOWNLOAD_ROLES)
@require_GET
def export_file(request: HttpRequest, pipeline_id: int, job_id: int) -> HttpResponse:
    """The file an export job wrote, for curators and researchers of the pipeline's project
    (404 saying why when it is not finished, failed or not this pipeline's); ``?part=card`` is
    its card, polled while the job runs."""
    pipeline = downloadable_or_404(request.user, VisitPipeline.objects, pipeline_id)
    job = export.export_jobs(pipeline).filter(pk=job_id).first()
    if request.GET.get("part") == "card" and job is not None:
        [(label, job)] = _export_cards(pipeline, [job])
        return export_card(request, label, job)
    return serve_export(request, job, back=_url(pipeline, "export"))


# --------------------------------------------------------------------------------------------
# living leaderboard (researchers and curators)
# --------------------------------------------------------------------------------------------
def _leaderboard_page(request, pipeline, form, error=None, status=200) -> HttpResponse:
    board = selectors.leaderboard(pipeline)
    if request.GET.get("part") == "board":
        return render(request, "curation/visit/_board.html", {"pipeline": pipeline, "board": board})
    return render(
        request,
        "curation/visit/leaderboard.html",
        {
            "pipeline": pipeline,
            "board": board,
            "fig8": selectors.category_win_rates(board),
            "form": form,
            "error": error,
            "api_url": request.build_absolute_uri(
                reverse("api-visit-submissions", args=[pipeline.pk])
            ),
        },
        status=status,
    )


@roles.roles_required(*READERS)
def leaderboard(request: HttpRequest, pipeline_id: int) -> HttpResponse:
    """The LLM judge's ratings (Table 4 layout) and crowd ratings (Table 3); a researcher
    submits a new model's responses here (or through the API)."""
    pipeline = selectors.pipeline_or_404(request.user, pipeline_id, manage=False)
    if request.method != "POST":
        return _leaderboard_page(request, pipeline, SubmissionForm())
    form = SubmissionForm(request.POST, request.FILES)
    if not form.is_valid():
        return _leaderboard_page(request, pipeline, form, status=400)
    upload = form.cleaned_data["file"]
    try:
        content = services.upload_text(upload)
        submission = services.submission_create(
            pipeline=pipeline,
            model_name=form.cleaned_data["model"],
            content=content,
            filename=upload.name,
            seed=form.cleaned_data["seed"],
            reference_pairs=form.cleaned_data["reference_pairs"],
            created_by=request.user,
        )
    except ServiceError as exc:
        return _leaderboard_page(
            request, pipeline, form, error=error_context(exc), status=exc.status
        )
    messages.success(
        request,
        _("%(n)d responses of %(model)s stored; the judge compares %(p)d pairs in both orders.")
        % {"n": submission.rows, "model": submission.model_name, "p": len(submission.pairs)},
    )
    return redirect(reverse("curator-visit-leaderboard", args=[pipeline.pk]) + "#submissions")
