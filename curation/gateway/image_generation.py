"""Image generation through an OpenAI-compatible ``images.generate`` endpoint (DALL-E 3 and
the like): the prompt rendered from a versioned template, one call (``b64_json``), the picture
stored as an ``Image``, and the call recorded as a Generation exactly as ``generate`` records
a chat call (``generation_record``)."""

from __future__ import annotations

import base64
import time
from typing import Any

from ..assets import ImageRejected, image_ingest
from ..models import Generation, Image, LLMProvider
from . import calls
from .call_types import CallResult
from .pins import template_for
from .rendering import render
from .service import Plan, generation_record


def image_call(*, endpoint, model: str, prompt: str, size: str) -> CallResult:
    """One ``images.generate`` request; never raises for the endpoint's failure. ``output``
    holds the picture's bytes, ``raw_text`` the prompt as the endpoint revised it."""
    t0 = time.monotonic()
    try:
        client = calls.client(endpoint, max_retries=endpoint.max_retries)
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
        return CallResult(False, error=f"{type(exc).__name__}: {exc}"[:2000], latency_ms=ms)
    ms = int((time.monotonic() - t0) * 1000)
    return CallResult(True, output=data, raw_text=item.revised_prompt or "", latency_ms=ms)


def image_generate(
    *,
    endpoint,
    provider: LLMProvider,
    model: str,
    size: str,
    template: str,
    variables: dict[str, Any],
    project,
    purpose: str,
    item_key: str,
    job_id: int | None = None,
    created_by=None,
) -> tuple[Image | None, Generation]:
    """Render ``template``, call ``endpoint`` (``provider``'s), store the picture and record
    the call; the stored Image, or None when the call or the picture failed (the reason is
    the Generation's ``error``), and the Generation."""
    tpl = template_for(template, project=project)
    prompt = render(tpl.text, variables, template=tpl.name)
    call = image_call(endpoint=endpoint, model=model, prompt=prompt, size=size)
    image, error = None, call.error
    if call.ok:
        try:
            image, _new = image_ingest(
                data=call.output,
                name=f"{item_key}.png",
                source=f"generated · {model} · {endpoint.base_url}"[:500],
                created_by=created_by,
            )
        except ImageRejected as exc:
            error = f"The endpoint's picture was refused: {exc.reason}"
    made = image is not None
    plan = Plan(
        request=None,  # the call above is not a chat request: nothing of it is replayed
        template=tpl,
        provider=provider,
        stored_messages=[{"role": "user", "content": prompt}],
        variables=variables,
        params={
            "endpoint": "images.generate",
            "provider": provider.name,
            "base_url": provider.base_url,
            "size": size,
            "n": 1,
            "response_format": "b64_json",
        },
        seed=None,
        project=project,
        purpose=purpose,
        job_id=job_id,
        created_by=created_by,
        item_key=item_key[:200],
    )
    outcome = {"attempt": 1, "outcome": "ok" if made else "error", "error": error}
    result = CallResult(
        made,
        output={"image_sha256": image.sha256, "revised_prompt": call.raw_text} if made else None,
        raw_text=call.raw_text,
        model=model,
        latency_ms=call.latency_ms,
        attempts=1,
        attempt_log=[{**outcome, "latency_ms": call.latency_ms}],
        error=error,
    )
    generation = generation_record(plan, result)
    if made and image.generation_id is None:
        Image.objects.filter(pk=image.pk).update(generation=generation)
    return image, generation
