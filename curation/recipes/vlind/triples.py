"""VLind-Bench instance triples (Sec. 4, App. A): drafted per concept through the gateway (App. A
prompt), each put in the triple review queue; a triple is kept with at least two accepts."""

from __future__ import annotations

import math
from collections.abc import Sequence

from django.db import transaction
from django.db.models import Max

from annotator.models import Task
from annotator.platform.errors import Invalid
from annotator.platform.jobs import job_progress
from curation import gateway
from curation.models import Generation, LLMProvider
from curation.recipes.framework.queues import queue_ensure, tasks_link

from . import prompts
from .benches import (
    BATCH,
    TRIPLE_QUESTION,
    TRIPLE_QUEUE,
    TRIPLES_PURPOSE,
    check_counts,
    review_decided,
)
from .models import VLindBench, VLindConcept, VLindTriple


def _triple_payload(triple: VLindTriple) -> dict:
    return {
        "title": TRIPLE_QUESTION,
        "text": f"Concept: {triple.concept.name}",
        "fields": {
            "Context": triple.context,
            "True statement (true in the context)": triple.true_statement,
            "False statement (false in the context, true by common sense)": (
                triple.false_statement
            ),
        },
    }


def triples_record(
    *, concept: VLindConcept, triples: Sequence[dict], generation: Generation | None, queue
) -> list[VLindTriple]:
    """Store checked triples (context ids continue the concept's numbering) and put each in the
    review queue, in one transaction."""
    with transaction.atomic():
        concept = VLindConcept.objects.select_for_update().get(pk=concept.pk)
        start = concept.triples.aggregate(n=Max("context_id"))["n"] or 0
        rows = VLindTriple.objects.bulk_create(
            [
                VLindTriple(
                    bench_id=concept.bench_id,
                    concept=concept,
                    context_id=start + k,
                    generation=generation,
                    **t,
                )
                for k, t in enumerate(triples, start=1)
            ]
        )
        if rows and rows[0].pk is None:  # backends without RETURNING on bulk insert
            rows = list(concept.triples.filter(context_id__gt=start).order_by("context_id"))
        for row in rows:
            row.concept = concept
        tasks_link(queue, [(t, _triple_payload(t), f"vlind-triple-{t.pk}") for t in rows])
    return rows


def _active_concepts(bench: VLindBench, concept_ids: Sequence[int] | None):
    """The bench's active concepts (those of ``concept_ids`` only, when given)."""
    concepts = bench.concepts.filter(active=True)
    return concepts.filter(pk__in=list(concept_ids)) if concept_ids else concepts


def triples_draft(
    bench: VLindBench,
    *,
    concept_ids: Sequence[int] | None = None,
    count: int | None = None,
    provider: LLMProvider | None = None,
    job_id: int | None = None,
    created_by=None,
) -> dict:
    """Draft triples until each active concept has ``count`` (default: the bench's number),
    ``BATCH`` per call, and send them to review. Calls run outside any transaction; a failed or
    empty call ends that concept (its error is reported). Idempotent: full concepts are skipped.
    """
    gateway.templates_ensure(prompts.TEMPLATES)
    queue = queue_ensure(bench, TRIPLE_QUEUE)
    target = int(count or bench.triples_per_concept)
    check_counts(target, None)
    chosen = list(_active_concepts(bench, concept_ids).order_by("position", "name"))
    result = {"drafted": 0, "invalid": 0, "failed_calls": 0, "errors": [], "concepts": {}}
    job_progress(job_id=job_id, done=0, total=len(chosen), message="Drafting triples")
    for done, concept in enumerate(chosen, start=1):
        have = concept.triples.count()
        calls, limit = 0, math.ceil(max(target - have, 0) / BATCH) + 2
        made = 0
        while have < target and calls < limit:
            want = min(BATCH, target - have)
            variables = prompts.triple_variables(
                concept=concept.name,
                image_hint=concept.image_hint,
                examples=concept.examples,
                count=want,
            )
            generation = gateway.generate(
                template=prompts.TRIPLES_TEMPLATE,
                variables=variables,
                project=bench.project,
                provider=provider,
                purpose=TRIPLES_PURPOSE,
                seed=have,
                job=job_id,
                created_by=created_by,
                item_key=f"vlind-{bench.pk}-{concept.pk}-{have}",
            )
            calls += 1
            if generation.status != Generation.Status.OK:
                result["failed_calls"] += 1
                result["errors"].append(f"{concept.name}: {generation.error}"[:500])
                break
            seen = set(concept.triples.values_list("context", flat=True))
            usable, problems = prompts.triples_check(
                generation.output, seen_contexts=seen, examples=concept.examples
            )
            result["invalid"] += len(problems)
            usable = usable[: target - have]
            if not usable:
                result["errors"].append(f"{concept.name}: no new usable triple in the answer")
                break
            rows = triples_record(
                concept=concept, triples=usable, generation=generation, queue=queue
            )
            have += len(rows)
            made += len(rows)
        result["drafted"] += made
        result["concepts"][concept.name] = made
        job_progress(job_id=job_id, done=done, message=f"{result['drafted']} triples in review")
    return result


def draft_check(bench: VLindBench, params: dict) -> int:
    """Before the drafting job: the count (default: the bench's) and the active concepts."""
    target = int(params.get("count") or bench.triples_per_concept)
    check_counts(target, None)
    concept_ids = list(params.get("concept_ids") or [])
    concepts = _active_concepts(bench, concept_ids)
    if not concepts.exists():
        raise Invalid("No active concept: switch one on, or add one, first.")
    params.update(count=target, concept_ids=concept_ids)
    return concepts.count()


def triple_review_record(task: Task, decision) -> None:
    """The triple queue's outcome (inside the submit's transaction): kept with ≥ 2 accepts."""
    status = VLindTriple.Status
    triple = review_decided(VLindTriple, task, decision, kept=status.KEPT, rejected=status.REJECTED)
    if triple is not None and triple.status == status.KEPT and not triple.factual_context:
        # Sec. 4: the factual image shows s_fact; a curator may rewrite it as a factual context.
        triple.factual_context = triple.false_statement
        triple.save(update_fields=["factual_context"])
