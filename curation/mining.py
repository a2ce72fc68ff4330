"""NaturalBench step 1: confounding (mismatched) pairs of image-text samples, exact over all pairs.

naturalbench.txt Sec. 3 step 1, Eq. 1 (= App. A Eq. 3), METRICS.md Sec. 1 "Mining". Sample k of a
corpus is image k with its caption k; ``images`` and ``texts`` hold one scorer's embeddings with
row k = sample k, and S(i_a, t_b) = images[a] · texts[b]. For the pair {(i0, t0), (i1, t1)} of
samples i < j (i0 = image i, t0 = caption i, i1 = image j, t1 = caption j), Eq. 1 says the scorer
mismatches the pair iff

    S(i0,t0) < S(i0,t1)  or  S(i0,t0) < S(i1,t0)  or  S(i1,t1) < S(i0,t1)  or  S(i1,t1) < S(i1,t0)
    ⟺  max(S(i0,t1), S(i1,t0)) > min(S(i0,t0), S(i1,t1)).

Ties: Eq. 1 uses strict "<", so a wrong caption (or image) that scores exactly as high as the right
one is not a mismatch, and neither is the pair "correct" by the paper's definition (that needs
strict ">"). We follow Eq. 1 literally: ties never make a mismatch.

Exactness without an N×N matrix: the pairs are visited block by block (``block_pairs``). For an
upper-triangle block pair (a, b), a before b, two products give every S value of its pairs in one
layout (rows = block a, columns = block b): X = I_a·T_bᵀ holds S(i0, t1) and Y = T_a·I_bᵀ holds
S(i1, t0); a diagonal block needs one product, X = I_a·T_aᵀ, and Y = Xᵀ. So the work is exactly
the N² products of S = I·Tᵀ plus a few passes over each block (shared by worker threads), and
memory is a handful of block-sized buffers. S(i_k, t_k) is the row-wise dot product of the float32
rows, computed once per sample. Inputs of any float dtype (float16 memmaps from the embedding
cache included) are converted to float32 once per run (``mining_prepare``; chunks share it);
every S is a float32 product. Samples are visited in ascending S(i_k, t_k) of the first scorer,
which saves one pass per block pair and changes no result.

One random mismatch per sample (Sec. 3: "we randomly keep one mismatch per sample"): each sample
k with at least one mismatched partner (under every selected scorer) keeps the partner j whose key
``salt[k] XOR salt[j]`` is largest, where ``salt`` = ``sample_salts(n, seed)`` gives every sample a
distinct random 32-bit value. For a fixed k the keys of its candidates are distinct and uniformly
distributed, so k's partner is a uniform random choice among its mismatches; the choice depends
only on (seed, embeddings), not on the block size or the visiting order. The kept pairs are the
union of these choices as unordered pairs (i0 < i1; a pair chosen by both of its samples is kept
once), so every sample that has a mismatch appears in at least one kept pair.

Chunks: ``mining_chunk`` sweeps every ``n_chunks``-th block pair and returns each sample's best
(largest-key) partner among them; ``mining_reduce`` keeps the largest key per sample over all
chunks, so any split, in any order, on any number of workers gives ``mine_mismatches``' result.

The Flickr-Random baseline of App. B, Table 6 (a seeded random matching) is in
``curation.random_pairs``.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

DEFAULT_BLOCK = 2048  # 16 MB per float32 work array; BLAS runs at full speed at this size
CHUNK_ROWS = 128  # rows per pass over a block pair: a chunk's work arrays stay in cache
DIAGONAL_BLOCK = 512  # rows of the blocks that tile a diagonal block

Embeddings = tuple[np.ndarray, np.ndarray]  # (images, texts) of one scorer; row k = sample k
Progress = Callable[[int, int], None]  # (block pairs done, block pairs in all)


@dataclass(frozen=True)
class MinedPairs:
    """Kept pairs (i0 < i1, sorted) with their four S values per scorer.

    ``scores[p, s]`` = (S(i0,t0), S(i0,t1), S(i1,t0), S(i1,t1)) of pair p under scorer s.
    ``mismatched[p, s]`` says whether scorer s mismatches pair p by Eq. 1 (always True for mined
    pairs; the random baseline reports it for information). ``partner[k]`` is the partner sample k
    chose (-1: none). ``n_mismatched_pairs`` counts every unordered pair that all scorers
    mismatch, before one mismatch per sample is kept (None for the random baseline).
    """

    method: str  # "eq1" or "random"
    seed: int
    n_samples: int
    i0: np.ndarray
    i1: np.ndarray
    scores: np.ndarray
    mismatched: np.ndarray
    partner: np.ndarray
    n_mismatched_pairs: int | None

    def __len__(self) -> int:
        return len(self.i0)

    @property
    def n_samples_with_mismatch(self) -> int:
        return int(np.count_nonzero(self.partner >= 0))

    def digest(self) -> str:
        """A short hash of the kept pairs, every sample's partner, the mismatch count and the
        kept pairs' S values: equal digests, identical results."""
        h = hashlib.sha256()
        for part in (self.i0, self.i1, self.partner, self.scores):
            h.update(np.ascontiguousarray(part).tobytes())
        h.update(str(self.n_mismatched_pairs).encode())
        return h.hexdigest()[:16]

    def as_rows(self) -> list[dict]:
        """One dict per kept pair: i0, i1 and, per scorer, [S(i0,t0), S(i0,t1), S(i1,t0),
        S(i1,t1)] as Python floats (for JSON fields)."""
        return [
            {"i0": int(a), "i1": int(b), "scores": s.tolist(), "mismatched": m.tolist()}
            for a, b, s, m in zip(self.i0, self.i1, self.scores, self.mismatched, strict=True)
        ]


