"""The NaturalBench pipeline (naturalbench.txt Sec. 3, App. A–C), one service per stage.

1. ``pairs_mine``: captions shortened through the gateway when too long (App. A), embeddings of
   every selected scorer (``embed_corpus``), Eq. 1 mining over the cached embeddings (one random
   mismatch per sample, all scorers must mismatch) or the random-pairing baseline (Table 6).
2. ``pairs_send_to_review``: mined pairs → a ``pair_verify`` queue; ``pair_review_record`` (the
   queue's outcome handler) keeps a pair unless people say one caption describes both images.
3. ``questions_draft``: the App. A prompts through ``gateway.generate`` for every verified pair
   and question type; a draft whose JSON breaks the prompt's rules is drafted again at once.
4. Each checked draft's four (image, question) items go to a ``vqa_choice`` queue with the two
   candidate answers and "Unanswerable"; ``answer_record`` keeps the draft only if every item is
   answered as intended by all annotators (unanimous rule), else drafts the pair again, up to
   ``max_regenerations`` times, then gives up and records why.
5. ``samples_assemble``: kept drafts → 2 × 2 samples checked by ``curation.naturalbench``;
   a broken one is refused and recorded.
6. ``skills_send_to_tagging``: every question of an assembled sample (shown with both images) →
   a ``skill_tags`` queue (App. C, 1–8 tags); ``skill_tags_record`` keeps each tag a majority
   chose. Tags are per question because per-skill results are Q-Acc over the questions carrying
   a tag (METRICS.md Sec. 1) and the exported ``Skills`` field is [q0 tags, q1 tags].
7. Export: ``export.version_export`` (a frozen, content-hashed version).

Every stage is a Job (``stage_start``) or ``manage.py naturalbench <stage> --pipeline ID``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from django.db import transaction
from django.db.models import Max, Q
from django.utils import timezone

from annotator import services as annotator_services
from annotator.models import Task, TaskQueue
from annotator.platform.errors import Invalid
from annotator.platform.files import media_url
from annotator.platform.jobs import job_enqueue, job_progress
from annotator.platform.models import Job, Project
from curation import gateway, mining
from curation import naturalbench as nb

from ...models import (
    Caption,
    ConfoundingPair,
    Corpus,
    Generation,
    LLMProvider,
    NaturalBenchPipeline,
    NaturalBenchSample,
    PairQuestionSet,
    QuestionDraft,
    Sample,
    Scorer,
    VQAItem,
)
from . import prompts, skills

MINE_JOB = "naturalbench.mine"
VERIFY_JOB = "naturalbench.verify"
DRAFT_JOB = "naturalbench.draft"
ASSEMBLE_JOB = "naturalbench.assemble"
TAG_JOB = "naturalbench.tag"
EXPORT_JOB = "naturalbench.export"
STAGES: dict[str, str] = {
    "mine": MINE_JOB,
    "verify": VERIFY_JOB,
    "draft": DRAFT_JOB,
    "assemble": ASSEMBLE_JOB,
    "tag": TAG_JOB,
    "export": EXPORT_JOB,
}
PAIR_HANDLER = "naturalbench.pair_verified"
ANSWER_HANDLER = "naturalbench.answered"
TAG_HANDLER = "naturalbench.tagged"

MAX_PEOPLE = 10
MAX_REGENERATIONS = 10
MIN_CAPTION_CHARS = 20
SHORTEN_PURPOSE = "naturalbench.caption_shorten"
PAIR_QUESTION = "Could one of the two captions describe both images?"

YES_NO, MULTIPLE_CHOICE = nb.YES_NO, nb.MULTIPLE_CHOICE


# ============================================================================================
# The pipeline and its settings
# ============================================================================================
# Settings that decide which pairs exist: fixed once pairs are mined.
MINING_FIELDS = (
    "corpus",
    "scorers",
    "method",
    "language",
    "caption_max_chars",
    "random_pairs",
    "seed",
)
FIELDS = (
    *MINING_FIELDS,
    "name",
    "question_types",
    "annotators_per_item",
    "taggers_per_item",
    "max_regenerations",
    "provider",
    "auto_regenerate",
)


def language_matches(code: str) -> Q:
    """Captions in ``code`` ("zh" also takes "zh-Hans", …)."""
    return Q(language__iexact=code) | Q(language__istartswith=f"{code}-")


def _clean(project: Project, values: dict[str, Any], pipeline=None) -> dict[str, Any]:
    """Check every setting; Invalid lists each problem (nothing is written)."""
    errors: list[dict] = []

    def bad(field: str, message: str) -> None:
        errors.append({"line": 0, "field": field, "error": message})

    name = " ".join(str(values.get("name") or "").split())
    if not name:
        bad("name", "Give the pipeline a name.")
    elif len(name) > 200:
        bad("name", "The name is longer than 200 characters.")
    elif (
        NaturalBenchPipeline.objects.filter(project=project, name=name)
        .exclude(pk=getattr(pipeline, "pk", None))
        .exists()
    ):
        bad("name", f"This project already has a NaturalBench pipeline named {name!r}.")
    values["name"] = name

    corpus = values.get("corpus")
    if not isinstance(corpus, Corpus) or corpus.project_id != project.pk:
        bad("corpus", "Choose a corpus of this project.")
        corpus = None

    method = values.get("method") or NaturalBenchPipeline.Method.EQ1
    if method not in NaturalBenchPipeline.Method.values:
        bad("method", f"Unknown mining method {method!r}.")
    values["method"] = method
    scorers = list(values.get("scorers") or [])
    if method == NaturalBenchPipeline.Method.EQ1 and not scorers:
        bad("scorers", "Eq. 1 mining needs at least one scorer (add one on the Scorers page).")
    values["scorers"] = scorers

    language = str(values.get("language") or "").strip()
    if not language or len(language) > 35:
        bad("language", "Give the language of the captions to pair (e.g. en, zh, hi).")
    values["language"] = language

    types = list(dict.fromkeys(values.get("question_types") or []))
    if not types or any(t not in nb.QUESTION_TYPES for t in types):
        bad("question_types", "Choose yes/no, multiple-choice or both.")
    elif MULTIPLE_CHOICE in types and not prompts.is_english(language):
        bad(
            "question_types",
            "The paper's multiple-choice prompt is English only (App. A); for "
            f"{prompts.language_name(language)} choose yes/no.",
        )
    values["question_types"] = [t for t in nb.QUESTION_TYPES if t in types]

    for field, low, high, label in (
        ("annotators_per_item", 1, MAX_PEOPLE, "Annotators per item"),
        ("taggers_per_item", 1, MAX_PEOPLE, "Taggers per question"),
        ("max_regenerations", 0, MAX_REGENERATIONS, "Maximum regenerations"),
    ):
        value = values.get(field)
        if not isinstance(value, int) or not low <= value <= high:
            bad(field, f"{label} must be a whole number from {low} to {high}.")
    limit = values.get("caption_max_chars")
    if limit is not None and (not isinstance(limit, int) or limit < MIN_CAPTION_CHARS):
        bad("caption_max_chars", f"A caption limit must be at least {MIN_CAPTION_CHARS}.")
    n_pairs = values.get("random_pairs")
    if n_pairs is not None and (not isinstance(n_pairs, int) or n_pairs < 1):
        bad("random_pairs", "The number of random pairs must be at least 1 (or empty: all).")
    seed = values.get("seed", 0)
    if not isinstance(seed, int) or not 0 <= seed < 2**31:
        bad("seed", "The seed is a whole number from 0 to 2147483647.")
    provider = values.get("provider")
    if provider is not None and provider.project_id not in (None, project.pk):
        bad("provider", "Choose a provider of this project or a shared one.")

    if corpus is not None and language and not errors:
        n = (
            Sample.objects.filter(corpus=corpus)
            .filter(captions__in=Caption.objects.filter(language_matches(language)))
            .distinct()
            .count()
        )
        if n < 2:
            bad(
                "language",
                f"Corpus {corpus.name!r} has {n} sample(s) with a caption in {language!r}; "
                "pairs need at least two.",
            )
    if errors:
        raise Invalid("The pipeline settings are not valid; nothing was saved.", errors)
    return values


def _defaults() -> dict[str, Any]:
    return {
        "method": NaturalBenchPipeline.Method.EQ1,
        "question_types": [YES_NO],
        "language": "en",
        "caption_max_chars": None,
        "annotators_per_item": 2,
        "taggers_per_item": 3,
        "max_regenerations": 3,
        "random_pairs": None,
        "seed": 0,
        "provider": None,
        "auto_regenerate": True,
    }


def pipeline_create(*, project: Project, created_by=None, demo: bool = False, **fields: Any):
    """A new pipeline with checked settings (Invalid lists every problem)."""
    unknown = set(fields) - set(FIELDS)
    if unknown:
        raise Invalid(f"Unknown pipeline settings: {', '.join(sorted(unknown))}")
    values = _clean(project, {**_defaults(), **fields})
    scorers = values.pop("scorers")
    with transaction.atomic():
        pipeline = NaturalBenchPipeline.objects.create(
            project=project, created_by=created_by, demo=demo, **values
        )
        pipeline.scorers.set(scorers)
    return pipeline


def pipeline_update(*, pipeline: NaturalBenchPipeline, **fields: Any) -> NaturalBenchPipeline:
    """Change settings. Those that decide the pairs are fixed once pairs exist; the number of
    annotators and taggers follows into the queues (open tasks not escalated yet)."""
    unknown = set(fields) - set(FIELDS)
    if unknown:
        raise Invalid(f"Unknown pipeline settings: {', '.join(sorted(unknown))}")
    current = {f: getattr(pipeline, f) for f in FIELDS if f != "scorers"}
    current["scorers"] = list(pipeline.scorers.all())
    values = _clean(pipeline.project, {**current, **fields}, pipeline=pipeline)
    if pipeline.pairs.exists():
        changed = [
            f
            for f in MINING_FIELDS
            if (
                {s.pk for s in values[f]} != {s.pk for s in current[f]}
                if f == "scorers"
                else values[f] != current[f]
            )
        ]
        if changed:
            raise Invalid(
                "Pairs are mined already: these settings decide which pairs exist and can no "
                f"longer change ({', '.join(changed)}). Make a new pipeline instead."
            )
    scorers = values.pop("scorers")
    with transaction.atomic():
        for field, value in values.items():
            setattr(pipeline, field, value)
        pipeline.save()
        pipeline.scorers.set(scorers)
        for queue, n in (
            (pipeline.pair_queue, pipeline.annotators_per_item),
            (pipeline.tag_queue, pipeline.taggers_per_item),
        ):
            if queue is not None and queue.redundancy != n:
                annotator_services.queue_update(
                    queue=queue, redundancy=n, max_redundancy=_with_tiebreak(n)
                )
        queue = pipeline.answer_queue
        if queue is not None and queue.redundancy != pipeline.annotators_per_item:
            n = pipeline.annotators_per_item
            annotator_services.queue_update(queue=queue, redundancy=n, max_redundancy=n)
    return pipeline


def _with_tiebreak(n: int) -> int:
    """Majority over an even number of people can tie; a tie asks one more."""
    return n + 1 if n % 2 == 0 else n


# ============================================================================================
# Stages as jobs
# ============================================================================================
def stage_blocker(pipeline: NaturalBenchPipeline, stage: str, counts: dict | None = None) -> str:
    """Why ``stage`` cannot start now ("" when it can): what to do first, in words."""
    from . import selectors

    counts = counts or selectors.funnel(pipeline)
    if stage == "mine":
        if counts["pairs"]["all"] and counts["pairs"]["all"] != counts["pairs"]["mined"]:
            return "Pairs are being verified already; make a new pipeline to mine again."
        return ""
    if stage == "verify":
        return "" if counts["pairs"]["mined"] else "No mined pair waits for verification."
    if stage == "draft":
        todo = counts["questions"]["pending"] + counts["questions"]["to_create"]
        return "" if todo else "No verified pair waits for questions."
    if stage == "assemble":
        return "" if counts["questions"]["to_assemble"] else "No kept question pair to assemble."
    if stage == "tag":
        return "" if counts["samples"]["untagged"] else "No assembled sample waits for tags."
    if stage == "export":
        return "" if counts["samples"]["assembled"] else "No assembled sample to export yet."
    return f"Unknown stage {stage!r}."


def stage_start(*, pipeline: NaturalBenchPipeline, stage: str, created_by=None, params=None):
    """Enqueue one stage's job (after commit); refuses with what to do first."""
    if stage not in STAGES:
        raise Invalid(f"Unknown stage {stage!r}; stages: {', '.join(STAGES)}.")
    blocker = stage_blocker(pipeline, stage)
    if blocker:
        raise Invalid(blocker)
    if stage == "mine":
        _check_weights(pipeline)
    with transaction.atomic():
        NaturalBenchPipeline.objects.select_for_update().get(pk=pipeline.pk)
        running = Job.objects.filter(
            kind=STAGES[stage],
            status__in=[Job.Status.QUEUED, Job.Status.RUNNING],
            params__pipeline_id=pipeline.pk,
        ).first()
        if running is not None:
            raise Invalid(f"This stage already has a job (#{running.pk}) queued or running.")
        return job_enqueue(
            kind=STAGES[stage],
            params={"pipeline_id": pipeline.pk, **(params or {})},
            created_by=created_by,
            project=pipeline.project,
        )


