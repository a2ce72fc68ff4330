"""Many generations in one Job: validated up front, run with at most ``provider.concurrency``
calls in flight, resumable.

Job params: ``{"batch": id, "items": [{"key", "template", "variables", "seed"?, "image_ids"?,
"purpose"?}], "provider_id"?, "purpose"?, "logprobs"?}``. Generations store ``item_key`` as
``"<batch>:<key>"``; an item that already has an OK generation is skipped, so a redelivered job
or a retried copy of it (the jobs page's Retry copies the params) only redoes what is missing or
failed.
Worker threads do network calls only; the job's own thread reads and writes the database.
"""

from __future__ import annotations

import uuid
from typing import Any

from annotator.platform.errors import Invalid
from annotator.platform.jobs import job_enqueue, job_progress
from annotator.platform.models import Job

from ..models import Generation, Image, LLMProvider, PromptTemplate
from . import calls
from .call_types import CallRequest
from .pins import template_for
from .providers import provider_for
from .rendering import TemplateError, template_fields
from .service import Plan, generation_prepare, generation_record

JOB_KIND = "curation.generate_batch"
MAX_ITEMS = 10_000
MAX_KEY = 160


def _item_key(item: dict, index: int) -> str:
    return str(item.get("key", index))


def batch_validate(items: Any, *, project=None) -> list[dict]:
    """Line-numbered problems (1-based item numbers), empty when the batch can run; each item's
    variables are checked against the version ``project`` renders."""
    if not isinstance(items, list) or not items:
        return [{"line": 0, "error": "items must be a non-empty list"}]
    if len(items) > MAX_ITEMS:
        return [{"line": 0, "error": f"at most {MAX_ITEMS} items per batch"}]
    errors: list[dict] = []
    names = {i.get("template") for i in items if isinstance(i, dict)}
    current = (
        {t.name: t for t in PromptTemplate.objects.filter(name__in=names, is_current=True)}
        if project is None
        else {}
    )
    seen: set[str] = set()
    for n, item in enumerate(items, start=1):
        if not isinstance(item, dict):
            errors.append({"line": n, "error": "each item must be an object"})
            continue
        key = _item_key(item, n - 1)
        if len(key) > MAX_KEY:
            errors.append({"line": n, "error": f"key longer than {MAX_KEY} characters"})
        if key in seen:
            errors.append({"line": n, "error": f"duplicate key {key!r}"})
        seen.add(key)
        tpl = current.get(item.get("template"))
        if tpl is None:
            try:
                tpl = template_for(str(item.get("template")), project=project, pin=False)
                current[tpl.name] = tpl
            except TemplateError:
                errors.append({"line": n, "error": f"unknown template {item.get('template')!r}"})
                continue
        variables = item.get("variables", {})
        if not isinstance(variables, dict):
            errors.append({"line": n, "error": "variables must be an object"})
            continue
        needed = template_fields(tpl.system or "") + template_fields(tpl.text)
        missing = sorted({f for f in needed if f not in variables})
        if missing:
            errors.append({"line": n, "error": f"missing variables: {', '.join(missing)}"})
        seed = item.get("seed")
        if seed is not None and not isinstance(seed, int):
            errors.append({"line": n, "error": "seed must be an integer"})
        ids = item.get("image_ids", [])
        if not isinstance(ids, list) or not all(isinstance(i, int) for i in ids):
            errors.append({"line": n, "error": "image_ids must be a list of integers"})
    wanted = {
        i
        for item in items
        if isinstance(item, dict) and isinstance(item.get("image_ids"), list)
        for i in item["image_ids"]
        if isinstance(i, int)
    }
    if wanted:
        found = set(Image.objects.filter(pk__in=wanted).values_list("pk", flat=True))
        for n, item in enumerate(items, start=1):
            ids = item.get("image_ids") if isinstance(item, dict) else None
            missing_ids = [i for i in ids or [] if isinstance(i, int) and i not in found]
            if missing_ids:
                errors.append({"line": n, "error": f"no image with id {missing_ids[0]}"})
    return sorted(errors, key=lambda e: e["line"])


