"""The generic pages of every recipe (curators and admins; exports also for the project's
researchers): the list of objects by project, a new object, its detail page (funnel with counts,
stage buttons with what blocks them, job cards with progress, exports, published versions), its
settings, a stage's POST, publishing, starting and serving exports.

Each view takes the recipe first; ``urls.patterns_for`` binds it and keeps the recipe's URL
names, paths and kwarg names. Reads go through ``selectors`` (project membership): an object out
of reach answers 404 exactly like a missing one. Every POST starts a job or changes one thing,
then redirects back; a refusal says why and changes nothing.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from django import forms
from django.contrib import messages
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _

from annotator.platform.errors import ServiceError
from annotator.platform.files import downloadable_or_404
from annotator.platform.models import Job
from annotator.platform.scoping import curated_project_or_404
from annotator.platform.views import (
    any_running,
    error_context,
    grouped_by_project,
    perform,
    refuse,
    start_job,
    state_chips,
)
from curation.export_files import export_card, export_cards, newest_export, serve_export

from . import datasets, exports, selectors, stages
from .declare import Create, Export, ItemList, Page, Recipe, Stage, WorkerPage
from .publish import PublishForm, publish_context, publish_object, publish_version


def detail_url(recipe: Recipe, obj: Any, anchor: str = "") -> str:
    url = reverse(recipe.names.detail, args=[obj.pk])
    return url + (f"#{anchor}" if anchor else "")


def _refuse(recipe: Recipe):
    return recipe.refuse or refuse


# --------------------------------------------------------------------------------------------
# context
# --------------------------------------------------------------------------------------------
def _stage_url(recipe: Recipe, stage: Stage, obj: Any) -> str:
    if stage.url_name:
        return reverse(stage.url_name, args=[obj.pk])
    return reverse(recipe.names.stage, args=[obj.pk, stage.name]) if recipe.names.stage else ""


def _stage_entries(
    recipe: Recipe, obj: Any, counts: dict, latest: dict[str, Job], *, forms_too: bool = True
) -> list[dict]:
    entries = []
    for stage in recipe.stages:
        if not stage.button:
            continue
        job = latest.get(stage.job_kind)
        form = None
        if stage.form is not None and forms_too:
            form = stage.form(initial=stage.form.initial_for(obj), obj=obj)
        entries.append(
            {
                "stage": stage.name,
                "label": stage.label,
                "blocker": stage.blocked_by(obj, counts),
                "job": job,
                "busy": job is not None and not job.is_finished,
                "url": _stage_url(recipe, stage, obj),
                "form": form,
            }
        )
    return entries


def _export_cards(recipe: Recipe, obj: Any, found: list[tuple[Export, Job]]) -> list:
    cards = []
    for export, job in found:
        cards += _cards_of(recipe, obj, export, [job])
    return cards


def _cards_of(recipe: Recipe, obj: Any, export: Export, jobs: list[Job]) -> list:
    def file_url(job: Job) -> str:
        return reverse(export.file_url_name, args=[obj.pk, job.pk])

    return export_cards(
        jobs,
        label=lambda job: export.label(exports.job_variant(recipe, job)),
        card_url=lambda job: file_url(job) + "?part=card",
        file_url=file_url,
    )


def _export_buttons(recipe: Recipe, obj: Any) -> list[tuple[str, str]]:
    """(label, URL) of the generic export buttons (``Export.buttons``)."""
    return [
        (label, reverse(export.url_name, kwargs={recipe.pk_kwarg: obj.pk, **kwargs}))
        for export in recipe.exports
        for label, kwargs in export.buttons
    ]


def base_context(recipe: Recipe, obj: Any, *, fragment: bool = False) -> dict:
    """What every recipe's detail page gets (README "Write your own recipe", step 5); the
    polled funnel ``fragment`` gets the counts, the job flag and the stage entries without
    forms, export cards or the settings form."""
    counts = recipe.funnel(obj)
    latest = selectors.latest_jobs(recipe, obj)
    entries = _stage_entries(recipe, obj, counts, latest, forms_too=not fragment)
    jobs = [(s.card_label, latest[s.job_kind]) for s in recipe.stages if s.job_kind in latest]
    found = exports.latest_exports(recipe, obj) if recipe.exports and not fragment else []
    context = {
        "recipe": recipe,
        "object": obj,
        recipe.context_name: obj,
        "project": obj.project,
        "funnel": counts,
        "running": any_running(latest.values()),
        "stages": {entry["stage"]: entry for entry in entries},
        "stage_list": entries,
        "jobs": jobs + _export_cards(recipe, obj, found),
        "exports": recipe.exports,
        "export_buttons": [] if fragment else _export_buttons(recipe, obj),
    }
    if recipe.bar is not None:
        context["max_bar"] = max(recipe.bar(counts), 1)
    if recipe.settings_form is not None and not recipe.templates.settings_page and not fragment:
        form_class = recipe.settings_form
        context["settings_form"] = form_class(
            initial=form_class.initial_for(obj), project=obj.project, obj=obj
        )
    return context


def detail_page_context(recipe: Recipe, request: HttpRequest, obj: Any) -> dict:
    context = base_context(recipe, obj)
    context.update(publish_context(recipe, obj))
    if recipe.detail_context is not None:
        context.update(recipe.detail_context(request, obj, context))
    return context


# --------------------------------------------------------------------------------------------
# pages
# --------------------------------------------------------------------------------------------
def object_list(recipe: Recipe, request: HttpRequest) -> HttpResponse:
    """Every object in reach, grouped by project."""
    items = selectors.objects_for(recipe, request.user).annotate(**recipe.list_counts)
    groups = grouped_by_project(request.user, items, recipe.list_key)
    for group in groups:
        group["items"] = group[recipe.list_key]
    return render(request, recipe.templates.list, {"recipe": recipe, "groups": groups})


def item_list(recipe: Recipe, declared: ItemList, request: HttpRequest, pk: int) -> HttpResponse:
    """One page of the object's items in the state ``?state=`` names (all for none), with the
    state chips."""
    obj = selectors.object_or_404(recipe, request.user, pk)
    state = request.GET.get("state", "")
    counts, total = declared.counts(obj)
    choices = declared.choices(obj) if callable(declared.choices) else declared.choices
    params = declared.params(request.GET) if declared.params is not None else {}
    paginator = Paginator(declared.rows(obj, state, **params), declared.page_size)
    page = paginator.get_page(request.GET.get("page"))
    context = {
        "recipe": recipe,
        "object": obj,
        recipe.context_name: obj,
        "page": page,
        "state": state,
        "chips": state_chips(counts, choices),
        "total": total,
        **params,
    }
    if declared.extra is not None:
        context.update(declared.extra(obj, page, counts))
    return render(request, declared.template, context)


RECENT_JOBS = 3  # the new page's newest jobs of the stages that make an object


def _form_page(request, recipe: Recipe, project, form, obj=None, error=None, status=200, **more):
    context = {
        "recipe": recipe,
        "project": project,
        "form": form,
        "object": obj,
        recipe.context_name: obj,
        "error": error,
    }
    if obj is None:
        context.update(new_page_context(recipe, request, project), **more)
    return render(request, recipe.templates.form, context, status=status)


def new_page_context(recipe: Recipe, request: HttpRequest, project) -> dict:
    """What the new page shows beside its form: the newest jobs of the stages that make an
    object (an import started there) and the forms of its other ways in (``creates``)."""
    kinds = [stage.job_kind for stage in recipe.stages if not stage.needs_object]
    context = {}
    if kinds:
        jobs = Job.objects.filter(kind__in=kinds, project=project).order_by("-id")
        context["recent_jobs"] = jobs[:RECENT_JOBS]
    for declared in recipe.creates:
        context[declared.context_name] = declared.form(request)
    return context


def object_new(recipe: Recipe, request: HttpRequest, project_id: int) -> HttpResponse:
    project = curated_project_or_404(request.user, project_id)
    form_class = recipe.create_form
    if request.method != "POST":
        form = form_class(initial=form_class.initial_new(project), project=project)
        return _form_page(request, recipe, project, form)
    form = form_class(request.POST, request.FILES, project=project)
    if not form.is_valid():
        return _form_page(request, recipe, project, form, status=400)
    try:
        obj = recipe.create(project=project, created_by=request.user, **form.service_data())
    except forms.ValidationError as exc:
        form.add_error(None, exc)
        return _form_page(request, recipe, project, form, status=400)
    except ServiceError as exc:
        return _form_page(request, recipe, project, form, error=error_context(exc), status=400)
    created = recipe.created(obj) if callable(recipe.created) else recipe.created
    messages.success(request, created or _("Created."))
    if isinstance(obj, Job):
        return redirect(recipe.names.new, project.pk)
    return redirect(detail_url(recipe, obj))


def object_create(
    recipe: Recipe, request: HttpRequest, project_id: int, declared: Create
) -> HttpResponse:
    """Another way in of the new page (``Recipe.creates``): the object made from its form's
    data, or the new page again with that form's errors or the refusal (400)."""
    project = curated_project_or_404(request.user, project_id)
    form, error = declared.form(request, request.POST), None
    if form.is_valid():
        try:
            obj = declared.create(project=project, created_by=request.user, **form.cleaned_data)
        except ServiceError as exc:
            error = error_context(exc)
        else:
            messages.success(request, declared.done)
            return redirect(detail_url(recipe, obj))
    new = recipe.create_form(initial=recipe.create_form.initial_new(project), project=project)
    more = {declared.context_name: form}
    return _form_page(request, recipe, project, new, error=error, status=400, **more)