@dataclass(frozen=True)
class MiningChunk:
    """What one chunk of an Eq. 1 sweep returns: each sample that found a mismatched partner among
    the chunk's block pairs (``samples``), the partner of its largest key, that key, and the cross
    S values (S(i_k, t_p), S(i_p, t_k) per scorer); the diagonal S(i_k, t_k) per scorer and the
    number of mismatched pairs the chunk saw. O(N) however many pairs the chunk visits."""

    n_samples: int
    seed: int
    samples: np.ndarray  # int64 (m,)
    keys: np.ndarray  # uint32 (m,)
    partners: np.ndarray  # int64 (m,)
    cross: np.ndarray  # float32 (m, n_scorers, 2)
    diag: np.ndarray  # float32 (n_scorers, n)
    n_mismatched_pairs: int


def eq1_mismatch(s00, s01, s10, s11) -> np.ndarray:
    """Eq. 1 as written, elementwise: S(i0,t0), S(i0,t1), S(i1,t0), S(i1,t1) → mismatched."""
    s00, s01, s10, s11 = (np.asarray(v) for v in (s00, s01, s10, s11))
    return (s00 < s01) | (s00 < s10) | (s11 < s01) | (s11 < s10)


def sample_salts(n: int, seed: int) -> np.ndarray:
    """n distinct random uint32 values from ``seed``; the pair key of (k, j) is salt[k] ^ salt[j].

    Distinct salts make every key of a pair non-zero and the keys of one sample's candidates
    distinct, so "largest key" never ties.
    """
    if n > 2**31:
        raise ValueError("at most 2**31 samples")
    rng = np.random.default_rng(seed)
    salts = rng.integers(0, 2**32, size=n, dtype=np.uint32)
    while True:
        uniq, first = np.unique(salts, return_index=True)
        if len(uniq) == n:
            return salts
        duplicate = np.ones(n, dtype=bool)
        duplicate[first] = False
        salts[duplicate] = rng.integers(0, 2**32, size=int(duplicate.sum()), dtype=np.uint32)


