"""Timings of the issue's Benchmark section; prints the figures.

    .venv/bin/python benchmarks/metrics_speed.py [--repeat 3]

1. every NaturalBench metric for 10k samples × 50 runs (target ≤ 2 s): per run, the parsed
   answers are encoded once (as NaturalBench's `rows` does), then headline Acc/Q/I/G,
   per-subset, per-skill Q-Acc, sample-optimal τ, global-optimal τ and post-hoc debiasing
   (point values; intervals are timed separately);
2. bootstrap Elo, 1000 rounds over 12k battles (target ≤ 1.1 s; FastChat's loop ≈ 27 s);
3. VLind-Bench scores for 300 instances × 50 runs.

Each case runs `--repeat` times; the first run of a case is the cold one (fresh memory). The
machine may be shared: the load average is printed before and after.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from evaluation.metrics import naturalbench as nb  # noqa: E402
from evaluation.metrics import visit, vlind  # noqa: E402
from evaluation.metrics.bootstrap import bootstrap_mean_interval  # noqa: E402

REPEAT = 3


def timed(label: str, target: float | None, fn, repeat: int | None = None) -> float:
    """Print every run's time; return the first (cold) one."""
    times = []
    for _ in range(repeat or REPEAT):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    goal = ""
    if target:
        verdict = "met" if times[0] <= target else "MISSED"
        goal = f"  target ≤ {target:g} s: {verdict} (first run)"
    runs = " ".join(f"{t:6.3f}" for t in times)
    print(f"{label:58} {runs} s{goal}")
    return times[0]


def naturalbench_case(n_samples: int = 10_000, n_runs: int = 50):
    rng = np.random.default_rng(0)
    keys = [("DOCCI" if k % 2 else "XM3600", "yes_no", "en") for k in range(n_samples)]
    skills = [(["Counting", "Color"], ["Spatial"]) for _ in range(n_samples)]
    runs = []
    for _ in range(n_runs):
        p_a0 = rng.random((n_samples, 4))
        answers = np.where(p_a0 > 0.5, nb.A0, nb.A1).tolist()
        runs.append((answers, p_a0, 1 - p_a0, rng.random((n_samples, 2))))

    def run_all():
        for answers, p_a0, p_a1, blind in runs:
            codes = nb.encode_answers(answers)
            nb.naturalbench_scores(codes, with_intervals=False)
            nb.naturalbench_scores_by_group(codes, keys, with_intervals=False)
            nb.skill_question_accuracy(codes, skills, with_intervals=False)
            nb.sample_optimal_scores(p_a0, p_a1, with_intervals=False)
            nb.global_optimal_scores(p_a0, p_a1, with_intervals=False)
            nb.post_hoc_scores(p_a0, p_a1, blind, 1 - blind, with_intervals=False)

    def intervals_one_run():
        nb.naturalbench_scores(runs[0][0], with_intervals=True, rounds=1000)

    return run_all, intervals_one_run


def elo_case(n_battles: int = 12_000):
    rng = np.random.default_rng(1)
    models = [f"model-{k}" for k in range(20)]
    battles = []
    for t in range(n_battles):
        a, b = rng.choice(len(models), 2, replace=False)
        winner = rng.choice([models[a], models[b], visit.TIE], p=[0.45, 0.45, 0.1])
        battles.append(visit.Battle(models[a], models[b], winner, f"img{t}", f"ins{t}"))
    return battles


def vlind_case(n_instances: int = 300, n_runs: int = 50):
    rng = np.random.default_rng(2)
    runs = [
        [
            vlind.VLindInstance(
                ck=bool(rng.random() < 0.8),
                vp=bool(rng.random() < 0.8),
                cb=bool(rng.random() < 0.6),
                lp=tuple(bool(x) for x in rng.random(int(rng.integers(1, 8))) < 0.5),
                concept=f"c{k % 10}",
            )
            for k in range(n_instances)
        ]
        for _ in range(n_runs)
    ]

    def run_all():
        for instances in runs:
            vlind.vlind_scores(instances, with_intervals=True)
            vlind.vlind_scores_by(instances, lambda i: i.concept, with_intervals=False)

    return run_all


def loadavg() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    global REPEAT
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=REPEAT, help="runs per case")
    REPEAT = parser.parse_args().repeat
    print(f"cpus={os.cpu_count()} numpy={np.__version__} loadavg(1/5/15 min)={loadavg()}")
    run_all, intervals_one_run = naturalbench_case()
    timed("NaturalBench: every metric, 10k samples × 50 runs", 2.0, run_all)
    timed(
        "NaturalBench: Acc/Q/I/G 95% intervals, 10k samples, 1000 rounds", None, intervals_one_run
    )
    battles = elo_case()
    timed(
        "VisIT-Bench: bootstrap Elo, 1000 rounds × 12k battles",
        1.1,
        lambda: visit.bootstrap_elo(battles, rounds=1000, seed=0),
    )
    loop_rounds = 20
    loop = timed(
        f"  per-round loop, {loop_rounds} rounds (×{1000 // loop_rounds} = 1000 rounds)",
        None,
        lambda: visit.bootstrap_elo_loop(battles, rounds=loop_rounds, seed=0),
        repeat=1,
    )
    print(f"{'  → loop estimate for 1000 rounds':58} {loop * 1000 / loop_rounds:6.3f} s")
    timed("VLind-Bench: scores (+ intervals), 300 instances × 50 runs", None, vlind_case())
    timed(
        "Bootstrap mean interval, 10k units × 1000 rounds",
        None,
        lambda: bootstrap_mean_interval(np.random.default_rng(0).random(10_000)),
    )
    print(f"loadavg after: {loadavg()}")


if __name__ == "__main__":
    main()
