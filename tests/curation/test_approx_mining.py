"""Approximate Eq. 1 mining (``curation.approx_mining``): with every pair a candidate it keeps the
exact miner's pairs; on matched embeddings with planted near-duplicates its small-k candidates
find the exact mismatches; the inverted-file index (large corpora) finds the flat index's
neighbours; the kept pairs are true mismatches with the exact miner's S values."""

from __future__ import annotations

import faiss
import numpy as np
import pytest

from curation import approx_mining, mining


def unit(x):
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def planted(n: int, dim: int, duplicates: int, seed: int):
    """Image k and caption k close to each other (a matched corpus), and ``duplicates`` samples
    that copy another sample's image and caption with a little noise: the mismatches."""
    rng = np.random.default_rng(seed)
    base = unit(rng.standard_normal((n, dim)))
    images = unit(base + 0.35 * unit(rng.standard_normal((n, dim))))
    texts = unit(base + 0.35 * unit(rng.standard_normal((n, dim))))
    copies = rng.choice(n, size=(duplicates, 2), replace=False)
    for a, b in copies:
        images[b] = unit(images[a] + 0.2 * unit(rng.standard_normal(dim)))
        texts[b] = unit(texts[a] + 0.2 * unit(rng.standard_normal(dim)))
    return images.astype(np.float16), texts.astype(np.float16)


def test_with_every_pair_a_candidate_it_keeps_the_exact_miners_pairs():
    rng = np.random.default_rng(0)
    images = unit(rng.standard_normal((120, 24))).astype(np.float16)
    texts = unit(rng.standard_normal((120, 24))).astype(np.float16)
    groups = np.arange(120) // 2  # pairs of samples that share an image: never paired
    exact = mining.mine_mismatches([(images, texts)], seed=4, groups=groups, normalise=True)
    approx = approx_mining.mine_approximate([(images, texts)], seed=4, k=119, groups=groups)
    assert approx.method == "eq1_ann"
    assert approx.n_mismatched_pairs == exact.n_mismatched_pairs
    assert np.array_equal(approx.i0, exact.i0) and np.array_equal(approx.i1, exact.i1)
    assert np.array_equal(approx.partner, exact.partner)
    assert np.allclose(approx.scores, exact.scores, atol=1e-6)


def test_small_k_finds_the_planted_mismatches_and_keeps_only_true_ones():
    images, texts = planted(3000, 48, duplicates=150, seed=1)
    exact = mining.mine_mismatches([(images, texts)], seed=2, normalise=True)
    approx = approx_mining.mine_approximate([(images, texts)], seed=2, k=8)
    assert exact.n_mismatched_pairs > 100
    recall = approx.n_mismatched_pairs / exact.n_mismatched_pairs
    assert recall >= 0.95, recall
    # every kept pair is a mismatch by Eq. 1 with the exact S values
    s = approx.scores[:, 0, :]
    assert mining.eq1_mismatch(s[:, 0], s[:, 1], s[:, 2], s[:, 3]).all()
    x = images.astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    t = texts.astype(np.float32)
    t /= np.linalg.norm(t, axis=1, keepdims=True)
    assert np.allclose(s[:, 1], np.einsum("ij,ij->i", x[approx.i0], t[approx.i1]), atol=1e-5)


def test_the_inverted_file_index_finds_the_flat_neighbours():
    images, _texts = planted(4000, 32, duplicates=0, seed=3)
    flat = approx_mining.neighbours(images, k=5)
    ivf = approx_mining.neighbours(images, k=5, flat_below=0, nprobe=32)
    assert flat.shape == ivf.shape == (4000, 5)
    assert not (flat == np.arange(4000)[:, None]).any()  # never itself
    found = np.mean([len(set(a) & set(b)) / 5 for a, b in zip(flat, ivf, strict=True)])
    assert found >= 0.9, found


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="differ in shape"):
        approx_mining.mine_approximate([(np.zeros((3, 4)), np.zeros((2, 4)))], seed=0)


def test_progress_counts_every_step_up_to_its_total_and_threads_are_restored():
    images, texts = planted(3000, 32, duplicates=60, seed=5)
    calls = []
    before = faiss.omp_get_max_threads()
    mined = approx_mining.mine_approximate(
        [(images, texts)],
        seed=1,
        k=6,
        flat_below=0,  # the inverted-file path of large corpora
        threads=1,
        progress=lambda done, total: calls.append((done, total)),
    )
    assert faiss.omp_get_max_threads() == before
    total = 2 * approx_mining.neighbour_steps(3000) + 1
    assert {t for _d, t in calls} == {total}
    assert [d for d, _t in calls] == list(range(1, total + 1))
    assert mined.n_mismatched_pairs >= 55  # the planted duplicates, found on the IVF path