def block_pairs(n: int, block: int) -> Iterator[tuple[int, int, int, int]]:
    """Upper-triangle block pairs (a0, a1, b0, b1), row-block by row-block: ranges [a0, a1) and
    [b0, b1) are equal (a diagonal block) or a1 <= b0. A diagonal block of ``block`` rows is
    itself tiled with blocks of at most DIAGONAL_BLOCK rows (the same products, but the transposed
    copy a diagonal block needs stays small)."""
    for a0 in range(0, n, block):
        a1 = min(a0 + block, n)
        inner = min(block, DIAGONAL_BLOCK)
        for c0 in range(a0, a1, inner):
            for d0 in range(c0, a1, inner):
                yield c0, min(c0 + inner, a1), d0, min(d0 + inner, a1)
        for b0 in range(a1, n, block):
            yield a0, a1, b0, min(b0 + block, n)


def check_inputs(scorers: Sequence[Embeddings]) -> int:
    if not scorers:
        raise ValueError("mining needs at least one scorer's embeddings")
    n = None
    for s, (images, texts) in enumerate(scorers):
        if images.ndim != 2 or texts.ndim != 2:
            raise ValueError(f"scorer {s}: embeddings must be 2-D (samples × dim)")
        if images.shape != texts.shape:
            raise ValueError(
                f"scorer {s}: images {images.shape} and texts {texts.shape} differ in shape; "
                "row k of both must be sample k"
            )
        if not (
            np.issubdtype(images.dtype, np.floating) and np.issubdtype(texts.dtype, np.floating)
        ):
            raise ValueError(f"scorer {s}: embeddings must be floating point")
        if n is None:
            n = images.shape[0]
        elif images.shape[0] != n:
            raise ValueError(f"scorer {s}: {images.shape[0]} samples, scorer 0 has {n}")
    return int(n or 0)


def check_groups(groups, n: int) -> np.ndarray | None:
    if groups is None:
        return None
    groups = np.asarray(groups)
    if groups.shape != (n,):
        raise ValueError(f"groups must hold one value per sample ({n}), got shape {groups.shape}")
    return groups


def as_float32(x, normalise: bool) -> np.ndarray:
    x = np.ascontiguousarray(x, dtype=np.float32)
    if normalise:  # the formula of curation.embeddings.similarity, so the vectors agree
        x = x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), np.float32(1e-12))
    return x


def _diagonal(images, texts, block: int, normalise: bool) -> np.ndarray:
    """S(i_k, t_k) for every sample, float32; refuses non-finite embeddings."""
    n = images.shape[0]
    d = np.empty(n, dtype=np.float32)
    for start in range(0, n, block):
        i = as_float32(images[start : start + block], normalise)
        t = as_float32(texts[start : start + block], normalise)
        d[start : start + len(i)] = np.einsum("ij,ij->i", i, t)
    bad = np.flatnonzero(~np.isfinite(d))
    if len(bad):
        shown = ", ".join(str(k) for k in bad[:5])
        raise ValueError(
            f"{len(bad)} sample(s) have non-finite embeddings (e.g. sample {shown}); "
            "embed them again before mining"
        )
    return d


@dataclass(frozen=True)
class Prepared:
    """The sweep's input, converted once: ``order`` (samples in ascending S(i_k, t_k) of the
    first scorer), every scorer's ``diag`` S(i_k, t_k) by sample, and per scorer the float32 rows
    (normalised when asked) in that order, ``rows[s] = (images, texts)`` with row p = sample
    order[p]. Arrays in memory or memory-mapped .npy files (``prepared_save``): every chunk of a
    mining run reads them as they are, converting nothing and computing no diagonal."""

    order: np.ndarray  # int64 (n,)
    diag: np.ndarray  # float32 (n_scorers, n), by sample
    rows: list[Embeddings]
    normalise: bool

    @property
    def n(self) -> int:
        return len(self.order)


