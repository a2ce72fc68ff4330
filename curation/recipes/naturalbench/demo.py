"""A small NaturalBench pipeline run end to end on the demo corpus, for the demo project.

Everything goes through the real stages and queues: mining with the tiny random-weights scorer
(its pairs are arbitrary, and the page says so), questions from the offline drafter, and answers
from two simulated demo annotators (``nb-demo-annotator-1`` and ``-2``, accounts nobody can log
in as). They leave work for a visitor: a few pairs, questions and taggings have one answer of the
two they need, so one visitor's answer decides them and the funnel moves. The version it
exports gets the demo's model runs (the offline blind baseline and two offline stand-ins, each
labelled so), so its leaderboard has rows and plots.
"""

from __future__ import annotations

import re

from annotator.models import Task, TaskQueue
from annotator.platform.models import Project
from curation.corpora import demo_corpus
from curation.gateway import provider_offline
from curation.recipes.framework.demo import demo_annotators, demo_once, demo_work
from curation.recipes.framework.stages import stage_run_now
from curation.scorers import scorer_tiny
from evaluation.runners import demo_runs_add

from .export import version_export_run
from .mining import pairs_mine
from .models import NaturalBenchPipeline, NaturalBenchSample, VQAItem
from .pairs import pairs_send_to_review
from .pipelines import MULTIPLE_CHOICE, YES_NO, pipeline_create
from .questions import questions_draft
from .samples import samples_assemble
from .tags import skills_send_to_tagging

NAME = "Demo shapes (tiny random-weights scorer, offline drafter)"
ANNOTATORS = ("nb-demo-annotator-1", "nb-demo-annotator-2")
LEFT_FOR_VISITOR = 2  # items per stage that keep one of their two answers open


_SHAPES = ("circle", "square", "triangle")
_COLOURS = ("red", "blue", "green", "yellow", "white", "black", "orange", "purple")
_NUMBERS = ("two", "three", "four", "five", "one", "circles", "squares", "triangles")


def demo_tags(question: str) -> dict:
    """What the simulated taggers choose for a shapes question (a stand-in for people)."""
    text = question.lower()
    words = set(re.findall(r"[a-z]+", text))
    tags = []
    if any(s in text for s in _SHAPES):
        tags += ["others", "shape"]
    if words & set(_COLOURS):
        tags.append("color")
    if words & set(_NUMBERS):
        tags.append("counting")
    if "left" in words or "above" in words:
        tags.append("projective")
    if "not" in words:
        tags.append("logic")
    return {"tags": tags or ["others"]}


def _open_for_visitor(task_ids: list[int]) -> set[int]:
    return set(sorted(task_ids)[-LEFT_FOR_VISITOR:])


@demo_once(NaturalBenchPipeline, NAME)
def naturalbench_demo(*, project: Project, curator) -> NaturalBenchPipeline:
    """The demo pipeline of ``project`` (made once; later calls return it)."""
    corpus = demo_corpus(project=project, created_by=curator)
    first, second = demo_annotators(project, ANNOTATORS)
    pipeline = pipeline_create(
        project=project,
        name=NAME,
        corpus=corpus,
        scorers=[scorer_tiny()],
        # Otherwise the defaults: English, two annotators, three regenerations, seed 0.
        question_types=[YES_NO, MULTIPLE_CHOICE],
        taggers_per_item=2,
        provider=provider_offline(),
        # The demo server runs jobs eagerly in the request; drafting again stays a button here.
        auto_regenerate=False,
        created_by=curator,
        demo=True,
    )

    def run(stage) -> None:
        job = stage_run_now(stage, pipeline, created_by=curator)
        if job.status != job.Status.SUCCEEDED:
            raise RuntimeError(
                f"The NaturalBench demo's job #{job.pk} ({job.kind}) failed: {job.error}"
            )

    run(pairs_mine)
    run(pairs_send_to_review)
    pipeline.refresh_from_db()
    visitor_pairs = _open_for_visitor(list(pipeline.pairs.values_list("task_id", flat=True)))
    keep = {"decision": "keep"}
    demo_work(pipeline.pair_queue, first, lambda task: keep)
    demo_work(pipeline.pair_queue, second, lambda task: keep, leave=visitor_pairs)

    run(questions_draft)
    pipeline.refresh_from_db()
    _answer_items(pipeline, first, second)
    if pipeline.question_sets.filter(state="pending").exists():
        run(questions_draft)  # the regeneration of the pair that failed above
        _answer_items(pipeline, first, second, leave_open=False)
    run(samples_assemble)
    run(skills_send_to_tagging)
    pipeline.refresh_from_db()
    tag_tasks = list(
        pipeline.samples.filter(state=NaturalBenchSample.State.ASSEMBLED).values_list(
            "tag_task_0", "tag_task_1"
        )
    )
    visitor_tags = _open_for_visitor([t for pair in tag_tasks for t in pair])

    def tags(task: Task) -> dict:
        return demo_tags(task.payload["questions"][0])

    demo_work(pipeline.tag_queue, first, tags)
    demo_work(pipeline.tag_queue, second, tags, leave=visitor_tags)
    run(version_export_run)
    pipeline.refresh_from_db()
    # Its leaderboard's rows: the offline blind baseline and two labelled offline stand-ins.
    for version in pipeline.versions.exclude(benchmark_version=None):
        demo_runs_add(version=version.benchmark_version, created_by=curator)
    return pipeline


def _answer_items(pipeline, first, second, *, leave_open: bool = True) -> None:
    """Both annotators answer as intended, except: one item of the first draft gets
    "Unanswerable" (so that pair is drafted again), and the items of the last drafts keep one
    answer open for a visitor."""
    items = {
        item.task_id: item
        for item in VQAItem.objects.filter(
            draft__question_set__pipeline=pipeline, state=VQAItem.State.OPEN
        ).select_related("draft")
    }
    drafts = sorted({item.draft_id for item in items.values()})
    if not drafts:
        return
    first_q1_i1 = VQAItem.objects.filter(draft_id=drafts[0], key="q1_i1")
    spoiled = set(first_q1_i1.values_list("task_id", flat=True)) if leave_open else set()
    visitor = (
        {t for t, item in items.items() if item.draft_id in drafts[-LEFT_FOR_VISITOR:]}
        if leave_open and len(drafts) > LEFT_FOR_VISITOR + 1
        else set()
    )

    def intended(task: Task) -> dict | None:
        item = items.get(task.pk)
        return {"answer": item.intended} if item else None

    def second_opinion(task: Task) -> dict | None:
        if task.pk in spoiled:
            return {"answer": "Unanswerable"}
        return intended(task)

    queue = TaskQueue.objects.get(pk=pipeline.answer_queue_id)
    demo_work(queue, first, intended)
    demo_work(queue, second, second_opinion, leave=visitor)
