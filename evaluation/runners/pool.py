"""The call pool: prepare gateway calls in the job's thread, send them in at most
``provider.concurrency`` threads, record each answer as a ``Generation``.

The gateway's batch job does not fit: it keys generations per batch, not per prediction, and a
judgment needs a follow-up call that depends on the first one's answer.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction

from annotator.platform.errors import Invalid
from curation.gateway import calls as gateway_calls
from curation.gateway.call_types import CallRequest
from curation.gateway.rendering import TemplateError
from curation.gateway.service import Plan, generation_prepare, generation_record
from curation.models import Generation, LLMProvider, PromptTemplate

from .. import prompts
from .images import ImageMissing, ImageResolver


@dataclass(frozen=True)
class CallSpec:
    """One call a family asks for an item: a template, its variables and the item's images."""

    key: str
    template: str
    variables: dict
    images: tuple[str, ...] = ()
    logprobs: bool = False


@dataclass
class Outcome:
    """One call's result for an item: the raw text, or None when the call failed."""

    text: str | None
    generation_id: int
    error: str = ""
    logprobs: Any = None


def outcome_text(outcome: Outcome | None) -> str:
    """The call's text; "" for a failed or missing call (parsed as unparseable: wrong)."""
    return outcome.text if outcome is not None and outcome.text is not None else ""


def outcome_of(generation: Generation) -> Outcome:
    if generation.status == Generation.Status.OK:
        return Outcome(generation.raw_response, generation.pk, logprobs=generation.logprobs)
    return Outcome(None, generation.pk, error=generation.error or "the call failed")


@dataclass
class Call:
    tag: Any  # who is waiting for the answer (item, or pair and order)
    spec: CallSpec
    item_key: str
    purpose: str


@dataclass
class Pool:
    """Prepare and record in this thread, call the endpoint in at most ``workers`` threads."""

    provider: LLMProvider
    templates: dict[str, PromptTemplate]
    job_id: int | None
    project: Any
    created_by: Any
    seed: int | None
    blind: bool
    resolver: ImageResolver = field(default_factory=ImageResolver)
    generations: int = 0

    def _plan(self, call: Call) -> Plan:
        images, missing = [], []
        if not self.blind:
            for ref in call.spec.images:
                try:
                    images.append(self.resolver(ref))
                except ImageMissing as exc:
                    missing.append(str(exc))
        template = self.templates[call.spec.template]
        try:
            plan = generation_prepare(
                template=template,
                variables=call.spec.variables,
                project=self.project,
                provider=self.provider,
                purpose=call.purpose,
                seed=self.seed,
                images=images,
                logprobs=call.spec.logprobs,
                job=self.job_id,
                created_by=self.created_by,
                item_key=call.item_key[:200],
            )
        except TemplateError as exc:
            raise Invalid(f"Template {template.name!r} v{template.version}: {exc}") from exc
        if missing:
            plan.request.blocked = plan.request.blocked or " ".join(missing)
            plan.params["images_missing"] = list(call.spec.images)
        if prompts.has_turns(template.text):
            _apply_turns(plan, template)
        return plan

    def run(self, calls: Iterable[Call], on_result: Callable[[Call, Generation], list]) -> None:
        """``on_result`` may return follow-up calls (the judge's extraction call)."""
        queue = iter(calls)
        follow_ups: list[Call] = []

        def next_call() -> tuple[tuple[Call, Plan], CallRequest] | None:
            call = follow_ups.pop(0) if follow_ups else next(queue, None)
            if call is None:
                return None
            plan = self._plan(call)
            return (call, plan), plan.request

        workers = max(1, int(self.provider.concurrency or 1))
        answers = gateway_calls.execute_concurrently(next_call, workers=workers, name="eval-run")
        for arrived in answers:
            # One commit for the answers that arrived together.
            with transaction.atomic():
                for (call, plan), result in arrived:
                    generation = generation_record(plan, result)
                    self.generations += 1
                    follow_ups.extend(on_result(call, generation) or [])


def _apply_turns(plan: Plan, template: PromptTemplate) -> None:
    """Send the template's conversation as separate chat turns (App. F: system, user,
    assistant, user); images, if any, ride in the last user turn."""
    turns = prompts.render_turns(template.text, plan.variables, template=template.name)

    def build(messages: list[dict]) -> list[dict]:
        head = [m for m in messages if m["role"] == "system"]
        user = next(m for m in messages if m["role"] == "user")
        images = (
            [p for p in user["content"] if p.get("type") == "image_url"]
            if isinstance(user["content"], list)
            else []
        )
        out = head + [{"role": t.role, "content": t.text} for t in turns]
        if images:
            out[-1] = {"role": "user", "content": [{"type": "text", "text": turns[-1].text}]}
            out[-1]["content"] += images
        return out

    plan.request.messages = build(plan.request.messages)
    plan.stored_messages = build(plan.stored_messages)
