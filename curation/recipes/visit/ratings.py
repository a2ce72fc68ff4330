"""Human pairwise evaluation of VisIT-Bench (Sec. 4.2, Fig. 15): sampled (instance, model A,
model B) tuples rated by people in a forced-choice queue, and their votes given to the evaluation
app as one crowd-vote judgment set that it rates (Elo, win-rate vs the reference, agreement)."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils import timezone

from annotator.models import Task
from annotator.platform.errors import Invalid
from annotator.platform.jobs import job_progress
from curation.recipes.framework.queues import queue_ensure, task_row, tasks_link
from curation.recipes.framework.stages import stage_once
from evaluation.families.visit import living, sampling
from evaluation.models import JudgmentSet
from evaluation.parsed import pair_key

from .models import VisitInstance, VisitPair, VisitPipeline
from .pipelines import (
    MAX_PAIRS_PER_CALL,
    RATING_QUEUE,
    payload_images,
    pipeline_settings,
    remote_links,
)
from .publish import version_of


def _rating_payload(pair: VisitPair, item_data: dict) -> dict:
    instance = pair.instance
    payload: dict[str, Any] = {
        "instruction": item_data.get("instruction") or instance.instruction,
        "caption": item_data.get("caption") or instance.caption,
        "category": item_data.get("category", ""),
        "candidates": [
            {"id": pair.model_a, "text": pair.response_a},
            {"id": pair.model_b, "text": pair.response_b},
        ],
    }
    images = payload_images(instance)
    if images:
        payload["images"] = images
    links = remote_links(instance)
    if links:
        payload["source_images"] = links  # every image not stored here, for the curator
    return payload


def pairs_sample(
    *, pipeline: VisitPipeline, n: int, seed: int = 0, votes: int | None = None, created_by=None
) -> int:
    """Sample ``n`` new (instance, model A, model B) tuples among the version's verified
    instances (the reference counts as a model) into the forced-choice queue, ``votes`` people
    each, sides randomised per person by the queue (and un-swapped when recorded)."""
    if not 1 <= n <= MAX_PAIRS_PER_CALL:
        raise Invalid(f"Sample between 1 and {MAX_PAIRS_PER_CALL} tuples at a time.")
    if votes is not None and votes != pipeline.votes_per_pair:
        pipeline = pipeline_settings(pipeline=pipeline, votes_per_pair=votes)
    version = version_of(pipeline)
    responses = living.responses_of(version)
    players = {p for r in responses.values() for p in r}
    if len(players) < 2:
        raise Invalid(
            "Only the reference has responses: import at least one model's responses for this "
            "version first."
        )
    exclude = set(
        VisitPair.objects.filter(pipeline=pipeline, version_id=version.pk).values_list(
            "item_id", "pair_key"
        )
    )
    tuples = sampling.rating_tuples(responses, n=n, seed=seed, exclude=exclude)
    if not tuples:
        raise Invalid("Every (instance, pair of models) of this version is sampled already.")
    queue = queue_ensure(pipeline, RATING_QUEUE)
    items = {
        item_id: data
        for item_id, data in version.items.filter(
            item_id__in=[t.instance_id for t in tuples]
        ).values_list("item_id", "data")
    }
    instances = {
        i.pk: i
        for i in VisitInstance.objects.filter(
            pk__in=[items[t.instance_id].get("instance") for t in tuples]
        ).prefetch_related("images__image")
    }
    with transaction.atomic():
        pairs = [
            VisitPair.objects.create(
                pipeline=pipeline,
                instance=instances[items[t.instance_id]["instance"]],
                version_id=version.pk,
                item_id=t.instance_id,
                model_a=t.model_a,
                model_b=t.model_b,
                pair_key=pair_key(t.model_a, t.model_b),
                response_a=responses[t.instance_id][t.model_a],
                response_b=responses[t.instance_id][t.model_b],
                seed=seed,
            )
            for t in tuples
        ]
        rows = [(p, _rating_payload(p, items[p.item_id]), f"visit-pair-{p.pk}") for p in pairs]
        tasks_link(queue, rows)
    return len(pairs)


def pair_rating_record(task: Task, decision) -> VisitPair | None:
    """A rated tuple: votes per response (the kind un-swaps the sides), the majority winner, and
    a sync of the crowd votes to the evaluation app (one queued job per pipeline)."""
    pair = task_row(VisitPair.objects.select_related("pipeline__project"), task)
    if pair is None or pair.decided_at is not None:
        return pair
    counts = decision.counts or {}
    pair.votes_a = int(counts.get(pair.model_a, 0))
    pair.votes_b = int(counts.get(pair.model_b, 0))
    if pair.votes_a == pair.votes_b:
        pair.winner = "tie"
    else:
        pair.winner = pair.model_a if pair.votes_a > pair.votes_b else pair.model_b
    pair.decided_at = timezone.now()
    pair.save(update_fields=["votes_a", "votes_b", "winner", "decided_at"])
    # One queued sync job per pipeline carries every vote decided until it runs.
    stage_once(human_votes_sync, pair.pipeline)
    return pair


def _crowd_set_replace(pipeline: VisitPipeline, version, rows: list, job_id) -> JudgmentSet | None:
    """The pipeline's crowd-vote set of the version, replaced by one holding ``rows`` (None
    without rows); its label is kept."""
    with transaction.atomic():
        locked = VisitPipeline.objects.select_for_update().get(pk=pipeline.pk)
        new_set = living.crowd_set_replace(
            version=version,
            previous_id=locked.human_set_id,
            label=f"Crowd votes · {locked.name}"[:120],
            owner_id=locked.pk,
            rows=rows,
            provenance={
                "pipeline_id": locked.pk,
                "rating_queue_id": locked.rating_queue_id,
                "source": "Blindspot VisIT-Bench pipeline (forced_choice queue)",
            },
            job_id=job_id,
        )
        VisitPipeline.objects.filter(pk=locked.pk).update(
            human_set_id=new_set.pk if new_set else None
        )
    return new_set


def human_votes_sync(
    pipeline: VisitPipeline,
    *,
    rounds: int | None = None,
    text_metrics: bool = True,
    job_id: int | None = None,
    created_by=None,
) -> dict:
    """Give the evaluation app this pipeline's rated tuples as one crowd-vote judgment set (the
    published ``visit_bench_human_preferences`` semantics: votes per response, majority winner),
    replacing the one it gave before, then rate every judgment set of the version
    (``living.crowd_rate``: Elo, win-rate vs the reference, agreement with the crowd)."""
    version = version_of(pipeline)
    decided = VisitPair.objects.filter(
        pipeline=pipeline, version_id=version.pk, decided_at__isnull=False
    )
    rows = living.crowd_rows(version, decided.order_by("decided_at", "id"))
    new_set = _crowd_set_replace(pipeline, version, rows, job_id)
    pipeline.human_set_id = new_set.pk if new_set else None
    job_progress(job_id=job_id, done=1, total=2, message=f"{len(rows)} rated tuples; rating")
    results = living.crowd_rate(version, rows, rounds=rounds, text_metrics=text_metrics)
    job_progress(
        job_id=job_id,
        done=2,
        message=f"{len(rows)} rated tuples; {len(results)} judgment sets rated",
    )
    return {"pairs": len(rows), "judgment_set_id": pipeline.human_set_id, "sets": len(results)}


def sync_check(pipeline: VisitPipeline, params: dict) -> int:
    version_of(pipeline)
    if not VisitPair.objects.filter(pipeline=pipeline, decided_at__isnull=False).exists():
        raise Invalid("No tuple has all its votes yet.")
    return 2
