"""Eq. 1 mining (curation/mining.py) against a brute-force N×N implementation.

Most embeddings here are small integers / 4: every dot product is then exact in float32 whatever
order a BLAS kernel sums in, so block products, the full matrix and the row-wise diagonal agree to
the bit and ties are real ties.
"""

from __future__ import annotations

import numpy as np
import pytest

from curation import mining, random_pairs


def grid_embeddings(n: int, dim: int, seed: int, noise: int = 2):
    """Images and captions that share a base vector (so most samples match themselves), on a
    quarter-integer grid (exact float32 arithmetic, many ties)."""
    rng = np.random.default_rng(seed)
    base = rng.integers(-3, 4, size=(n, dim))
    images = (base + rng.integers(-noise, noise + 1, size=(n, dim))) / 4
    texts = (base + rng.integers(-noise, noise + 1, size=(n, dim))) / 4
    return images.astype(np.float32), texts.astype(np.float32)


def brute_mismatch(images, texts) -> np.ndarray:
    """Eq. 1 written out for every ordered pair of the full N×N similarity matrix."""
    s = np.asarray(images, np.float32) @ np.asarray(texts, np.float32).T
    d = np.diag(s)
    s00, s11 = d[:, None], d[None, :]
    s01, s10 = s, s.T  # S(i0, t1), S(i1, t0) for i0 = row sample, i1 = column sample
    m = (s00 < s01) | (s00 < s10) | (s11 < s01) | (s11 < s10)
    np.fill_diagonal(m, False)
    return m


def brute_mine(scorers, seed, groups=None):
    n = scorers[0][0].shape[0]
    m = np.ones((n, n), dtype=bool)
    for images, texts in scorers:
        m &= brute_mismatch(images, texts)
    if groups is not None:
        groups = np.asarray(groups)
        m &= groups[:, None] != groups[None, :]
    salts = mining.sample_salts(n, seed)
    partner = np.full(n, -1)
    for k in range(n):
        candidates = np.flatnonzero(m[k])
        if len(candidates):
            partner[k] = candidates[np.argmax(salts[k] ^ salts[candidates])]
    pairs = sorted({(min(k, p), max(k, p)) for k, p in enumerate(partner) if p >= 0})
    full = [np.asarray(i, np.float32) @ np.asarray(t, np.float32).T for i, t in scorers]
    scores = [[[s[i0, i0], s[i0, i1], s[i1, i0], s[i1, i1]] for s in full] for i0, i1 in pairs]
    return {
        "pairs": pairs,
        "partner": partner,
        "scores": np.array(scores, np.float32).reshape(len(pairs), len(scorers), 4),
        "n_mismatched_pairs": int(np.count_nonzero(np.triu(m))),
    }


def as_pairs(result) -> list[tuple[int, int]]:
    return list(zip(result.i0.tolist(), result.i1.tolist(), strict=True))


def assert_same_as_brute(result, expected, *, exact=True):
    assert as_pairs(result) == expected["pairs"]
    assert result.partner.tolist() == expected["partner"].tolist()
    assert result.n_mismatched_pairs == expected["n_mismatched_pairs"]
    if exact:
        np.testing.assert_array_equal(result.scores, expected["scores"])
    else:  # S(i_k, t_k) is a row-wise dot product, the brute force takes the matrix diagonal
        np.testing.assert_allclose(result.scores, expected["scores"], rtol=0, atol=1e-6)
    assert result.mismatched.all()


@pytest.mark.parametrize(
    ("n", "dim", "block"),
    [
        (2, 3, 1),
        (9, 4, 1),
        (37, 8, 5),  # block does not divide n
        (37, 8, 16),
        (37, 8, 37),  # one block
        (37, 8, 100),  # block larger than n
        (64, 16, 8),
        (101, 6, 32),
        (150, 24, 64),
    ],
)
def test_eq1_mining_equals_brute_force(n, dim, block):
    # Given grid embeddings with many exact ties
    images, texts = grid_embeddings(n, dim, seed=n * 100 + dim)
    # When mined block by block
    result = mining.mine_mismatches([(images, texts)], seed=7, block=block)
    # Then pairs, chosen partners, counts and S values equal the full-matrix computation
    expected = brute_mine([(images, texts)], seed=7)
    assert_same_as_brute(result, expected)
    if n > 30:  # the case is not degenerate: some samples match, some mismatch
        assert 0 < expected["n_mismatched_pairs"] < n * (n - 1) // 2
        assert 0 < len(result) < n


