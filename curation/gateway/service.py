"""``generate``: render a template, call the provider with retries, store a Generation.

Split in three so the batch job can run the middle part in threads: ``generation_prepare``
(database reads, rendering, images; raises TemplateError before any call), ``calls.execute``
(network only) and ``generation_record`` (one insert).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..models import Generation, LLMProvider, PromptTemplate
from . import calls
from .call_types import CallRequest, CallResult
from .images import PreparedImage, prepare_image
from .pins import template_for
from .providers import backoff_from_settings, provider_endpoint, provider_for
from .rendering import build_messages, elide_images, render


@dataclass
class Plan:
    request: CallRequest
    template: PromptTemplate
    provider: LLMProvider
    stored_messages: list[dict]
    variables: dict
    params: dict
    seed: int | None
    project: Any = None
    purpose: str = ""
    job_id: int | None = None
    created_by: Any = None
    item_key: str = ""


def _images_param(params: dict) -> dict:
    return {"images": params["images"]} if "images" in params else {}


def _json_safe(value: Any) -> Any:
    return json.loads(json.dumps(value, ensure_ascii=False, default=str))


def _prepared(images) -> tuple[list[PreparedImage], str]:
    """The images as data URLs (an already prepared one as it is: made once for several calls),
    and why one could not be read ("" when all could)."""
    prepared, problem = [], ""
    for img in images:
        if isinstance(img, PreparedImage):
            prepared.append(img)
            continue
        try:
            prepared.append(prepare_image(img))
        except (OSError, ValueError) as exc:  # PIL's UnidentifiedImageError is an OSError
            label = getattr(img, "sha256", "") or f"{len(img)} bytes"
            problem = problem or f"Image {label} could not be read: {type(exc).__name__}: {exc}"
    return prepared, problem


def generation_prepare(
    *,
    template: str | PromptTemplate,
    variables: dict,
    project=None,
    provider: LLMProvider | None = None,
    purpose: str = "",
    seed: int | None = None,
    images=None,
    logprobs: bool = False,
    job=None,
    created_by=None,
    item_key: str = "",
) -> Plan:
    """Everything a call needs, checked. Raises TemplateError (missing template or variables)
    before anything is sent or written. A template given by name renders the version
    ``project`` is pinned to (``pins.template_for``)."""
    tpl = (
        template
        if isinstance(template, PromptTemplate)
        else template_for(template, project=project)
    )
    variables = dict(variables or {})
    system = render(tpl.system, variables, template=tpl.name) if tpl.system else ""
    user = render(tpl.text, variables, template=tpl.name)
    provider = provider or provider_for(project)
    endpoint, blocked = provider_endpoint(provider)

    prepared, unreadable = _prepared(images or [])
    blocked = blocked or unreadable
    if prepared and provider.kind == LLMProvider.Kind.OPENAI and not provider.supports_vision:
        blocked = blocked or (
            f"Provider {provider.name!r} is not marked as accepting images; tick "
            "'supports vision' on its page or choose a vision provider."
        )
    sent = build_messages(system=system, user=user, image_urls=[p.data_url for p in prepared])
    stored = elide_images(sent, [p.placeholder for p in prepared])
    params: dict[str, Any] = {
        "provider": provider.name,
        "base_url": provider.base_url,
        "model_requested": endpoint.model,
        "temperature": provider.temperature,
        "max_tokens": provider.max_tokens,
        "timeout_s": provider.timeout_s,
        "max_retries": provider.max_retries,
    }
    if logprobs:
        params.update(logprobs=True, top_logprobs=calls.TOP_LOGPROBS)
    if prepared:
        params["images"] = [p.record for p in prepared]
    if provider.kind == LLMProvider.Kind.OFFLINE:
        # Sampling settings mean nothing to a rule; record which rule answered instead.
        params = {"provider": provider.name, "rule": tpl.name, **_images_param(params)}
    request = CallRequest(
        endpoint=endpoint,
        template_name=tpl.name,
        messages=sent,
        variables=variables,
        output_schema=tpl.output_schema,
        seed=seed,
        logprobs=logprobs,
        backoff=backoff_from_settings(),
        blocked=blocked,
    )
    return Plan(
        request=request,
        template=tpl,
        provider=provider,
        stored_messages=stored,
        variables=_json_safe(variables),
        params=params,
        seed=seed,
        project=project,
        purpose=purpose,
        job_id=getattr(job, "pk", job),
        created_by=created_by,
        item_key=item_key,
    )


# What a Generation stores under the same name from the plan, and from the call's result.
_PLAN_FIELDS = (
    "project",
    "provider",
    "purpose",
    "variables",
    "params",
    "seed",
    "job_id",
    "item_key",
    "created_by",
)
_RESULT_FIELDS = (
    "logprobs",
    "attempts",
    "attempt_log",
    "prompt_tokens",
    "completion_tokens",
    "latency_ms",
    "error",
)


def generation_record(plan: Plan, result: CallResult) -> Generation:
    generation = generation_build(plan, result)
    generation.save(force_insert=True)
    return generation


def generation_build(plan: Plan, result: CallResult) -> Generation:
    """The Generation of a call, not saved yet (several are inserted at once with
    ``bulk_create``)."""
    tpl = plan.template
    return Generation(
        **{name: getattr(plan, name) for name in _PLAN_FIELDS},
        **{name: getattr(result, name) for name in _RESULT_FIELDS},
        provider_kind=plan.provider.kind,
        template=tpl,
        template_name=tpl.name,
        template_version=tpl.version,
        template_sha256=tpl.sha256,
        messages=plan.stored_messages,
        model=result.model or plan.params.get("model_requested") or "(none)",
        status=Generation.Status.OK if result.ok else Generation.Status.FAILED,
        raw_response=result.raw_text,
        output=_json_safe(result.output) if result.ok else None,
    )


def generate(**options: Any) -> Generation:
    """Render, call, record. Takes ``generation_prepare``'s keyword arguments. Returns the
    Generation, ``status`` failed with ``error`` when the provider or the model fails; raises
    TemplateError only for a caller's mistake (unknown template, missing variable), before any
    call."""
    plan = generation_prepare(**options)
    return generation_record(plan, calls.execute(plan.request))
