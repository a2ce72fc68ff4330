"""Exact Eq. 1 mining over all pairs of a Flickr30K-sized corpus (issue 5, Benchmark); prints the
figures.

    .venv/bin/python benchmarks/mining.py            # N = 31,783, D = 768 (Flickr30K's size)
    .venv/bin/python benchmarks/mining.py --n 5000   # quick run

Random L2-normalised image and text embeddings are written as float16 .npy files (as the
embedding cache stores them) and memory-mapped. Each phase runs in a fresh process so its peak RSS
is its own:

1. bare products: the same upper-triangle block pairs as the miner, only S = I·Tᵀ (I_a·T_bᵀ and
   T_a·I_bᵀ per block pair, I_a·T_aᵀ on the diagonal: N² dot products in all) from float32 copies
   already in memory;
2. mining: ``curation.mining.mine_mismatches`` from the float16 memmaps (conversion, S(i_k, t_k),
   Eq. 1, one random mismatch per sample, the four S values of every kept pair).

Targets: mining / bare ≤ 1.2; peak RSS far below the N² float32 matrix (4.0 GB at N = 31,783).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from curation import mining  # noqa: E402


def loadavg() -> str:
    try:
        return Path("/proc/loadavg").read_text().split(" tid")[0].strip()
    except OSError:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())


def cpu_seconds() -> float:
    """User + system CPU time of this process, all threads: the work, whatever else runs."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def write_embeddings(folder: Path, n: int, dim: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    for name in ("images", "texts"):
        x = rng.standard_normal((n, dim), dtype=np.float32)
        x /= np.linalg.norm(x, axis=1, keepdims=True)
        np.save(folder / f"{name}.npy", x.astype(np.float16))


def open_embeddings(folder: Path):
    return (
        np.load(folder / "images.npy", mmap_mode="r"),
        np.load(folder / "texts.npy", mmap_mode="r"),
    )


def phase_bare(folder: Path, block: int) -> dict:
    images, texts = (np.ascontiguousarray(x, dtype=np.float32) for x in open_embeddings(folder))
    n = len(images)
    out: dict[tuple[int, int], np.ndarray] = {}
    start, cpu = time.perf_counter(), cpu_seconds()
    for a0, a1, b0, b1 in mining.block_pairs(n, block):
        shape = (a1 - a0, b1 - b0)
        buf = out.get(shape)
        if buf is None:
            buf = out[shape] = np.empty(shape, np.float32)
        np.matmul(images[a0:a1], texts[b0:b1].T, out=buf)
        if a0 != b0:
            np.matmul(texts[a0:a1], images[b0:b1].T, out=buf)
    return {
        "seconds": time.perf_counter() - start,
        "cpu": cpu_seconds() - cpu,
        "peak_rss_mb": peak_rss_mb(),
    }


def phase_mine(folder: Path, block: int, seed: int, threads: int | None) -> dict:
    images, texts = open_embeddings(folder)
    start, cpu = time.perf_counter(), cpu_seconds()
    result = mining.mine_mismatches([(images, texts)], seed=seed, block=block, threads=threads)
    return {
        "seconds": time.perf_counter() - start,
        "cpu": cpu_seconds() - cpu,
        "peak_rss_mb": peak_rss_mb(),
        "kept_pairs": len(result),
        "mismatched_pairs": result.n_mismatched_pairs,
        "samples_with_mismatch": result.n_samples_with_mismatch,
    }


def run_phase(phase: str, folder: Path, args) -> dict:
    command = [
        sys.executable,
        __file__,
        "--phase",
        phase,
        "--folder",
        str(folder),
        "--block",
        str(args.block),
        "--seed",
        str(args.seed),
    ]
    env = dict(os.environ)
    if args.single_thread:
        command += ["--threads", "1"]
        env.update(OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    done = subprocess.run(command, check=True, capture_output=True, text=True, env=env)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=31_783, help="samples (Flickr30K: 31,783)")
    parser.add_argument("--dim", type=int, default=768)
    parser.add_argument("--block", type=int, default=mining.DEFAULT_BLOCK)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=1, help="runs of each phase; best kept")
    parser.add_argument(
        "--single-thread",
        action="store_true",
        help="one thread for BLAS and for the miner: wall time = work, even on a busy machine",
    )
    parser.add_argument("--threads", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--phase", choices=("bare", "mine"), help=argparse.SUPPRESS)
    parser.add_argument("--folder", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.phase == "bare":
        print(json.dumps(phase_bare(args.folder, args.block)))
        return
    if args.phase == "mine":
        print(json.dumps(phase_mine(args.folder, args.block, args.seed, args.threads)))
        return

    n, dim = args.n, args.dim
    print(f"cpus={os.cpu_count()} numpy={np.__version__} loadavg(start)={loadavg()}")
    threads = "1 thread" if args.single_thread else f"{os.cpu_count()} threads"
    print(f"N={n:,} D={dim} block={args.block} float16 memmap input, exact Eq. 1 mining, {threads}")
    with tempfile.TemporaryDirectory(prefix="bench-mining-") as tmp:
        folder = Path(tmp)
        write_embeddings(folder, n, dim, args.seed)
        runs: dict[str, list[dict]] = {"bare": [], "mine": []}
        for _ in range(args.repeat):  # alternated, so a change of load hits both phases
            for phase in runs:
                runs[phase].append(run_phase(phase, folder, args))
        bare, mine = (min(runs[p], key=lambda r: r["seconds"]) for p in ("bare", "mine"))
    full_matrix_gb = n * n * 4 / 1e9
    ratio = mine["seconds"] / bare["seconds"]
    print(f"{'bare S = I·Tᵀ products (N² dot products)':44} {bare['seconds']:8.2f} s")
    print(f"{'mining wall time':44} {mine['seconds']:8.2f} s")
    print(
        f"{'ratio mining / bare products':44} {ratio:8.3f}   (target ≤ 1.2: "
        f"{'met' if ratio <= 1.2 else 'missed'})"
    )
    print(
        f"{'CPU time (all threads): bare / mining':44} {bare['cpu']:8.2f} s / {mine['cpu']:.2f} s"
        f"  ratio {mine['cpu'] / bare['cpu']:.3f}"
    )
    print(
        f"{'peak RSS, mining process':44} {mine['peak_rss_mb']:8.0f} MB "
        f"(N×N float32 would be {full_matrix_gb:.1f} GB)"
    )
    print(f"{'peak RSS, bare-products process':44} {bare['peak_rss_mb']:8.0f} MB")
    print(
        f"mismatched pairs {mine['mismatched_pairs']:,} of {n * (n - 1) // 2:,}; "
        f"samples with a mismatch {mine['samples_with_mismatch']:,}; "
        f"kept pairs {mine['kept_pairs']:,}"
    )
    print(f"loadavg(end)={loadavg()}")


if __name__ == "__main__":
    main()
