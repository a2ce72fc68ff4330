"""Stage ``assemble`` (METRICS.md Sec. 1): kept drafts → 2 × 2 samples checked by the layout of
``evaluation.families.naturalbench``; a broken one is refused and recorded."""

from __future__ import annotations

from collections.abc import Sequence

from django.db import transaction
from django.db.models import Max

from annotator.platform.jobs import job_progress
from evaluation.families.naturalbench import layout as nb

from .models import NaturalBenchPipeline, NaturalBenchSample, QuestionDraft, VQAItem


def sample_record(draft: QuestionDraft, items: Sequence[VQAItem], *, index: int) -> dict:
    """The published record of a kept draft; LayoutError names every way it breaks the layout
    (including items that disagree with the pair's images or the draft's questions)."""
    qset = draft.question_set
    pair, pipeline = qset.pair, qset.pipeline
    by_key = {item.key: item for item in items}
    problems = [f"item {k} is missing" for k in nb.SAMPLE_KEYS if k not in by_key]
    if problems:
        raise nb.LayoutError(problems)
    images = (pair.sample_0.image, pair.sample_1.image)
    questions = (draft.question_0, draft.question_1)
    for key, item in by_key.items():
        q, i = int(key[1]), int(key[4])
        if item.image_id != images[i].pk:
            problems.append(f"item {key} shows another image than image {i} of the pair")
        shown = questions[q]
        if qset.question_type == nb.MULTIPLE_CHOICE:
            shown = (nb.mc_options(shown) or (shown,))[0]
        if item.question != shown:
            problems.append(f"item {key} asks another question than question {q}")
        if item.state != VQAItem.State.CORRECT:
            problems.append(f"item {key} was not answered as intended")
    record = nb.sample_build(
        image_0=f"sha256:{images[0].sha256}",
        image_1=f"sha256:{images[1].sha256}",
        question_0=draft.question_0,
        question_1=draft.question_1,
        question_type=qset.question_type,
        answers={k: by_key[k].answer for k in nb.SAMPLE_KEYS},
        source=pipeline.corpus.name,
        index=index,
        language=pipeline.language,
    )
    if problems:
        raise nb.LayoutError(problems)
    return record


def samples_assemble(pipeline: NaturalBenchPipeline, *, job_id=None, **_params) -> dict:
    """Every kept draft without a sample becomes one, checked; a broken one is refused and
    recorded with its problems (it never reaches an export). Idempotent."""
    drafts = list(
        QuestionDraft.objects.filter(
            question_set__pipeline=pipeline,
            status=QuestionDraft.Status.KEPT,
            sample__isnull=True,
        )
        .select_related(
            "question_set__pipeline__corpus",
            "question_set__pair__sample_0__image",
            "question_set__pair__sample_1__image",
        )
        .prefetch_related("items")
    )
    drafts.sort(
        key=lambda d: (
            d.question_set.pair.position,
            nb.QUESTION_TYPES.index(d.question_set.question_type),
        )
    )
    counts = {"assembled": 0, "refused": 0}
    with transaction.atomic():
        NaturalBenchPipeline.objects.select_for_update().get(pk=pipeline.pk)
        index = (pipeline.samples.aggregate(n=Max("index"))["n"] or -1) + 1
        taken = set(
            NaturalBenchSample.objects.filter(draft__in=drafts).values_list("draft_id", flat=True)
        )
        new = []
        for draft in drafts:
            if draft.pk in taken:
                continue
            pair = draft.question_set.pair
            sample = NaturalBenchSample(
                pipeline=pipeline,
                draft=draft,
                question_type=draft.question_set.question_type,
                image_0=pair.sample_0.image,
                image_1=pair.sample_1.image,
                skills=[None, None],
                tag_agreement=[None, None],
            )
            try:
                sample.record = sample_record(draft, list(draft.items.all()), index=index)
            except nb.LayoutError as exc:
                sample.state = NaturalBenchSample.State.REFUSED
                sample.problems = exc.problems
                counts["refused"] += 1
            else:
                sample.state = NaturalBenchSample.State.ASSEMBLED
                sample.index = index
                index += 1
                counts["assembled"] += 1
            new.append(sample)
        NaturalBenchSample.objects.bulk_create(new, batch_size=1000)
    job_progress(
        job_id=job_id,
        done=len(drafts),
        total=len(drafts),
        message=f"{counts['assembled']} assembled, {counts['refused']} refused",
    )
    return counts