def object_detail(recipe: Recipe, request: HttpRequest, pk: int) -> HttpResponse:
    """The funnel; ``?part=funnel`` is the fragment htmx polls while a job runs."""
    obj = selectors.object_or_404(recipe, request.user, pk)
    if request.GET.get("part") == "funnel":
        context = base_context(recipe, obj, fragment=True)
        if recipe.funnel_extra and recipe.detail_context is not None:
            context.update(recipe.detail_context(request, obj, context))
        return render(request, recipe.templates.funnel, context)
    return render(request, recipe.templates.detail, detail_page_context(recipe, request, obj))


def object_settings(recipe: Recipe, request: HttpRequest, pk: int) -> HttpResponse:
    obj = selectors.object_or_404(recipe, request.user, pk)
    form_class = recipe.settings_form
    saved = recipe.settings_saved or _("Settings saved.")
    if not recipe.templates.settings_page:
        form = form_class(request.POST, project=obj.project, obj=obj)
        if not form.is_valid():
            messages.error(request, form.invalid_message())
            return redirect(detail_url(recipe, obj))
        save = partial(recipe.update, obj, **form.service_data())
        return perform(
            request, save, back=detail_url(recipe, obj), done=saved, refuse=_refuse(recipe)
        )
    initial = form_class.initial_for(obj)
    if request.method != "POST":
        form = form_class(initial=initial, project=obj.project, obj=obj)
        return _form_page(request, recipe, obj.project, form, obj)
    form = form_class(request.POST, initial=initial, project=obj.project, obj=obj)
    if not form.is_valid():
        return _form_page(request, recipe, obj.project, form, obj, status=400)
    try:
        recipe.update(obj, **form.service_data())
    except ServiceError as exc:
        return _form_page(
            request, recipe, obj.project, form, obj, error=error_context(exc), status=400
        )
    messages.success(request, saved)
    return redirect(detail_url(recipe, obj))