def mining_prepare(
    scorers: Sequence[Embeddings], *, normalise: bool, folder=None, rows_at_once: int = 8192
) -> Prepared:
    """Convert the input once (``Prepared``); with ``folder`` (a directory), the float32 rows are
    written there as .npy files and memory-mapped (``prepared_load`` reads them back)."""
    n = check_inputs(scorers)
    diag = [_diagonal(i, t, rows_at_once, normalise) for i, t in scorers]
    order = np.argsort(diag[0], kind="stable") if n else np.zeros(0, np.int64)
    order = order.astype(np.int64)
    diag_all = np.stack(diag) if diag else np.zeros((0, n), np.float32)
    rows = []
    for s, (images, texts) in enumerate(scorers):
        pair = []
        for name, x in ((f"images-{s}", images), (f"texts-{s}", texts)):
            shape = (n, x.shape[1])
            if folder is None:
                out = np.empty(shape, np.float32)
            else:
                path = Path(folder) / f"{name}.npy"
                out = np.lib.format.open_memmap(path, "w+", np.float32, shape)
            for start in range(0, n, rows_at_once):
                out[start : start + rows_at_once] = as_float32(
                    x[order[start : start + rows_at_once]], normalise
                )
            if folder is not None:
                out.flush()
                del out
                out = np.load(Path(folder) / f"{name}.npy", mmap_mode="r")
            pair.append(out)
        rows.append((pair[0], pair[1]))
    prepared = Prepared(order=order, diag=diag_all, rows=rows, normalise=normalise)
    if folder is not None:
        for name in ("order", "diag"):  # + images-<s>, texts-<s> per scorer
            np.save(Path(folder) / f"{name}.npy", getattr(prepared, name))
    return prepared


def prepared_load(folder, *, n_scorers: int, normalise: bool) -> Prepared:
    """A ``Prepared`` written by ``mining_prepare(folder=...)``, its rows memory-mapped."""
    base = Path(folder)
    rows = [
        (
            np.load(base / f"images-{s}.npy", mmap_mode="r"),
            np.load(base / f"texts-{s}.npy", mmap_mode="r"),
        )
        for s in range(n_scorers)
    ]
    return Prepared(
        order=np.load(base / "order.npy"),
        diag=np.load(base / "diag.npy"),
        rows=rows,
        normalise=normalise,
    )


class _Work:
    """Flat work arrays sized for the largest block pair: a prefix reshaped to a smaller block
    pair is still C-contiguous, so one set serves every shape."""

    def __init__(self, block: int, n_scorers: int):
        size = block * block
        self.x = [np.empty(size, np.float32) for _ in range(n_scorers)]  # S(i0, t1)
        self.y = [np.empty(size, np.float32) for _ in range(n_scorers)]  # S(i1, t0)
        self.g = np.empty(size, np.float32)
        self.thr = np.empty(size, np.float32)
        self.m = np.empty(size, bool)
        self.ms = np.empty(size if n_scorers > 1 else 0, bool)
        self.key = np.empty(size, np.uint32)

    def shaped(self, rows: int, cols: int) -> dict[str, object]:
        def view(a):
            return a[: rows * cols].reshape(rows, cols)

        return {
            "x": [view(a) for a in self.x],
            "y": [view(a) for a in self.y],
            **{name: view(getattr(self, name)) for name in ("g", "thr", "m", "key")},
            "ms": view(self.ms) if len(self.ms) else None,
        }


def _row_parts(rows: int, threads: int) -> list[list[tuple[int, int]]]:
    """Chunks of CHUNK_ROWS rows, dealt in contiguous runs to at most ``threads`` workers."""
    chunks = [(r0, min(r0 + CHUNK_ROWS, rows)) for r0 in range(0, rows, CHUNK_ROWS)]
    edges = np.linspace(0, len(chunks), min(threads, len(chunks)) + 1).astype(int)
    return [chunks[e0:e1] for e0, e1 in zip(edges[:-1], edges[1:], strict=True)]