def _check_weights(pipeline: NaturalBenchPipeline) -> None:
    """Refuse to queue a mining job that could only fail: a scorer's weights are missing."""
    from ...scorers import scorer_weights

    for scorer in pipeline.scorers.all():
        status = scorer_weights(scorer)
        if status.missing:
            raise Invalid(status.message)


def stage_run_now(
    *, pipeline: NaturalBenchPipeline, stage: str, created_by=None, params=None
) -> Job:
    """A stage's real job, run in this process (the command and the demo need no broker).
    The Job row records it like any other; its error, if any, is on the row."""
    from . import jobs

    if stage not in STAGES:
        raise Invalid(f"Unknown stage {stage!r}; stages: {', '.join(STAGES)}.")
    blocker = stage_blocker(pipeline, stage)
    if blocker:
        raise Invalid(blocker)
    job = Job.objects.create(
        kind=STAGES[stage],
        params={"pipeline_id": pipeline.pk, **(params or {})},
        project=pipeline.project,
        created_by=created_by,
        message="Running in this process",
    )
    getattr(jobs, f"nb_{stage}").apply(args=[job.pk])
    job.refresh_from_db()
    return job


def stage_run(
    *, pipeline: NaturalBenchPipeline, stage: str, job_id: int | None = None, created_by=None, **kw
) -> dict:
    """Run one stage in this process (the jobs and the management command call this)."""
    if stage == "mine":
        return pairs_mine(pipeline=pipeline, job_id=job_id, created_by=created_by)
    if stage == "verify":
        return pairs_send_to_review(pipeline=pipeline, job_id=job_id)
    if stage == "draft":
        return questions_draft(pipeline=pipeline, job_id=job_id, created_by=created_by)
    if stage == "assemble":
        return samples_assemble(pipeline=pipeline, job_id=job_id)
    if stage == "tag":
        return skills_send_to_tagging(pipeline=pipeline, job_id=job_id)
    if stage == "export":
        from .export import version_export

        version = version_export(
            pipeline=pipeline, label=kw.get("label"), job_id=job_id, created_by=created_by
        )
        return {
            "version_id": version.pk,
            "label": version.label,
            "sha256": version.sha256,
            "samples": version.sample_count,
            "benchmark_version_id": version.benchmark_version_id,
        }
    raise Invalid(f"Unknown stage {stage!r}.")