def own_page(recipe: Recipe, page: Page, request: HttpRequest, pk: int, **kwargs: Any):
    """A page the recipe declares (``Recipe.pages``), given the object in reach."""
    obj = selectors.object_or_404(recipe, request.user, pk, readers=page.readers)
    return page.view(request, obj, **kwargs)


def stage_post(recipe: Recipe, request: HttpRequest, pk: int, stage: str) -> HttpResponse:
    """A stage's button: its form's fields become the job's params; a refusal goes back."""
    obj = selectors.object_or_404(recipe, request.user, pk)
    declared = recipe.stage(stage)
    if declared is None or not declared.button:
        raise Http404
    page = detail_url(recipe, obj)
    params: dict = {}
    if declared.form is not None:
        form = declared.form(request.POST, obj=obj)
        if not form.is_valid():
            messages.error(request, form.invalid_message())
            return redirect(detail_url(recipe, obj, declared.refused_at))
        params = form.job_params()
    start = partial(
        stages.stage_start, recipe, declared.name, obj, created_by=request.user, params=params
    )

    def what(job: Job) -> str:
        return _("%(what)s (job #%(n)d)") % {
            "what": declared.started or declared.label,
            "n": job.pk,
        }

    return start_job(
        request,
        start,
        page=page,
        what=what,
        refused_at=declared.refused_at,
        refuse=_refuse(recipe),
    )


