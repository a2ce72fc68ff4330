"""Approximate Eq. 1 mining for very large corpora (issue 25; naturalbench.txt Sec. 3 step 1).

Exact mining (``curation.mining``) visits all N² pairs: at N = 1M that is ~1.5 PFLOP at D = 768.
Here each sample's candidates are its ``k`` nearest neighbours by image–image and by text–text
cosine similarity of every scorer (FAISS: an exact flat index below ``flat_below`` samples, an
inverted-file index with float16 codes above, on the GPU when FAISS has one), and Eq. 1 is checked
exactly on the candidate pairs only, with the S values of the exact miner (float32 rows normalised
the same way, S(i_k, t_k) the same row-wise products). So every pair it keeps is a true mismatch;
what it can miss is a mismatched pair whose samples are not near neighbours in either modality.
Its recall against the exact miner is measured by ``benchmarks/scale.py``.

One mismatch per sample is kept by the exact miner's rule (the partner of largest key
``salt[k] ^ salt[j]``, ``mining.sample_salts``), among the mismatches found: the result equals the
exact miner's whenever the candidates hold all of a sample's mismatches.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

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
METHOD = "eq1_ann"


def _gpu(index):
    """The index on every GPU FAISS sees (a GPU build of FAISS on a GPU worker), else itself."""
    if hasattr(faiss, "get_num_gpus") and faiss.get_num_gpus() > 0:
        return faiss.index_cpu_to_all_gpus(index)
    return index


def ivf_lists(n: int) -> int:
    """Inverted lists for n vectors: ~4·√n (FAISS's guidance), at least 1."""
    return max(1, min(n // 39, int(4 * np.sqrt(n))))


def neighbours(
    x, *, k: int, nprobe: int = 16, flat_below: int = FLAT_BELOW, seed: int = 0
) -> np.ndarray:
    """The ``k`` nearest rows of every row of ``x`` (N × D, any float dtype) by cosine, itself
    left out: int64 (N, k), -1 where fewer were found."""
    n, d = x.shape
    k = max(1, min(k, n - 1))
    if n <= flat_below:
        index = faiss.IndexFlatIP(d)
    else:
        nlist = ivf_lists(n)
        index = faiss.IndexIVFScalarQuantizer(
            faiss.IndexFlatIP(d),
            d,
            nlist,
            faiss.ScalarQuantizer.QT_fp16,
            faiss.METRIC_INNER_PRODUCT,
        )
        # 40 training points a list (FAISS warns below 39): k-means is most of the time at 1M
        train = np.sort(np.random.default_rng(seed).choice(n, min(n, 40 * nlist), replace=False))
        index.train(as_float32(x[train], normalise=True))
        index.nprobe = nprobe
    index = _gpu(index)
    for start in range(0, n, ROWS):
        index.add(as_float32(x[start : start + ROWS], normalise=True))
    out = np.empty((n, k), dtype=np.int64)
    for start in range(0, n, ROWS):
        _scores, found = index.search(as_float32(x[start : start + ROWS], normalise=True), k + 1)
        rows = np.arange(start, start + len(found))[:, None]
        found = np.where(found == rows, -1, found)  # itself: not a candidate
        # keep the first k that are not itself, in order
        order = np.argsort(found == -1, axis=1, kind="stable")[:, :k]
        out[start : start + len(found)] = np.take_along_axis(found, order, axis=1)
    return out


def candidate_pairs(
    scorers: Sequence[Embeddings], *, k: int, nprobe: int = 16, flat_below: int = FLAT_BELOW
) -> tuple[np.ndarray, np.ndarray]:
    """Unordered candidate pairs (a < b, sorted, distinct): every sample with its k nearest by
    image and by text, of every scorer."""
    n = check_inputs(scorers)
    codes = []
    for images, texts in scorers:
        for x in (images, texts):
            nb = neighbours(x, k=k, nprobe=nprobe, flat_below=flat_below)
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


def _rows_dot(x, y, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """x[a[p]] · y[b[p]] for every p, float32 rows normalised as the exact miner's. Each row is
    converted once per slice (pairs come sorted by their first sample, so that side repeats)."""
    out = np.empty(len(a), dtype=np.float32)
    for start in range(0, len(a), ROWS):
        aa, bb = a[start : start + ROWS], b[start : start + ROWS]
        ua, ia = np.unique(aa, return_inverse=True)
        ub, ib = np.unique(bb, return_inverse=True)
        xa, yb = as_float32(x[ua], True)[ia], as_float32(y[ub], True)[ib]
        out[start : start + len(aa)] = np.einsum("ij,ij->i", xa, yb)
    return out


def mine_approximate(
    scorers: Sequence[Embeddings],
    *,
    seed: int,
    k: int = DEFAULT_K,
    groups=None,
    nprobe: int = 16,
    flat_below: int = FLAT_BELOW,
) -> MinedPairs:
    """Eq. 1 mismatches among each sample's nearest neighbours, one random mismatch kept per
    sample (``mine_mismatches``' arguments; the embeddings are always normalised). Its
    ``n_mismatched_pairs`` counts the mismatched pairs found (a lower bound of the exact count)."""
    n = check_inputs(scorers)
    groups = check_groups(groups, n)
    a, b = candidate_pairs(scorers, k=k, nprobe=nprobe, flat_below=flat_below)
    if groups is not None:
        apart = groups[a] != groups[b]
        a, b = a[apart], b[apart]
    diag = np.stack([_diagonal(i, t) for i, t in scorers]) if n else np.zeros((0, 0), np.float32)
    mismatched = np.ones(len(a), dtype=bool)
    cross = np.empty((len(a), len(scorers), 2), dtype=np.float32)
    for s, (images, texts) in enumerate(scorers):
        s01 = _rows_dot(images, texts, a, b)  # S(i0, t1)
        s10 = _rows_dot(images, texts, b, a)  # S(i1, t0)
        cross[:, s, 0], cross[:, s, 1] = s01, s10
        s00, s11 = diag[s][a], diag[s][b]
        mismatched &= (s00 < s01) | (s00 < s10) | (s11 < s01) | (s11 < s10)  # Eq. 1, strict
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