def _progress(job_id, done: int, total: int | None = None, message: str = "") -> None:
    if job_id:
        job_progress(job_id=job_id, done=done, total=total, message=message)


def _provider(pipeline: NaturalBenchPipeline) -> LLMProvider:
    return pipeline.provider or gateway.provider_for(pipeline.project)


# ============================================================================================
# 1. Mining (Sec. 3 step 1, Eq. 1; App. A caption shortening; App. B Table 6 random baseline)
# ============================================================================================
@dataclass
class Row:
    """Sample k of the mining input: its image and its caption in the pipeline's language."""

    sample_id: int
    image_id: int
    caption_id: int
    text: str
    short_text: str


def mining_rows(pipeline: NaturalBenchPipeline) -> list[Row]:
    """One row per sample of the corpus with a caption in the pipeline's language (its first
    such caption), in corpus order. Row k is sample k of Eq. 1."""
    rows: dict[int, Row] = {}
    captions = (
        Caption.objects.filter(sample__corpus_id=pipeline.corpus_id)
        .filter(language_matches(pipeline.language))
        .order_by("sample__position", "position", "id")
        .values_list("sample_id", "sample__image_id", "id", "text", "short_text")
    )
    for sample_id, image_id, caption_id, text, short in captions.iterator(chunk_size=5000):
        if sample_id not in rows:
            rows[sample_id] = Row(sample_id, image_id, caption_id, text, short)
    return list(rows.values())


