"""Corpus scale (issue 25): exact Eq. 1 mining split into chunks of block pairs, run by 1 and by 2
local worker processes; prints the figures.

    .venv/bin/python benchmarks/scale.py            # N = 31,783, D = 768 (Flickr30K's size)
    .venv/bin/python benchmarks/scale.py --quick    # N = 6,000: a smoke run of a minute or two
    .venv/bin/python benchmarks/scale.py --quick --embeddings --approx   # everything, < 10 min
    .venv/bin/python benchmarks/scale.py --n 10000 --chunks 8

Random L2-normalised image and text embeddings are written as float16 .npy files (as the embedding
cache stores them) and memory-mapped by every worker. Each worker is its own process with one BLAS
thread and one sweep thread, so "1 worker" uses one core and "2 workers" two. The block pairs are
cut into ``--chunks`` chunks (``curation.mining.mining_chunk``); the workers take chunks from a
pool, and ``mining_reduce`` combines them. The reference is today's single-process miner
(``mine_mismatches``, one thread): ``identical: yes`` when the kept pairs, each sample's partner,
the mismatch count and every kept pair's four S values hash the same for the reference, 1 worker
and 2 workers.

Approximate mining (``--approx``, ``curation.approx_mining``): matched embeddings (image k and
caption k near a common point) with planted near-duplicates, D = 768, written as float16 .npy and
memory-mapped; at N = 100k (``--approx-n``) the recall of the exact mismatches (found / exact, the
approximate miner keeps only true mismatches) against the chunked exact miner on 2 workers, then
at N = 1M (``--approx-big``) wall time and peak RSS. The cost model's figure (seconds per GFLOP of
one worker's float32 products) is printed first.

The chunked path prepares the input once (``mining_prepare``: float32, normalised, sorted, the
diagonal), as the mining job does before it fans out; its time is included and printed.

Chunked embeddings (``--embeddings``, ``benchmarks/scale_embeddings.py``): a corpus in a
throw-away test database embedded by the real chunk path (``embed_corpus(part=…)`` per chunk of
``embedding_fan_out``) with 1 and 2 worker processes (one torch thread each, models loaded
before the clock starts), tiny and ViT-B-32 random-weight models: images/s and the speedup.
Timings depend on what else runs: the load average is printed with them.
"""

from __future__ import annotations

import os

# One BLAS thread per worker process, set before numpy loads: a worker is one core. The
# approximate miner's process is one worker using every core (FAISS's threads, as in a Celery
# worker): it is spawned with THREADS_VAR set to the core count.
THREADS_VAR = "BLINDSPOT_BENCH_THREADS"
for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_name] = os.environ.get(THREADS_VAR, "1")

import argparse  # noqa: E402
import multiprocessing  # noqa: E402
import resource  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from concurrent.futures import ProcessPoolExecutor  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import scale_embeddings  # noqa: E402
from curation import approx_mining, mining  # noqa: E402

SEED = 7
# Fresh worker processes: not forks of a parent whose torch / OpenMP threads (--embeddings) or
# memory would be inherited.
SPAWN = multiprocessing.get_context("spawn")


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


def run_chunk(prepared: str, chunk: int, n_chunks: int) -> mining.MiningChunk:
    """One chunk, as a chunk job runs it: the prepared input memory-mapped, nothing converted."""
    return mining.mining_chunk(
        mining.prepared_load(prepared, n_scorers=1, normalise=True),
        seed=SEED,
        chunk=chunk,
        n_chunks=n_chunks,
        threads=1,
    )


def digest(result: mining.MinedPairs) -> str:
    return result.digest()


def gflops_one_worker() -> float:
    """GFLOP/s of one worker's float32 products at the miner's block size (one BLAS thread)."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((2048, 768), dtype=np.float32)
    b = rng.standard_normal((2048, 768), dtype=np.float32)
    out = np.empty((2048, 2048), np.float32)
    np.matmul(a, b.T, out=out)
    start, reps = time.perf_counter(), 0
    while time.perf_counter() - start < 3.0:
        np.matmul(a, b.T, out=out)
        reps += 1
    return reps * 2 * 2048 * 2048 * 768 / (time.perf_counter() - start) / 1e9


def write_planted(folder: Path, n: int, dim: int, seed: int, duplicates: float = 0.02) -> None:
    """Matched embeddings (image k, caption k = a common point plus noise) with ``duplicates``·n
    samples copying another's image and caption with a little noise; float16 .npy, in blocks."""
    rng = np.random.default_rng(seed)
    images = np.lib.format.open_memmap(folder / "images.npy", "w+", np.float16, (n, dim))
    texts = np.lib.format.open_memmap(folder / "texts.npy", "w+", np.float16, (n, dim))

    def unit(x):
        return x / np.linalg.norm(x, axis=1, keepdims=True)

    for start in range(0, n, 65536):
        m = min(65536, n - start)
        base = unit(rng.standard_normal((m, dim), dtype=np.float32))
        for out in (images, texts):
            noise = unit(rng.standard_normal((m, dim), dtype=np.float32))
            out[start : start + m] = unit(base + 0.35 * noise)
    copies = rng.choice(n, size=(int(duplicates * n), 2), replace=False)
    for out in (images, texts):
        src = out[np.sort(copies[:, 0])].astype(np.float32)
        order = np.argsort(copies[:, 0])
        noise = unit(rng.standard_normal((len(copies), dim), dtype=np.float32))
        out[copies[order, 1]] = unit(src + 0.2 * noise)
        out.flush()


