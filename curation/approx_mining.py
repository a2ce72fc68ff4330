"""Approximate Eq. 1 mining for very large corpora (issue 25; naturalbench.txt Sec. 3 step 1).

Exact mining (``curation.mining``) visits all N² pairs: at N = 1M that is ~1.5 PFLOP at D = 768.
Here each sample's candidates are its ``k`` nearest neighbours by image–image and by text–text
cosine similarity of every scorer (FAISS: an exact flat index below ``flat_below`` samples, an
inverted-file index with 8-bit codes above, on the GPU when FAISS has one), and Eq. 1 is checked
exactly on the candidate pairs only, with the S values of the exact miner (float32 rows normalised
the same way, S(i_k, t_k) the same row-wise products). So every pair it keeps is a true mismatch;
what it can miss is a mismatched pair whose samples are not near neighbours in either modality.
Its recall against the exact miner is measured by ``benchmarks/scale.py``.

One mismatch per sample is kept by the exact miner's rule (the partner of largest key
``salt[k] ^ salt[j]``, ``mining.sample_salts``), among the mismatches found: the result equals the
exact miner's whenever the candidates hold all of a sample's mismatches.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

import faiss
import numpy as np

from .mining import (
    Embeddings,
    MinedPairs,
    MiningChunk,
    as_float32,
    check_groups,
    check_inputs,
    mining_reduce,
    sample_salts,
)

DEFAULT_K = 16  # neighbours per sample and modality
FLAT_BELOW = 20_000  # exact (flat) neighbour search up to this many samples
ROWS = 32_768  # rows converted to float32 at a time (adding, searching, checking pairs)
PIECE = 1024  # candidate pairs multiplied at a time (their rows stay in the cache)
METHOD = "eq1_ann"


def _gpu(index):
    """The index on every GPU FAISS sees (a GPU build of FAISS on a GPU worker), else itself."""
    if hasattr(faiss, "get_num_gpus") and faiss.get_num_gpus() > 0:
        return faiss.index_cpu_to_all_gpus(index)
    return index


@contextlib.contextmanager
def faiss_threads(threads: int | None):
    """FAISS's OpenMP threads for a block (``None``: its default, every core), restored after."""
    if not threads:
        yield
        return
    before = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(int(threads))
    try:
        yield
    finally:
        faiss.omp_set_num_threads(before)