def captions_shorten(
    *, pipeline: NaturalBenchPipeline, rows: Sequence[Row], job_id=None, created_by=None
) -> dict:
    """Shorten captions longer than the limit through the gateway (``caption-shorten``), keeping
    the original in ``text`` and the short one in ``short_text`` with its Generation. A failed
    or still-too-long answer leaves the caption as it was and is counted."""
    limit = pipeline.caption_max_chars
    result = {"limit": limit, "long": 0, "shortened": 0, "kept_before": 0, "failed": 0}
    if not limit:
        return result
    todo = [r for r in rows if len(r.text) > limit]
    result["long"] = len(todo)
    todo_now = [r for r in todo if not (r.short_text and len(r.short_text) <= limit)]
    result["kept_before"] = len(todo) - len(todo_now)
    errors: list[str] = []
    provider = _provider(pipeline)
    template = prompts.templates_ensure()[prompts.SHORTEN_TEMPLATE]
    for k, row in enumerate(todo_now):
        generation = gateway.generate(
            template=template,
            variables={"caption": row.text, "max_chars": limit},
            project=pipeline.project,
            provider=provider,
            purpose=SHORTEN_PURPOSE,
            seed=pipeline.seed,
            job=job_id,
            created_by=created_by,
            item_key=f"caption-{row.caption_id}-{limit}",
        )
        short = " ".join(str(generation.output or "").split())
        if generation.status != Generation.Status.OK or not short or len(short) > limit:
            result["failed"] += 1
            reason = generation.error or f"{len(short)} characters, above {limit}"
            if len(errors) < 5:
                errors.append(f"caption {row.caption_id}: {reason[:200]}")
        else:
            Caption.objects.filter(pk=row.caption_id).update(
                short_text=short, short_generation=generation
            )
            row.short_text = short
            result["shortened"] += 1
        _progress(job_id, k + 1, len(todo_now), f"Shortened {k + 1} of {len(todo_now)} captions")
    result["errors"] = errors
    return result


def _embeddings(scorer: Scorer, rows: Sequence[Row]) -> tuple[np.ndarray, np.ndarray]:
    from ...embeddings import IMAGE, TEXT, embeddings_get

    images = embeddings_get(scorer=scorer, modality=IMAGE, ids=[r.image_id for r in rows])
    texts = embeddings_get(scorer=scorer, modality=TEXT, ids=[r.caption_id for r in rows])
    return images, texts


def pairs_mine(*, pipeline: NaturalBenchPipeline, job_id=None, created_by=None) -> dict:
    """Mine the pipeline's confounding pairs (replacing mined pairs nobody has seen yet)."""
    from ...embeddings import embed_corpus

    if pipeline.pairs.exclude(state=ConfoundingPair.State.MINED).exists():
        raise Invalid("Pairs are being verified already; make a new pipeline to mine again.")
    rows = mining_rows(pipeline)
    if len(rows) < 2:
        raise Invalid(
            f"The corpus has {len(rows)} sample(s) with a caption in {pipeline.language!r}; "
            "pairs need at least two."
        )
    shortened = captions_shorten(pipeline=pipeline, rows=rows, job_id=job_id, created_by=created_by)
    scorers = list(pipeline.scorers.order_by("pk"))
    embedded = []
    for scorer in scorers:
        report = embed_corpus(scorer=scorer, corpus=pipeline.corpus, job_id=job_id)
        embedded.append({"scorer": scorer.label, "images": report["images"]["embedded"]})
    arrays = [_embeddings(scorer, rows) for scorer in scorers]
    groups = np.asarray([r.image_id for r in rows], dtype=np.int64)  # one image: never a pair

    def progress(done: int, total: int) -> None:
        if done == total or done % 16 == 0:
            _progress(job_id, done, total, f"Mining: block pair {done} of {total}")

    if pipeline.method == NaturalBenchPipeline.Method.RANDOM:
        mined = mining.random_pairs(
            len(rows),
            seed=pipeline.seed,
            scorers=arrays,
            n_pairs=pipeline.random_pairs,
            groups=groups,
            normalise=True,
        )
    else:
        mined = mining.mine_mismatches(
            arrays, seed=pipeline.seed, groups=groups, normalise=True, progress=progress
        )
    pairs = []
    for p, (a, b) in enumerate(zip(mined.i0.tolist(), mined.i1.tolist(), strict=True)):
        pairs.append(
            ConfoundingPair(
                pipeline=pipeline,
                position=p,
                sample_0_id=rows[a].sample_id,
                sample_1_id=rows[b].sample_id,
                caption_0_id=rows[a].caption_id,
                caption_1_id=rows[b].caption_id,
                scores=[
                    {
                        "scorer_id": scorer.pk,
                        "label": scorer.label,
                        "s": [round(float(v), 6) for v in mined.scores[p, s]],
                        "mismatched": bool(mined.mismatched[p, s]),
                    }
                    for s, scorer in enumerate(scorers)
                ],
            )
        )
    stats = {
        "method": mined.method,
        "seed": mined.seed,
        "samples": len(rows),
        "mismatched_pairs": mined.n_mismatched_pairs,
        "samples_with_mismatch": mined.n_samples_with_mismatch if scorers else None,
        "pairs": len(pairs),
        "scorers": [
            {"id": s.pk, "label": s.label, "random_weights": s.random_weights} for s in scorers
        ],
        "shortened": shortened,
        "embedded": embedded,
        "finished_at": timezone.now().isoformat(),
    }
    with transaction.atomic():
        locked = NaturalBenchPipeline.objects.select_for_update().get(pk=pipeline.pk)
        if locked.pairs.exclude(state=ConfoundingPair.State.MINED).exists():
            raise Invalid("Pairs went to verification while mining ran; nothing was replaced.")
        locked.pairs.all().delete()
        ConfoundingPair.objects.bulk_create(pairs, batch_size=2000)
        NaturalBenchPipeline.objects.filter(pk=pipeline.pk).update(mining=stats)
    pipeline.mining = stats
    return {k: v for k, v in stats.items() if k != "embedded"}


