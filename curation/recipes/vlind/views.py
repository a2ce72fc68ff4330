"""VLind-Bench's own pages (curators and admins): a concept's examples, the triples and one
triple's images, factual image, nouns and best image. The generic recipe pages (list, new,
detail, settings, the draft / images / nouns buttons, publish, exports) come from
``framework.urls``; ``detail_context`` adds what the bench page shows beyond the funnel.

Each page is declared in ``Recipe.pages`` and gets the bench loaded by the framework (a bench
out of reach answers 404 exactly like a missing one). Every POST changes one thing, then
redirects back; refusals say why and change nothing.
"""

from __future__ import annotations

from functools import cache, wraps

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from annotator.platform.errors import Invalid, ServiceError
from annotator.platform.views import error_context, form_page, state_chips
from curation import assets, gateway
from curation.recipes.framework import views as framework_views
from curation.recipes.framework.registry import recipe_for
from evaluation.families.vlind import layout

from . import archive, benches, export, forms, generation, images, nouns, prompts, selectors
from .models import VLindImage, VLindTriple

STYLE_CHOICES = [(s, s.capitalize()) for s in prompts.STYLES]


def refuse(request: HttpRequest, exc: ServiceError) -> None:
    """A refusal's message with its first line errors (the recipe's ``refuse``)."""
    detail = "; ".join(f"{e['error']}" for e in getattr(exc, "errors", [])[:5])
    messages.error(request, f"{exc.message} {detail}".strip())


def detail_context(request: HttpRequest, bench, base: dict) -> dict:
    """What the bench page shows besides the generic funnel, buttons, jobs and forms."""
    # Idempotent: seeds the four prompts where they are missing (a curator's edit stays current).
    gateway.templates_ensure(prompts.TEMPLATES)
    triples = selectors.triples_page(bench)  # once: the assembled ones and the samples
    found = export.instances(bench, triples)
    return {
        "concept_rows": selectors.concept_rows(bench, base["funnel"]),
        "table1": export.table1(bench, found),
        "samples": selectors.sample_triples(triples),
        "image_problem": generation.image_endpoint(bench)[2],
        "provider": gateway.provider_for(bench.project),
        "template": gateway.template_for(
            prompts.TRIPLES_TEMPLATE, project=bench.project, pin=False
        ),
        "reviewers": benches.REVIEWERS,
        "min_accepts": benches.MIN_ACCEPTS,
        "triple_criteria": benches.TRIPLE_CRITERIA,
        "image_criteria": benches.IMAGE_CRITERIA,
        "example_tests": archive.test_inputs(export.row_of(found[0]).data) if found else [],
    }


def _preview(bench, concept) -> str:
    """The App. A prompt the LLM receives for ``concept`` ("" without three examples)."""
    if len(concept.examples) < 3:
        return ""
    variables = prompts.triple_variables(
        concept=concept.name,
        image_hint=concept.image_hint,
        examples=concept.examples,
        count=bench.triples_per_concept,
    )
    template = gateway.template_for(prompts.TRIPLES_TEMPLATE, project=bench.project, pin=False)
    return gateway.render(template.text, variables)


def concept_edit(request: HttpRequest, bench, concept_id: int) -> HttpResponse:
    concept = get_object_or_404(bench.concepts, pk=concept_id)
    gateway.templates_ensure(prompts.TEMPLATES)
    form = forms.ConceptForm(request.POST or None, initial=forms.ConceptForm.initial_for(concept))

    def save(data: dict):
        return benches.concept_update(
            concept=concept,
            description=data["description"],
            image_hint=data["image_hint"],
            examples=form.examples(),
            active=data["active"],
        )

    @cache
    def preview() -> str:  # called by the template: the concept as the POST left it
        return _preview(bench, concept)

    return form_page(
        request,
        form,
        save,
        "vlind/concept.html",
        {"bench": bench, "concept": concept, "preview": preview},
        done=lambda concept: _("Concept “%(c)s” saved.") % {"c": concept.name},
        then=reverse("curator-vlind-concept", args=[bench.pk, concept.pk]),
    )


def concept_new(request: HttpRequest, bench) -> HttpResponse:
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
        "vlind/concept.html",
        {"bench": bench, "concept": None, "preview": ""},
        done=lambda concept: _("Concept “%(c)s” added.") % {"c": concept.name},
        then=framework_views.detail_url(recipe_for(bench), bench),
    )


