"""VisIT-Bench references (Sec. 2.1 prompt, Figs. 13–14, Table 2): the LLM drafts a reference
from caption + instruction, and people verify it: correct → verified; problem in the caption →
the caption again (at most ``max_caption_rounds`` times); problem in the response → discarded."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from django.db import transaction

from annotator.models import Annotation, Task, TaskQueue
from annotator.platform.errors import Invalid
from annotator.platform.jobs import job_progress
from curation import gateway
from curation.models import Generation
from curation.recipes.framework.queues import queue_ensure, task_row, tasks_link
from curation.recipes.framework.stages import stage_once

from . import prompts
from .captions import caption_tasks_create, combined_caption
from .models import VisitImage, VisitInstance, VisitPipeline, VisitReference, VisitTask
from .pipelines import (
    REVIEW_QUEUE,
    answers_of,
    payload_images,
    remote_links,
    task_answer,
)


def reference_templates(*, project=None, pin: bool = True) -> dict[bool, Any]:
    """The reference prompts ``project`` renders, by "several images" (pinned at its first use
    when ``pin``)."""
    used = gateway.templates_ensure(prompts.TEMPLATES, project=project, pin=pin)
    return {False: used[prompts.REFERENCE_TEMPLATE], True: used[prompts.REFERENCE_MULTI_TEMPLATE]}


def reference_template(*, multi: bool, project=None):
    return reference_templates(project=project)[multi]


def reference_generate(*, instance: VisitInstance, job_id=None, created_by=None) -> Generation:
    """One reference draft through the gateway by the pipeline's drafter (provenance in the
    Generation)."""
    images = instance.images.count()
    multi = images > 1
    variables = {"caption": instance.caption, "instruction": instance.instruction}
    if multi:
        variables["count"] = images
    return gateway.generate(
        template=reference_template(multi=multi, project=instance.pipeline.project),
        variables=variables,
        project=instance.pipeline.project,
        provider=instance.pipeline.provider,
        purpose=prompts.REFERENCE_PURPOSE,
        seed=instance.caption_round,
        job=job_id,
        created_by=created_by,
        item_key=f"visit-ref-{instance.pk}-r{instance.caption_round}",
    )


def _review_payload(instance: VisitInstance, reference: VisitReference) -> dict:
    offline = "offline rule-based drafter (no LLM configured; demo only)"
    fields = {
        "Family": instance.category.name,
        "Instruction": instance.instruction,
        "Instruction-conditioned caption": instance.caption,
        "Response": reference.text,
        "Drafted by": offline if reference.offline else reference.generation.model,
    }
    links = remote_links(instance)
    if links:
        fields["Image links (not stored here)"] = " ".join(links)
    payload: dict[str, Any] = {"title": prompts.REVIEW_QUESTION, "fields": fields}
    images = payload_images(instance)
    if images:
        payload["images"] = images
    return payload


def reference_record(
    *, instance: VisitInstance, generation: Generation, queue: TaskQueue
) -> VisitReference | None:
    """Store a draft and put it in review (one transaction); a failed draft is noted on the
    instance, which stays waiting for a retry."""
    with transaction.atomic():
        instance = (
            VisitInstance.objects.select_for_update()
            .select_related("category", "pipeline")
            .get(pk=instance.pk)
        )
        if instance.state != VisitInstance.State.DRAFTING:
            return None
        text = generation.output if isinstance(generation.output, str) else ""
        text = text.strip()
        if generation.status != Generation.Status.OK or not text:
            instance.draft_error = (generation.error or "The drafter returned no text.")[:2000]
            instance.save(update_fields=["draft_error"])
            return None
        reference, _created = VisitReference.objects.update_or_create(
            instance=instance,
            round=instance.caption_round,
            defaults={
                "text": text[:20000],
                "source": VisitReference.Source.LLM,
                "generation": generation,
                "offline": generation.is_offline,
                "verdict": VisitReference.Verdict.PENDING,
            },
        )
        payload = _review_payload(instance, reference)
        tasks_link(queue, [(reference, payload, f"visit-ref-{reference.pk}")])
        instance.state = VisitInstance.State.VERIFYING
        instance.draft_error = ""
        instance.save(update_fields=["state", "draft_error"])
    return reference


def references_draft(
    pipeline: VisitPipeline, *, job_id: int | None = None, created_by=None
) -> dict:
    """Draft the reference of every instance waiting for one and send it to review. LLM calls
    happen outside any transaction. Idempotent: instances already in review are skipped."""
    queue = queue_ensure(pipeline, REVIEW_QUEUE)
    gateway.templates_ensure(prompts.TEMPLATES)
    instances = list(
        pipeline.instances.filter(state=VisitInstance.State.DRAFTING)
        .select_related("pipeline__project", "pipeline__provider", "category")
        .order_by("position", "id")
    )
    job_progress(job_id=job_id, done=0, total=len(instances), message="Drafting")
    counts = {"drafted": 0, "failed": 0, "offline": 0}
    for done, instance in enumerate(instances, start=1):
        generation = reference_generate(instance=instance, job_id=job_id, created_by=created_by)
        reference = reference_record(instance=instance, generation=generation, queue=queue)
        if reference is not None:
            counts["drafted"] += 1
            counts["offline"] += int(reference.offline)
        else:
            counts["failed"] += int(generation.status != Generation.Status.OK)
        job_progress(
            job_id=job_id,
            done=done,
            message=f"{counts['drafted']} in review, {counts['failed']} failed",
        )
    return counts


def draft_check(pipeline: VisitPipeline, params: dict) -> int:
    todo = pipeline.instances.filter(state=VisitInstance.State.DRAFTING).count()
    if not todo:
        raise Invalid("No instance waits for its reference: captions come first.")
    return todo


def _review_verdict(decision, answers: Sequence[Annotation]) -> str:
    if decision.decided and decision.label == "accept":
        return VisitReference.Verdict.CORRECT
    reasons = Counter(
        (a.response or {}).get("reason")
        for a in answers
        if (a.response or {}).get("verdict") == "reject" and (a.response or {}).get("reason")
    )
    if not reasons:
        return VisitReference.Verdict.INCORRECT
    # Most named reason; a tie goes to the caption, the problem a rewrite can fix.
    best = sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0] != prompts.REASON_CAPTION))[0]
    return {
        prompts.REASON_CAPTION: VisitReference.Verdict.CAPTION,
        prompts.REASON_RESPONSE: VisitReference.Verdict.RESPONSE,
    }.get(best[0], VisitReference.Verdict.INCORRECT)


def reference_review_record(task: Task, decision) -> VisitReference | None:
    """The review queue's outcome: correct → verified; problem in the response (or no reason) →
    discarded; problem in the caption → the caption task again (with the old caption as the
    draft and the reviewers' comments), or discarded when the rewrites are used up."""
    related = ("instance__pipeline", "instance__category")
    reference = task_row(VisitReference.objects.select_related(*related), task)
    if reference is None or reference.verdict != VisitReference.Verdict.PENDING:
        return reference
    answers = answers_of(task)
    verdict = _review_verdict(decision, answers)
    comments = [a.response.get("comment", "") for a in answers if (a.response or {}).get("comment")]
    reference.decide(decision, verdict=verdict, comments=comments)
    instance = VisitInstance.objects.select_for_update().get(pk=reference.instance_id)
    pipeline = reference.instance.pipeline
    if verdict == VisitReference.Verdict.CORRECT:
        instance.state = VisitInstance.State.VERIFIED
        instance.save(update_fields=["state"])
    elif verdict == VisitReference.Verdict.CAPTION and (
        instance.caption_round <= pipeline.max_caption_rounds
    ):
        instance.caption_round += 1
        instance.state = VisitInstance.State.CAPTIONING
        instance.save(update_fields=["caption_round", "state"])
        instance.pipeline = pipeline
        note = "A reviewer found that the caption misses something the instruction needs."
        if comments:
            note += " Their comment: " + " / ".join(comments)[:500]
        caption_tasks_create(instance, note=note)
    else:
        instance.state = VisitInstance.State.DISCARDED
        instance.save(update_fields=["state"])
    return reference


def caption_record(task: Task, decision) -> VisitInstance | None:
    """A caption task's outcome: store the caption; when every image of the instance has its
    caption of this round, the instance waits for its reference draft (a job drafts it)."""
    link, answer = task_answer(task, VisitTask.Stage.CAPTION, "image__instance__pipeline")
    if link is None:
        return None
    instance = VisitInstance.objects.select_for_update().get(pk=link.image.instance_id)
    if instance.state != VisitInstance.State.CAPTIONING or link.round != instance.caption_round:
        return instance
    text = (answer.response or {}).get("text", "").strip()
    VisitImage.objects.filter(pk=link.image_id).update(caption=text)
    waiting = VisitTask.objects.filter(
        stage=VisitTask.Stage.CAPTION,
        image__instance=instance,
        round=instance.caption_round,
        task__state=Task.State.OPEN,
    ).exclude(task_id=task.pk)
    if waiting.exists():
        return instance
    images = list(instance.images.order_by("position"))
    instance.caption = combined_caption(images)
    instance.state = VisitInstance.State.DRAFTING
    instance.draft_error = ""
    instance.save(update_fields=["caption", "state", "draft_error"])
    # One queued drafting job per pipeline picks up every captioned instance (after commit).
    stage_once(references_draft, instance.pipeline)
    return instance