# ============================================================================================
# 2. Pair verification (Sec. 3: discard pairs where one caption describes both images)
# ============================================================================================
def _image_payload(image, alt: str, caption: str | None = None) -> dict:
    payload = {"url": media_url(image.file.name), "alt": alt}
    if caption is not None:
        payload["caption"] = caption
    return payload


def _queue_ensure(pipeline: NaturalBenchPipeline, field: str, spec: dict) -> TaskQueue:
    """The pipeline's queue in ``field`` (made on first use, under a lock)."""
    with transaction.atomic():
        locked = NaturalBenchPipeline.objects.select_for_update().get(pk=pipeline.pk)
        queue = getattr(locked, field)
        if queue is None:
            queue = annotator_services.queue_create(project=pipeline.project, **spec)
            NaturalBenchPipeline.objects.filter(pk=pipeline.pk).update(**{field: queue})
    setattr(pipeline, field, queue)
    return queue


def pair_queue_ensure(pipeline: NaturalBenchPipeline) -> TaskQueue:
    n = pipeline.annotators_per_item
    return _queue_ensure(
        pipeline,
        "pair_queue",
        {
            "kind": "pair_verify",
            "title": f"NaturalBench pairs: {pipeline.name}"[:200],
            "instructions": (
                "Each item shows two images, each with its caption.\n\n"
                f"**{PAIR_QUESTION}** Answer *yes* (discard the pair) when either caption is "
                "also true of the other image; *no* (keep it) when each caption fits only its "
                "own image. These pairs become questions whose answers must differ between the "
                "two images (NaturalBench Sec. 3)."
            ),
            "redundancy": n,
            "max_redundancy": _with_tiebreak(n),
            "rule": TaskQueue.Rule.MAJORITY,
            "outcome_handler": PAIR_HANDLER,
        },
    )


def pairs_send_to_review(*, pipeline: NaturalBenchPipeline, job_id=None, chunk: int = 500) -> dict:
    """Every mined pair becomes a ``pair_verify`` task (idempotent: sent pairs are skipped)."""
    queue = pair_queue_ensure(pipeline)
    todo = list(
        pipeline.pairs.filter(state=ConfoundingPair.State.MINED)
        .select_related("sample_0__image", "sample_1__image", "caption_0", "caption_1")
        .order_by("position")
    )
    sent = 0
    for start in range(0, len(todo), chunk):
        batch = todo[start : start + chunk]
        rows = [
            annotator_services.TaskRow(
                payload={
                    "images": [
                        _image_payload(p.sample_0.image, "Image 1", p.caption_0.text),
                        _image_payload(p.sample_1.image, "Image 2", p.caption_1.text),
                    ]
                },
                external_id=f"nb-pair-{p.pk}",
            )
            for p in batch
        ]
        with transaction.atomic():
            fresh = set(
                ConfoundingPair.objects.select_for_update()
                .filter(pk__in=[p.pk for p in batch], state=ConfoundingPair.State.MINED)
                .values_list("pk", flat=True)
            )
            rows = [r for r, p in zip(rows, batch, strict=True) if p.pk in fresh]
            if not rows:
                continue
            annotator_services.tasks_bulk_create(queue=queue, rows=rows)
            tasks = dict(
                Task.objects.filter(
                    queue=queue, external_id__in=[r.external_id for r in rows]
                ).values_list("external_id", "pk")
            )
            changed = [p for p in batch if p.pk in fresh]
            for p in changed:
                p.state, p.task_id = ConfoundingPair.State.REVIEW, tasks[f"nb-pair-{p.pk}"]
            ConfoundingPair.objects.bulk_update(changed, ["state", "task"])
            sent += len(rows)
        _progress(job_id, start + len(batch), len(todo), f"{sent} pairs sent to verification")
    return {"sent": sent, "queue_id": queue.pk}


def pair_review_record(*, task: Task, decision) -> ConfoundingPair | None:
    """Outcome handler of the pair queue (inside the submit's transaction): the pair is kept only
    on a decided "keep"; "discard" or no decision discards it."""
    pair = ConfoundingPair.objects.select_for_update().filter(task_id=task.pk).first()
    if pair is None or pair.state != ConfoundingPair.State.REVIEW:
        return pair
    keep = bool(decision.decided and decision.label == "keep")
    pair.state = ConfoundingPair.State.VERIFIED if keep else ConfoundingPair.State.DISCARDED
    pair.votes = dict(decision.counts or {})
    pair.agreement = decision.agreement
    pair.decided_at = timezone.now()
    pair.save(update_fields=["state", "votes", "agreement", "decided_at"])
    return pair


