"""Exact Eq. 1 mining in parallel chunk jobs (issue 25; naturalbench.txt Sec. 3 step 1, Eq. 1).

The job that mines writes its input once to the configured storage (local disk or S3): the
scorers, row k's image id, caption id and group, and the embeddings converted once for every
chunk (``mining.mining_prepare``: float32 rows, normalised, in the sweep's order, and the
diagonal S(i_k, t_k)); chunks memory-map them (a worker whose storage is not its disk downloads
them once per run). It fans the upper-triangle block pairs out
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
import shutil
import tempfile
import time
import uuid
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from django.conf import settings
from django.core.files.base import ContentFile, File
from django.core.files.storage import default_storage

from annotator.platform.chunks import FanOut, chunk_progress, chunk_results, job_work_dir
from annotator.platform.models import Job

from . import mining
from .embeddings import IMAGE, TEXT, embeddings_get
from .models import Scorer

MINE_CHUNK_JOB = "curation.mine_chunk"
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


def _local_path(name: str) -> Path | None:
    """The storage's file ``name`` on this machine's disk, or None (S3 and the like)."""
    try:
        return Path(default_storage.path(name))
    except NotImplementedError:
        return None


def _prepare(folder: str, arrays: Sequence[mining.Embeddings]) -> None:
    """The embeddings converted once for every chunk, as .npy files in the storage's ``folder``:
    written in place on a local disk, else written here and uploaded."""
    local = _local_path(folder)
    if local is not None:
        local.mkdir(parents=True, exist_ok=True)
        mining.mining_prepare(arrays, normalise=True, folder=local)
        return
    with tempfile.TemporaryDirectory(prefix="blindspot-prepare-") as tmp:
        mining.mining_prepare(arrays, normalise=True, folder=tmp)
        for path in sorted(Path(tmp).iterdir()):
            with path.open("rb") as fh:
                saved = default_storage.save(f"{folder}/{path.name}", File(fh))
            if saved != f"{folder}/{path.name}":
                raise RuntimeError(f"the storage renamed {path.name} to {saved}")


_COPIES: dict[str, tempfile.TemporaryDirectory] = {}  # this process's downloads, the newest run


def _prepared(folder: str, n_scorers: int) -> mining.Prepared:
    """The run's prepared input, memory-mapped: from the storage's disk, or downloaded once per
    run into a temporary folder of this worker (the previous run's copy is removed)."""
    local = _local_path(folder)
    if local is None:
        copy = _COPIES.get(folder)
        if copy is None or not Path(copy.name).is_dir():
            for old in _COPIES.values():
                old.cleanup()
            _COPIES.clear()
            copy = tempfile.TemporaryDirectory(prefix="blindspot-mining-")
            names = ["order", "diag"]
            names += [f"{m}-{s}" for s in range(n_scorers) for m in ("images", "texts")]
            for name in names:
                with default_storage.open(f"{folder}/{name}.npy", "rb") as src:
                    with open(Path(copy.name) / f"{name}.npy", "wb") as dst:
                        shutil.copyfileobj(src, dst, 1 << 20)
            _COPIES[folder] = copy
        local = Path(copy.name)
    return mining.prepared_load(local, n_scorers=n_scorers, normalise=True)


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
    run = f"{job_work_dir(job.pk)}/mining-{uuid.uuid4().hex[:8]}"
    _prepare(f"{run}/prepared", _scorer_embeddings(scorers, image_ids, caption_ids))
    name = _save(
        f"{run}/input.npz",
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
        {
            "input": name,
            "prepared": f"{run}/prepared",
            "scorers": len(scorers),
            "seed": seed,
            "block": block,
            "chunk": c,
            "n_chunks": n_chunks,
        }
        for c in range(n_chunks)
    ]
    return FanOut(
        kind=MINE_CHUNK_JOB,
        params=params,
        totals=totals,
        message=f"Mining {n} samples: {n_pairs} block pairs in {n_chunks} chunk jobs",
    )


def _scorer_embeddings(
    scorers: Sequence[Scorer], image_ids: Sequence[int], caption_ids: Sequence[int]
) -> list[mining.Embeddings]:
    return [
        (
            embeddings_get(scorer=scorer, modality=IMAGE, ids=image_ids),
            embeddings_get(scorer=scorer, modality=TEXT, ids=caption_ids),
        )
        for scorer in scorers
    ]


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
        _prepared(p["prepared"], int(p["scorers"])),
        seed=int(p["seed"]),
        chunk=int(p["chunk"]),
        n_chunks=int(p["n_chunks"]),
        block=int(p["block"]),
        groups=data["groups"],
        threads=int(settings.BLINDSPOT_MINING_THREADS) or None,
        progress=progress,
    )
    folder = p["input"].rsplit("/", 1)[0]
    name = _save(
        f"{folder}/chunk-{p['chunk']}-of-{p['n_chunks']}-{job.attempt_token[:8]}.npz",
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
