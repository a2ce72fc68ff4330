"""Reads for the NaturalBench pages (the pipelines themselves are scoped by the framework's
``objects_for``: curators and admins see the pipelines of their projects)."""

from __future__ import annotations

from django.db.models import Count, Prefetch, Q, QuerySet

from annotator.models import Task
from curation.recipes.framework.selectors import count_by, in_state

from .models import (
    ConfoundingPair,
    NaturalBenchPipeline,
    NaturalBenchSample,
    PairQuestionSet,
    QuestionDraft,
    VQAItem,
)
from .pipelines import YES_NO, captioned_samples

FINAL = [Task.State.DECIDED, Task.State.UNDECIDED]


def funnel(pipeline: NaturalBenchPipeline) -> dict:
    """Counts at every stage, samples → pairs → verified → drafted → kept → assembled → tagged
    → exported. A fixed number of aggregate queries whatever the pipeline's size."""
    samples = captioned_samples(pipeline.corpus_id, pipeline.language)
    pairs = count_by(pipeline.pairs.all(), "state", ConfoundingPair.State.values)
    pairs["all"] = sum(pairs.values())

    questions = count_by(pipeline.question_sets.all(), "state", PairQuestionSet.State.values)
    questions["sets"] = sum(questions.values())
    wanted = pairs["verified"] * len(pipeline.question_types)
    existing = pipeline.question_sets.filter(question_type__in=pipeline.question_types)
    drafts = QuestionDraft.objects.filter(question_set__pipeline=pipeline).aggregate(
        all=Count("id"),
        invalid=Count("id", filter=Q(status=QuestionDraft.Status.INVALID)),
        regenerations=Count("id", filter=Q(attempt__gt=1)),
        to_assemble=Count("id", filter=Q(status=QuestionDraft.Status.KEPT, sample__isnull=True)),
        existing=Count("question_set", distinct=True, filter=Q(question_set__in=existing)),
    )
    questions["to_create"] = max(0, wanted - existing.count())
    questions["drafted"] = drafts["existing"]
    questions.update({k: drafts[k] for k in ("invalid", "regenerations", "to_assemble")})
    questions["drafts"] = drafts["all"]
    items = VQAItem.objects.filter(draft__question_set__pipeline=pipeline)
    items = count_by(items, "state", VQAItem.State.values)

    built = pipeline.samples.aggregate(
        assembled=Count("id", filter=Q(state=NaturalBenchSample.State.ASSEMBLED)),
        refused=Count("id", filter=Q(state=NaturalBenchSample.State.REFUSED)),
        sent=Count("id", filter=Q(tag_task_0__isnull=False)),
        tagged=Count("id", filter=Q(tag_task_0__state__in=FINAL) & Q(tag_task_1__state__in=FINAL)),
        yes_no=Count(
            "id",
            filter=Q(state=NaturalBenchSample.State.ASSEMBLED, question_type=YES_NO),
        ),
    )
    built["untagged"] = built["assembled"] - built["sent"]
    built["multiple_choice"] = built["assembled"] - built["yes_no"]
    versions = list(pipeline.versions.order_by("-created_at", "-id")[:5])
    return {
        "corpus": {"samples": samples},
        "pairs": pairs,
        "questions": questions,
        "items": items,
        "samples": built,
        "versions": versions,
    }


def pairs_page(pipeline: NaturalBenchPipeline, state: str = "") -> QuerySet[ConfoundingPair]:
    qs = pipeline.pairs.select_related(
        "sample_0__image", "sample_1__image", "caption_0", "caption_1"
    ).order_by("position")
    return in_state(qs, "state", state)


def question_sets_page(pipeline: NaturalBenchPipeline, state: str = "") -> QuerySet:
    qs = (
        pipeline.question_sets.select_related(
            "pair__sample_0__image", "pair__sample_1__image", "pair__caption_0", "pair__caption_1"
        )
        .prefetch_related(
            Prefetch(
                "drafts",
                queryset=QuestionDraft.objects.select_related("generation").prefetch_related(
                    Prefetch("items", queryset=VQAItem.objects.order_by("key"))
                ),
            )
        )
        .order_by("pair__position", "question_type")
    )
    return in_state(qs, "state", state)


def samples_page(pipeline: NaturalBenchPipeline, state: str = "") -> QuerySet:
    qs = pipeline.samples.select_related("image_0", "image_1", "draft__generation").order_by(
        "state", "index", "id"
    )
    return in_state(qs, "state", state)
