"""Corpus scale (issue 25): exact Eq. 1 mining split into chunks of block pairs, run by 1 and by 2
local worker processes; prints the figures.

    .venv/bin/python benchmarks/scale.py            # N = 31,783, D = 768 (Flickr30K's size)
    .venv/bin/python benchmarks/scale.py --quick    # N = 6,000: a smoke run of a minute or two
    .venv/bin/python benchmarks/scale.py --n 10000 --chunks 8

Random L2-normalised image and text embeddings are written as float16 .npy files (as the embedding
cache stores them) and memory-mapped by every worker. Each worker is its own process with one BLAS
thread and one sweep thread, so "1 worker" uses one core and "2 workers" two. The block pairs are
cut into ``--chunks`` chunks (``curation.mining.mining_chunk``); the workers take chunks from a
pool, and ``mining_reduce`` combines them. The reference is today's single-process miner
(``mine_mismatches``, one thread): ``identical: yes`` when the kept pairs, each sample's partner,
the mismatch count and every kept pair's four S values hash the same for the reference, 1 worker
and 2 workers.

Not measured here yet (issue 25, later): chunked embeddings, approximate mining, the cost model.
Timings depend on what else runs: the load average is printed with them.
"""

from __future__ import annotations

import os

# One BLAS thread per worker process, set before numpy loads: a worker is one core.
for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_name] = "1"

import argparse  # noqa: E402
import hashlib  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from concurrent.futures import ProcessPoolExecutor  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from curation import mining  # noqa: E402

SEED = 7


def loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())


def write_embeddings(folder: Path, n: int, dim: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    for name in ("images", "texts"):
        x = rng.standard_normal((n, dim), dtype=np.float32)
        x /= np.linalg.norm(x, axis=1, keepdims=True)
        np.save(folder / f"{name}.npy", x.astype(np.float16))


def load(folder: str) -> list[tuple[np.ndarray, np.ndarray]]:
    base = Path(folder)
    return [
        (
            np.load(base / "images.npy", mmap_mode="r"),
            np.load(base / "texts.npy", mmap_mode="r"),
        )
    ]


def run_chunk(folder: str, chunk: int, n_chunks: int) -> mining.MiningChunk:
    return mining.mining_chunk(
        load(folder), seed=SEED, chunk=chunk, n_chunks=n_chunks, normalise=True, threads=1
    )


def digest(result: mining.MinedPairs) -> str:
    h = hashlib.sha256()
    for part in (result.i0, result.i1, result.partner, result.scores):
        h.update(np.ascontiguousarray(part).tobytes())
    h.update(str(result.n_mismatched_pairs).encode())
    return h.hexdigest()[:16]


def chunked(folder: str, workers: int, n_chunks: int) -> tuple[mining.MinedPairs, float]:
    start = time.perf_counter()
    with ProcessPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(run_chunk, folder, c, n_chunks) for c in range(n_chunks)]
        parts = [f.result() for f in futures]
    result = mining.mining_reduce(parts)
    return result, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="N = 6,000 unless --n is given")
    parser.add_argument("--n", type=int, default=None, help="samples (default 31,783)")
    parser.add_argument("--dim", type=int, default=768)
    parser.add_argument("--chunks", type=int, default=8, help="chunks of block pairs")
    args = parser.parse_args()
    n = args.n or (6000 if args.quick else 31_783)

    print(f"exact Eq. 1 mining in chunks: N = {n:,}, D = {args.dim}, {args.chunks} chunks")
    print(f"cores: {os.cpu_count()}, load average before: {loadavg()}")
    with tempfile.TemporaryDirectory(prefix="blindspot-scale-") as tmp:
        write_embeddings(Path(tmp), n, args.dim, seed=1)
        start = time.perf_counter()
        reference = mining.mine_mismatches(load(tmp), seed=SEED, normalise=True, threads=1)
        t_ref = time.perf_counter() - start
        one, t_one = chunked(tmp, 1, args.chunks)
        two, t_two = chunked(tmp, 2, args.chunks)

    hashes = {digest(reference), digest(one), digest(two)}
    print(f"today's miner (1 process, 1 thread): {t_ref:8.2f} s")
    print(f"chunked, 1 worker:                   {t_one:8.2f} s")
    print(f"chunked, 2 workers:                  {t_two:8.2f} s")
    print(f"speedup 2 vs 1 worker: {t_one / t_two:.2f}x   (load average after: {loadavg()})")
    print(
        f"kept pairs: {len(reference):,}; mismatched pairs: {reference.n_mismatched_pairs:,}; "
        f"hash {digest(reference)}"
    )
    print(f"identical: {'yes' if len(hashes) == 1 else 'no'}")
    if len(hashes) != 1:
        sys.exit(1)


if __name__ == "__main__":
    main()
