"""Test-only job kinds that fan out (``annotator.platform.chunks``): a parent sums the integers
below ``params["n"]`` in chunk jobs of ``params["size"]`` numbers; a chunk whose first number
is in ``params["refuse"]`` fails. A worker loads them with ``-I tests.annotator.chunk_jobs``."""

from __future__ import annotations

from celery import shared_task

from annotator.platform.chunks import FanOut, chunk_progress, chunk_results
from annotator.platform.models import Job
from annotator.platform.worker import JOB_OPTIONS, run_job

PARENT = "tests.sum_parent"
CHUNK = "tests.sum_chunk"


def sum_parent_work(job: Job):
    results = chunk_results(job=job, kind=CHUNK)
    if results is None:
        n, size = job.params["n"], job.params["size"]
        starts = range(0, n, size)
        return FanOut(
            kind=CHUNK,
            params=[
                {"start": s, "stop": min(s + size, n), "refuse": job.params.get("refuse", [])}
                for s in starts
            ],
            totals=[min(s + size, n) - s for s in starts],
        )
    return {"sum": sum(r["sum"] for r in results), "chunks": len(results)}


def sum_chunk_work(job: Job) -> dict:
    start, stop = job.params["start"], job.params["stop"]
    if start in job.params["refuse"]:
        raise ValueError(f"chunk starting at {start} refused")
    total = 0
    for k in range(start, stop):
        total += k
        chunk_progress(chunk=job, done=k - start + 1, total=stop - start)
    return {"sum": total}


@shared_task(name=PARENT, rerun_safe=True, **JOB_OPTIONS)
def sum_parent(self, job_id: int) -> None:
    run_job(self, job_id, sum_parent_work)


@shared_task(name=CHUNK, rerun_safe=True, **JOB_OPTIONS)
def sum_chunk(self, job_id: int) -> None:
    run_job(self, job_id, sum_chunk_work)