def test_eq1_mining_equals_brute_force_on_unit_float_embeddings():
    # Given L2-normalised random float embeddings (captions close to their images)
    rng = np.random.default_rng(3)
    images = rng.standard_normal((120, 32)).astype(np.float32)
    texts = images + 1.5 * rng.standard_normal((120, 32)).astype(np.float32)
    images /= np.linalg.norm(images, axis=1, keepdims=True)
    texts /= np.linalg.norm(texts, axis=1, keepdims=True)
    # When mined with a block that leaves a remainder
    result = mining.mine_mismatches([(images, texts)], seed=11, block=50)
    # Then it equals the brute force (S values to float32 rounding: summation orders differ)
    expected = brute_mine([(images, texts)], seed=11)
    assert_same_as_brute(result, expected, exact=False)
    assert 0 < len(result) < 120


def test_result_does_not_depend_on_block_size():
    images, texts = grid_embeddings(83, 5, seed=1)
    results = [
        mining.mine_mismatches([(images, texts)], seed=3, block=b) for b in (1, 2, 10, 83, 500)
    ]
    for other in results[1:]:
        assert as_pairs(other) == as_pairs(results[0])
        np.testing.assert_array_equal(other.scores, results[0].scores)


def test_exact_tie_is_not_a_mismatch_and_a_hair_more_is():
    # Given sample 0 = (i0, t0), sample 1 = (i1, t1) with S(i0, t1) == S(i0, t0) == 1 exactly
    images = np.array([[1.0, 0.0], [0.0, 1.0]], np.float32)
    texts = np.array([[1.0, 0.0], [1.0, 2.0]], np.float32)
    # When mined, Then the tie alone does not make a mismatch (Eq. 1 uses strict "<")
    tie = mining.mine_mismatches([(images, texts)], seed=0)
    assert len(tie) == 0
    assert tie.n_mismatched_pairs == 0
    assert tie.partner.tolist() == [-1, -1]
    # And When t1 scores a little higher on i0 than t0 does, Then the pair is a mismatch
    texts[1, 0] = 1.25
    won = mining.mine_mismatches([(images, texts)], seed=0)
    assert as_pairs(won) == [(0, 1)]
    assert won.scores.tolist() == [[[1.0, 1.25, 0.0, 2.0]]]
    assert won.partner.tolist() == [1, 0]


def test_repeated_vectors_make_ties_handled_like_brute_force():
    # Given duplicated captions and images: S values of different pairs are exactly equal
    images, texts = grid_embeddings(40, 6, seed=5)
    texts[10:20] = texts[0:10]
    images[20:25] = images[0:5]
    texts[25] = texts[26]
    # When mined, Then it still equals the brute force to the bit
    result = mining.mine_mismatches([(images, texts)], seed=2, block=7)
    assert_same_as_brute(result, brute_mine([(images, texts)], seed=2))


def test_identical_samples_are_not_mismatched():
    # Given two samples with the same image and the same caption: every S is one value
    images = np.array([[1, 0], [1, 0], [0, 1]], np.float32)
    texts = np.array([[1, 0], [1, 0], [0, 1]], np.float32)
    # When mined, Then nothing is mismatched: all four S values tie
    result = mining.mine_mismatches([(images, texts)], seed=0)
    assert result.n_mismatched_pairs == 0
    assert len(result) == 0


