"""Stage ``mine`` (Sec. 3 step 1, Eq. 1; App. A caption shortening; App. B Table 6 random
baseline): captions shortened through the gateway when too long, embeddings of every selected
scorer, Eq. 1 mining over the cached embeddings (one random mismatch per sample, all scorers
must mismatch) or the random-pairing baseline."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from django.db import transaction
from django.utils import timezone

from annotator.platform.errors import Invalid
from annotator.platform.jobs import job_progress
from annotator.platform.models import Job
from curation import approx_mining, gateway, mining, random_pairs
from curation.embedding_chunks import embedding_fan_out, embedding_results
from curation.embeddings import IMAGE, TEXT, embed_corpus, embed_finish, embeddings_get
from curation.mining_chunks import MiningInputChanged, mining_collect, mining_fan_out
from curation.models import Caption, Generation, Scorer
from curation.scorers import scorer_record, scorer_weights_check

from . import prompts
from .models import ConfoundingPair, NaturalBenchPipeline
from .pipelines import language_matches

SHORTEN_PURPOSE = "naturalbench.caption_shorten"


@dataclass
class Row:
    """Sample k of the mining input: its image and its caption in the pipeline's language."""

    sample_id: int
    image_id: int
    caption_id: int
    text: str
    short_text: str


def weights_check(pipeline: NaturalBenchPipeline, params: dict) -> int:
    """The mine stage's check: refuse to queue a mining job that could only fail (a scorer's
    weights are missing)."""
    for scorer in pipeline.scorers.all():
        scorer_weights_check(scorer, Invalid)
    return 0


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
    provider = gateway.provider_of(pipeline)
    template = prompts.templates_ensure(pipeline.project)[prompts.SHORTEN_TEMPLATE]
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
        job_progress(
            job_id=job_id,
            done=k + 1,
            total=len(todo_now),
            message=f"Shortened {k + 1} of {len(todo_now)} captions",
        )
    result["errors"] = errors
    return result


def _embeddings(scorer: Scorer, rows: Sequence[Row]) -> tuple[np.ndarray, np.ndarray]:
    images = embeddings_get(scorer=scorer, modality=IMAGE, ids=[r.image_id for r in rows])
    texts = embeddings_get(scorer=scorer, modality=TEXT, ids=[r.caption_id for r in rows])
    return images, texts


def _mine(pipeline: NaturalBenchPipeline, rows: list[Row], scorers: list[Scorer], job_id):
    """Eq. 1 over every scorer's embeddings, or the random baseline (Table 6)."""
    arrays = [_embeddings(scorer, rows) for scorer in scorers]
    groups = np.asarray([r.image_id for r in rows], dtype=np.int64)  # one image: never a pair

    def progress(done: int, total: int) -> None:
        if done == total or done % 16 == 0:
            job_progress(
                job_id=job_id,
                done=done,
                total=total,
                message=f"Mining: block pair {done} of {total}",
            )

    if pipeline.method == NaturalBenchPipeline.Method.RANDOM:
        return random_pairs.random_pairs(
            len(rows),
            seed=pipeline.seed,
            scorers=arrays,
            n_pairs=pipeline.random_pairs,
            groups=groups,
            normalise=True,
        )
    if pipeline.method == NaturalBenchPipeline.Method.APPROX:

        def steps(done: int, total: int) -> None:
            job_progress(
                job_id=job_id,
                done=done,
                total=total,
                message=f"Mining: nearest neighbours, then Eq. 1 — step {done} of {total}",
            )

        steps(0, 1)
        return approx_mining.mine_approximate(
            arrays, seed=pipeline.seed, groups=groups, progress=steps
        )
    return mining.mine_mismatches(
        arrays, seed=pipeline.seed, groups=groups, normalise=True, progress=progress
    )


def _pair(pipeline, p: int, a: Row, b: Row, mined, scorers: list[Scorer]) -> ConfoundingPair:
    return ConfoundingPair(
        pipeline=pipeline,
        position=p,
        sample_0_id=a.sample_id,
        sample_1_id=b.sample_id,
        caption_0_id=a.caption_id,
        caption_1_id=b.caption_id,
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


def _in_chunks(pipeline: NaturalBenchPipeline, job: Job, rows: list[Row], scorers: list[Scorer]):
    """The mine stage as a job: embeddings, then exact Eq. 1, each in chunk jobs any worker
    takes (``curation.embedding_chunks``, ``curation.mining_chunks``). Returns the next fan-out,
    or (what was embedded, the mined pairs) once every chunk has ended. The stage runs again
    from the top after each fan-out, so each step first looks for its chunks' results."""
    parts = embedding_results(job=job)
    if parts is None:
        fan_out = embedding_fan_out(work=[(scorer, pipeline.corpus) for scorer in scorers])
        if fan_out is not None:
            return fan_out, None
        parts = []
    for scorer in scorers:
        embed_finish(scorer=scorer)
    embedded = [
        {
            "scorer": scorer.label,
            "images": sum(p["images"]["embedded"] for p in parts if p["scorer_id"] == scorer.pk),
        }
        for scorer in scorers
    ]
    if pipeline.method != NaturalBenchPipeline.Method.EQ1:  # random, approximate: this process
        return embedded, _mine(pipeline, rows, scorers, job.pk)
    image_ids = [r.image_id for r in rows]
    caption_ids = [r.caption_id for r in rows]
    try:
        mined = mining_collect(job=job, image_ids=image_ids, caption_ids=caption_ids)
    except MiningInputChanged as exc:
        raise Invalid(str(exc)) from None
    if mined is None:
        fan_out = mining_fan_out(
            job=job,
            scorers=scorers,
            image_ids=image_ids,
            caption_ids=caption_ids,
            groups=image_ids,  # one image: never a pair
            seed=pipeline.seed,
        )
        return fan_out, None
    return embedded, mined


def pairs_mine(pipeline: NaturalBenchPipeline, *, job_id=None, created_by=None, **_params):
    """Mine the pipeline's confounding pairs (replacing mined pairs nobody has seen yet). As a
    job, the embeddings and the exact mining run in chunk jobs (``_in_chunks``); called
    directly (the CLI, the tests), all in this process."""
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
    job = Job.objects.filter(pk=job_id).first() if job_id else None
    if job is not None:
        embedded, mined = _in_chunks(pipeline, job, rows, scorers)
        if mined is None:
            return embedded  # a FanOut: the stage goes on when its chunk jobs have ended
    else:
        embedded = []
        for scorer in scorers:
            report = embed_corpus(scorer=scorer, corpus=pipeline.corpus, job_id=job_id)
            embedded.append({"scorer": scorer.label, "images": report["images"]["embedded"]})
        mined = _mine(pipeline, rows, scorers, job_id)
    pairs = [
        _pair(pipeline, p, rows[a], rows[b], mined, scorers)
        for p, (a, b) in enumerate(zip(mined.i0.tolist(), mined.i1.tolist(), strict=True))
    ]
    stats = {
        "method": mined.method,
        "seed": mined.seed,
        "samples": len(rows),
        "mismatched_pairs": mined.n_mismatched_pairs,
        "samples_with_mismatch": mined.n_samples_with_mismatch if scorers else None,
        "pairs": len(pairs),
        "scorers": [scorer_record(s) for s in scorers],
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
