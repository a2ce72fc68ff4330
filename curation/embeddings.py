"""Cached embeddings of a corpus's images and texts, and the similarities computed from them.

Layout on disk, one folder per (scorer, modality) under ``BLINDSPOT_EMBEDDINGS_DIR``::

    scorer-<id>-<signature>/<modality>/chunk-<time_ns>-<pid>-<rand>.npy      float16 (n, dim)
    scorer-<id>-<signature>/<modality>/chunk-<time_ns>-<pid>-<rand>.ids.npy  int64 (n, 3)

Vectors are L2-normalised before they are stored as float16. The ids file's columns are the item
id (Image id or Caption id), the text's token count including SOT/EOT before truncation (0 for
images) and a 63-bit hash of the embedded text (0 for images), so a caption whose text changed is
embedded again. A chunk is written to a temporary name and renamed, the vectors first and the ids
file last: a chunk exists once its ids file does, so a crash mid-way leaves every earlier chunk
usable and the next run skips what they hold. When an id occurs in several chunks the newest wins.
Reads memory-map the vector files (``np.load(mmap_mode="r")``).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from django.core.files.storage import default_storage
from django.db import transaction

from annotator.platform.jobs import ProgressFn, job_enqueue, job_progress
from annotator.platform.models import Job

from .embedding_storage import cache_pull, chunk_push, shared
from .models import Caption, Corpus, EmbeddingCache, Sample, Scorer
from .scorers import encode_images, encode_texts, scorer_load, scorer_weights_check
from .scorers.cache import cache_folder

IMAGE = EmbeddingCache.Modality.IMAGE
TEXT = EmbeddingCache.Modality.TEXT
EMBED_JOB = "curation.embed_corpus"
CHUNK_ROWS = 2048  # rows per chunk file
FLUSH_SECONDS = 60.0  # …or sooner, so a crash loses at most a minute of work
MAX_CHUNKS = 64  # more chunk files than this are merged at the end of a job
TMP_MAX_AGE = 3600.0  # leftovers of a crashed writer older than this are removed


class EmbeddingsMissing(LookupError):
    """Some requested ids have no cached embedding yet; the message says how to make them."""


# --------------------------------------------------------------------------------------------
# Chunks
# --------------------------------------------------------------------------------------------
def _save_atomic(path: Path, array: np.ndarray) -> None:
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.tmp")
    with open(tmp, "wb") as fh:
        np.save(fh, array)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def _write_chunk(folder: Path, vectors: np.ndarray, meta: np.ndarray, stem: str = "") -> str:
    folder.mkdir(parents=True, exist_ok=True)
    stem = stem or f"chunk-{time.time_ns():020d}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
    _save_atomic(folder / f"{stem}.npy", np.ascontiguousarray(vectors, dtype=np.float16))
    _save_atomic(folder / f"{stem}.ids.npy", np.ascontiguousarray(meta, dtype=np.int64))
    return stem


def _stems(folder: Path) -> tuple[str, ...]:
    if not folder.is_dir():
        return ()
    return tuple(sorted(p.name[: -len(".ids.npy")] for p in folder.glob("chunk-*.ids.npy")))


@dataclass
class _Index:
    stems: tuple[str, ...]
    ids: np.ndarray  # sorted unique item ids
    chunk: np.ndarray  # chunk number of each id (newest occurrence)
    row: np.ndarray  # row in that chunk
    tokens: np.ndarray
    text_hash: np.ndarray
    dim: int | None


_indexes: dict[str, _Index] = {}
_index_lock = threading.Lock()
_EMPTY = np.zeros(0, dtype=np.int64)


def _index(folder: Path) -> _Index:
    """Which ids the folder's chunks hold (cached per process until the chunk list changes)."""
    stems = _stems(folder)
    key = str(folder)
    with _index_lock:
        hit = _indexes.get(key)
        if hit is not None and hit.stems == stems:
            return hit
    if not stems:
        built = _Index(stems, _EMPTY, _EMPTY, _EMPTY, _EMPTY, _EMPTY, None)
    else:
        metas, chunks, rows, dim = [], [], [], None
        for c, stem in enumerate(stems):
            meta = np.load(folder / f"{stem}.ids.npy")
            if dim is None and len(meta):
                dim = int(np.load(folder / f"{stem}.npy", mmap_mode="r").shape[1])
            metas.append(meta)
            chunks.append(np.full(len(meta), c, dtype=np.int32))
            rows.append(np.arange(len(meta), dtype=np.int64))
        meta = np.concatenate(metas) if metas else np.zeros((0, 3), np.int64)
        chunk, row = np.concatenate(chunks), np.concatenate(rows)
        # Keep the newest occurrence of each id: unique over the reversed order.
        n = len(meta)
        ids_rev = meta[::-1, 0]
        uniq, first = np.unique(ids_rev, return_index=True)
        pick = n - 1 - first
        built = _Index(stems, uniq, chunk[pick], row[pick], meta[pick, 1], meta[pick, 2], dim)
    with _index_lock:
        _indexes[key] = built
    return built


