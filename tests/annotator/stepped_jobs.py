"""A test-only job kind that moves one step each time its test opens the gate: its progress can
be watched step by step from outside (a page polling its card, a terminal bar)."""

from __future__ import annotations

import threading
from collections import defaultdict

from celery import shared_task

from annotator.platform.jobs import job_progress
from annotator.platform.models import Job
from annotator.platform.worker import JOB_OPTIONS, run_job

STEPPED = "tests.stepped"
GATES: defaultdict[int, threading.Semaphore] = defaultdict(lambda: threading.Semaphore(0))
WAIT_S = 30


def step(job_id: int, n: int = 1) -> None:
    """Let job ``job_id`` take ``n`` more steps."""
    for _i in range(n):
        GATES[job_id].release()


def _stepped(job: Job) -> dict:
    """``params["steps"]`` steps, each reported once the gate opens; with ``stop_short`` the last
    report is about a step in progress (as "Writing the records" before a job returns)."""
    steps = int(job.params["steps"])
    job_progress(job_id=job.pk, done=0, total=steps, message="Waiting for the test")
    for done in range(1, steps + 1):
        if not GATES[job.pk].acquire(timeout=WAIT_S):
            raise RuntimeError(f"the test did not open the gate of step {done}")
        if job.params.get("stop_short") and done == steps:
            break
        job_progress(job_id=job.pk, done=done, message=f"Step {done} of {steps}")
    return {"steps": steps}


@shared_task(name=STEPPED, **JOB_OPTIONS)
def stepped(self, job_id: int) -> None:
    run_job(self, job_id, _stepped)
