"""VLind-Bench pages (curators and admins): the benches of each project, a bench's funnel
(concepts → triples drafted → kept → images → good images → factual + VP nouns → assembled →
exported) with the buttons that start each job, the concepts' examples, the triples and one
triple's images, factual image, nouns and best image.

Reads go through ``selectors`` (project membership): a bench out of reach answers 404 exactly
like a missing one. Every POST starts a job (its card polls on the funnel page) or changes one
thing, then redirects back; refusals say why and change nothing.
"""

from __future__ import annotations

from functools import partial

from django import forms
from django.contrib import messages
from django.db.models import Q
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from annotator.platform import roles
from annotator.platform.errors import Invalid, ServiceError
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
    start_job,
    state_chips,
)

from ... import gateway
from ...export_files import export_card, export_cards, newest_export, serve_export
from ...models import LLMProvider
from ...models.vlind import VLindBench, VLindImage, VLindTriple
from ..framework.publish import PublishForm, publish_version
from . import export, prompts, selectors, services

CURATOR = (roles.CURATOR,)  # admins pass every role check
JOB_LABELS = {
    services.DRAFT_JOB: gettext_lazy("Triples"),
    services.IMAGES_JOB: gettext_lazy("Images"),
    services.NOUNS_JOB: gettext_lazy("VP nouns"),
}
STYLE_CHOICES = [(s, s.capitalize()) for s in prompts.STYLES]


# --------------------------------------------------------------------------------------------
# forms: shape only; the services check the meaning
# --------------------------------------------------------------------------------------------
class BenchForm(forms.Form):
    name = forms.CharField(max_length=200, label=gettext_lazy("Name"), initial="VLind-Bench")
    description = forms.CharField(
        required=False, label=gettext_lazy("Description"), widget=forms.Textarea(attrs={"rows": 2})
    )
    triples_per_concept = forms.IntegerField(
        min_value=1,
        max_value=services.MAX_TRIPLES_PER_CONCEPT,
        initial=50,
        label=gettext_lazy("Triples per concept"),
        help_text=gettext_lazy("The paper drafted 50 per concept (550 in all)."),
    )
    images_per_style = forms.IntegerField(
        min_value=1,
        max_value=prompts.PER_STYLE,
        initial=prompts.PER_STYLE,
        label=gettext_lazy("Images per style"),
        help_text=gettext_lazy("Four photorealistic, four illustration, four cartoon (Sec. 4)."),
    )


