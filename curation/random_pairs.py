"""The Flickr-Random baseline (naturalbench.txt App. B, Table 6): a seeded random matching of a
corpus's samples, with each pair's four scores S(i0,t0), S(i0,t1), S(i1,t0), S(i1,t1) and its Eq. 1
verdict under every scorer given (``curation.mining`` holds Eq. 1 itself and the exact miner)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .mining import Embeddings, MinedPairs, as_float32, check_groups, check_inputs, eq1_mismatch


def pair_scores(scorers: Sequence[Embeddings], i0, i1, *, normalise: bool = False, chunk=65536):
    """(len(i0), n_scorers, 4) float32: S(i0,t0), S(i0,t1), S(i1,t0), S(i1,t1) of given pairs."""
    i0, i1 = np.asarray(i0, dtype=np.int64), np.asarray(i1, dtype=np.int64)
    out = np.empty((len(i0), len(scorers), 4), dtype=np.float32)
    for s, (images, texts) in enumerate(scorers):
        for start in range(0, len(i0), chunk):
            a, b = i0[start : start + chunk], i1[start : start + chunk]
            ia, ta, ib, tb = (
                as_float32(arr[rows], normalise)
                for arr, rows in ((images, a), (texts, a), (images, b), (texts, b))
            )
            view = out[start : start + chunk, s]
            view[:, 0] = np.einsum("ij,ij->i", ia, ta)
            view[:, 1] = np.einsum("ij,ij->i", ia, tb)
            view[:, 2] = np.einsum("ij,ij->i", ib, ta)
            view[:, 3] = np.einsum("ij,ij->i", ib, tb)
    return out


def random_pairs(
    n: int,
    *,
    seed: int,
    scorers: Sequence[Embeddings] = (),
    n_pairs: int | None = None,
    groups=None,
    normalise: bool = False,
) -> MinedPairs:
    """The Flickr-Random baseline (naturalbench.txt App. B, Table 6): random pairs, no scorer.

    A seeded permutation of the samples is cut into consecutive pairs (a random matching: no
    sample is used twice); pairs whose samples share a group are dropped; the first ``n_pairs``
    are kept. Scores and Eq. 1 verdicts are reported for ``scorers`` when given.
    """
    if scorers and check_inputs(scorers) != n:
        raise ValueError(f"the scorers' embeddings do not hold {n} samples")
    groups = check_groups(groups, n)
    perm = np.random.default_rng(seed).permutation(n)
    half = n // 2
    a, b = perm[0 : 2 * half : 2], perm[1 : 2 * half : 2]
    if groups is not None:
        keep = groups[a] != groups[b]
        a, b = a[keep], b[keep]
    if n_pairs is not None:
        if n_pairs < 0:
            raise ValueError("n_pairs must be >= 0")
        a, b = a[:n_pairs], b[:n_pairs]
    i0, i1 = np.minimum(a, b), np.maximum(a, b)
    order = np.lexsort((i1, i0))
    i0, i1 = i0[order].astype(np.int64), i1[order].astype(np.int64)
    scores = pair_scores(scorers, i0, i1, normalise=normalise)
    mismatched = eq1_mismatch(scores[..., 0], scores[..., 1], scores[..., 2], scores[..., 3])
    return MinedPairs(
        method="random",
        seed=seed,
        n_samples=n,
        i0=i0,
        i1=i1,
        scores=scores,
        mismatched=mismatched,
        partner=np.full(n, -1, dtype=np.int64),
        n_mismatched_pairs=None,
    )
