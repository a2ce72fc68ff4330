"""Scorer runs: a CLIP-style ``Scorer`` rates every (image, caption) combination of an item; the
family's ``ScorerRunner`` names the item's images and captions (rows: captions, columns:
images), and its metrics read the score matrix (Winoground text, image and group scores)."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from annotator.platform.errors import Invalid
from annotator.platform.models import Job
from curation.models import Scorer
from curation.scorers import (
    ScorerUnavailable,
    encode_images,
    encode_texts,
    scorer_load,
    scorer_signature,
)

from .. import services
from ..models import BenchmarkVersion, ModelRun, Prediction
from ..registry import ScorerRunner, families, family_of
from .common import check_limit, kept_items, progress
from .images import ImageMissing, ImageResolver, open_pil
from .runs import enqueue_run, runner_run

SCORE_BATCH = 16


def score_model_start(
    *,
    version: BenchmarkVersion,
    scorer: Scorer,
    created_by,
    limit: int | None = None,
    label: str = "",
    model_name: str = "",
    rounds: int = 1000,
    enqueue: bool = True,
) -> Job:
    """Score every (image, caption) combination of the version's items with ``scorer`` in a
    job; the family's metrics follow."""
    if not isinstance(family_of(version.benchmark.family).runner, ScorerRunner):
        scored = " / ".join(f.label for f in families() if isinstance(f.runner, ScorerRunner))
        raise Invalid(f"A scorer run belongs to {scored} versions.")
    limit = check_limit(limit)
    if not kept_items(version, None).exists():
        raise Invalid("This version has no items that count; there is nothing to score.")
    settings_ = {
        "runner": "scorer",
        "scorer_id": scorer.pk,
        "scorer": scorer.label,
        "scorer_signature": scorer_signature(scorer),
        "random_weights": bool(scorer.random_weights),
        "options": {},
    }
    total = kept_items(version, limit).count() + 1
    with transaction.atomic():
        run = runner_run(
            version=version,
            model_name=model_name or f"{scorer.label} ({scorer.model_name})",
            label=label,
            settings_=settings_,
            seed=0,
            created_by=created_by,
        )
        params = {"limit": limit, "rounds": int(rounds)}
        return enqueue_run(run, created_by=created_by, params=params, total=total, enqueue=enqueue)


def _load(run: ModelRun):
    scorer = Scorer.objects.filter(pk=(run.prompt_settings or {}).get("scorer_id")).first()
    if scorer is None:
        raise Invalid("The scorer of this run was deleted; start a new run with another one.")
    try:
        return scorer, scorer_load(scorer)
    except ScorerUnavailable as exc:
        raise Invalid(str(exc)) from exc


def _score_batch(run: ModelRun, runner: ScorerRunner, loaded, batch: list) -> None:
    """One forward pass over a batch of (item, images); one Prediction per item."""
    rows, columns = len(runner.texts), len(runner.images)
    pil = [open_pil(image) for _, images in batch for image in images]
    texts = [item.data[k] for item, _ in batch for k in runner.texts]
    image_emb = encode_images(loaded, pil)
    text_emb, _ = encode_texts(loaded, texts)
    for k, (item, _) in enumerate(batch):
        # s[caption][image] (App. B): rows are the captions, columns the images.
        matrix = text_emb[rows * k : rows * (k + 1)] @ image_emb[columns * k : columns * (k + 1)].T
        Prediction.objects.update_or_create(
            run=run,
            item=item,
            defaults={"raw_output": "", "scores": [[float(v) for v in r] for r in matrix]},
        )


def score_model(run: ModelRun, *, job_id: int | None, limit: int | None, rounds: int) -> dict:
    """The body of a scorer run's job: score the items not scored yet, then the metrics."""
    runner = family_of(run.version.benchmark.family).runner
    scorer, loaded = _load(run)
    ModelRun.objects.filter(pk=run.pk).update(
        status=ModelRun.Status.RUNNING,
        started_at=run.started_at or timezone.now(),
        finished_at=None,
    )
    done = set(run.predictions.values_list("item_id", flat=True))
    pending = [i for i in kept_items(run.version, limit) if i.pk not in done]
    total = len(pending) + 1
    progress(job_id, 0, total, f"{len(pending)} pairs to score with {scorer.label}")
    resolver = ImageResolver()
    failed: dict[str, str] = {}
    scored = 0
    for start in range(0, len(pending), SCORE_BATCH):
        batch = []
        for item in pending[start : start + SCORE_BATCH]:
            try:
                images = [resolver(item.data[k]) for k in runner.images]
            except ImageMissing as exc:
                failed[item.item_id] = str(exc)
                continue
            batch.append((item, images))
        if batch:
            _score_batch(run, runner, loaded, batch)
            scored += len(batch)
        progress(job_id, min(start + SCORE_BATCH, len(pending)))
    return _finish(run, scored, failed, job_id=job_id, total=total, rounds=rounds)


def _finish(
    run: ModelRun, scored: int, failed: dict, *, job_id: int | None, total: int, rounds: int
) -> dict:
    settings_ = {**(run.prompt_settings or {}), "failed_items": len(failed)}
    settings_["failures"] = dict(list(failed.items())[:100])
    count = run.predictions.count()
    status = ModelRun.Status.SUCCEEDED if count else ModelRun.Status.FAILED
    ModelRun.objects.filter(pk=run.pk).update(
        status=status,
        finished_at=timezone.now(),
        prediction_count=count,
        prompt_settings=settings_,
    )
    result = {"run_id": run.pk, "items": scored, "failed_items": len(failed)}
    if status == ModelRun.Status.FAILED:
        first = next(iter(failed.values()), "no pairs")
        raise Invalid(f"No pair could be scored; nothing was stored. First error: {first}")
    run.refresh_from_db()
    result["metrics"] = services.metrics_compute(run=run, rounds=rounds)
    progress(job_id, total, message=f"{scored} pairs scored, {len(failed)} without images")
    return result