MEMORY_BOUND = 8 * 2**30  # peak RSS of the approximate miner's process at N = 1M (24 GiB here)


def approx_phase(
    n: int, dim: int, k: int, exact_workers: int | None, chunks: int, flat_below: int
) -> float:
    """Approximate mining of N planted samples; with ``exact_workers``, the exact miner too and
    the recall. Returns the approximate miner's seconds."""
    with tempfile.TemporaryDirectory(prefix="blindspot-approx-") as tmp:
        start = time.perf_counter()
        write_planted(Path(tmp), n, dim, seed=3)
        print(f"  wrote {n:,} × {dim} planted embeddings in {time.perf_counter() - start:.1f} s")
        cores = os.cpu_count() or 1
        os.environ[THREADS_VAR] = str(cores)
        try:  # a process of its own: its own peak RSS, every core for FAISS and BLAS
            with ProcessPoolExecutor(max_workers=1, mp_context=SPAWN) as pool:
                found, seconds, t_neighbours, rss = pool.submit(
                    run_approx, tmp, k, flat_below, cores
                ).result()
        finally:
            os.environ.pop(THREADS_VAR)
        index = "flat" if n <= flat_below else f"IVF, {approx_mining.ivf_lists(n)} lists"
        within = "within" if rss <= MEMORY_BOUND else "OVER"
        print(
            f"  approximate (k = {k}, {index}, one worker, {cores} threads): {seconds:8.1f} s "
            f"(neighbours {t_neighbours:.1f} s, Eq. 1 on the candidates "
            f"{seconds - t_neighbours:.1f} s), peak RSS {rss / 2**30:.2f} GiB "
            f"({within} the {MEMORY_BOUND / 2**30:.0f} GiB bound), {found:,} mismatched pairs "
            f"found; {seconds / n * 1e3:.3f} ms per sample   (load average {loadavg()})"
        )
        if exact_workers:
            exact, t_exact = chunked(tmp, exact_workers, chunks)
            recall = found / exact.n_mismatched_pairs if exact.n_mismatched_pairs else 1.0
            print(
                f"  exact, {exact_workers} workers: {t_exact:8.1f} s, "
                f"{exact.n_mismatched_pairs:,} mismatched pairs"
            )
            print(f"  recall of the exact mismatches: {recall:.4f}   (load average {loadavg()})")
    return seconds


def run_approx(folder: str, k: int, flat_below: int, threads: int) -> tuple[int, float, float, int]:
    """The approximate miner on every core; its time, and the neighbour search's share."""
    scorers = load(folder)
    searched = 2 * len(scorers) * approx_mining.neighbour_steps(scorers[0][0].shape[0])
    marks: list[float] = []

    shown = [0]

    def progress(done: int, total: int) -> None:
        if done == searched:
            marks.append(time.perf_counter())
        if done * 10 // total > shown[0]:  # every tenth of the work, as the job's progress bar
            shown[0] = done * 10 // total
            print(
                f"    {done} of {total} steps, {time.perf_counter() - start:.0f} s",
                file=sys.stderr,
                flush=True,
            )

    start = time.perf_counter()
    mined = approx_mining.mine_approximate(
        scorers, seed=SEED, k=k, flat_below=flat_below, threads=threads, progress=progress
    )
    seconds = time.perf_counter() - start
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return int(mined.n_mismatched_pairs), seconds, marks[0] - start, rss


def warm(_k: int) -> int:
    time.sleep(0.5)  # long enough that every worker takes one
    return os.getpid()


