"""VLind-Bench's own pages (curators and admins): a concept's examples, the triples and one
triple's images, factual image, nouns and best image. The generic recipe pages (list, new,
detail, settings, the draft / images / nouns buttons, publish, exports) come from
``framework.urls``; ``detail_context`` adds what the bench page shows beyond the funnel.

Reads go through ``selectors`` (project membership): a bench out of reach answers 404 exactly
like a missing one. Every POST changes one thing, then redirects back; refusals say why and
change nothing.
"""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import path
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST

from annotator.platform import roles
from annotator.platform.errors import Invalid, ServiceError
from annotator.platform.views import error_context, form_page, state_chips
from evaluation.metrics import vlind

from ... import assets, gateway
from ..framework import views as framework_views
from ..framework.registry import recipe_of
from . import archive, benches, export, forms, generation, images, nouns, prompts, selectors
from .models import VLindImage, VLindTriple

CURATOR = (roles.CURATOR,)  # admins pass every role check
STYLE_CHOICES = [(s, s.capitalize()) for s in prompts.STYLES]


def refuse(request: HttpRequest, exc: ServiceError) -> None:
    """A refusal's message with its first line errors (the recipe's ``refuse``)."""
    detail = "; ".join(f"{e['error']}" for e in getattr(exc, "errors", [])[:5])
    messages.error(request, f"{exc.message} {detail}".strip())


def _url(bench) -> str:
    return framework_views.detail_url(recipe_of("vlind"), bench)


def detail_context(request: HttpRequest, bench, base: dict) -> dict:
    """What the bench page shows besides the generic funnel, buttons, jobs and forms."""
    prompts.templates_ensure()  # idempotent: seeds the four prompts where they are missing
    found = export.instances(bench)
    return {
        "concept_rows": selectors.concept_rows(bench, base["funnel"]),
        "table1": export.table1(bench, found),
        "samples": selectors.sample_triples(bench),
        "draft_form": forms.DraftForm(initial=forms.DraftForm.initial_for(bench)),
        "image_problem": generation.image_endpoint(bench)[2],
        "provider": gateway.provider_for(bench.project),
        "template": gateway.template_current(prompts.TRIPLES_TEMPLATE),
        "reviewers": benches.REVIEWERS,
        "min_accepts": benches.MIN_ACCEPTS,
        "triple_criteria": benches.TRIPLE_CRITERIA,
        "image_criteria": benches.IMAGE_CRITERIA,
        "example_tests": archive.test_inputs(export.row_of(found[0]).data) if found else [],
    }


