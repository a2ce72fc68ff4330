"""Exact Eq. 1 mining in parallel chunk jobs (issue 25; naturalbench.txt Sec. 3 step 1, Eq. 1).

The job that mines writes its input once to the configured storage (local disk or S3): the
scorers, and row k's image id, caption id and group. It fans the upper-triangle block pairs out
as ``BLINDSPOT_MINING_CHUNKS`` chunk jobs of the kind ``curation.mine_chunk``
(``annotator.platform.chunks``); each reads the input and the cached embeddings, sweeps every
n-th block pair (``curation.mining.mining_chunk``) and writes its compact O(N) answer to the
storage under a name of its own run, which its result records. When all have ended, the job
reads them back and reduces them (``mining_reduce``): the same kept pairs as the one-process miner
for the same seed, whatever the number of chunks or workers. A chunk killed mid-way is run again
from the start; the file of a run that never finished is never read.
"""

from __future__ import annotations

import io
import time
import uuid
from collections.abc import Sequence

import numpy as np
from django.conf import settings
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage

from annotator.platform.chunks import FanOut, chunk_progress, chunk_results
from annotator.platform.models import Job

from . import mining
from .embeddings import IMAGE, TEXT, embeddings_get
from .models import Scorer

MINE_CHUNK_JOB = "curation.mine_chunk"
WORK_DIR = "work/jobs"  # storage folder of the jobs' intermediate files
PROGRESS_EVERY_S = 1.0


class MiningInputChanged(ValueError):
    """The rows to mine are not those the chunks mined (the corpus changed meanwhile)."""


def _save(name: str, **arrays) -> str:
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return default_storage.save(name, ContentFile(buffer.getvalue()))


def _load(name: str) -> dict[str, np.ndarray]:
    with default_storage.open(name, "rb") as fh:
        data = np.load(io.BytesIO(fh.read()), allow_pickle=False)
        return {key: data[key] for key in data.files}


def mining_chunks() -> int:
    return max(1, int(settings.BLINDSPOT_MINING_CHUNKS))


def mining_fan_out(
    *,
    job: Job,
    scorers: Sequence[Scorer],
    image_ids: Sequence[int],
    caption_ids: Sequence[int],
    groups: Sequence[int],
    seed: int,
    block: int | None = None,
) -> FanOut:
    """Write the mining input to the storage and fan the block pairs out as chunk jobs."""
    n = len(image_ids)
    if not (len(caption_ids) == len(groups) == n):
        raise ValueError("one image id, caption id and group per row")
    name = _save(
        f"{WORK_DIR}/{job.pk}/mining-input-{uuid.uuid4().hex[:8]}.npz",
        scorer_ids=np.asarray([s.pk for s in scorers], dtype=np.int64),
        image_ids=np.asarray(image_ids, dtype=np.int64),
        caption_ids=np.asarray(caption_ids, dtype=np.int64),
        groups=np.asarray(groups, dtype=np.int64),
    )
    block = min(block or int(settings.BLINDSPOT_MINING_BLOCK), max(n, 1))
    n_pairs = sum(1 for _ in mining.block_pairs(n, block))
    n_chunks = max(1, min(mining_chunks(), n_pairs))
    totals = [len(range(c, n_pairs, n_chunks)) for c in range(n_chunks)]
    params = [
        {"input": name, "seed": seed, "block": block, "chunk": c, "n_chunks": n_chunks}
        for c in range(n_chunks)
    ]
    return FanOut(
        kind=MINE_CHUNK_JOB,
        params=params,
        totals=totals,
        message=f"Mining {n} samples: {n_pairs} block pairs in {n_chunks} chunk jobs",
    )


def _scorer_embeddings(data: dict[str, np.ndarray]) -> list[mining.Embeddings]:
    by_pk = Scorer.objects.in_bulk([int(pk) for pk in data["scorer_ids"]])
    out = []
    for pk in data["scorer_ids"].tolist():
        scorer = by_pk[pk]
        out.append(
            (
                embeddings_get(scorer=scorer, modality=IMAGE, ids=data["image_ids"]),
                embeddings_get(scorer=scorer, modality=TEXT, ids=data["caption_ids"]),
            )
        )
    return out


def mine_chunk_run(job: Job) -> dict:
    """The work of one chunk job: its share of the block pairs, written to the storage."""
    p = job.params
    data = _load(p["input"])
    last = [0.0]

    def progress(done: int, total: int) -> None:
        now = time.monotonic()
        if done == total or now - last[0] >= PROGRESS_EVERY_S:
            last[0] = now
            chunk_progress(
                chunk=job, done=done, total=total, message=f"Block pair {done} of {total}"
            )

    part = mining.mining_chunk(
        _scorer_embeddings(data),
        seed=int(p["seed"]),
        chunk=int(p["chunk"]),
        n_chunks=int(p["n_chunks"]),
        block=int(p["block"]),
        groups=data["groups"],
        normalise=True,
        threads=int(settings.BLINDSPOT_MINING_THREADS) or None,
        progress=progress,
    )
    folder = p["input"].rsplit("/", 1)[0]
    name = _save(
        f"{folder}/mine-{p['chunk']}-of-{p['n_chunks']}-{job.attempt_token[:8]}.npz",
        n_samples=np.int64(part.n_samples),
        seed=np.int64(part.seed),
        samples=part.samples,
        keys=part.keys,
        partners=part.partners,
        cross=part.cross,
        diag=part.diag,
        n_mismatched_pairs=np.int64(part.n_mismatched_pairs),
    )
    return {
        "file": name,
        "mismatched_pairs": part.n_mismatched_pairs,
        "samples_with_partner": len(part.samples),
    }


def _chunk(data: dict[str, np.ndarray]) -> mining.MiningChunk:
    return mining.MiningChunk(
        n_samples=int(data["n_samples"]),
        seed=int(data["seed"]),
        samples=data["samples"],
        keys=data["keys"],
        partners=data["partners"],
        cross=data["cross"],
        diag=data["diag"],
        n_mismatched_pairs=int(data["n_mismatched_pairs"]),
    )


def mining_collect(
    *, job: Job, image_ids: Sequence[int], caption_ids: Sequence[int]
) -> mining.MinedPairs | None:
    """The reduce: the kept pairs from the job's mining chunks (None: it has not fanned them
    out). Refuses when the rows given are not the rows the chunks mined."""
    results = chunk_results(job=job, kind=MINE_CHUNK_JOB)
    if results is None:
        return None
    first = Job.objects.filter(parent=job, kind=MINE_CHUNK_JOB).order_by("part").first()
    data = _load(first.params["input"])
    same = np.array_equal(data["image_ids"], np.asarray(image_ids, dtype=np.int64)) and (
        np.array_equal(data["caption_ids"], np.asarray(caption_ids, dtype=np.int64))
    )
    if not same:
        raise MiningInputChanged(
            "The corpus's samples or captions changed while mining ran; mine again."
        )
    return mining.mining_reduce([_chunk(_load(r["file"])) for r in results])
