"""VLind-Bench image generation through an OpenAI-compatible ``images.generate`` endpoint (DALL-E 3
in the paper): every kept triple's free slots and missing factual image, each call recorded as a
Generation; the images go to review like uploaded ones."""

from __future__ import annotations

import base64
import time
from collections.abc import Sequence
from dataclasses import dataclass

from annotator.platform.errors import Invalid
from annotator.platform.jobs import job_progress

from ... import assets, gateway
from ...gateway.providers import provider_endpoint
from ...models import Generation, Image, LLMProvider
from ..framework.queues import queue_ensure
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


@dataclass
class ImageCall:
    ok: bool
    data: bytes = b""
    revised_prompt: str = ""
    error: str = ""
    latency_ms: int = 0


def image_call(*, endpoint, model: str, prompt: str, size: str) -> ImageCall:
    """One ``images.generate`` request (b64_json); never raises for the endpoint's failure."""
    import openai

    t0 = time.monotonic()
    try:
        client = openai.OpenAI(
            base_url=endpoint.base_url,
            api_key=endpoint.api_key,
            timeout=endpoint.timeout_s,
            max_retries=endpoint.max_retries,
        )
        try:
            response = client.images.generate(
                model=model, prompt=prompt, n=1, size=size, response_format="b64_json"
            )
        finally:
            client.close()
        item = response.data[0] if response.data else None
        if item is None or not item.b64_json:
            raise ValueError("the answer holds no b64_json image")
        data = base64.b64decode(item.b64_json, validate=True)
    except Exception as exc:  # noqa: BLE001 - recorded on the Generation, never a 500
        ms = int((time.monotonic() - t0) * 1000)
        return ImageCall(False, error=f"{type(exc).__name__}: {exc}"[:2000], latency_ms=ms)
    ms = int((time.monotonic() - t0) * 1000)
    return ImageCall(True, data=data, revised_prompt=item.revised_prompt or "", latency_ms=ms)


def image_generate_one(
    *,
    bench: VLindBench,
    template: str,
    variables: dict,
    item_key: str,
    job_id=None,
    created_by=None,
) -> tuple[Image | None, Generation]:
    """Render the image prompt, call the endpoint, record a Generation; the stored Image (or
    None when the call or the picture failed, with the reason on the Generation)."""
    endpoint, model, problem = image_endpoint(bench)
    if problem:
        raise Invalid(problem)
    tpl = gateway.template_current(template)
    prompt = gateway.render(tpl.text, variables, template=tpl.name)
    call = image_call(endpoint=endpoint, model=model, prompt=prompt, size=bench.image_size)
    image = None
    error = call.error
    if call.ok:
        try:
            image, _new = assets.image_ingest(
                data=call.data,
                name=f"{item_key}.png",
                source=f"generated · {model} · {endpoint.base_url}"[:500],
                created_by=created_by,
            )
        except assets.ImageRejected as exc:
            error = f"The endpoint's picture was refused: {exc.reason}"
    provider = bench.image_provider
    generation = Generation.objects.create(
        project=bench.project,
        provider=provider,
        provider_kind=provider.kind,
        template=tpl,
        template_name=tpl.name,
        template_version=tpl.version,
        template_sha256=tpl.sha256,
        purpose=IMAGE_PURPOSE,
        variables=variables,
        messages=[{"role": "user", "content": prompt}],
        model=model,
        params={
            "endpoint": "images.generate",
            "provider": provider.name,
            "base_url": provider.base_url,
            "size": bench.image_size,
            "n": 1,
            "response_format": "b64_json",
        },
        status=Generation.Status.OK if image is not None else Generation.Status.FAILED,
        raw_response=call.revised_prompt,
        output={"image_sha256": image.sha256, "revised_prompt": call.revised_prompt}
        if image is not None
        else None,
        attempts=1,
        attempt_log=[
            {
                "attempt": 1,
                "outcome": "ok" if image is not None else "error",
                "error": error,
                "latency_ms": call.latency_ms,
            }
        ],
        latency_ms=call.latency_ms,
        error=error,
        job_id=job_id,
        item_key=item_key[:200],
        created_by=created_by,
    )
    if image is not None and image.generation_id is None:
        Image.objects.filter(pk=image.pk).update(generation=generation)
    return image, generation


def images_generate(
    bench: VLindBench,
    *,
    triple_ids: Sequence[int] | None = None,
    factual: bool = True,
    job_id: int | None = None,
    created_by=None,
) -> dict:
    """Fill every kept triple's free slots (``images_per_style`` per style) with generated
    images, and its factual image when missing (from the factual context, Sec. 4). Stops after
    three failed calls in a row. Idempotent: filled slots are skipped."""
    endpoint, _model, problem = image_endpoint(bench)
    if problem:
        raise Invalid(problem)
    prompts.templates_ensure()
    queue = queue_ensure(bench, IMAGE_QUEUE)
    triples = bench.triples.filter(status=VLindTriple.Status.KEPT).select_related("concept")
    if triple_ids is not None:
        triples = triples.filter(pk__in=list(triple_ids))
    triples = list(triples.order_by("concept__position", "context_id"))
    todo = []
    for triple in triples:
        for style in prompts.STYLES:
            todo += [(triple, slot) for slot in free_slots(triple, style, bench.images_per_style)]
        if factual and triple.factual_image_id is None:
            todo.append((triple, None))
    result = {"images": 0, "factual": 0, "failed": 0, "errors": []}
    job_progress(job_id=job_id, done=0, total=len(todo), message="Generating images")
    failures_in_row = 0
    made: list[int] = []
    for done, (triple, slot) in enumerate(todo, start=1):
        triple.bench = bench
        if slot is None:
            image, generation = image_generate_one(
                bench=bench,
                template=prompts.FACTUAL_IMAGE_TEMPLATE,
                variables={"statement": triple.factual_context or triple.false_statement},
                item_key=f"vlind-{triple.pk}-factual",
                job_id=job_id,
                created_by=created_by,
            )
            if image is not None:
                VLindTriple.objects.filter(pk=triple.pk).update(factual_image=image)
                result["factual"] += 1
        else:
            style = prompts.style_of_slot(slot)
            image, generation = image_generate_one(
                bench=bench,
                template=prompts.IMAGE_TEMPLATE,
                variables={"context": triple.context, "style": style},
                item_key=f"vlind-{triple.pk}-{slot}",
                job_id=job_id,
                created_by=created_by,
            )
            if image is not None:
                image_record(
                    triple=triple,
                    slot=slot,
                    image=image,
                    origin=VLindImage.Origin.GENERATED,
                    generation=generation,
                    created_by=created_by,
                    queue=queue,
                )
                result["images"] += 1
        if image is None:
            result["failed"] += 1
            failures_in_row += 1
            result["errors"].append(generation.error[:300])
        else:
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
