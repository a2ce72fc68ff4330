"""Stage ``tag`` (App. C): every question of an assembled sample (shown with both images) →
a ``skill_tags`` queue (1–8 tags); the queue's outcome handler keeps each tag a majority chose.
Tags are per question because per-skill results are Q-Acc over the questions carrying a tag
(METRICS.md Sec. 1) and the exported ``Skills`` field is [q0 tags, q1 tags]."""

from __future__ import annotations

from django.db.models import Q

from annotator import services as annotator_services
from annotator.demo.lent import demo_config_lend
from annotator.models import Task
from curation.recipes.framework.declare import QueueSpec
from curation.recipes.framework.queues import image_payload, queue_ensure, tasks_send, with_tiebreak

from . import skills
from .models import NaturalBenchPipeline, NaturalBenchSample

TAG_HANDLER = "naturalbench.tagged"
TAG_QUEUE = QueueSpec(
    field="tag_queue",
    kind="skill_tags",
    title=lambda p: f"NaturalBench skills: {p.name}",
    handler=TAG_HANDLER,
    instructions=skills.INSTRUCTIONS,
    config=skills.QUEUE_CONFIG,
    redundancy=lambda p: p.taggers_per_item,
    max_redundancy=lambda p: with_tiebreak(p.taggers_per_item),
)
# The crowd demo's skill_tags queue tags with this taxonomy too (the annotator cannot read it).
demo_config_lend(TAG_QUEUE.kind, skills.QUEUE_CONFIG)


def _rows(sample: NaturalBenchSample) -> list:
    images = [image_payload(sample.image_0, "Image 1"), image_payload(sample.image_1, "Image 2")]
    return [
        annotator_services.TaskRow(
            payload={"images": images, "questions": [sample.record[f"Question_{q}"]]},
            external_id=f"nb-skills-{sample.pk}-q{q}",
        )
        for q in (0, 1)
    ]


def _attach(sample: NaturalBenchSample, tasks: dict) -> None:
    sample.tag_task_0_id = tasks[f"nb-skills-{sample.pk}-q0"]
    sample.tag_task_1_id = tasks[f"nb-skills-{sample.pk}-q1"]


def skills_send_to_tagging(pipeline: NaturalBenchPipeline, *, job_id=None, chunk=500, **_params):
    """Both questions of every assembled sample not sent yet → the skill_tags queue."""
    untagged = NaturalBenchSample.objects.filter(
        state=NaturalBenchSample.State.ASSEMBLED, tag_task_0__isnull=True
    )
    todo = list(untagged.filter(pipeline=pipeline).select_related("image_0", "image_1"))
    return tasks_send(
        queue=queue_ensure(pipeline, TAG_QUEUE),
        todo=todo,
        rows_of=_rows,
        still_todo=NaturalBenchSample.objects.filter(tag_task_0__isnull=True),
        attach=_attach,
        fields=["tag_task_0", "tag_task_1"],
        job_id=job_id,
        what="samples sent to tagging",
        chunk=chunk,
    )


def skill_tags_record(task: Task, decision) -> NaturalBenchSample | None:
    """Outcome handler of the tag queue: each tag a majority chose is kept (``decide_multilabel``);
    no tag with a majority keeps the question untagged (an empty list)."""
    sample = (
        NaturalBenchSample.objects.select_for_update()
        .filter(Q(tag_task_0_id=task.pk) | Q(tag_task_1_id=task.pk))
        .first()
    )
    if sample is None:
        return None
    q = 0 if sample.tag_task_0_id == task.pk else 1
    chosen = set(decision.label) if decision.decided and decision.label else set()
    current = list(sample.skills or [None, None])
    agreement = list(sample.tag_agreement or [None, None])
    current[q] = [t["id"] for t in skills.TAGS if t["id"] in chosen]  # taxonomy order
    agreement[q] = decision.agreement
    NaturalBenchSample.objects.filter(pk=sample.pk).update(skills=current, tag_agreement=agreement)
    sample.skills, sample.tag_agreement = current, agreement
    return sample