def test_intersection_across_scorers():
    # Given two scorers of different dimensions on the same 60 samples
    first = grid_embeddings(60, 8, seed=21)
    second = grid_embeddings(60, 5, seed=22)
    # When mined with both
    both = mining.mine_mismatches([first, second], seed=4, block=16)
    # Then the kept pairs are those both scorers mismatch, with each scorer's four S values
    expected = brute_mine([first, second], seed=4)
    assert_same_as_brute(both, expected)
    assert both.scores.shape == (len(both), 2, 4)
    # And the intersection is strictly smaller than either scorer's own mismatches
    alone = [mining.mine_mismatches([s], seed=4).n_mismatched_pairs for s in (first, second)]
    assert 0 < both.n_mismatched_pairs < min(alone)
    m_first, m_second = brute_mismatch(*first), brute_mismatch(*second)
    for i0, i1 in as_pairs(both):
        assert m_first[i0, i1] and m_second[i0, i1]


def test_every_kept_pair_mismatches_by_eq1_for_every_scorer():
    first, second = grid_embeddings(70, 6, seed=8), grid_embeddings(70, 9, seed=9)
    result = mining.mine_mismatches([first, second], seed=1, block=9)
    s = result.scores
    assert mining.eq1_mismatch(s[..., 0], s[..., 1], s[..., 2], s[..., 3]).all()


def test_one_mismatch_per_sample_is_seeded():
    images, texts = grid_embeddings(80, 6, seed=31)
    first = mining.mine_mismatches([(images, texts)], seed=123, block=16)
    again = mining.mine_mismatches([(images, texts)], seed=123, block=16)
    other = mining.mine_mismatches([(images, texts)], seed=124, block=16)
    # Same seed: same pairs and partners
    assert as_pairs(first) == as_pairs(again)
    assert first.partner.tolist() == again.partner.tolist()
    # Different seed: other choices, but the same samples have a mismatch
    assert as_pairs(first) != as_pairs(other)
    assert first.partner.tolist() != other.partner.tolist()
    assert ((first.partner >= 0) == (other.partner >= 0)).all()
    assert first.n_mismatched_pairs == other.n_mismatched_pairs


def test_one_mismatch_per_sample_definition():
    # Given a corpus where many samples mismatch several others
    images, texts = grid_embeddings(90, 5, seed=41)
    result = mining.mine_mismatches([(images, texts)], seed=5, block=13)
    m = brute_mismatch(images, texts)
    kept = set(as_pairs(result))
    # Then every sample with a mismatch chose one of its mismatches, and that pair is kept
    for k in range(90):
        if m[k].any():
            p = result.partner[k]
            assert m[k, p]
            assert (min(k, p), max(k, p)) in kept
        else:
            assert result.partner[k] == -1
    # And every kept pair was chosen by one of its samples; pairs are unique and ordered
    for i0, i1 in kept:
        assert result.partner[i0] == i1 or result.partner[i1] == i0
    assert len(kept) == len(result)
    assert (result.i0 < result.i1).all()
    assert result.n_samples_with_mismatch == int(m.any(axis=1).sum())
    assert max(np.count_nonzero(m, axis=1)) > 3  # samples really had several to choose from


def test_the_kept_partner_is_uniform_among_a_samples_mismatches():
    # Given a sample with several mismatches
    images, texts = grid_embeddings(12, 4, seed=2)
    m = brute_mismatch(images, texts)
    k = int(np.argmax(np.count_nonzero(m, axis=1)))
    candidates = np.flatnonzero(m[k])
    assert len(candidates) >= 4
    # When mined with 2000 seeds
    runs = 2000
    chosen = [mining.mine_mismatches([(images, texts)], seed=s).partner[k] for s in range(runs)]
    counts = np.array([chosen.count(c) for c in candidates])
    # Then each candidate is chosen about equally often (within 5 binomial standard deviations)
    p = 1 / len(candidates)
    spread = 5 * np.sqrt(runs * p * (1 - p))
    assert counts.sum() == runs
    assert (np.abs(counts - runs * p) < spread).all()


