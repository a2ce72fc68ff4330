"""The dataset card of a NaturalBench version (Table 3 style): per (source, question type,
language) the samples, the models used, mismatched and verified pairs; the prompts with their
SHA-256; the annotators' agreement at every stage."""

from __future__ import annotations

from django.db.models import Q

from annotator.quality import queue_agreement
from curation import gateway
from curation.models import Generation
from curation.recipes.framework.selectors import count_by
from evaluation.families.naturalbench import layout as nb

from . import prompts
from .mining import SHORTEN_PURPOSE
from .models import ConfoundingPair, NaturalBenchPipeline, NaturalBenchSample

TYPE_LABELS = {nb.YES_NO: "Yes-or-No", nb.MULTIPLE_CHOICE: "Multiple-Choice"}


def models_used(pipeline) -> list[str]:
    """Scorers (flagged when their weights are random) and the LLMs that drafted."""
    names = []
    for scorer in pipeline.scorers.order_by("label"):
        flagged = scorer.random_weights and "random weights" not in scorer.label
        names.append(f"{scorer.label} (random weights)" if flagged else scorer.label)
    drafters = (
        Generation.objects.filter(
            pk__in=pipeline.question_sets.filter(drafts__status="kept").values("drafts__generation")
        )
        .values_list("model", "provider_kind")
        .distinct()
    )
    for model, kind in sorted(set(drafters)):
        names.append(f"{model} (offline drafter)" if kind == "offline" else model)
    return names


def card_build(pipeline: NaturalBenchPipeline, *, sha256: str, samples: int, pairs: int) -> dict:
    """The dataset card: Table 3's columns per (source, question type, language), the prompts
    with their SHA-256, and the annotators' agreement at every stage."""
    mined = pipeline.pairs.count()
    verified = pipeline.pairs.filter(state=ConfoundingPair.State.VERIFIED).count()
    assembled = pipeline.samples.filter(state=NaturalBenchSample.State.ASSEMBLED)
    counts = count_by(assembled, "question_type")
    language = prompts.language_name(pipeline.language)
    used = models_used(pipeline)
    source = pipeline.corpus.name
    rows = [
        {
            "source": source,
            "question_type": TYPE_LABELS[qtype],
            "language": language,
            "samples": counts.get(qtype, 0),
            "models_used": used,
            "mismatched_pairs": mined,
            "verified_pairs": verified,
        }
        for qtype in nb.QUESTION_TYPES
        if qtype in pipeline.question_types or counts.get(qtype)
    ]
    rows.append(
        {
            "source": "All",
            "question_type": ", ".join(r["question_type"] for r in rows),
            "language": language,
            "samples": samples,
            "models_used": None,
            "mismatched_pairs": None,
            "verified_pairs": None,
        }
    )
    # The prompts of every draft and caption shortening.
    drafted = Q(pk__in=pipeline.question_sets.values("drafts__generation"))
    shortened = Q(purpose=SHORTEN_PURPOSE, project=pipeline.project)
    generations = Generation.objects.filter(drafted | shortened)
    tag_tasks = [
        *assembled.exclude(tag_task_0=None).values_list("tag_task_0", flat=True),
        *assembled.exclude(tag_task_1=None).values_list("tag_task_1", flat=True),
    ]
    return {
        "name": pipeline.name,
        "project": pipeline.project.name,
        "sha256": sha256,
        "table3": rows,
        "samples": samples,
        "retrieval_pairs": pairs,
        "question_types": list(pipeline.question_types),
        "language": pipeline.language,
        "mining": {
            "method": pipeline.method,
            "seed": pipeline.seed,
            "samples": (pipeline.mining or {}).get("samples"),
            "mismatches_before_one_per_sample": (pipeline.mining or {}).get("mismatched_pairs"),
            "caption_max_chars": pipeline.caption_max_chars,
            "shortened": (pipeline.mining or {}).get("shortened"),
            "scorers": (pipeline.mining or {}).get("scorers", []),
        },
        "settings": {
            "annotators_per_item": pipeline.annotators_per_item,
            "taggers_per_question": pipeline.taggers_per_item,
            "max_regenerations": pipeline.max_regenerations,
        },
        "prompts": gateway.templates_used(generations),
        "agreement": {
            "pair_verification": queue_agreement(pipeline.pair_queue),
            "answer_verification": queue_agreement(pipeline.answer_queue),
            "skill_tagging": queue_agreement(pipeline.tag_queue, tag_tasks),
        },
        "demo": pipeline.demo,
    }