# ============================================================================================
# 3–4. Question drafting (App. A) and answer verification (Sec. 3, two annotators)
# ============================================================================================
def answer_queue_ensure(pipeline: NaturalBenchPipeline) -> TaskQueue:
    n = pipeline.annotators_per_item
    return _queue_ensure(
        pipeline,
        "answer_queue",
        {
            "kind": "vqa_choice",
            "title": f"NaturalBench questions: {pipeline.name}"[:200],
            "instructions": (
                "Look at the image and answer the question with one of the candidate answers. "
                "Choose **Unanswerable** when the image does not let you answer it, or when the "
                "question is ambiguous. A question is kept only if every annotator picks the "
                "same, intended answer (NaturalBench Sec. 3)."
            ),
            # Sec. 3: kept only if both annotators agree on the intended answer; no escalation.
            "redundancy": n,
            "max_redundancy": n,
            "rule": TaskQueue.Rule.UNANIMOUS,
            "outcome_handler": ANSWER_HANDLER,
        },
    )


def question_sets_create(pipeline: NaturalBenchPipeline) -> int:
    """One PairQuestionSet per verified pair and chosen question type (idempotent)."""
    verified = list(
        pipeline.pairs.filter(state=ConfoundingPair.State.VERIFIED).values_list("pk", flat=True)
    )
    have = set(pipeline.question_sets.values_list("pair_id", "question_type"))
    new = [
        PairQuestionSet(pipeline=pipeline, pair_id=pk, question_type=qtype)
        for pk in verified
        for qtype in pipeline.question_types
        if (pk, qtype) not in have
    ]
    PairQuestionSet.objects.bulk_create(new, batch_size=2000, ignore_conflicts=True)
    return len(new)


@dataclass
class Drafted:
    generation: Generation | None
    draft: prompts.Draft | None
    problems: list[str]


def draft_generate(
    *, question_set: PairQuestionSet, attempt: int, provider=None, job_id=None, created_by=None
) -> Drafted:
    """One LLM call for a pair's two questions, checked against the prompt's rules."""
    pipeline = question_set.pipeline
    pair = question_set.pair
    variables = prompts.template_variables(
        question_type=question_set.question_type,
        language=pipeline.language,
        caption_1=pair.caption_0.text,
        caption_2=pair.caption_1.text,
    )
    generation = gateway.generate(
        template=prompts.template_name(question_set.question_type, pipeline.language),
        variables=variables,
        project=pipeline.project,
        provider=provider or _provider(pipeline),
        purpose=f"naturalbench.{question_set.question_type}",
        # A new call per attempt: the seed moves on so a sampling model answers afresh.
        seed=pipeline.seed * 100 + attempt,
        job=job_id,
        created_by=created_by,
        item_key=f"nb-qset-{question_set.pk}-a{attempt}",
    )
    if generation.status != Generation.Status.OK:
        return Drafted(generation, None, [f"the drafter failed: {generation.error[:500]}"])
    try:
        return Drafted(
            generation, prompts.check_draft(generation.output, question_set.question_type), []
        )
    except prompts.DraftInvalid as exc:
        return Drafted(generation, None, exc.problems)


def _items(
    question_set: PairQuestionSet, draft: QuestionDraft, checked: prompts.Draft
) -> list[VQAItem]:
    """The four (image, question) items in SAMPLE_KEYS order with their intended answers."""
    pair = question_set.pair
    images = (pair.sample_0.image, pair.sample_1.image)
    questions = (draft.question_0, draft.question_1)
    items = []
    for key, answer in zip(
        nb.SAMPLE_KEYS, nb.expected_answers(question_set.question_type), strict=True
    ):
        q, i = int(key[1]), int(key[4])
        shown = questions[q]
        if question_set.question_type == MULTIPLE_CHOICE:
            shown = nb.mc_options(shown)[0]
            choices = checked.choices[f"q{q}"]
            intended = choices[0] if answer == "A" else choices[1]
        else:
            choices = ["Yes", "No"]
            intended = answer
        items.append(
            VQAItem(
                draft=draft,
                key=key,
                image=images[i],
                question=shown,
                choices=choices,
                intended=intended,
                answer=answer,
            )
        )
    return items


def _item_payload(item: VQAItem, language: str) -> dict:
    return {
        "image": _image_payload(item.image, "The image the question is about"),
        "question": item.question,
        "choices": item.choices,
        "language": language,
    }


def _drafts(n: int) -> str:
    return f"{n} draft" if n == 1 else f"{n} drafts"


def _limit(pipeline: NaturalBenchPipeline) -> int:
    return 1 + pipeline.max_regenerations


