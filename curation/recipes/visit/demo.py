"""A small VisIT-Bench pipeline for the demo project, run through the real stages and queues.

The instances are the twelve real VisIT-Bench rows of ``annotator.demo.visit_bench`` (instruction,
instruction-conditioned caption, image URL, LLaVA-13B and InstructBLIP-13B outputs). No LLM is
configured in the demo, so the references come from the offline rule-based drafter and the
leaderboard from the offline judge (a length heuristic); pages label both. Simulated demo
accounts (``visit-demo-rater-1`` … ``-3``, nobody can log in as them) review and rate, and leave
work of every kind waiting for a visitor: instruction, caption, review and forced-choice tasks.
"""

from __future__ import annotations

import io

from django.core.files.base import ContentFile
from django.core.files.storage import default_storage

from annotator.demo import images as demo_images
from annotator.demo.visit_bench import ROWS
from annotator.platform.files import media_url
from annotator.platform.models import Project
from curation.gateway import provider_offline
from curation.recipes.framework.demo import demo_annotators, demo_once, demo_work
from curation.recipes.framework.exports import export_run_now
from curation.recipes.framework.publish import publish_object
from curation.recipes.framework.registry import recipe_for
from evaluation import parsed
from evaluation import services as eval_services
from evaluation.families.visit import parse as visit_parse
from evaluation.families.visit import sampling
from evaluation.runners import demo_runs_add

from . import categories, dataset, pipelines, prompts, ratings, references, submissions
from .models import VisitPipeline, VisitReference

NAME = "VisIT-Bench demo (offline drafter and judge)"
RATERS = ("visit-demo-rater-1", "visit-demo-rater-2", "visit-demo-rater-3")
MODELS = {"llava_13b": "LLaVA (13B)", "instructblip_13b": "InstructBLIP (13B)"}
LEFT_IN_REVIEW = 3  # references a visitor verifies
REJECTED = 1  # one reference the simulated reviewer rejects (problem in the response)
PAIRS = 10
VOTES = 3
LEFT_TO_RATE = 4  # tuples that keep one of their three votes open for a visitor


def _png(scene: str) -> bytes:
    buf = io.BytesIO()
    demo_images.render(scene).save(buf, "PNG")
    return buf.getvalue()


def _prefer_reference_then_longer(assignment) -> dict:
    """The simulated raters' rule: the reference if shown, else the longer response."""
    left, right = assignment.task.payload["candidates"]
    if assignment.presentation.get("swapped"):
        left, right = right, left

    def score(c: dict) -> tuple:
        return (c["id"] == sampling.REFERENCE, len(c["text"].split()))

    return {"choice": "left" if score(left) >= score(right) else "right"}


@demo_once(VisitPipeline, NAME, jobs_here=True)
def visit_demo(*, project: Project, curator) -> VisitPipeline:
    """The demo pipeline of ``project`` (made once; later calls return it)."""
    offline = provider_offline()
    pipeline = pipelines.pipeline_create(
        project=project,
        name=NAME,
        description="Twelve real VisIT-Bench instances and two real models' responses. No LLM is "
        "configured in the demo: references by the offline drafter, the leaderboard by the "
        "offline judge; reviews and votes by three simulated demo raters (they prefer the "
        "reference, else the longer response).",
        created_by=curator,
    )
    pipelines.pipeline_settings(pipeline=pipeline, provider=offline, votes_per_pair=VOTES)
    raters = demo_annotators(project, RATERS)
    _references_reviewed(pipeline, curator, raters[0])
    kept = _published_with_models(pipeline, project, curator)
    _tuples_rated(pipeline, curator, raters)
    _exported(pipeline, curator)
    # The leaderboard: both models judged offline, seeded, in both orders.
    submissions.leaderboard_judge_existing(
        pipeline=pipeline, seed=0, reference_pairs=len(kept), provider=offline, created_by=curator
    )
    _work_left(pipeline, curator, raters[1])
    pipeline.refresh_from_db()
    return pipeline


def _key(row: dict) -> str:
    return visit_parse.visit_key(row["image_url"], row["instruction"])


