"""The figures of ``benchmarks/hunt.py``: percentiles, where a step's time went (from the
database), the lines it prints, each measured step written out, and why no thinking time cannot
meet the target. The product's models are imported inside the functions, once ``hunt.py`` has
pointed Django at the benchmark's own database."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

MODEL_DELAY_S = 0.2  # the fake models answer each call this long after it arrives
TARGET_P99_MS = 50.0


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    k = min(len(ordered) - 1, max(0, int(round(q / 100 * (len(ordered) - 1)))))
    return ordered[k]


def breakdown(phase: dict) -> dict:
    """From the database, per measured step, the critical path after the submit: submit →
    job start (the queue), and job start → every answer on the page less the longest call (the
    job's own work before the calls, then streaming the answers to the waiting page and its
    answer; storing them comes after)."""
    from django.db.models import Max

    from annotator.platform.models import Job
    from curation.models import Generation
    from curation.recipes.hunt.models import HuntCandidate

    ends = dict(zip(phase["items"], phase["ends"], strict=True))
    ids = {int(path.rstrip("/").rsplit("/", 1)[1]): end for path, end in ends.items()}
    rows = HuntCandidate.objects.filter(pk__in=list(ids)).values_list("pk", "created_at", "job_id")
    jobs = Job.objects.in_bulk([job_id for _pk, _c, job_id in rows if job_id])
    longest = dict(
        Generation.objects.filter(item_key__startswith="hunt-", job_id__in=list(jobs))
        .values_list("job_id")
        .annotate(m=Max("latency_ms"))
    )
    queue, own = [], []
    for pk, created, job_id in rows:
        job = jobs.get(job_id)
        if job is None or job.started_at is None or job_id not in longest:
            continue
        queue.append((job.started_at - created).total_seconds() * 1000)
        own.append((ids[pk] - job.started_at.timestamp()) * 1000 - longest[job_id])
    return {"queue": queue, "own": own}


def _p(values: list[float]) -> str:
    return f"p50 {pct(values, 50):.1f} ms p99 {pct(values, 99):.1f} ms"


def dump(workdir: Path, label: str, phase: dict) -> None:
    """Each measured step of a phase, for a look at single steps beside the database's rows:
    ``<logs>/steps-<label>.json``, the item's path, the client's end (epoch seconds), its
    total and submit request times (ms)."""
    keys = ("items", "ends", "totals", "posts")
    rows = zip(*(phase[k] for k in keys), strict=True)
    steps = [dict(zip(keys, row, strict=True)) for row in rows]
    name = re.sub(r"[^a-z0-9]+", "-", label.lower()).strip("-")
    (workdir / f"steps-{name}.json").write_text(json.dumps(steps))


def report(label: str, phase: dict, seconds: float) -> float:
    totals = phase["totals"]
    overhead = [t - MODEL_DELAY_S * 1000 for t in totals]
    p50, p99 = pct(overhead, 50), pct(overhead, 99)
    print(f"{label}: p50 {p50:.1f} ms p99 {p99:.1f} ms", flush=True)
    before, after = phase["load"]
    polls = sum(phase["polls"]) / len(phase["polls"]) if phase["polls"] else float("nan")
    print(
        f"    {len(totals)} steps; client step time {_p(totals)} (fake models: "
        f"{MODEL_DELAY_S * 1000:.0f} ms); {polls:.2f} status requests a step; load average "
        f"{before[0]:.2f} → {after[0]:.2f}"
    )
    parts = breakdown(phase)
    if parts["queue"]:
        print(
            f"    where: submit request {_p(phase['posts'])}; submit → job start "
            f"{_p(parts['queue'])}; job start → every answer on the page, less the longest "
            f"call {_p(parts['own'])}"
        )
    if totals and phase["cpu"]:
        per_step = {k: v * 1000 / len(totals) for k, v in phase["cpu"].items()}
        spent = ", ".join(f"{k} {v:.1f}" for k, v in per_step.items())
        rate = len(totals) / seconds
        total = sum(per_step.values())
        print(
            f"    CPU per step (ms): {spent}; total {total:.1f} ms, at {rate:.1f} steps/s: "
            f"{rate * total / 1000:.2f} cores for these; the whole machine "
            f"{phase['machine']:.2f} of {os.cpu_count()} cores busy (PostgreSQL, Redis, the "
            "simulated workers, anything else running; of it, taken by the hypervisor for other "
            f"guests: {phase['stolen']:.2f})"
        )
    if phase["errors"]:
        print(f"    ERRORS ({len(phase['errors'])}): {phase['errors'][:3]}")
    return p99


def reachable(workers: int, phase: dict, seconds: float) -> str:
    """Why no thinking time cannot meet the target on this machine, from the phase's own
    figures: each worker waiting 200 ms + at most 50 ms makes workers / 0.25 s steps a second,
    and every step costs the machine what this phase measured (its busy cores over its steps a
    second: the product, PostgreSQL, Redis and the simulated workers, at saturation)."""
    if not phase["totals"]:
        return ""
    rate = len(phase["totals"]) / seconds
    per_step = phase["machine"] / rate  # core-seconds of the whole machine a step
    needed = workers / (MODEL_DELAY_S + TARGET_P99_MS / 1000)
    return (
        f"≤ {TARGET_P99_MS:g} ms with no thinking time means {needed:.0f} steps/s from "
        f"{workers} workers; at the {per_step * 1000:.1f} ms of the machine's CPU a step this "
        f"phase measured ({phase['machine']:.2f} cores busy at {rate:.1f} steps/s) that is "
        f"{needed * per_step:.1f} cores, on a machine of {os.cpu_count()}: the load of "
        f"{workers} people is the paced phase"
    )