def draft_record(*, question_set: PairQuestionSet, attempt: int, drafted: Drafted):
    """Store one attempt (one transaction). A checked draft's items go to the answer queue; an
    invalid one leaves the set waiting for the next attempt, or gives up after the last."""
    pipeline = question_set.pipeline
    queue = pipeline.answer_queue or answer_queue_ensure(pipeline)
    with transaction.atomic():
        qset = (
            PairQuestionSet.objects.select_for_update(of=("self",))
            .select_related("pair__sample_0__image", "pair__sample_1__image")
            .get(pk=question_set.pk)
        )
        if qset.state != PairQuestionSet.State.PENDING or qset.attempts != attempt - 1:
            return None  # another job drafted this set meanwhile
        checked = drafted.draft
        draft = QuestionDraft.objects.create(
            question_set=qset,
            attempt=attempt,
            generation=drafted.generation,
            status=QuestionDraft.Status.ANSWERING if checked else QuestionDraft.Status.INVALID,
            problems=drafted.problems,
            question_0=checked.question_0 if checked else "",
            question_1=checked.question_1 if checked else "",
        )
        qset.attempts = attempt
        if checked is None:
            reason = "; ".join(drafted.problems)
            if attempt >= _limit(pipeline):
                qset.state = PairQuestionSet.State.GIVEN_UP
                qset.reason = f"Gave up after {_drafts(attempt)}. Last draft: {reason}"
            else:
                qset.reason = f"Draft {attempt} was not usable: {reason}"
            qset.save(update_fields=["attempts", "state", "reason", "updated_at"])
            return draft
        items = VQAItem.objects.bulk_create(_items(qset, draft, checked))
        rows = [
            annotator_services.TaskRow(
                payload=_item_payload(item, pipeline.language),
                external_id=f"nb-item-{draft.pk}-{item.key}",
            )
            for item in items
        ]
        annotator_services.tasks_bulk_create(queue=queue, rows=rows)
        tasks = dict(
            Task.objects.filter(
                queue=queue, external_id__in=[r.external_id for r in rows]
            ).values_list("external_id", "pk")
        )
        for item in items:
            item.task_id = tasks[f"nb-item-{draft.pk}-{item.key}"]
        VQAItem.objects.bulk_update(items, ["task"])
        qset.state = PairQuestionSet.State.ANSWERING
        qset.reason = ""
        qset.save(update_fields=["attempts", "state", "reason", "updated_at"])
    return draft


def questions_draft(
    *,
    pipeline: NaturalBenchPipeline,
    job_id=None,
    created_by=None,
    provider: LLMProvider | None = None,
    rounds: int = 3,
) -> dict:
    """Draft questions for every question set waiting for one (new, or whose last draft failed
    with regenerations left). The LLM is called outside any transaction; an unusable draft is
    drafted again at once. Later rounds pick up sets that failed while the job ran."""
    prompts.templates_ensure()
    answer_queue_ensure(pipeline)
    created = question_sets_create(pipeline)
    provider = provider or _provider(pipeline)
    counts = {"created": created, "drafts": 0, "invalid": 0, "answering": 0, "given_up": 0}
    done = 0
    for _round in range(rounds):
        todo = list(
            pipeline.question_sets.filter(
                state=PairQuestionSet.State.PENDING, question_type__in=pipeline.question_types
            )
            .select_related("pipeline__project", "pair__caption_0", "pair__caption_1")
            .order_by("pair__position", "question_type")
        )
        if not todo:
            break
        _progress(job_id, done, done + len(todo), "Drafting questions")
        for qset in todo:
            attempt = qset.attempts + 1
            if attempt > _limit(pipeline):
                # Its drafts were used up by failed answers: nothing left to try.
                PairQuestionSet.objects.filter(
                    pk=qset.pk, state=PairQuestionSet.State.PENDING
                ).update(
                    state=PairQuestionSet.State.GIVEN_UP,
                    reason=f"Gave up after {_drafts(qset.attempts)}. {qset.reason}".strip(),
                )
                counts["given_up"] += 1
                attempt = 0
            while attempt:
                drafted = draft_generate(
                    question_set=qset,
                    attempt=attempt,
                    provider=provider,
                    job_id=job_id,
                    created_by=created_by,
                )
                draft = draft_record(question_set=qset, attempt=attempt, drafted=drafted)
                if draft is None:
                    break
                counts["drafts"] += 1
                if draft.status == QuestionDraft.Status.ANSWERING:
                    counts["answering"] += 1
                    break
                counts["invalid"] += 1
                if attempt >= _limit(pipeline):
                    counts["given_up"] += 1
                    break
                attempt += 1
            done += 1
            _progress(
                job_id,
                done,
                message=f"{counts['answering']} drafts answering, {counts['invalid']} unusable, "
                f"{counts['given_up']} given up",
            )
    return counts


def _regenerate_later(pipeline: NaturalBenchPipeline) -> None:
    """One queued drafting job per pipeline picks up every set whose draft failed (sent after
    the submit commits)."""
    if not pipeline.auto_regenerate:
        return
    waiting = Job.objects.filter(
        kind=DRAFT_JOB, status=Job.Status.QUEUED, params__pipeline_id=pipeline.pk
    ).exists()
    if not waiting:
        job_enqueue(
            kind=DRAFT_JOB,
            params={"pipeline_id": pipeline.pk, "regenerate": True},
            project=pipeline.project,
        )