def _references_reviewed(pipeline: VisitPipeline, curator, reviewer) -> None:
    """References drafted for every captioned instance, then verified by a simulated reviewer
    (one rejected, a few left in review)."""
    dataset.instances_import_captioned(
        pipeline=pipeline,
        rows=[
            dataset.CaptionedRow(
                category=row["category"],
                instruction=row["instruction"],
                caption=row["caption"],
                urls=[row["image_url"]],
                external_id=_key(row),
            )
            for row in ROWS
        ],
        created_by=curator,
    )
    references.references_draft(pipeline=pipeline, created_by=curator)
    pipeline.refresh_from_db()
    drafted = VisitReference.objects.filter(instance__pipeline=pipeline)
    tasks = list(drafted.order_by("instance__position").values_list("task_id", flat=True))

    queue_criteria = pipeline.review_queue.config.get("criteria", [])

    def review(task) -> dict:
        if task.pk in tasks[:REJECTED]:
            return {"verdict": "reject", "reason": prompts.REASON_RESPONSE}
        # An accept holds every criterion of the checklist (the review kind refuses less).
        return {"verdict": "accept", "checked": list(range(len(queue_criteria)))}

    demo_work(pipeline.review_queue, reviewer, review, leave=tasks[-LEFT_IN_REVIEW:])


def _published_with_models(pipeline: VisitPipeline, project: Project, curator) -> set[str]:
    """Publish, then import the two models' real responses and compute their metrics; the kept
    item ids."""
    version = publish_object(
        recipe_for(pipeline),
        pipeline,
        label="demo-v1",
        benchmark=f"VisIT-Bench demo ({project.slug})",
        created_by=curator,
    )
    kept = {i.item_id for i in version.items.filter(kept=True)}
    for column, model in MODELS.items():
        eval_services.run_import(
            version=version,
            model_name=model,
            rows=[
                parsed.PredictionRow(item_id=_key(row), raw_output=row[column], line=k)
                for k, row in enumerate(ROWS, start=1)
                if _key(row) in kept
            ],
            prompt_settings={"source_file": "annotator/demo/visit_bench.py", "column": column},
            created_by=curator,
        )
    # The leaderboard's rows and plots: the two real models' metrics (their responses are real,
    # so no offline baseline or stand-in is added here).
    demo_runs_add(version=version, created_by=curator, baselines=False)
    return kept


def _exported(pipeline: VisitPipeline, curator) -> None:
    """The published version as the dataset CSV and the crowd's votes as the preferences CSV,
    written by their real export jobs, for the datasets pages."""
    recipe = recipe_for(pipeline)
    for what, fmt in (("dataset", "csv"), ("preferences", "csv")):
        params = {"what": what, "fmt": fmt}
        export_run_now(recipe, recipe.exports[0], pipeline, params, created_by=curator)


def _tuples_rated(pipeline: VisitPipeline, curator, raters: list) -> None:
    """Sampled tuples rated by the three simulated raters, a few votes left open."""
    ratings.pairs_sample(pipeline=pipeline, n=PAIRS, seed=0, votes=VOTES, created_by=curator)
    pipeline.refresh_from_db()
    open_ids = set(sorted(pipeline.pairs.values_list("task_id", flat=True))[-LEFT_TO_RATE:])
    queue, prefer = pipeline.rating_queue, _prefer_reference_then_longer
    for rater in raters:  # the last one leaves a vote of a few tuples open
        leave = open_ids if rater == raters[-1] else ()
        demo_work(queue, rater, prefer, assignment=True, leave=leave)


def _work_left(pipeline: VisitPipeline, curator, writer) -> None:
    """Waiting for visitors: instruction tasks of an authored family, and a caption task of an
    instruction a simulated crowdworker wrote with an uploaded image."""
    category = categories.category_create(
        pipeline=pipeline,
        name="Counting (demo family)",
        description="Count objects, then reason about the count.",
        seed_instruction="How many apples would be left if I ate one of them?",
        seed_response="There are three apples on the plate, so two would be left.",
        seed_images=[
            categories.SeedImage(
                data=_png("apples-3"),
                name="apples-3.png",
                licence="CC0 (Blindspot demo drawing)",
                source="annotator/demo/images.py",
            )
        ],
        created_by=curator,
    )
    categories.instruction_tasks_create(category=category, count=3, created_by=curator)
    pipeline.refresh_from_db()
    answered = []

    def write(task) -> dict | None:
        if answered:
            return None
        folder = f"uploads/{task.queue_id}/{task.pk}"
        upload = default_storage.save(f"{folder}/apples-5.png", ContentFile(_png("apples-5")))
        answered.append(upload)
        return {
            "text": "Instruction: If two friends share these apples equally, how many does "
            "each get and how many are left over?\n"
            "Image source: annotator/demo/images.py (apples-5)\n"
            "Image licence: CC0 (Blindspot demo drawing)\n",
            "image": media_url(upload),
        }

    demo_work(pipeline.instruction_queue, writer, write)