def publish_post(recipe: Recipe, request: HttpRequest, pk: int) -> HttpResponse:
    obj = selectors.object_or_404(recipe, request.user, pk)
    declared = recipe.publishes
    then = None if declared.then is None else detail_url(recipe, obj, declared.then)
    return publish_version(
        request,
        partial(publish_object, recipe, obj),
        back=detail_url(recipe, obj, declared.back),
        done=declared.done,
        then=then,
        form_class=declared.form or PublishForm,
        refuse=_refuse(recipe),
    )


def export_download(
    recipe: Recipe, export: Export, request: HttpRequest, pk: int, **kwargs: Any
) -> HttpResponse:
    """POST (curators) starts the export job; GET (curators and researchers of the object's
    project) serves the newest finished one of that variant, or goes back saying to start one."""
    if request.method == "POST":
        obj = selectors.object_or_404(recipe, request.user, pk)
        page = detail_url(recipe, obj)
        try:
            params = export.params(obj, kwargs, request.POST)
        except ServiceError as exc:
            _refuse(recipe)(request, exc)
            return redirect(detail_url(recipe, obj, export.refused_at))
        start = partial(exports.export_start, recipe, export, obj, params, created_by=request.user)
        return start_job(
            request,
            start,
            page=page,
            refused_at=export.refused_at,
            what=_("Export"),
            started=_("Export started: its card shows progress, then the download link."),
            finished=_("Export finished: download it from its card."),
            refuse=_refuse(recipe),
        )
    obj = downloadable_or_404(request.user, recipe.model.objects, pk)
    back = detail_url(recipe, obj, export.anchor)
    try:
        params = export.params(obj, kwargs, request.GET)
    except ServiceError as exc:
        messages.error(request, exc.message)
        return redirect(back)
    problem = export.unknown(params) if export.unknown is not None else ""
    if problem:
        messages.error(request, problem)
        return redirect(back)
    job = exports.newest_finished(recipe, export, obj, params)
    return newest_export(request, job, page=back, what=export.what(params))


def export_file(recipe: Recipe, request: HttpRequest, pk: int, job_id: int) -> HttpResponse:
    """The file an export job wrote, for curators and researchers of the object's project (404
    saying why when it is not finished, failed or not this object's); ``?part=card`` is its
    card, polled while the job runs."""
    obj = downloadable_or_404(request.user, recipe.model.objects, pk)
    job = exports.export_jobs(recipe, obj).filter(pk=job_id).first()
    export = exports.export_of(recipe, job) if job is not None else None
    if request.GET.get("part") == "card" and export is not None:
        [(label, job)] = _cards_of(recipe, obj, export, [job])
        return export_card(request, label, job)
    anchor = export.anchor if export is not None else recipe.exports[0].anchor
    return serve_export(request, job, back=detail_url(recipe, obj, anchor))


def datasets_index(request: HttpRequest) -> HttpResponse:
    """Every recipe object in the person's projects with its published versions and files,
    read-only (researchers and curators)."""
    groups = datasets.datasets_for(request.user)
    return render(request, "curation/recipes/datasets.html", {"groups": groups})


def object_datasets(recipe: Recipe, request: HttpRequest, pk: int) -> HttpResponse:
    """One object's published versions, each with its dataset card and download buttons, and
    its other export files (the project's researchers and curators)."""
    obj = selectors.object_or_404(recipe, request.user, pk, readers=True)
    entry = datasets.object_entry(recipe, obj)
    return render(request, "curation/recipes/dataset.html", {"entry": entry, "recipe": recipe})


def worker_page(recipe: Recipe, page: WorkerPage, request: HttpRequest, pk: int, **kwargs):
    """A crowdworkers' page of an object open to them (404 for any other object)."""
    obj = selectors.workable_or_404(recipe, request.user, pk)
    return page.view(request, obj, **kwargs)