def mine_mismatches(
    scorers: Sequence[Embeddings],
    *,
    seed: int,
    block: int = DEFAULT_BLOCK,
    groups=None,
    normalise: bool = False,
    cache_bytes: int = 1 << 30,
    threads: int | None = None,
    progress: Progress | None = None,
) -> MinedPairs:
    """Every pair that all ``scorers`` mismatch (Eq. 1), one random mismatch kept per sample.

    ``scorers``: one ``(images, texts)`` per scorer, arrays or memmaps of shape (N, D_s), row k =
    sample k. ``groups`` (optional, one value per sample): samples of the same group are never
    paired (e.g. several captions of one image). ``normalise`` rescales every float32 row to unit
    length first (float16 storage moves norms by ~1e-3). The float32 rows stay in memory up to
    ``cache_bytes``, in memory-mapped temporary files beyond. ``threads`` (default: CPU count)
    share the passes over each block pair; the products use BLAS's own threads.
    ``progress(done, total)`` is called after each block pair."""
    n = check_inputs(scorers)
    size = 4 * n * sum(i.shape[1] + t.shape[1] for i, t in scorers)
    sweep = dict(seed=seed, block=block, groups=groups, threads=threads, progress=progress)
    if size <= cache_bytes:
        prepared = mining_prepare(scorers, normalise=normalise)
        return mining_reduce([_sweep(prepared, **sweep)])
    with tempfile.TemporaryDirectory(prefix="blindspot-mining-") as folder:
        prepared = mining_prepare(scorers, normalise=normalise, folder=folder)
        return mining_reduce([_sweep(prepared, **sweep)])


def mining_chunk(
    scorers: Sequence[Embeddings] | Prepared,
    *,
    seed: int,
    chunk: int,
    n_chunks: int,
    block: int = DEFAULT_BLOCK,
    groups=None,
    normalise: bool = False,
    threads: int | None = None,
    progress: Progress | None = None,
) -> MiningChunk:
    """Chunk ``chunk`` of ``n_chunks`` of ``mine_mismatches`` (same arguments): the upper-triangle
    block pairs whose index ≡ chunk (mod n_chunks), so every chunk gets a share of the diagonal and
    of the long rows. Any worker can run a chunk; ``mining_reduce`` of all of them (in any order)
    equals ``mine_mismatches`` exactly, because each sample keeps the partner of largest key
    ``salt[k] ^ salt[j]`` and a maximum does not depend on how the pairs were split. ``scorers``
    may be the run's ``Prepared`` input (``mining_prepare``, once for all chunks; ``normalise``
    is then the one it was prepared with)."""
    if n_chunks < 1:
        raise ValueError("n_chunks must be at least 1")
    if not 0 <= chunk < n_chunks:
        raise ValueError(f"chunk must be in 0…{n_chunks - 1}")
    if isinstance(scorers, Prepared):
        prepared = scorers
    else:
        prepared = mining_prepare(scorers, normalise=normalise)
    return _sweep(
        prepared,
        seed=seed,
        block=block,
        groups=groups,
        threads=threads,
        progress=progress,
        select=lambda index: index % n_chunks == chunk,
    )


def mining_reduce(chunks: Sequence[MiningChunk]) -> MinedPairs:
    """The kept pairs from every chunk of one mining run: per sample, the partner of the
    largest key over all chunks (Sec. 3, one random mismatch per sample), then ``_assemble``."""
    if not chunks:
        raise ValueError("no chunks to reduce")
    n, seed = chunks[0].n_samples, chunks[0].seed
    if any((c.n_samples, c.seed) != (n, seed) for c in chunks):
        raise ValueError("the chunks come from different corpora or seeds")
    samples = np.concatenate([c.samples for c in chunks])
    keys = np.concatenate([c.keys for c in chunks])
    partners = np.concatenate([c.partners for c in chunks])
    cross = np.concatenate([c.cross for c in chunks])
    # Largest key last within each sample (keys of one sample are distinct: distinct partners).
    by = np.lexsort((keys, samples))
    last = np.ones(len(by), dtype=bool)
    last[:-1] = samples[by][1:] != samples[by][:-1]
    pick = by[last]
    partner = np.full(n, -1, dtype=np.int64)
    partner[samples[pick]] = partners[pick]
    n_scorers = chunks[0].diag.shape[0]
    cross_by_sample = np.zeros((n, n_scorers, 2), dtype=np.float32)
    cross_by_sample[samples[pick]] = cross[pick]
    n_pairs = sum(c.n_mismatched_pairs for c in chunks)
    return _assemble(n, seed, partner, cross_by_sample, list(chunks[0].diag), n_pairs)