def test_groups_are_never_paired():
    # Given groups (e.g. captions of one image): samples 0-9 in group 0, 10-19 in group 1, …
    images, texts = grid_embeddings(60, 5, seed=12)
    groups = np.arange(60) // 10
    result = mining.mine_mismatches([(images, texts)], seed=3, block=8, groups=groups)
    assert_same_as_brute(result, brute_mine([(images, texts)], seed=3, groups=groups))
    assert (groups[result.i0] != groups[result.i1]).all()
    ungrouped = mining.mine_mismatches([(images, texts)], seed=3, block=8)
    assert result.n_mismatched_pairs < ungrouped.n_mismatched_pairs


def test_float16_memmap_input(tmp_path):
    # Given embeddings stored as float16 .npy files (as the embedding cache does), memory-mapped
    images, texts = grid_embeddings(45, 8, seed=77)
    np.save(tmp_path / "images.npy", images.astype(np.float16))
    np.save(tmp_path / "texts.npy", texts.astype(np.float16))
    mm_images = np.load(tmp_path / "images.npy", mmap_mode="r")
    mm_texts = np.load(tmp_path / "texts.npy", mmap_mode="r")
    assert isinstance(mm_images, np.memmap) and mm_images.dtype == np.float16
    # When mined from the memmaps, with a tiny cache budget so blocks are re-read each visit
    result = mining.mine_mismatches([(mm_images, mm_texts)], seed=9, block=10, cache_bytes=0)
    # Then it equals the brute force (the grid values are exact in float16) and the in-memory run
    assert_same_as_brute(result, brute_mine([(images, texts)], seed=9))
    in_memory = mining.mine_mismatches([(images, texts)], seed=9, block=10)
    assert as_pairs(result) == as_pairs(in_memory)
    assert result.scores.dtype == np.float32


def test_normalise_rescales_rows_first():
    # Given embeddings and the same embeddings scaled by powers of two (exact in float32)
    images, texts = grid_embeddings(30, 6, seed=4)
    plain = mining.mine_mismatches([(images, texts)], seed=1, normalise=True)
    scaled = mining.mine_mismatches([(images * 4, texts * 0.5)], seed=1, normalise=True)
    # Then normalising gives the same pairs and cosine scores (each |S| <= 1)
    assert as_pairs(plain) == as_pairs(scaled)
    np.testing.assert_array_equal(plain.scores, scaled.scores)
    assert np.abs(plain.scores).max() <= 1.0 + 1e-6


def test_progress_reports_every_block_pair():
    images, texts = grid_embeddings(25, 3, seed=0)
    calls = []
    mining.mine_mismatches(
        [(images, texts)], seed=0, block=10, progress=lambda d, t: calls.append((d, t))
    )
    assert calls == [(1, 6), (2, 6), (3, 6), (4, 6), (5, 6), (6, 6)]  # 3 blocks → 3·4/2 pairs
    assert list(mining.block_pairs(25, 10)) == [
        (0, 10, 0, 10),
        (0, 10, 10, 20),
        (0, 10, 20, 25),
        (10, 20, 10, 20),
        (10, 20, 20, 25),
        (20, 25, 20, 25),
    ]


def test_bad_inputs_are_refused_with_a_reason():
    images, texts = grid_embeddings(10, 4, seed=0)
    with pytest.raises(ValueError, match="differ in shape"):
        mining.mine_mismatches([(images, texts[:, :3])], seed=0)
    with pytest.raises(ValueError, match="scorer 1: 9 samples, scorer 0 has 10"):
        mining.mine_mismatches([(images, texts), (images[:9], texts[:9])], seed=0)
    with pytest.raises(ValueError, match="at least one scorer"):
        mining.mine_mismatches([], seed=0)
    with pytest.raises(ValueError, match="block must be"):
        mining.mine_mismatches([(images, texts)], seed=0, block=0)
    with pytest.raises(ValueError, match="one value per sample"):
        mining.mine_mismatches([(images, texts)], seed=0, groups=[1, 2])
    with pytest.raises(ValueError, match="floating point"):
        mining.mine_mismatches([(images.astype(int), texts.astype(int))], seed=0)
    broken = images.copy()
    broken[3, 1] = np.nan
    broken[7, 0] = np.inf
    with pytest.raises(
        ValueError, match=r"2 sample\(s\) have non-finite embeddings \(e.g. sample 3, 7\)"
    ):
        mining.mine_mismatches([(broken, texts)], seed=0)