@roles.roles_required(*CURATOR)
def concept_edit(request: HttpRequest, bench_id: int, concept_id: int) -> HttpResponse:
    bench = selectors.bench_or_404(request.user, bench_id)
    concept = get_object_or_404(bench.concepts, pk=concept_id)
    prompts.templates_ensure()
    form = forms.ConceptForm(request.POST or None, initial=forms.ConceptForm.initial_for(concept))
    error = None
    if request.method == "POST" and form.is_valid():
        try:
            benches.concept_update(
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
        variables = prompts.triple_variables(
            concept=concept.name,
            image_hint=concept.image_hint,
            examples=concept.examples,
            count=bench.triples_per_concept,
        )
        preview = gateway.render(gateway.template_current(prompts.TRIPLES_TEMPLATE).text, variables)
    context = {"bench": bench, "concept": concept, "form": form, "error": error, "preview": preview}
    status = 400 if request.method == "POST" else 200
    return render(request, "curation/vlind/concept.html", context, status=status)


@roles.roles_required(*CURATOR)
def concept_new(request: HttpRequest, bench_id: int) -> HttpResponse:
    bench = selectors.bench_or_404(request.user, bench_id)
    form = forms.NewConceptForm(request.POST or None, initial={"active": True})

    def add(data: dict):
        return benches.concept_add(
            bench=bench,
            name=data["name"],
            description=data["description"],
            image_hint=data["image_hint"],
            examples=form.examples(),
        )

    return form_page(
        request,
        form,
        add,
        "curation/vlind/concept.html",
        {"bench": bench, "concept": None, "preview": ""},
        done=lambda concept: _("Concept “%(c)s” added.") % {"c": concept.name},
        then=_url(bench),
    )


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
    context = {
        "bench": bench,
        "rows": rows[:500],
        "truncated": len(rows) > 500,
        "stage": stage,
        "chips": state_chips(funnel["stages"], selectors.STAGES),
        "concepts": bench.concepts.order_by("position", "name"),
        "concept_id": concept_id,
    }
    return render(request, "curation/vlind/triples.html", context)


def _triple_context(bench, triple, error=None) -> dict:
    images_ = list(triple.images.all())
    by_style = []
    for style in prompts.STYLES:
        slots = prompts.slots_of_style(style, bench.images_per_style)
        placed = {i.slot: i for i in images_ if i.style == style}
        cells = [{"slot": s, "image": placed.get(s)} for s in slots]
        free = sum(1 for s in slots if s not in placed)
        by_style.append({"style": style, "cells": cells, "free": free})
    candidates = triple.noun_candidates or {}
    return {
        "bench": bench,
        "triple": triple,
        "stage_label": selectors.STAGE_LABELS[selectors.stage_of(triple, images_)],
        "by_style": by_style,
        "good": [i for i in images_ if i.status == VLindImage.Status.GOOD],
        "best": images.best_of(triple, images_),
        "candidates": candidates,
        "nouns_found": candidates.get("nouns", []),
        "nouns_absent": candidates.get("non-existent_nouns", []),
        "vp_true": vlind.vp_statement(triple.existent_noun) if triple.existent_noun else "",
        "vp_false": vlind.vp_statement(triple.non_existent_noun)
        if triple.non_existent_noun
        else "",
        "error": error,
        "style_choices": STYLE_CHOICES,
        "kept": triple.status == VLindTriple.Status.KEPT,
        "image_problem": generation.image_endpoint(bench)[2],
    }


@roles.roles_required(*CURATOR)
@require_GET
def triple_detail(request: HttpRequest, bench_id: int, triple_id: int) -> HttpResponse:
    bench = selectors.bench_or_404(request.user, bench_id)
    triple = selectors.triple_or_404(bench, triple_id)
    return render(request, "curation/vlind/triple.html", _triple_context(bench, triple))


def _triple_post(request: HttpRequest, bench_id: int, triple_id: int, change, done: str):
    """A POST on one triple: ``change(triple)`` then back to it saying ``done``; a refusal
    re-renders the triple page with the reason (400)."""
    bench = selectors.bench_or_404(request.user, bench_id)
    triple = selectors.triple_or_404(bench, triple_id)
    try:
        change(triple)
    except Invalid as exc:
        triple = selectors.triple_or_404(bench, triple.pk)
        context = _triple_context(bench, triple, error=error_context(exc))
        return render(request, "curation/vlind/triple.html", context, status=400)
    messages.success(request, done)
    return redirect("curator-vlind-triple", bench.pk, triple.pk)


def _uploads(files) -> list[images.Upload]:
    limit = assets.max_image_bytes()
    big = [f.name for f in files if f.size > limit]
    if big:
        raise Invalid(
            _("%(names)s: larger than %(mb)d MB; nothing was stored.")
            % {"names": ", ".join(big), "mb": limit // 2**20}
        )
    return [images.Upload(name=f.name, data=f.read()) for f in files]


@roles.roles_required(*CURATOR)
@require_POST
def triple_images(request: HttpRequest, bench_id: int, triple_id: int) -> HttpResponse:
    """Upload counterfactual images of one style; every file checked, any refusal stores none."""
    files = request.FILES.getlist("images")

    def upload(triple) -> None:
        images.images_upload(
            triple=triple,
            style=request.POST.get("style", ""),
            files=_uploads(files),
            created_by=request.user,
        )

    done = _("%(n)d image(s) stored and sent to %(r)d reviewers each.")
    done %= {"n": len(files), "r": benches.REVIEWERS}
    return _triple_post(request, bench_id, triple_id, upload, done)


@roles.roles_required(*CURATOR)
@require_POST
def triple_factual(request: HttpRequest, bench_id: int, triple_id: int) -> HttpResponse:
    upload = request.FILES.get("image")
    text = request.POST.get("factual_context")

    def save(triple) -> None:
        images.factual_upload(
            triple=triple,
            upload=_uploads([upload])[0] if upload is not None else None,
            factual_context=text
            if text is not None and text.strip() != triple.factual_context
            else None,
            created_by=request.user,
        )

    return _triple_post(request, bench_id, triple_id, save, _("Factual image and context saved."))


@roles.roles_required(*CURATOR)
@require_POST
def triple_nouns(request: HttpRequest, bench_id: int, triple_id: int) -> HttpResponse:
    """The person's pick of the VP pair: a proposed noun, or one typed in."""
    post = request.POST
    existent = post.get("existent_other", "").strip() or post.get("existent", "")
    absent = post.get("non_existent_other", "").strip() or post.get("non_existent", "")

    def pick(triple) -> None:
        nouns.nouns_pick(triple=triple, existent=existent, non_existent=absent)

    return _triple_post(request, bench_id, triple_id, pick, _("VP nouns saved."))


@roles.roles_required(*CURATOR)
@require_POST
def triple_best(request: HttpRequest, bench_id: int, triple_id: int) -> HttpResponse:
    raw = request.POST.get("image", "")

    def pick(triple) -> None:
        images.best_image_pick(triple=triple, image_id=int(raw) if raw.isdigit() else None)

    return _triple_post(request, bench_id, triple_id, pick, _("Best image saved."))


def urls() -> list:
    """The recipe's own routes under ``curate/`` (names and paths as they always were)."""
    at = "vlind/<int:bench_id>/"
    triple = f"{at}triples/<int:triple_id>/"
    return [
        path(f"{at}concepts/new/", concept_new, name="curator-vlind-concept-new"),
        path(f"{at}concepts/<int:concept_id>/", concept_edit, name="curator-vlind-concept"),
        path(f"{at}triples/", triples, name="curator-vlind-triples"),
        path(triple, triple_detail, name="curator-vlind-triple"),
        path(f"{triple}images/", triple_images, name="curator-vlind-upload"),
        path(f"{triple}factual/", triple_factual, name="curator-vlind-factual"),
        path(f"{triple}nouns/", triple_nouns, name="curator-vlind-nouns"),
        path(f"{triple}best/", triple_best, name="curator-vlind-best"),
    ]