def answer_record(*, task: Task, decision) -> VQAItem | None:
    """Outcome handler of the answer queue (inside the submit's transaction).

    An item passes only on a unanimous decision for the intended answer. The first failing item
    rejects its draft: the pair is drafted again while regenerations remain, else given up with
    the reason. When all four items pass, the draft (and its question set) is kept."""
    item = (
        VQAItem.objects.select_for_update(of=("self",))
        .select_related("draft")
        .filter(task_id=task.pk)
        .first()
    )
    if item is None or item.state != VQAItem.State.OPEN:
        return item
    correct = bool(decision.decided and decision.label == item.intended)
    item.state = VQAItem.State.CORRECT if correct else VQAItem.State.FAILED
    item.votes = dict(decision.counts or {})
    item.decided_at = timezone.now()
    item.save(update_fields=["state", "votes", "decided_at"])

    draft = QuestionDraft.objects.select_for_update().get(pk=item.draft_id)
    if draft.status != QuestionDraft.Status.ANSWERING:
        return item  # already rejected by another item
    qset = (
        PairQuestionSet.objects.select_for_update(of=("self",))
        .select_related("pipeline")
        .get(pk=draft.question_set_id)
    )
    pipeline = qset.pipeline
    if not correct:
        chosen = ", ".join(f"{k} × {n}" for k, n in item.votes.items()) or "no answer"
        problem = (
            f"{item.key}: intended {item.intended!r}, annotators chose {chosen}"
            if decision.decided or item.votes
            else f"{item.key}: no decision"
        )
        draft.status = QuestionDraft.Status.REJECTED
        draft.problems = [*draft.problems, problem]
        draft.save(update_fields=["status", "problems"])
        if qset.state == PairQuestionSet.State.ANSWERING:
            if qset.attempts >= _limit(pipeline):
                qset.state = PairQuestionSet.State.GIVEN_UP
                qset.reason = f"Gave up after {_drafts(qset.attempts)}. Last draft: {problem}"
            else:
                qset.state = PairQuestionSet.State.PENDING
                qset.reason = f"Draft {draft.attempt} failed: {problem}"
            qset.save(update_fields=["state", "reason", "updated_at"])
            if qset.state == PairQuestionSet.State.PENDING:
                _regenerate_later(pipeline)
        return item
    passed = VQAItem.objects.filter(draft=draft, state=VQAItem.State.CORRECT).count()
    if passed == len(nb.SAMPLE_KEYS):
        draft.status = QuestionDraft.Status.KEPT
        draft.save(update_fields=["status"])
        if qset.state == PairQuestionSet.State.ANSWERING:
            qset.state = PairQuestionSet.State.KEPT
            qset.reason = ""
            qset.save(update_fields=["state", "reason", "updated_at"])
    return item


# ============================================================================================
# 5. Assembly into 2 × 2 samples (METRICS.md Sec. 1)
# ============================================================================================
def image_ref(image) -> str:
    return f"sha256:{image.sha256}"


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
        if qset.question_type == MULTIPLE_CHOICE:
            shown = (nb.mc_options(shown) or (shown,))[0]
        if item.question != shown:
            problems.append(f"item {key} asks another question than question {q}")
        if item.state != VQAItem.State.CORRECT:
            problems.append(f"item {key} was not answered as intended")
    record = nb.sample_build(
        image_0=image_ref(images[0]),
        image_1=image_ref(images[1]),
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


def samples_assemble(*, pipeline: NaturalBenchPipeline, job_id=None) -> dict:
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
    _progress(
        job_id,
        len(drafts),
        len(drafts),
        f"{counts['assembled']} assembled, {counts['refused']} refused",
    )
    return counts


# ============================================================================================
# 6. Skill tagging (App. C)
# ============================================================================================
def tag_queue_ensure(pipeline: NaturalBenchPipeline) -> TaskQueue:
    n = pipeline.taggers_per_item
    return _queue_ensure(
        pipeline,
        "tag_queue",
        {
            "kind": "skill_tags",
            "title": f"NaturalBench skills: {pipeline.name}"[:200],
            "instructions": skills.INSTRUCTIONS,
            "config": skills.queue_config(),
            "redundancy": n,
            "max_redundancy": _with_tiebreak(n),
            "rule": TaskQueue.Rule.MAJORITY,
            "outcome_handler": TAG_HANDLER,
        },
    )


def skills_send_to_tagging(*, pipeline: NaturalBenchPipeline, job_id=None, chunk: int = 500):
    """Both questions of every assembled sample not sent yet → the skill_tags queue."""
    queue = tag_queue_ensure(pipeline)
    todo = list(
        pipeline.samples.filter(
            state=NaturalBenchSample.State.ASSEMBLED, tag_task_0__isnull=True
        ).select_related("image_0", "image_1")
    )
    sent = 0
    for start in range(0, len(todo), chunk):
        batch = todo[start : start + chunk]
        rows = []
        for sample in batch:
            images = [
                _image_payload(sample.image_0, "Image 1"),
                _image_payload(sample.image_1, "Image 2"),
            ]
            for q in (0, 1):
                rows.append(
                    annotator_services.TaskRow(
                        payload={"images": images, "questions": [sample.record[f"Question_{q}"]]},
                        external_id=f"nb-skills-{sample.pk}-q{q}",
                    )
                )
        with transaction.atomic():
            fresh = set(
                NaturalBenchSample.objects.select_for_update()
                .filter(pk__in=[s.pk for s in batch], tag_task_0__isnull=True)
                .values_list("pk", flat=True)
            )
            rows = [r for r in rows if int(r.external_id.split("-")[2]) in fresh]
            if not rows:
                continue
            annotator_services.tasks_bulk_create(queue=queue, rows=rows)
            tasks = dict(
                Task.objects.filter(
                    queue=queue, external_id__in=[r.external_id for r in rows]
                ).values_list("external_id", "pk")
            )
            changed = [sample for sample in batch if sample.pk in fresh]
            for sample in changed:
                sample.tag_task_0_id = tasks[f"nb-skills-{sample.pk}-q0"]
                sample.tag_task_1_id = tasks[f"nb-skills-{sample.pk}-q1"]
            NaturalBenchSample.objects.bulk_update(changed, ["tag_task_0", "tag_task_1"])
            sent += len(fresh)
        _progress(job_id, start + len(batch), len(todo), f"{sent} samples sent to tagging")
    return {"sent": sent, "queue_id": queue.pk}


def skill_tags_record(*, task: Task, decision) -> NaturalBenchSample | None:
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