def _sweep(
    prepared: Prepared,
    *,
    seed: int,
    block: int,
    groups,
    threads: int | None,
    progress: Progress | None,
    select: Callable[[int], bool] | None = None,
) -> MiningChunk:
    """Long because: the block-pair sweep of Eq. 1 keeps its thread pool and per-row reservoir
    state in one place. The sweep over the block pairs ``select`` admits (all by default); its
    per-sample best partners, compactly."""
    if block < 1:
        raise ValueError("block must be a positive number of rows")
    n = prepared.n
    groups = check_groups(groups, n)
    block = min(block, max(n, 1))
    threads = max(1, threads or os.cpu_count() or 1)
    n_scorers = len(prepared.rows)
    salts = sample_salts(n, seed)

    # Samples are visited in ascending S(i_k, t_k) of the first scorer (``prepared.order``):
    # then for block a < block b, min(S(i0,t0), S(i1,t1)) is the row's own S and Eq. 1 for that
    # scorer is one comparison with a broadcast column (no threshold matrix). Keys stay
    # salt[k] ^ salt[j] of the samples, so the order changes no result. Everything below is
    # indexed by position in this order.
    order = prepared.order
    d = [x[order] for x in prepared.diag]
    salt = salts[order]
    group = None if groups is None else groups[order]

    best_key = np.zeros(n, dtype=np.uint32)  # 0 = no partner yet; real keys are never 0
    partner = np.full(n, -1, dtype=np.int64)
    cross = np.zeros((n, n_scorers, 2), dtype=np.float32)  # S(i_k, t_p), S(i_p, t_k)
    n_pairs = 0
    work = _Work(block, n_scorers)
    schedule = [
        bp for index, bp in enumerate(block_pairs(n, block)) if select is None or select(index)
    ]
    total = len(schedule)
    pool = ThreadPoolExecutor(max_workers=threads - 1) if threads > 1 else None

    def rows_pass(buf, a0, a1, b0, b1, r0, r1):
        """Eq. 1 and the keys for rows r0:r1 of one block pair (runs in a worker thread)."""
        same = a0 == b0
        rows = slice(r0, r1)
        m = buf["m"][rows]
        for s in range(n_scorers):
            x, y = buf["x"][s], buf["y"][s]
            if same:  # Y = Xᵀ, copied in tiles (a whole strided transpose is cache-hostile)
                for c0 in range(0, b1 - b0, 256):
                    y[rows, c0 : c0 + 256] = x[c0 : c0 + 256, rows].T
            g = buf["g"][rows]
            np.maximum(x[rows], y[rows], out=g)
            target = m if s == 0 else buf["ms"][rows]
            if s == 0 and not same:  # sorted by d[0]: the row's own S is the minimum
                np.greater(g, d[0][a0 + r0 : a0 + r1, None], out=target)  # Eq. 1, strict
            else:
                thr = buf["thr"][rows]
                np.minimum(d[s][a0 + r0 : a0 + r1, None], d[s][None, b0:b1], out=thr)
                np.greater(g, thr, out=target)  # Eq. 1, strict
            if s:
                np.logical_and(m, target, out=m)
        if group is not None:
            np.logical_and(m, group[a0 + r0 : a0 + r1, None] != group[None, b0:b1], out=m)
        if same:
            m[np.arange(r1 - r0), np.arange(r0, r1)] = False
        count = int(np.count_nonzero(m))
        key = buf["key"][rows]
        np.bitwise_xor(salt[a0 + r0 : a0 + r1, None], salt[None, b0:b1], out=key)
        np.multiply(key, m, out=key)  # non-mismatches get key 0, below every real key
        col = key.argmax(axis=1)
        found = key[np.arange(r1 - r0), col]
        top = None if same else key.max(axis=0)
        return count, col, found, top

    try:
        for done, (a0, a1, b0, b1) in enumerate(schedule, start=1):
            same = a0 == b0
            buf = work.shaped(a1 - a0, b1 - b0)
            for s, (images, texts) in enumerate(prepared.rows):
                images_a, texts_a = images[a0:a1], texts[a0:a1]
                if same:
                    np.matmul(images_a, texts_a.T, out=buf["x"][s])
                else:
                    images_b, texts_b = images[b0:b1], texts[b0:b1]
                    np.matmul(images_a, texts_b.T, out=buf["x"][s])
                    np.matmul(texts_a, images_b.T, out=buf["y"][s])
            runs = _row_parts(a1 - a0, threads)

            def run(chunks, buf=buf, a0=a0, a1=a1, b0=b0, b1=b1):
                return [rows_pass(buf, a0, a1, b0, b1, r0, r1) for r0, r1 in chunks]

            # The calling thread takes the first run itself: one hand-off fewer per block pair.
            futures = [pool.submit(run, chunks) for chunks in runs[1:]] if pool else []
            parts = run(runs[0])
            for future in futures:
                parts += future.result()
            count = sum(p[0] for p in parts)
            n_pairs += count // 2 if same else count

            # Positions of block a choose among block b (and, on the diagonal, among block a).
            col = np.concatenate([p[1] for p in parts])
            found = np.concatenate([p[2] for p in parts])
            better = np.flatnonzero(found > best_key[a0:a1])
            if len(better):
                c = col[better]
                best_key[a0 + better] = found[better]
                partner[a0 + better] = b0 + c
                for s in range(n_scorers):
                    cross[a0 + better, s, 0] = buf["x"][s][better, c]
                    cross[a0 + better, s, 1] = buf["y"][s][better, c]
            if not same:
                # Positions of block b choose among block a; the row comes back from the key.
                top = np.maximum.reduce([p[3] for p in parts])
                better = np.flatnonzero(top > best_key[b0:b1])
                if len(better):
                    want = top[better] ^ salt[b0 + better]
                    salt_a = salt[a0:a1]
                    by_salt = np.argsort(salt_a)
                    r = by_salt[np.searchsorted(salt_a, want, sorter=by_salt)]
                    best_key[b0 + better] = top[better]
                    partner[b0 + better] = a0 + r
                    for s in range(n_scorers):
                        cross[b0 + better, s, 0] = buf["y"][s][r, better]
                        cross[b0 + better, s, 1] = buf["x"][s][r, better]
            if progress is not None:
                progress(done, total)
    finally:
        if pool is not None:
            pool.shutdown()

    # Back from positions to samples: the rows that found a partner, compactly.
    chosen = np.flatnonzero(partner >= 0)
    return MiningChunk(
        n_samples=n,
        seed=seed,
        samples=order[chosen].astype(np.int64),
        keys=best_key[chosen],
        partners=order[partner[chosen]].astype(np.int64),
        cross=cross[chosen],
        diag=prepared.diag,
        n_mismatched_pairs=n_pairs,
    )