def triples(request: HttpRequest, bench) -> HttpResponse:
    stage = request.GET.get("stage", "")
    if stage not in selectors.STAGE_LABELS:
        stage = ""
    concept_id = request.GET.get("concept") or None
    concept_id = int(concept_id) if concept_id and concept_id.isdigit() else None
    rows = selectors.triples_page(bench, stage=stage, concept_id=concept_id)
    stages, _per_concept = selectors.stage_counts(bench)  # the funnel's two queries, not all
    context = {
        "bench": bench,
        "rows": rows[:500],
        "truncated": len(rows) > 500,
        "stage": stage,
        "chips": state_chips(stages, selectors.STAGES),
        "concepts": bench.concepts.order_by("position", "name"),
        "concept_id": concept_id,
    }
    return render(request, "vlind/triples.html", context)


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
        "vp_true": layout.vp_statement(triple.existent_noun) if triple.existent_noun else "",
        "vp_false": layout.vp_statement(triple.non_existent_noun)
        if triple.non_existent_noun
        else "",
        "error": error,
        "style_choices": STYLE_CHOICES,
        "kept": triple.status == VLindTriple.Status.KEPT,
        "image_problem": generation.image_endpoint(bench)[2],
    }


def triple_detail(request: HttpRequest, bench, triple_id: int) -> HttpResponse:
    triple = selectors.triple_or_404(bench, triple_id)
    return render(request, "vlind/triple.html", _triple_context(bench, triple))


def _triple_post(done):
    """A POST on one triple: ``change(request, triple)``, then back to the triple saying
    ``done`` (a text, or made from the request); a refusal re-renders the triple page with the
    reason (400)."""

    def wrap(change):
        @wraps(change)
        def view(request: HttpRequest, bench, triple_id: int) -> HttpResponse:
            triple = selectors.triple_or_404(bench, triple_id)
            try:
                change(request, triple)
            except Invalid as exc:
                triple = selectors.triple_or_404(bench, triple.pk)
                context = _triple_context(bench, triple, error=error_context(exc))
                return render(request, "vlind/triple.html", context, status=400)
            messages.success(request, done(request) if callable(done) else done)
            return redirect("curator-vlind-triple", bench.pk, triple.pk)

        return view

    return wrap


def _uploads(files) -> list[images.Upload]:
    limit = assets.max_image_bytes()
    big = [f.name for f in files if f.size > limit]
    if big:
        raise Invalid(
            _("%(names)s: larger than %(mb)d MB; nothing was stored.")
            % {"names": ", ".join(big), "mb": limit // 2**20}
        )
    return [images.Upload(name=f.name, data=f.read()) for f in files]


def _images_stored(request: HttpRequest) -> str:
    done = _("%(n)d image(s) stored and sent to %(r)d reviewers each.")
    return done % {"n": len(request.FILES.getlist("images")), "r": benches.REVIEWERS}


@_triple_post(_images_stored)
def triple_images(request: HttpRequest, triple) -> None:
    """Upload counterfactual images of one style; every file checked, any refusal stores none."""
    images.images_upload(
        triple=triple,
        style=request.POST.get("style", ""),
        files=_uploads(request.FILES.getlist("images")),
        created_by=request.user,
    )


@_triple_post(gettext_lazy("Factual image and context saved."))
def triple_factual(request: HttpRequest, triple) -> None:
    upload = request.FILES.get("image")
    text = request.POST.get("factual_context")
    changed = text is not None and text.strip() != triple.factual_context
    images.factual_upload(
        triple=triple,
        upload=_uploads([upload])[0] if upload is not None else None,
        factual_context=text if changed else None,
        created_by=request.user,
    )


@_triple_post(gettext_lazy("VP nouns saved."))
def triple_nouns(request: HttpRequest, triple) -> None:
    """The person's pick of the VP pair: a proposed noun, or one typed in."""
    post = request.POST
    existent = post.get("existent_other", "").strip() or post.get("existent", "")
    absent = post.get("non_existent_other", "").strip() or post.get("non_existent", "")
    nouns.nouns_pick(triple=triple, existent=existent, non_existent=absent)


@_triple_post(gettext_lazy("Best image saved."))
def triple_best(request: HttpRequest, triple) -> None:
    raw = request.POST.get("image", "")
    images.best_image_pick(triple=triple, image_id=int(raw) if raw.isdigit() else None)