def ivf_lists(n: int) -> int:
    """Inverted lists for n vectors: ~4·√n (FAISS's guidance), at least 1."""
    return max(1, min(n // 39, int(4 * np.sqrt(n))))


def _blocks(n: int) -> range:
    return range(0, n, ROWS)


def _without_itself(found: np.ndarray, start: int, k: int) -> np.ndarray:
    """The first k neighbours of rows start… that are not the row itself, in order."""
    rows = np.arange(start, start + len(found))[:, None]
    found = np.where(found == rows, -1, found)
    order = np.argsort(found == -1, axis=1, kind="stable")[:, :k]
    return np.take_along_axis(found, order, axis=1)


def neighbours(
    x,
    *,
    k: int,
    nprobe: int = 16,
    flat_below: int = FLAT_BELOW,
    seed: int = 0,
    threads: int | None = None,
    progress: Callable[[int], None] | None = None,
) -> np.ndarray:
    """The ``k`` nearest rows of every row of ``x`` (N × D, any float dtype) by cosine, itself
    left out: int64 (N, k), -1 where fewer were found. ``progress(steps)`` is called after each
    of its ``neighbour_steps(n, flat_below)`` steps; ``threads``: FAISS's (default: every core)."""
    n, d = x.shape
    k = max(1, min(k, n - 1))
    tick = progress or (lambda _steps: None)
    out = np.empty((n, k), dtype=np.int64)
    with faiss_threads(threads):
        if n <= flat_below:
            index = _gpu(faiss.IndexFlatIP(d))
            for start in _blocks(n):
                index.add(as_float32(x[start : start + ROWS], normalise=True))
            tick(1 + len(_blocks(n)))
            for start in _blocks(n):
                _s, found = index.search(as_float32(x[start : start + ROWS], True), k + 1)
                out[start : start + len(found)] = _without_itself(found, start, k)
                tick(1)
            return out
        nlist = ivf_lists(n)
        index = faiss.IndexIVFScalarQuantizer(
            faiss.IndexFlatIP(d),
            d,
            nlist,
            faiss.ScalarQuantizer.QT_8bit,
            faiss.METRIC_INNER_PRODUCT,
        )
        # 40 training points a list (FAISS warns below 39)
        train = np.sort(np.random.default_rng(seed).choice(n, min(n, 40 * nlist), replace=False))
        index.train(as_float32(x[train], normalise=True))
        index.nprobe = nprobe
        tick(1)
        device = _gpu(index)
        if device is not index:  # a GPU index: FAISS assigns the lists itself
            for start in _blocks(n):
                device.add(as_float32(x[start : start + ROWS], normalise=True))
                tick(1)
            for start in _blocks(n):
                _s, found = device.search(as_float32(x[start : start + ROWS], True), k + 1)
                out[start : start + len(found)] = _without_itself(found, start, k)
                tick(1)
            return out
        # The rows are both the corpus and the queries: each row's nprobe nearest lists are
        # found once (the coarse quantizer's products, a third of the time at 1M), the first
        # one files it, all of them are where it is searched.
        coarse = []
        for start in _blocks(n):
            rows = as_float32(x[start : start + ROWS], normalise=True)
            lists_d, lists = index.quantizer.search(rows, nprobe)
            ids = np.arange(start, start + len(rows), dtype=np.int64)
            first = np.ascontiguousarray(lists[:, 0])
            index.add_core(
                len(rows), faiss.swig_ptr(rows), faiss.swig_ptr(ids), faiss.swig_ptr(first)
            )
            coarse.append((lists_d, lists))
            tick(1)
        # search() splits its queries over the threads itself (parallel mode 0); called
        # directly, search_preassigned does so only in mode 3 (queries over the threads)
        index.parallel_mode = 3
        for b, start in enumerate(_blocks(n)):
            lists_d, lists = coarse[b]
            coarse[b] = None
            rows = as_float32(x[start : start + ROWS], normalise=True)
            _s, found = index.search_preassigned(rows, k + 1, lists, lists_d)
            out[start : start + len(found)] = _without_itself(found, start, k)
            tick(1)
    return out


def neighbour_steps(n: int) -> int:
    """How many steps ``neighbours`` reports for n rows (its progress's total)."""
    return 1 + 2 * len(_blocks(n))


def candidate_pairs(
    scorers: Sequence[Embeddings],
    *,
    k: int,
    nprobe: int = 16,
    flat_below: int = FLAT_BELOW,
    threads: int | None = None,
    progress: Callable[[int], None] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Unordered candidate pairs (a < b, sorted, distinct): every sample with its k nearest by
    image and by text, of every scorer (``2 · len(scorers) · neighbour_steps(n)`` steps)."""
    n = check_inputs(scorers)
    codes = []
    for images, texts in scorers:
        for x in (images, texts):
            nb = neighbours(
                x, k=k, nprobe=nprobe, flat_below=flat_below, threads=threads, progress=progress
            )
            a = np.repeat(np.arange(n, dtype=np.int64), nb.shape[1])
            b = nb.reshape(-1)
            keep = b >= 0
            a, b = a[keep], b[keep]
            codes.append(np.minimum(a, b) * n + np.maximum(a, b))
    code = np.unique(np.concatenate(codes)) if codes else np.zeros(0, np.int64)
    return code // max(n, 1), code % max(n, 1)


def _diagonal(images, texts) -> np.ndarray:
    """S(i_k, t_k), as the exact miner computes it."""
    d = np.empty(images.shape[0], dtype=np.float32)
    for start in range(0, len(d), ROWS):
        i = as_float32(images[start : start + ROWS], True)
        t = as_float32(texts[start : start + ROWS], True)
        d[start : start + len(i)] = np.einsum("ij,ij->i", i, t)
    return d


def _cross(
    images, texts, a: np.ndarray, b: np.ndarray, threads: int | None
) -> tuple[np.ndarray, np.ndarray]:
    """S(i_a, t_b) and S(i_b, t_a) of every candidate pair, float32 rows normalised as the exact
    miner's. Pairs come sorted by ``a``: a slice's few ``a`` rows are converted once, its ``b``
    rows in pair order, and the products taken in cache-sized pieces; slices run on ``threads``
    threads (numpy releases the GIL in the conversions and products)."""
    s01 = np.empty(len(a), dtype=np.float32)
    s10 = np.empty(len(a), dtype=np.float32)

    def one(start: int) -> None:
        aa, bb = a[start : start + ROWS], b[start : start + ROWS]
        ua, ia = np.unique(aa, return_inverse=True)
        i_a, t_a = as_float32(images[ua], True), as_float32(texts[ua], True)
        i_b, t_b = as_float32(images[bb], True), as_float32(texts[bb], True)
        for p in range(0, len(aa), PIECE):
            q, rows = slice(p, p + PIECE), ia[p : p + PIECE]
            s01[start + p : start + p + len(rows)] = np.einsum("ij,ij->i", i_a[rows], t_b[q])
            s10[start + p : start + p + len(rows)] = np.einsum("ij,ij->i", i_b[q], t_a[rows])

    with ThreadPoolExecutor(max_workers=max(1, threads or os.cpu_count() or 1)) as pool:
        list(pool.map(one, range(0, len(a), ROWS)))
    return s01, s10


def mine_approximate(
    scorers: Sequence[Embeddings],
    *,
    seed: int,
    k: int = DEFAULT_K,
    groups=None,
    nprobe: int = 16,
    flat_below: int = FLAT_BELOW,
    threads: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> MinedPairs:
    """Eq. 1 mismatches among each sample's nearest neighbours, one random mismatch kept per
    sample (``mine_mismatches``' arguments; the embeddings are always normalised). Its
    ``n_mismatched_pairs`` counts the mismatched pairs found (a lower bound of the exact count).
    ``progress(done, total)`` after each step (blocks of neighbour search, then each scorer's
    Eq. 1 check); ``threads``: FAISS's and the check's (default: every core)."""
    n = check_inputs(scorers)
    groups = check_groups(groups, n)
    total = len(scorers) * (2 * neighbour_steps(n) + 1)
    done = 0

    def tick(steps: int) -> None:
        nonlocal done
        done += steps
        if progress:
            progress(done, total)

    a, b = candidate_pairs(
        scorers, k=k, nprobe=nprobe, flat_below=flat_below, threads=threads, progress=tick
    )
    if groups is not None:
        apart = groups[a] != groups[b]
        a, b = a[apart], b[apart]
    diag = np.stack([_diagonal(i, t) for i, t in scorers]) if n else np.zeros((0, 0), np.float32)
    mismatched = np.ones(len(a), dtype=bool)
    cross = np.empty((len(a), len(scorers), 2), dtype=np.float32)
    for s, (images, texts) in enumerate(scorers):
        s01, s10 = _cross(images, texts, a, b, threads)  # S(i0, t1), S(i1, t0)
        cross[:, s, 0], cross[:, s, 1] = s01, s10
        s00, s11 = diag[s][a], diag[s][b]
        mismatched &= (s00 < s01) | (s00 < s10) | (s11 < s01) | (s11 < s10)  # Eq. 1, strict
        tick(1)
    a, b, cross = a[mismatched], b[mismatched], cross[mismatched]
    salts = sample_salts(n, seed)
    keys = salts[a] ^ salts[b]
    # Both samples of a pair may choose it: (a chooses b) with (S(i_a,t_b), S(i_b,t_a)), and
    # (b chooses a) with the two swapped.
    chunk = MiningChunk(
        n_samples=n,
        seed=seed,
        samples=np.concatenate([a, b]),
        keys=np.concatenate([keys, keys]),
        partners=np.concatenate([b, a]),
        cross=np.concatenate([cross, cross[:, :, ::-1]]),
        diag=diag,
        n_mismatched_pairs=len(a),
    )
    return dataclasses.replace(mining_reduce([chunk]), method=METHOD)