def _assemble(n, seed, partner, cross, diag, n_pairs) -> MinedPairs:
    k = np.flatnonzero(partner >= 0)
    p = partner[k]
    first = k < p
    i0 = np.where(first, k, p)
    i1 = np.where(first, p, k)
    code = i0 * n + i1
    _, keep = np.unique(code, return_index=True)  # sorted by (i0, i1); duplicates agree
    k, p, first, i0, i1 = k[keep], p[keep], first[keep], i0[keep], i1[keep]
    n_scorers = cross.shape[1]
    scores = np.empty((len(k), n_scorers, 4), dtype=np.float32)
    for s in range(n_scorers):
        s_kp, s_pk = cross[k, s, 0], cross[k, s, 1]
        scores[:, s, 0] = diag[s][i0]
        scores[:, s, 1] = np.where(first, s_kp, s_pk)  # S(i0, t1)
        scores[:, s, 2] = np.where(first, s_pk, s_kp)  # S(i1, t0)
        scores[:, s, 3] = diag[s][i1]
    return MinedPairs(
        method="eq1",
        seed=seed,
        n_samples=n,
        i0=i0.astype(np.int64),
        i1=i1.astype(np.int64),
        scores=scores,
        mismatched=np.ones((len(k), n_scorers), dtype=bool),
        partner=partner,
        n_mismatched_pairs=n_pairs,
    )