def chunked(folder: str, workers: int, n_chunks: int) -> tuple[mining.MinedPairs, float]:
    """The chunked path as the mining job runs it on running workers (started and imported
    before the clock): the input prepared once (float32, normalised, sorted, the diagonal;
    ``mining_prepare``), the chunks on ``workers`` processes, the reduce."""
    with ProcessPoolExecutor(max_workers=workers, mp_context=SPAWN) as pool:
        assert len(set(pool.map(warm, range(workers)))) == workers
        start = time.perf_counter()
        with tempfile.TemporaryDirectory(prefix="blindspot-prepared-", dir=folder) as prepared:
            mining.mining_prepare(load(folder), normalise=True, folder=prepared)
            t_prepare = time.perf_counter() - start
            futures = [pool.submit(run_chunk, prepared, c, n_chunks) for c in range(n_chunks)]
            parts = [f.result() for f in futures]
        result = mining.mining_reduce(parts)
        seconds = time.perf_counter() - start
    print(f"  ({workers} worker(s): prepared once in {t_prepare:.2f} s, total {seconds:.2f} s)")
    return result, seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="N = 6,000 unless --n is given")
    parser.add_argument("--n", type=int, default=None, help="samples (default 31,783)")
    parser.add_argument("--dim", type=int, default=768)
    parser.add_argument("--chunks", type=int, default=8, help="chunks of block pairs")
    parser.add_argument("--approx", action="store_true", help="approximate mining and recall")
    parser.add_argument("--approx-n", type=int, default=None, help="recall at N (100,000)")
    parser.add_argument("--approx-big", type=int, default=None, help="N without recall (1M)")
    parser.add_argument("--k", type=int, default=approx_mining.DEFAULT_K)
    parser.add_argument("--flat-below", type=int, default=None, help="flat index up to N")
    parser.add_argument("--skip-exact", action="store_true", help="no exact mining part")
    parser.add_argument("--embeddings", action="store_true", help="chunked embeddings, 1 vs 2")
    parser.add_argument("--embed-n", type=int, default=None, help="images (64 quick, 512)")
    parser.add_argument("--embed-models", default="tiny,ViT-B-32")
    parser.add_argument("--embed-chunk", type=int, default=None, help="items a chunk")
    args = parser.parse_args()
    n = args.n or (6000 if args.quick else 31_783)

    gflops = gflops_one_worker()
    print(
        f"cost model: one worker's float32 products: {gflops:.1f} GFLOP/s = "
        f"{1 / gflops:.5f} s per GFLOP   (load average {loadavg()})"
    )
    if args.embeddings:
        embed_n = args.embed_n or (64 if args.quick else 512)
        print(f"chunked embeddings: {embed_n:,} images and their captions")
        scale_embeddings.embeddings_phase(
            n=embed_n,
            models=args.embed_models.split(","),
            chunk_items=args.embed_chunk or max(8, embed_n // 8),
            loadavg=loadavg,
        )
    if args.approx:
        small = args.approx_n or (10_000 if args.quick else 100_000)
        big = args.approx_big or (40_000 if args.quick else 1_000_000)
        # quick: the inverted-file index of large corpora at small N too (the path whose recall
        # matters); full: the miner's own threshold
        flat_below = (
            args.flat_below
            if args.flat_below is not None
            else (2_000 if args.quick else approx_mining.FLAT_BELOW)
        )
        print(f"approximate mining, D = {args.dim}, k = {args.k}:")
        print(f" N = {small:,} (with the exact miner, for the recall)")
        t_small = approx_phase(small, args.dim, args.k, 2, args.chunks, flat_below)
        print(f" N = {big:,}")
        t_big = approx_phase(big, args.dim, args.k, None, args.chunks, flat_below)
        # the mining page's model (curation.mining_cost): seconds a sample grow as N^growth
        per_big, per_small = t_big / big, t_small / small
        growth = np.log(per_big / per_small) / np.log(big / small)
        print(
            f"approximate cost model: BLINDSPOT_APPROX_S_PER_SAMPLE={per_big:.6f} "
            f"BLINDSPOT_APPROX_COST_N={big} BLINDSPOT_APPROX_GROWTH={growth:.3f} "
            f"(seconds a sample at N = {big:,}, and their growth with N from N = {small:,})"
        )
    if args.skip_exact:
        return

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
    bare = 2 * n * n * args.dim / gflops / 1e9  # the N² products S = I·Tᵀ, one worker
    print(
        f"bare N² products at the cost model's speed: {bare:.2f} s on 1 worker, "
        f"{bare / 2:.2f} s on 2; chunked / bare: {t_one / bare:.2f} (1), {t_two / bare * 2:.2f} (2)"
    )
    print(
        f"kept pairs: {len(reference):,}; mismatched pairs: {reference.n_mismatched_pairs:,}; "
        f"hash {digest(reference)}"
    )
    print(f"identical: {'yes' if len(hashes) == 1 else 'no'}")
    if len(hashes) != 1:
        sys.exit(1)


if __name__ == "__main__":
    main()