def generation_batch_enqueue(
    *,
    items: list[dict],
    project=None,
    provider: LLMProvider | None = None,
    purpose: str = "",
    logprobs: bool = False,
    created_by=None,
) -> Job:
    """Check every item, then start the job; nothing is written when an item is wrong."""
    errors = batch_validate(items, project=project)
    if errors:
        raise Invalid(
            f"{len(errors)} problem{'s' if len(errors) != 1 else ''} in the batch; nothing "
            "was started.",
            errors,
        )
    params = {
        "batch": uuid.uuid4().hex[:12],
        "items": items,
        "provider_id": provider.pk if provider else None,
        "purpose": purpose,
        "logprobs": logprobs,
    }
    return job_enqueue(
        kind=JOB_KIND, params=params, created_by=created_by, project=project, total=len(items)
    )


def batch_run(*, job: Job) -> dict:
    params = job.params or {}
    items: list[dict] = params.get("items", [])
    provider = None
    if params.get("provider_id"):
        provider = LLMProvider.objects.filter(pk=params["provider_id"]).first()
    provider = provider or provider_for(job.project)
    batch = params.get("batch") or f"job{job.pk}"
    keys = [f"{batch}:{_item_key(item, i)}" for i, item in enumerate(items)]
    done = set(
        Generation.objects.filter(status=Generation.Status.OK, item_key__in=keys).values_list(
            "item_key", flat=True
        )
    )
    pending = [(key, item) for key, item in zip(keys, items, strict=True) if key not in done]
    counts = {"ok": 0, "failed": 0, "skipped": len(items) - len(pending), "invalid": 0}
    failed_keys: list[str] = []
    job_progress(
        job_id=job.pk,
        done=counts["skipped"],
        total=len(items),
        message=f"{len(pending)} to generate with {provider.name}",
    )
    images = _images_by_id(pending)
    workers = max(1, min(provider.concurrency or 1, len(pending) or 1))
    queue = iter(pending)

    def next_call() -> tuple[Plan, CallRequest] | None:
        for key, item in queue:
            try:
                plan = generation_prepare(
                    template=item["template"],
                    variables=item.get("variables", {}),
                    project=job.project,
                    provider=provider,
                    purpose=item.get("purpose") or params.get("purpose", ""),
                    seed=item.get("seed"),
                    images=[images[i] for i in item.get("image_ids", []) if i in images],
                    logprobs=bool(params.get("logprobs")),
                    job=job,
                    created_by=job.created_by,
                    item_key=key,
                )
            except TemplateError:
                # The template changed since the batch was checked; counted, not fatal.
                counts["invalid"] += 1
                failed_keys.append(key.split(":", 1)[1])
                continue
            return plan, plan.request
        return None

    for answers in calls.execute_concurrently(next_call, workers=workers, name="llm-batch"):
        for plan, result in answers:
            generation = generation_record(plan, result)
            if generation.status == Generation.Status.OK:
                counts["ok"] += 1
            else:
                counts["failed"] += 1
                failed_keys.append(plan.item_key.split(":", 1)[1])
            job_progress(job_id=job.pk, done=counts["skipped"] + counts["ok"] + counts["failed"])
    total_done = sum(counts.values())
    job_progress(
        job_id=job.pk,
        done=total_done,
        message=f"{counts['ok']} generated, {counts['failed']} failed, "
        f"{counts['skipped']} already done",
    )
    return {**counts, "provider": provider.name, "failed_keys": failed_keys[:100]}


def _images_by_id(pending: list[tuple[str, dict]]) -> dict[int, Image]:
    ids = {i for _key, item in pending for i in item.get("image_ids", [])}
    return Image.objects.in_bulk(ids) if ids else {}