def test_tiny_corpora():
    one = mining.mine_mismatches(
        [(np.ones((1, 3), np.float32), np.ones((1, 3), np.float32))], seed=0
    )
    assert len(one) == 0 and one.partner.tolist() == [-1] and one.n_mismatched_pairs == 0
    empty = mining.mine_mismatches(
        [(np.zeros((0, 3), np.float32), np.zeros((0, 3), np.float32))], seed=0
    )
    assert len(empty) == 0 and empty.scores.shape == (0, 1, 4)


def test_sample_salts_are_distinct_and_seeded():
    salts = mining.sample_salts(5000, seed=1)
    assert salts.dtype == np.uint32
    assert len(np.unique(salts)) == 5000
    assert (salts == mining.sample_salts(5000, seed=1)).all()
    assert not (salts == mining.sample_salts(5000, seed=2)).all()


def test_random_baseline_pairs():
    # Given 11 samples and two scorers
    first, second = grid_embeddings(11, 4, seed=1), grid_embeddings(11, 3, seed=2)
    # When paired at random (Flickr-Random, Table 6)
    result = random_pairs.random_pairs(11, seed=5, scorers=[first, second])
    # Then it is a random matching: 5 disjoint pairs of 10 distinct samples, seeded
    assert result.method == "random"
    assert len(result) == 5
    used = result.i0.tolist() + result.i1.tolist()
    assert len(set(used)) == 10
    assert (result.i0 < result.i1).all()
    assert as_pairs(result) == sorted(as_pairs(result))
    assert as_pairs(result) == as_pairs(random_pairs.random_pairs(11, seed=5))
    assert as_pairs(result) != as_pairs(random_pairs.random_pairs(11, seed=6))
    # And each pair carries the four S values per scorer and Eq. 1's verdict
    for p, (i0, i1) in enumerate(as_pairs(result)):
        for s, (images, texts) in enumerate((first, second)):
            full = images @ texts.T
            expected = [full[i0, i0], full[i0, i1], full[i1, i0], full[i1, i1]]
            assert result.scores[p, s].tolist() == expected
            assert result.mismatched[p, s] == brute_mismatch(images, texts)[i0, i1]
    assert result.n_mismatched_pairs is None


def test_random_baseline_options():
    assert len(random_pairs.random_pairs(100, seed=0, n_pairs=7)) == 7
    assert random_pairs.random_pairs(100, seed=0, n_pairs=7).scores.shape == (7, 0, 4)
    groups = np.arange(100) % 2
    grouped = random_pairs.random_pairs(100, seed=0, groups=groups)
    assert (groups[grouped.i0] != groups[grouped.i1]).all()
    assert len(grouped) < 50
    with pytest.raises(ValueError, match="do not hold 100 samples"):
        random_pairs.random_pairs(100, seed=0, scorers=[grid_embeddings(99, 2, seed=0)])


def test_row_chunks_in_worker_threads_equal_one_thread(monkeypatch):
    # Given chunks of 3 rows so a small corpus exercises the worker threads
    monkeypatch.setattr(mining, "CHUNK_ROWS", 3)
    first, second = grid_embeddings(47, 6, seed=13), grid_embeddings(47, 4, seed=14)
    # When mined with 3 threads and with 1
    threaded = mining.mine_mismatches([first, second], seed=6, block=20, threads=3)
    single = mining.mine_mismatches([first, second], seed=6, block=20, threads=1)
    # Then both equal the brute force
    expected = brute_mine([first, second], seed=6)
    assert_same_as_brute(threaded, expected)
    assert_same_as_brute(single, expected)


def test_rows_for_storage():
    images = np.array([[1.0, 0.0], [0.0, 1.0]], np.float32)
    texts = np.array([[1.0, 0.0], [1.25, 2.0]], np.float32)
    result = mining.mine_mismatches([(images, texts), (images, texts)], seed=0)
    assert result.as_rows() == [
        {
            "i0": 0,
            "i1": 1,
            "scores": [[1.0, 1.25, 0.0, 2.0], [1.0, 1.25, 0.0, 2.0]],
            "mismatched": [True, True],
        }
    ]