class SettingsForm(forms.Form):
    triples_per_concept = BenchForm.base_fields["triples_per_concept"]
    images_per_style = BenchForm.base_fields["images_per_style"]
    image_provider = forms.ModelChoiceField(
        queryset=LLMProvider.objects.none(),
        required=False,
        label=gettext_lazy("Image endpoint (OpenAI-compatible provider)"),
        empty_label=gettext_lazy("None: upload images"),
    )
    image_model = forms.CharField(
        max_length=200, required=False, label=gettext_lazy("Image model"), initial="dall-e-3"
    )
    image_size = forms.CharField(max_length=20, label=gettext_lazy("Image size"))

    def __init__(self, *args, providers=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["image_provider"].queryset = providers


class ConceptForm(forms.Form):
    description = forms.CharField(max_length=300, required=False, label=gettext_lazy("About"))
    image_hint = forms.CharField(
        max_length=300,
        label=gettext_lazy("How example 1 is depicted"),
        help_text=gettext_lazy("Fills “… and describe it with {…}” in the prompt."),
    )
    active = forms.BooleanField(required=False, initial=True, label=gettext_lazy("Active"))

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for k in range(1, 4):
            for key, label in (
                ("context", gettext_lazy("Context")),
                ("true_statement", gettext_lazy("True statement")),
                ("false_statement", gettext_lazy("False statement")),
            ):
                self.fields[f"ex{k}_{key}"] = forms.CharField(
                    max_length=prompts.MAX_TEXT,
                    label=label,
                    widget=forms.Textarea(attrs={"rows": 2}) if key == "context" else None,
                )

    def examples(self) -> list[dict]:
        d = self.cleaned_data
        return [
            {key: d[f"ex{k}_{key}"] for key in ("context", "true_statement", "false_statement")}
            for k in range(1, 4)
        ]

    def example_rows(self):
        return [
            [self[f"ex{k}_{key}"] for key in ("context", "true_statement", "false_statement")]
            for k in range(1, 4)
        ]

    @staticmethod
    def initial_for(concept) -> dict:
        initial = {
            "description": concept.description,
            "image_hint": concept.image_hint,
            "active": concept.active,
        }
        for k, ex in enumerate(concept.examples[:3], start=1):
            for key in ("context", "true_statement", "false_statement"):
                initial[f"ex{k}_{key}"] = ex.get(key, "")
        return initial


class NewConceptForm(ConceptForm):
    name = forms.CharField(max_length=40, label=gettext_lazy("Concept name"))
    field_order = ["name"]


class DraftForm(forms.Form):
    count = forms.IntegerField(
        min_value=1,
        max_value=services.MAX_TRIPLES_PER_CONCEPT,
        required=False,
        label=gettext_lazy("Triples per concept"),
    )


# --------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------
def _refuse(request: HttpRequest, exc: ServiceError) -> None:
    detail = "; ".join(f"{e['error']}" for e in getattr(exc, "errors", [])[:5])
    messages.error(request, f"{exc.message} {detail}".strip())


def _url(bench) -> str:
    return reverse("curator-vlind-bench", args=[bench.pk])


def _back(bench) -> HttpResponse:
    return redirect(_url(bench))


def _back_to_triple(bench, triple) -> HttpResponse:
    return redirect("curator-vlind-triple", bench.pk, triple.pk)


def _start(request: HttpRequest, bench, start, what: str) -> HttpResponse:
    return start_job(request, start, page=_url(bench), what=what, refuse=_refuse)


def _providers(bench):
    return LLMProvider.objects.filter(
        Q(project=bench.project) | Q(project__isnull=True), kind=LLMProvider.Kind.OPENAI
    ).order_by("name")


def _uploads(files) -> list[services.Upload]:
    return [services.Upload(name=f.name, data=f.read()) for f in files]


def _too_big(request: HttpRequest, files) -> str:
    from ... import assets

    limit = assets.max_image_bytes()
    big = [f.name for f in files if f.size > limit]
    if big:
        return _("%(names)s: larger than %(mb)d MB; nothing was stored.") % {
            "names": ", ".join(big),
            "mb": limit // 2**20,
        }
    return ""


# --------------------------------------------------------------------------------------------
# benches
# --------------------------------------------------------------------------------------------
@roles.roles_required(*CURATOR)
@require_GET
def benches(request: HttpRequest) -> HttpResponse:
    """Every bench in reach, grouped by project."""
    groups = grouped_by_project(
        request.user, selectors.benches_with_counts(request.user), "benches"
    )
    return render(request, "curation/vlind/benches.html", {"groups": groups})


@roles.roles_required(*CURATOR)
def bench_new(request: HttpRequest, project_id: int) -> HttpResponse:
    project = curated_project_or_404(request.user, project_id)
    return form_page(
        request,
        BenchForm(request.POST or None),
        lambda data: services.bench_create(project=project, created_by=request.user, **data),
        "curation/vlind/new.html",
        {"project": project},
        done=_("VLind-Bench created with the paper's 11 concepts."),
        then=_url,
    )


def _detail_context(request: HttpRequest, bench) -> dict:
    funnel = selectors.funnel(bench)
    jobs = selectors.latest_jobs(bench)
    found = export.instances(bench)
    _endpoint, _model, image_problem = services.image_endpoint(bench)
    return {
        "bench": bench,
        **funnel_context(funnel, jobs, "triples"),
        "jobs": job_cards(jobs, JOB_LABELS) + _export_cards(bench, export.latest_exports(bench)),
        "concept_rows": selectors.concept_rows(bench, funnel),
        "table1": export.table1(bench, found),
        "samples": selectors.sample_triples(bench),
        "draft_form": DraftForm(initial={"count": bench.triples_per_concept}),
        "settings_form": SettingsForm(
            providers=_providers(bench),
            initial={
                "triples_per_concept": bench.triples_per_concept,
                "images_per_style": bench.images_per_style,
                "image_provider": bench.image_provider_id,
                "image_model": bench.image_model,
                "image_size": bench.image_size,
            },
        ),
        "publish_form": PublishForm(
            initial={"label": f"v{export.published_versions(bench).count() + 1}"}
        ),
        "versions": list(export.published_versions(bench).select_related("benchmark")[:5]),
        "image_problem": image_problem,
        "provider": gateway.provider_for(bench.project),
        "template": gateway.template_current(prompts.TRIPLES_TEMPLATE),
        "reviewers": services.REVIEWERS,
        "min_accepts": services.MIN_ACCEPTS,
        "triple_criteria": services.TRIPLE_CRITERIA,
        "image_criteria": services.IMAGE_CRITERIA,
        "example_tests": export.test_inputs(export.row_of(found[0]).data) if found else [],
    }


@roles.roles_required(*CURATOR)
@require_GET
def bench_detail(request: HttpRequest, bench_id: int) -> HttpResponse:
    """The funnel; ``?part=funnel`` is the fragment htmx polls while a job runs."""
    bench = selectors.bench_or_404(request.user, bench_id)
    if request.GET.get("part") == "funnel":
        funnel = funnel_context(selectors.funnel(bench), selectors.latest_jobs(bench), "triples")
        return render(request, "curation/vlind/_funnel.html", {"bench": bench, **funnel})
    prompts.templates_ensure()  # idempotent: seeds the four prompts where they are missing
    return render(request, "curation/vlind/bench.html", _detail_context(request, bench))


@roles.roles_required(*CURATOR)
@require_POST
def bench_settings(request: HttpRequest, bench_id: int) -> HttpResponse:
    bench = selectors.bench_or_404(request.user, bench_id)
    form = SettingsForm(request.POST, providers=_providers(bench))
    if not form.is_valid():
        messages.error(request, _("The settings are not valid: %(e)s") % {"e": first_error(form)})
        return _back(bench)
    save = partial(services.bench_settings, bench=bench, **form.cleaned_data)
    return perform(request, save, back=_url(bench), done=_("Settings saved."), refuse=_refuse)


# --------------------------------------------------------------------------------------------
# concepts
# --------------------------------------------------------------------------------------------
@roles.roles_required(*CURATOR)
def concept_edit(request: HttpRequest, bench_id: int, concept_id: int) -> HttpResponse:
    bench = selectors.bench_or_404(request.user, bench_id)
    concept = selectors.concept_or_404(bench, concept_id)
    prompts.templates_ensure()
    form = ConceptForm(request.POST or None, initial=ConceptForm.initial_for(concept))
    error = None
    if request.method == "POST" and form.is_valid():
        try:
            services.concept_update(
                concept=concept,
                description=form.cleaned_data["description"],
                image_hint=form.cleaned_data["image_hint"],
                examples=form.examples(),
                active=form.cleaned_data["active"],
            )
        except Invalid as exc:
            error = error_context(exc)
        else:
            messages.success(request, _("Concept “%(c)s” saved.") % {"c": concept.name})
            return redirect("curator-vlind-concept", bench.pk, concept.pk)
    preview = ""
    if len(concept.examples) >= 3:
        preview = gateway.render(
            gateway.template_current(prompts.TRIPLES_TEMPLATE).text,
            prompts.triple_variables(
                concept=concept.name,
                image_hint=concept.image_hint,
                examples=concept.examples,
                count=bench.triples_per_concept,
            ),
        )
    return render(
        request,
        "curation/vlind/concept.html",
        {"bench": bench, "concept": concept, "form": form, "error": error, "preview": preview},
        status=400 if request.method == "POST" else 200,
    )


@roles.roles_required(*CURATOR)
def concept_new(request: HttpRequest, bench_id: int) -> HttpResponse:
    bench = selectors.bench_or_404(request.user, bench_id)
    form = NewConceptForm(request.POST or None, initial={"active": True})
    return form_page(
        request,
        form,
        lambda data: services.concept_add(
            bench=bench,
            name=data["name"],
            description=data["description"],
            image_hint=data["image_hint"],
            examples=form.examples(),
        ),
        "curation/vlind/concept.html",
        {"bench": bench, "concept": None, "preview": ""},
        done=lambda concept: _("Concept “%(c)s” added.") % {"c": concept.name},
        then=_url(bench),
    )


# --------------------------------------------------------------------------------------------
# jobs
# --------------------------------------------------------------------------------------------
@roles.roles_required(*CURATOR)
@require_POST
def draft(request: HttpRequest, bench_id: int) -> HttpResponse:
    bench = selectors.bench_or_404(request.user, bench_id)
    form = DraftForm(request.POST)
    if not form.is_valid():
        messages.error(
            request,
            _("Triples per concept must be a whole number from 1 to %(n)d.")
            % {"n": services.MAX_TRIPLES_PER_CONCEPT},
        )
        return _back(bench)
    start = partial(
        services.triples_draft_start,
        bench=bench,
        count=form.cleaned_data.get("count"),
        created_by=request.user,
    )
    return _start(request, bench, start, _("Drafting triples"))


@roles.roles_required(*CURATOR)
@require_POST
def generate_images(request: HttpRequest, bench_id: int) -> HttpResponse:
    bench = selectors.bench_or_404(request.user, bench_id)
    start = partial(services.images_generate_start, bench=bench, created_by=request.user)
    return _start(request, bench, start, _("Generating images"))


@roles.roles_required(*CURATOR)
@require_POST
def draft_nouns(request: HttpRequest, bench_id: int) -> HttpResponse:
    bench = selectors.bench_or_404(request.user, bench_id)
    start = partial(services.nouns_draft_start, bench=bench, created_by=request.user)
    return _start(request, bench, start, _("Drafting VP nouns"))


# --------------------------------------------------------------------------------------------
# triples
# --------------------------------------------------------------------------------------------
@roles.roles_required(*CURATOR)
@require_GET
def triples(request: HttpRequest, bench_id: int) -> HttpResponse:
    bench = selectors.bench_or_404(request.user, bench_id)
    stage = request.GET.get("stage", "")
    if stage not in selectors.STAGE_LABELS:
        stage = ""
    concept_id = request.GET.get("concept") or None
    concept_id = int(concept_id) if concept_id and concept_id.isdigit() else None
    rows = selectors.triples_page(bench, stage=stage, concept_id=concept_id)
    funnel = selectors.funnel(bench)
    chips = state_chips(funnel["stages"], selectors.STAGES)
    return render(
        request,
        "curation/vlind/triples.html",
        {
            "bench": bench,
            "rows": rows[:500],
            "truncated": len(rows) > 500,
            "stage": stage,
            "chips": chips,
            "concepts": bench.concepts.order_by("position", "name"),
            "concept_id": concept_id,
        },
    )


def _triple_context(request, bench, triple, error=None) -> dict:
    images = list(triple.images.all())
    by_style = []
    for style in prompts.STYLES:
        slots = prompts.slots_of_style(style, bench.images_per_style)
        placed = {i.slot: i for i in images if i.style == style}
        by_style.append(
            {
                "style": style,
                "cells": [{"slot": s, "image": placed.get(s)} for s in slots],
                "free": sum(1 for s in slots if s not in placed),
            }
        )
    candidates = triple.noun_candidates or {}
    best = services.best_of(triple, images)
    return {
        "bench": bench,
        "triple": triple,
        "stage_label": selectors.STAGE_LABELS[selectors.stage_of(triple, images)],
        "by_style": by_style,
        "good": [i for i in images if i.status == VLindImage.Status.GOOD],
        "best": best,
        "candidates": candidates,
        "nouns_found": candidates.get("nouns", []),
        "nouns_absent": candidates.get("non-existent_nouns", []),
        "vp_true": prompts.vp_statement(triple.existent_noun) if triple.existent_noun else "",
        "vp_false": prompts.vp_statement(triple.non_existent_noun)
        if triple.non_existent_noun
        else "",
        "error": error,
        "style_choices": STYLE_CHOICES,
        "kept": triple.status == VLindTriple.Status.KEPT,
        "image_problem": services.image_endpoint(bench)[2],
    }


@roles.roles_required(*CURATOR)
@require_GET
def triple_detail(request: HttpRequest, bench_id: int, triple_id: int) -> HttpResponse:
    bench = selectors.bench_or_404(request.user, bench_id)
    triple = selectors.triple_or_404(bench, triple_id)
    return render(request, "curation/vlind/triple.html", _triple_context(request, bench, triple))


def _triple_refused(request, bench, triple, exc: Invalid) -> HttpResponse:
    triple = selectors.triple_or_404(bench, triple.pk)
    return render(
        request,
        "curation/vlind/triple.html",
        _triple_context(request, bench, triple, error=error_context(exc)),
        status=400,
    )


@roles.roles_required(*CURATOR)
@require_POST
def triple_images(request: HttpRequest, bench_id: int, triple_id: int) -> HttpResponse:
    """Upload counterfactual images of one style; every file checked, any refusal stores none."""
    bench = selectors.bench_or_404(request.user, bench_id)
    triple = selectors.triple_or_404(bench, triple_id)
    files = request.FILES.getlist("images")
    try:
        if big := _too_big(request, files):
            raise Invalid(big)
        services.images_upload(
            triple=triple,
            style=request.POST.get("style", ""),
            files=_uploads(files),
            created_by=request.user,
        )
    except Invalid as exc:
        return _triple_refused(request, bench, triple, exc)
    messages.success(
        request,
        _("%(n)d image(s) stored and sent to %(r)d reviewers each.")
        % {"n": len(files), "r": services.REVIEWERS},
    )
    return _back_to_triple(bench, triple)


@roles.roles_required(*CURATOR)
@require_POST
def triple_factual(request: HttpRequest, bench_id: int, triple_id: int) -> HttpResponse:
    bench = selectors.bench_or_404(request.user, bench_id)
    triple = selectors.triple_or_404(bench, triple_id)
    upload = request.FILES.get("image")
    text = request.POST.get("factual_context")
    try:
        if upload is not None and (big := _too_big(request, [upload])):
            raise Invalid(big)
        services.factual_upload(
            triple=triple,
            upload=_uploads([upload])[0] if upload is not None else None,
            factual_context=text
            if text is not None and text.strip() != triple.factual_context
            else None,
            created_by=request.user,
        )
    except Invalid as exc:
        return _triple_refused(request, bench, triple, exc)
    messages.success(request, _("Factual image and context saved."))
    return _back_to_triple(bench, triple)


@roles.roles_required(*CURATOR)
@require_POST
def triple_nouns(request: HttpRequest, bench_id: int, triple_id: int) -> HttpResponse:
    """The person's pick of the VP pair: a proposed noun, or one typed in."""
    bench = selectors.bench_or_404(request.user, bench_id)
    triple = selectors.triple_or_404(bench, triple_id)
    post = request.POST
    existent = post.get("existent_other", "").strip() or post.get("existent", "")
    absent = post.get("non_existent_other", "").strip() or post.get("non_existent", "")
    try:
        services.nouns_pick(triple=triple, existent=existent, non_existent=absent)
    except Invalid as exc:
        return _triple_refused(request, bench, triple, exc)
    messages.success(request, _("VP nouns saved."))
    return _back_to_triple(bench, triple)


@roles.roles_required(*CURATOR)
@require_POST
def triple_best(request: HttpRequest, bench_id: int, triple_id: int) -> HttpResponse:
    bench = selectors.bench_or_404(request.user, bench_id)
    triple = selectors.triple_or_404(bench, triple_id)
    raw = request.POST.get("image", "")
    try:
        services.best_image_pick(triple=triple, image_id=int(raw) if raw.isdigit() else None)
    except Invalid as exc:
        return _triple_refused(request, bench, triple, exc)
    messages.success(request, _("Best image saved."))
    return _back_to_triple(bench, triple)


# --------------------------------------------------------------------------------------------
# export
# --------------------------------------------------------------------------------------------
@roles.roles_required(*CURATOR)
@require_POST
def publish(request: HttpRequest, bench_id: int) -> HttpResponse:
    bench = selectors.bench_or_404(request.user, bench_id)
    return publish_version(
        request,
        partial(export.dataset_publish, bench=bench),
        back=_url(bench),
        done=lambda version: (
            _("Froze %(n)d instances as version %(label)s.")
            % {"n": version.item_count, "label": version.label}
        ),
        refuse=_refuse,
    )


def _export_label(job: Job) -> str:
    version_id = job.params.get("version_id")
    what = _("version #%(id)d") % {"id": version_id} if version_id else _("current assembly")
    if job.params.get("appendix_b"):
        what = _("%(what)s with App. B") % {"what": what}
    return _("Export: %(what)s") % {"what": what}


def _export_cards(bench, jobs) -> list:
    def card_url(job: Job) -> str:
        return reverse("curator-vlind-export-file", args=[bench.pk, job.pk]) + "?part=card"

    def file_url(job: Job) -> str:
        return reverse("curator-vlind-export-file", args=[bench.pk, job.pk])

    return export_cards(jobs, label=_export_label, card_url=card_url, file_url=file_url)


def _export(request: HttpRequest, bench, version=None) -> HttpResponse:
    """POST starts the export job; GET serves the newest finished one of the same kind (with
    or without App. B), or goes back saying to start one."""
    appendix_b = (request.POST if request.method == "POST" else request.GET).get("appendix_b")
    appendix_b = appendix_b == "1"
    if request.method == "POST":
        start = partial(
            export.export_start,
            bench=bench,
            version=version,
            appendix_b=appendix_b,
            created_by=request.user,
        )
        return start_job(
            request,
            start,
            page=_url(bench),
            refused_at="export-title",
            message=_("Export started: its card shows progress, then the download link."),
            refuse=_refuse,
        )
    job = export.newest_finished_export(
        bench, version_id=version.pk if version else None, appendix_b=appendix_b
    )
    return newest_export(request, job, page=_url(bench) + "#export-title")


def _export_bench(request: HttpRequest, bench_id: int):
    """Curators start exports (POST); curators and researchers of the bench's project read
    them (GET); anyone else gets a 404."""
    if request.method == "POST":
        return selectors.bench_or_404(request.user, bench_id)
    return downloadable_or_404(request.user, VLindBench.objects, bench_id)


@roles.roles_required(*DOWNLOAD_ROLES)
@require_http_methods(["GET", "POST"])
def download(request: HttpRequest, bench_id: int) -> HttpResponse:
    """The current assembly as data.json + image folders (zip), written by a job;
    ``appendix_b=1`` adds App. B's plain white image and rendered prompts."""
    bench = _export_bench(request, bench_id)
    return _export(request, bench)


@roles.roles_required(*DOWNLOAD_ROLES)
@require_http_methods(["GET", "POST"])
def version_download(request: HttpRequest, bench_id: int, version_id: int) -> HttpResponse:
    """A frozen version's archive, rebuilt from its items by a job."""
    bench = _export_bench(request, bench_id)
    version = export.published_versions(bench).filter(pk=version_id).first()
    if version is None:
        raise Http404
    return _export(request, bench, version)


@roles.roles_required(*DOWNLOAD_ROLES)
@require_GET
def export_file(request: HttpRequest, bench_id: int, job_id: int) -> HttpResponse:
    """The file an export job wrote, for curators and researchers of the bench's project (404
    saying why when it is not finished, failed or not this bench's); ``?part=card`` is its
    card, polled while the job runs."""
    bench = downloadable_or_404(request.user, VLindBench.objects, bench_id)
    job = export.export_jobs(bench).filter(pk=job_id).first()
    if request.GET.get("part") == "card" and job is not None:
        [(label, job)] = _export_cards(bench, [job])
        return export_card(request, label, job)
    return serve_export(request, job, back=_url(bench) + "#export-title")