def _lookup(idx: _Index, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Positions of ``ids`` in the index and a mask of which are present."""
    if not len(idx.ids):
        return np.zeros(len(ids), dtype=np.int64), np.zeros(len(ids), dtype=bool)
    pos = np.searchsorted(idx.ids, ids)
    pos = np.minimum(pos, len(idx.ids) - 1)
    return pos, idx.ids[pos] == ids


class _ChunkWriter:
    """Buffers encoded rows and writes a chunk every ``chunk_rows`` rows or ``FLUSH_SECONDS``."""

    def __init__(self, folder: Path, chunk_rows: int):
        self.folder, self.chunk_rows = folder, chunk_rows
        self.vectors: list[np.ndarray] = []
        self.metas: list[np.ndarray] = []
        self.rows = 0
        self.since = time.monotonic()
        self.written = 0

    def add(self, vectors: np.ndarray, meta: np.ndarray) -> None:
        if not self.rows:
            self.since = time.monotonic()
        self.vectors.append(vectors)
        self.metas.append(meta)
        self.rows += len(meta)
        if self.rows >= self.chunk_rows or time.monotonic() - self.since >= FLUSH_SECONDS:
            self.flush()

    def flush(self) -> None:
        if not self.rows:
            return
        stem = _write_chunk(self.folder, np.concatenate(self.vectors), np.concatenate(self.metas))
        if shared():  # workers on other machines: the job that fanned out reads it back
            chunk_push(self.folder, stem)
        self.written += self.rows
        self.vectors, self.metas, self.rows = [], [], 0


@dataclass
class _Lock:
    folder: Path

    def __enter__(self):
        self.folder.mkdir(parents=True, exist_ok=True)
        self.fh = open(self.folder / ".lock", "w")  # noqa: SIM115 - held until __exit__
        fcntl.flock(self.fh, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        fcntl.flock(self.fh, fcntl.LOCK_UN)
        self.fh.close()


def _tidy(folder: Path) -> None:
    """Under the folder lock: drop stale temporary files and vector files without an ids file
    (a crash between the two renames), then merge chunks when there are too many."""
    if not folder.is_dir():
        return
    with _Lock(folder):
        now = time.time()
        stems = set(_stems(folder))
        for p in folder.iterdir():
            old = now - p.stat().st_mtime > TMP_MAX_AGE
            if p.name.endswith(".tmp") and old:
                p.unlink(missing_ok=True)
            elif (
                p.name.startswith("chunk-")
                and p.name.endswith(".npy")
                and not p.name.endswith(".ids.npy")
                and p.name[: -len(".npy")] not in stems
                and old
            ):
                p.unlink(missing_ok=True)
        _compact(folder)


def _compact(folder: Path) -> None:
    idx = _index(folder)
    if len(idx.stems) <= MAX_CHUNKS:
        return
    vectors = _gather(folder, idx, np.arange(len(idx.ids)))
    meta = np.stack([idx.ids, idx.tokens, idx.text_hash], axis=1)
    # Named right after the newest chunk it contains so anything written meanwhile stays newer.
    _write_chunk(folder, vectors, meta, stem=f"{idx.stems[-1]}-m")
    for stem in idx.stems:
        (folder / f"{stem}.ids.npy").unlink(missing_ok=True)
        (folder / f"{stem}.npy").unlink(missing_ok=True)


def _gather(folder: Path, idx: _Index, pos: np.ndarray) -> np.ndarray:
    out = np.empty((len(pos), idx.dim or 0), dtype=np.float16)
    chunks, rows = idx.chunk[pos], idx.row[pos]
    for c in np.unique(chunks):
        mask = chunks == c
        vectors = np.load(folder / f"{idx.stems[c]}.npy", mmap_mode="r")
        out[mask] = vectors[rows[mask]]
    return out


def text_hash(text: str) -> int:
    """63-bit hash of a text (positive int64), to notice a caption whose text changed."""
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big") >> 1


# --------------------------------------------------------------------------------------------
# Reads
# --------------------------------------------------------------------------------------------
def embeddings_get(*, scorer: Scorer, modality: str, ids: Sequence[int]) -> np.ndarray:
    """Cached embeddings of ``ids`` in their order: float16 (len(ids), dim), L2-normalised.

    Raises ``EmbeddingsMissing`` naming how many ids (and a few of them) are not embedded yet.
    """
    folder = cache_folder(scorer, modality)
    wanted = np.asarray(ids, dtype=np.int64).reshape(-1)
    for attempt in range(3):
        try:
            idx = _index(folder)
            pos, present = _lookup(idx, wanted)
            if not present.all():
                raise _missing(scorer, modality, wanted, present)
            if idx.dim is None:  # nothing asked for from an empty cache
                return np.zeros((0, scorer.embed_dim or 0), dtype=np.float16)
            return _gather(folder, idx, pos)
        except FileNotFoundError:
            # Chunks were merged under us: forget the index and read again.
            with _index_lock:
                _indexes.pop(str(folder), None)
            if attempt == 2:
                raise
    raise AssertionError("unreachable")


def _missing(scorer: Scorer, modality: str, wanted: np.ndarray, present: np.ndarray):
    absent = wanted[~present]
    noun = "image" if str(modality) == IMAGE else "text"
    return EmbeddingsMissing(
        f"{len(absent)} of {len(wanted)} {noun} ids have no embedding from scorer "
        f"{scorer.label!r} (e.g. {', '.join(map(str, absent[:5].tolist()))}). Embed "
        f"their corpus first: the scorers page's Embed button, or "
        f"`manage.py embed --scorer {scorer.pk} --corpus <id>`."
    )


def embeddings_version(*, scorer: Scorer, modality: str) -> tuple[str, ...]:
    """The cache's chunk files: another value whenever an embedding is written, merged or
    cleared (what a process holding something made from the cache compares)."""
    return _stems(cache_folder(scorer, modality))


def embeddings_cached_ids(*, scorer: Scorer, modality: str) -> np.ndarray:
    """Sorted ids that have a cached embedding."""
    return _index(cache_folder(scorer, modality)).ids.copy()


def _unit(x: np.ndarray) -> np.ndarray:
    """float16 → float32, renormalised so S is exactly the cosine of the stored vectors."""
    x = x.astype(np.float32)
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)


def similarity(*, scorer: Scorer, image_ids: Sequence[int], text_ids: Sequence[int]) -> np.ndarray:
    """S(i, t): cosine of the cached embeddings, float32 (len(image_ids), len(text_ids))."""
    images = _unit(embeddings_get(scorer=scorer, modality=IMAGE, ids=image_ids))
    texts = _unit(embeddings_get(scorer=scorer, modality=TEXT, ids=text_ids))
    return images @ texts.T


# Text blocks are kept in memory across image blocks up to this many bytes (float32).
TEXT_BLOCKS_KEEP_BYTES = 512 * 1024 * 1024


def similarity_blocks(
    *, scorer: Scorer, image_ids: Sequence[int], text_ids: Sequence[int], block: int = 4096
) -> Iterator[tuple[int, int, np.ndarray]]:
    """S block by block, never the full matrix: yields ``(i0, j0, S[i0:i0+b, j0:j0+b])``,
    image blocks in the outer loop. All ids are checked before the first block is yielded."""
    if block < 1:
        raise ValueError("block must be at least 1")
    image_ids = np.asarray(image_ids, dtype=np.int64).reshape(-1)
    text_ids = np.asarray(text_ids, dtype=np.int64).reshape(-1)
    for modality, ids in ((IMAGE, image_ids), (TEXT, text_ids)):
        _, present = _lookup(_index(cache_folder(scorer, modality)), ids)
        if not present.all():
            raise _missing(scorer, modality, ids, present)
    dim = _index(cache_folder(scorer, TEXT)).dim or 0
    keep = len(text_ids) * dim * 4 <= TEXT_BLOCKS_KEEP_BYTES
    kept: dict[int, np.ndarray] = {}

    def text_block(j0: int) -> np.ndarray:
        if j0 in kept:
            return kept[j0]
        t = _unit(embeddings_get(scorer=scorer, modality=TEXT, ids=text_ids[j0 : j0 + block]))
        if keep:
            kept[j0] = t
        return t

    for i0 in range(0, len(image_ids), block):
        images = _unit(
            embeddings_get(scorer=scorer, modality=IMAGE, ids=image_ids[i0 : i0 + block])
        )
        for j0 in range(0, len(text_ids), block):
            yield i0, j0, images @ text_block(j0).T


# --------------------------------------------------------------------------------------------
# Writes
# --------------------------------------------------------------------------------------------
def embeddings_put(*, scorer: Scorer, modality: str, ids: Sequence[int], vectors) -> None:
    """Store vectors computed elsewhere (another machine, a benchmark) as one chunk of the
    cache, L2-normalised to float16 like every chunk; texts get no token count or hash."""
    vectors = np.asarray(vectors, dtype=np.float32)
    if vectors.ndim != 2 or len(vectors) != len(ids):
        raise ValueError("one row of vectors per id")
    vectors = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    meta = np.zeros((len(ids), 3), dtype=np.int64)
    meta[:, 0] = np.asarray(ids, dtype=np.int64)
    _write_chunk(cache_folder(scorer, modality), vectors, meta)


def cache_refresh(*, scorer: Scorer, modality: str) -> EmbeddingCache:
    """Bring the EmbeddingCache row in line with the files: path, count, dim, truncations."""
    folder = cache_folder(scorer, modality)
    idx = _index(folder)
    truncated = 0
    if str(modality) == TEXT and scorer.context_length:
        truncated = int((idx.tokens > scorer.context_length).sum())
    row, _ = EmbeddingCache.objects.update_or_create(
        scorer=scorer,
        modality=str(modality),
        defaults={
            "path": str(folder),
            "count": len(idx.ids),
            "dim": idx.dim,
            "truncated": truncated,
        },
    )
    return row


def _batches(items: list, size: int) -> Iterator[list]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _open_image(name: str):
    from PIL import Image as PILImage

    with default_storage.open(name, "rb") as fh:
        im = PILImage.open(fh)
        im.load()
    return im.convert("RGB")


@dataclass(frozen=True)
class EmbedPart:
    """One chunk of a corpus's embedding (``curation.embedding_chunks``): the items of one
    modality with ids in [first, last]."""

    modality: str
    first: int
    last: int


def _corpus_rows(corpus: Corpus, part: EmbedPart | None) -> tuple[list, list]:
    """(image id, file) and (caption id, text to embed) of the corpus, or of one part of it."""
    samples = Sample.objects.filter(corpus=corpus)
    captions = Caption.objects.filter(sample__corpus=corpus)
    if part is not None:
        images_wanted = str(part.modality) == IMAGE
        span = (part.first, part.last)
        samples = samples.filter(image__id__range=span) if images_wanted else samples.none()
        captions = captions.none() if images_wanted else captions.filter(id__range=span)
    image_rows = list(
        samples.order_by("image_id").values_list("image_id", "image__file").distinct()
    )
    caption_rows = [
        (cid, short or text)
        for cid, text, short in captions.order_by("id").values_list("id", "text", "short_text")
    ]
    return image_rows, caption_rows


def _todo(scorer: Scorer, image_rows: list, caption_rows: list) -> tuple[list, list, np.ndarray]:
    """The rows with no cached embedding (texts: or one of another text); the texts' hashes."""
    img_idx = _index(cache_folder(scorer, IMAGE))
    _, have = _lookup(img_idx, np.asarray([r[0] for r in image_rows], dtype=np.int64))
    todo_images = [r for r, h in zip(image_rows, have, strict=True) if not h]

    txt_idx = _index(cache_folder(scorer, TEXT))
    hashes = np.asarray([text_hash(t) for _, t in caption_rows], dtype=np.int64)
    pos, have = _lookup(txt_idx, np.asarray([r[0] for r in caption_rows], dtype=np.int64))
    if len(txt_idx.ids):
        have &= txt_idx.text_hash[pos] == hashes
    todo_texts = [
        (cid, text, h)
        for (cid, text), h, ok in zip(caption_rows, hashes.tolist(), have, strict=True)
        if not ok
    ]
    return todo_images, todo_texts, hashes


def embed_todo(*, scorer: Scorer, corpus: Corpus) -> tuple[list[int], list[int]]:
    """The corpus's image ids and caption ids that ``scorer`` has not embedded yet (sorted)."""
    for modality in (IMAGE, TEXT) if shared() else ():
        cache_pull(cache_folder(scorer, modality))
    image_rows, caption_rows = _corpus_rows(corpus, None)
    todo_images, todo_texts, _hashes = _todo(scorer, image_rows, caption_rows)
    return [r[0] for r in todo_images], [r[0] for r in todo_texts]


def embed_corpus(
    *,
    scorer: Scorer,
    corpus: Corpus,
    job_id: int | None = None,
    chunk_rows: int = CHUNK_ROWS,
    progress: ProgressFn | None = None,
    part: EmbedPart | None = None,
) -> dict:
    """Long because: one resumable pass over both modalities shares the loaded model, the chunk
    writer and the counters it returns; each modality's batches are read by small helpers.

    Embed the corpus's images (its samples' Image ids) and texts (Caption ids; ``short_text``
    when set, else ``text``) with ``scorer``, skipping what is cached. Resumable: run it again
    after a crash and it continues from the last chunk written. With ``part``, only that part
    (a chunk job's share): the cache is neither tidied nor counted, the job that fanned the
    parts out does that once at the end (``embed_finish``).

    Returns counts per modality, with texts cut at the model's context length and images that
    could not be read (skipped, listed by id).
    """
    loaded = scorer_load(scorer)  # raises ScorerUnavailable before anything is written
    n_ctx = loaded.context_length

    def report(done: int, total: int, message: str) -> None:
        if job_id is not None:
            job_progress(job_id=job_id, done=done, total=total, message=message)
        if progress is not None:
            progress(done, total, message)

    image_rows, caption_rows = _corpus_rows(corpus, part)
    image_folder, text_folder = cache_folder(scorer, IMAGE), cache_folder(scorer, TEXT)
    if part is None:
        for folder in (image_folder, text_folder):
            _tidy(folder)
    todo_images, todo_texts, hashes = _todo(scorer, image_rows, caption_rows)

    total = len(todo_images) + len(todo_texts)
    done = 0
    label = f"{scorer.label} · {corpus.name}"
    report(0, total, f"Embedding {len(todo_images)} images and {len(todo_texts)} texts ({label})")

    unreadable: list[dict] = []
    writer = _ChunkWriter(image_folder, chunk_rows)
    for batch in _batches(todo_images, scorer.batch_size):
        pictures, ids = [], []
        for image_id, name in batch:
            try:
                pictures.append(_open_image(name))
                ids.append(image_id)
            except Exception as exc:  # noqa: BLE001 - one unreadable file must not stop a corpus
                unreadable.append({"image_id": image_id, "file": name, "error": str(exc)[:200]})
        if pictures:
            vectors = encode_images(loaded, pictures)
            meta = np.zeros((len(ids), 3), dtype=np.int64)
            meta[:, 0] = ids
            writer.add(vectors.astype(np.float16), meta)
        done += len(batch)
        report(done, total, f"Images {done}/{len(todo_images)}")
    writer.flush()
    images_written = writer.written

    truncated_new = 0
    writer = _ChunkWriter(text_folder, chunk_rows)
    for batch in _batches(todo_texts, scorer.batch_size):
        vectors, counts = encode_texts(loaded, [t for _, t, _ in batch])
        meta = np.asarray([(cid, n, h) for (cid, _, h), n in zip(batch, counts, strict=True)])
        truncated_new += sum(1 for n in counts if n > n_ctx)
        writer.add(vectors.astype(np.float16), meta.reshape(-1, 3))
        done += len(batch)
        report(done, total, f"Texts {done - len(todo_images)}/{len(todo_texts)}")
    writer.flush()

    if part is None:
        image_cache, text_cache = embed_finish(scorer=scorer)
    else:
        image_cache = text_cache = EmbeddingCache(count=0, truncated=0)  # counted at the end
    txt_idx = _index(text_folder)
    pos, present = _lookup(txt_idx, np.asarray([r[0] for r in caption_rows], dtype=np.int64))
    corpus_truncated = int((txt_idx.tokens[pos[present]] > n_ctx).sum()) if len(pos) else 0
    message = (
        f"Embedded {images_written} images and {len(todo_texts)} texts"
        if total
        else f"Nothing new: all {len(image_rows)} images and {len(caption_rows)} texts were cached"
    )
    message += f"; {corpus_truncated} of {len(caption_rows)} texts cut at {n_ctx} tokens"
    if unreadable:
        message += f"; {len(unreadable)} images could not be read"
    report(total, total, message)
    return {
        "scorer_id": scorer.pk,
        "corpus_id": corpus.pk,
        "random_weights": scorer.random_weights,
        "context_length": n_ctx,
        "dim": loaded.embed_dim,
        "device": str(loaded.device),
        "images": {
            "total": len(image_rows),
            "embedded": images_written,
            "cached_before": len(image_rows) - len(todo_images),
            "unreadable": len(unreadable),
            "unreadable_items": unreadable[:50],
            "cache_count": image_cache.count,
        },
        "texts": {
            "total": len(caption_rows),
            "embedded": len(todo_texts),
            "cached_before": len(caption_rows) - len(todo_texts),
            "truncated": corpus_truncated,
            "truncated_new": truncated_new,
            "cache_count": text_cache.count,
            "cache_truncated": text_cache.truncated,
        },
    }


def embed_finish(*, scorer: Scorer) -> tuple[EmbeddingCache, EmbeddingCache]:
    """After every part is embedded: tidy the scorer's folders (merge small chunk files) and
    bring its two EmbeddingCache rows in line with them."""
    for modality in (IMAGE, TEXT):
        if shared():
            cache_pull(cache_folder(scorer, modality))
        _tidy(cache_folder(scorer, modality))
    with transaction.atomic():
        return cache_refresh(scorer=scorer, modality=IMAGE), cache_refresh(
            scorer=scorer, modality=TEXT
        )


def embed_corpus_start(*, scorer: Scorer, corpus: Corpus, created_by=None):
    """Start (or return the already queued or running) embedding job for (scorer, corpus).

    Refuses with ``ScorerUnavailable`` when the weights are missing, so no doomed job is queued.
    """
    scorer_weights_check(scorer)
    with transaction.atomic():
        running = (
            Job.objects.select_for_update()
            .filter(
                kind=EMBED_JOB,
                status__in=[Job.Status.QUEUED, Job.Status.RUNNING],
                params__scorer_id=scorer.pk,
                params__corpus_id=corpus.pk,
            )
            .first()
        )
        if running is not None:
            return running
        return job_enqueue(
            kind=EMBED_JOB,
            params={"scorer_id": scorer.pk, "corpus_id": corpus.pk},
            created_by=created_by,
            project=corpus.project,
        )