@pytest.mark.parametrize(
    ("n", "block", "diagonal"), [(25, 10, 3), (40, 16, 16), (7, 2, 1), (9, 4, 5)]
)
def test_block_schedule_covers_every_pair_once(monkeypatch, n, block, diagonal):
    monkeypatch.setattr(mining, "DIAGONAL_BLOCK", diagonal)
    seen = np.zeros((n, n), dtype=int)
    for a0, a1, b0, b1 in mining.block_pairs(n, block):
        assert (a0, a1) == (b0, b1) or a1 <= b0
        assert a1 - a0 <= block and b1 - b0 <= block
        if a0 == b0:
            assert a1 - a0 <= diagonal
            seen[a0:a1, b0:b1] += np.triu(np.ones((a1 - a0, b1 - b0), dtype=int), 1)
        else:
            seen[a0:a1, b0:b1] += 1
    assert (seen == np.triu(np.ones((n, n), dtype=int), 1)).all()


def test_tiled_diagonal_blocks_equal_brute_force(monkeypatch):
    # Given diagonal blocks tiled with 3-row blocks inside 10-row blocks
    monkeypatch.setattr(mining, "DIAGONAL_BLOCK", 3)
    monkeypatch.setattr(mining, "CHUNK_ROWS", 2)
    first, second = grid_embeddings(53, 6, seed=17), grid_embeddings(53, 4, seed=18)
    groups = np.arange(53) % 7
    # When mined, Then it equals the brute force
    result = mining.mine_mismatches([first, second], seed=8, block=10, groups=groups, threads=2)
    assert_same_as_brute(result, brute_mine([first, second], seed=8, groups=groups))


@pytest.mark.parametrize("n_chunks", [1, 2, 3, 5, 7, 400])  # 400: more chunks than block pairs
def test_chunked_mining_in_any_order_equals_the_single_sweep_and_brute_force(n_chunks):
    # Given two scorers, groups and a block size that leaves a ragged last block
    first, second = grid_embeddings(61, 6, seed=21), grid_embeddings(61, 4, seed=22)
    groups = np.arange(61) // 3
    kwargs = {"seed": 9, "block": 8, "groups": groups}
    single = mining.mine_mismatches([first, second], **kwargs)
    # When the block pairs are split into chunks, each swept on its own
    chunks = [
        mining.mining_chunk([first, second], chunk=c, n_chunks=n_chunks, **kwargs)
        for c in range(n_chunks)
    ]
    # Then together they visit every block pair once
    assert sum(c.n_mismatched_pairs for c in chunks) == single.n_mismatched_pairs
    # and reduced in any order they equal the single sweep, pair for pair and score for score
    order = np.random.default_rng(n_chunks).permutation(n_chunks)
    for reduced in (mining.mining_reduce(chunks), mining.mining_reduce([chunks[i] for i in order])):
        assert as_pairs(reduced) == as_pairs(single)
        assert reduced.partner.tolist() == single.partner.tolist()
        np.testing.assert_array_equal(reduced.scores, single.scores)
        assert reduced.n_mismatched_pairs == single.n_mismatched_pairs
        assert_same_as_brute(reduced, brute_mine([first, second], seed=9, groups=groups))


def test_chunks_are_checked():
    images, texts = grid_embeddings(10, 3, seed=1)
    with pytest.raises(ValueError, match="chunk must be in 0…1"):
        mining.mining_chunk([(images, texts)], seed=1, chunk=2, n_chunks=2)
    a = mining.mining_chunk([(images, texts)], seed=1, chunk=0, n_chunks=2)
    b = mining.mining_chunk([(images, texts)], seed=2, chunk=1, n_chunks=2)
    with pytest.raises(ValueError, match="different corpora or seeds"):
        mining.mining_reduce([a, b])
    with pytest.raises(ValueError, match="no chunks"):
        mining.mining_reduce([])
