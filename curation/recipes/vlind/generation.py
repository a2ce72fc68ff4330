"""VLind-Bench image generation through an OpenAI-compatible ``images.generate`` endpoint (DALL-E 3
in the paper): every kept triple's free slots and missing factual image, each call recorded as a
Generation; the images go to review like uploaded ones."""

from __future__ import annotations

from annotator.platform.errors import Invalid
from annotator.platform.jobs import job_progress
from curation import assets, gateway
from curation.gateway.providers import provider_endpoint
from curation.models import LLMProvider
from curation.recipes.framework.queues import queue_ensure

from . import prompts
from .benches import IMAGE_PURPOSE, IMAGE_QUEUE, MAX_IMAGE_FAILURES
from .images import free_slots, image_record
from .models import VLindBench, VLindImage, VLindTriple


def image_endpoint(bench: VLindBench):
    """(endpoint, model, problem): the problem says what to configure when there is none."""

    provider = bench.image_provider
    if provider is None:
        return (
            None,
            "",
            (
                "No image endpoint is configured: choose an OpenAI-compatible provider and an "
                "image model in the settings below, or upload images instead."
            ),
        )
    if provider.kind != LLMProvider.Kind.OPENAI:
        return None, "", "The image provider must be an OpenAI-compatible endpoint."
    if not bench.image_model:
        return None, "", "Name the image model (e.g. dall-e-3) in the settings below."
    endpoint, problem = provider_endpoint(provider)
    return (None if problem else endpoint), bench.image_model, problem


def _image_prompt(triple: VLindTriple, slot: int | None) -> dict:
    """The template, variables and item key of a triple's image in ``slot`` (None: the factual
    one, drawn from the factual context, Sec. 4)."""
    if slot is None:
        variables = {"statement": triple.factual_context or triple.false_statement}
        template, key = prompts.FACTUAL_IMAGE_TEMPLATE, f"vlind-{triple.pk}-factual"
    else:
        variables = {"context": triple.context, "style": prompts.style_of_slot(slot)}
        template, key = prompts.IMAGE_TEMPLATE, f"vlind-{triple.pk}-{slot}"
    return {"template": template, "variables": variables, "item_key": key}


def images_generate(bench: VLindBench, *, job_id: int | None = None, created_by=None) -> dict:
    """Fill every kept triple's free slots (``images_per_style`` per style) with generated
    images, and its factual image when missing (from the factual context, Sec. 4). Stops after
    three failed calls in a row. Idempotent: filled slots are skipped."""
    endpoint, model, problem = image_endpoint(bench)
    if problem:
        raise Invalid(problem)
    gateway.templates_ensure(prompts.TEMPLATES)
    queue = queue_ensure(bench, IMAGE_QUEUE)
    triples = bench.triples.filter(status=VLindTriple.Status.KEPT).select_related("concept")
    triples = list(triples.order_by("concept__position", "context_id"))
    todo = []
    for triple in triples:
        for style in prompts.STYLES:
            todo += [(triple, slot) for slot in free_slots(triple, style, bench.images_per_style)]
        if triple.factual_image_id is None:
            todo.append((triple, None))
    result = {"images": 0, "factual": 0, "failed": 0, "errors": []}
    job_progress(job_id=job_id, done=0, total=len(todo), message="Generating images")
    failures_in_row = 0
    made: list[int] = []
    # What every call of the job shares: the bench's endpoint and who asked.
    calls = {
        "endpoint": endpoint,
        "provider": bench.image_provider,
        "model": model,
        "size": bench.image_size,
        "project": bench.project,
        "purpose": IMAGE_PURPOSE,
        "job_id": job_id,
        "created_by": created_by,
    }
    record = {"origin": VLindImage.Origin.GENERATED, "created_by": created_by, "queue": queue}
    for done, (triple, slot) in enumerate(todo, start=1):
        triple.bench = bench
        image, generation = gateway.image_generate(**_image_prompt(triple, slot), **calls)
        if image is None:
            result["failed"] += 1
            failures_in_row += 1
            result["errors"].append(generation.error[:300])
        elif slot is None:
            VLindTriple.objects.filter(pk=triple.pk).update(factual_image=image)
            result["factual"] += 1
        else:
            image_record(triple, slot, image, generation=generation, **record)
            result["images"] += 1
        if image is not None:
            failures_in_row = 0
            made.append(image.pk)
        job_progress(job_id=job_id, done=done, message=f"{result['images']} images made")
        if failures_in_row >= MAX_IMAGE_FAILURES:
            result["errors"].append(f"Stopped after {MAX_IMAGE_FAILURES} failed calls in a row.")
            break
    assets.thumbnails_make(image_ids=made)
    result["errors"] = result["errors"][:10]
    return result


def generate_check(bench: VLindBench, params: dict) -> int:
    _endpoint, _model, problem = image_endpoint(bench)
    if problem:
        raise Invalid(problem)
    if not bench.triples.filter(status=VLindTriple.Status.KEPT).exists():
        raise Invalid("No kept triple yet: images are made for triples people accepted.")
    return 0
