"""The demo's embedded worker: jobs run in a thread of the web process, not in the request.

``make run`` serves the demo with ``CELERY_TASK_ALWAYS_EAGER=1`` (no Redis, no Celery worker to
start) and ``BLINDSPOT_JOBS_IN_BACKGROUND=1``: a job a request starts is handed, once its row is
committed, to one thread of the server process, which runs it through the same task and
``run_job`` as a Celery worker would (claim, heartbeat, progress on the row, errors on the
row). The request answers at once, the flash says the job started, and its card, polling, shows
the bar move. One thread runs the jobs one at a time in the order they were started (a worker
with one process); while it has nothing to do it runs the lost-job sweep every
BLINDSPOT_JOB_SWEEP_S seconds, as the beat would, so a job left "running" by a server the
autoreloader restarted fails or runs again.

Production is unchanged: Celery workers through Redis. Without the flag, eager mode still runs
a job inside the call that started it (tests, commands, ``manage.py demo``).
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from typing import Any

from django.conf import settings
from django.db import connections

log = logging.getLogger(__name__)
SWEEP_TASK = "annotator.sweep_lost_jobs"


def enabled() -> bool:
    """Whether jobs started in this process run in the embedded worker."""
    return bool(getattr(settings, "BLINDSPOT_JOBS_IN_BACKGROUND", False))


class EmbeddedWorker:
    """One daemon thread taking (task, job id, attempt token) from a queue, started on first use."""

    def __init__(self) -> None:
        self.inbox: queue.Queue[tuple[Any, int, str] | None] = queue.Queue()
        self.thread: threading.Thread | None = None
        self.lock = threading.Lock()

    def submit(self, task: Any, job_id: int, token: str) -> None:
        with self.lock:
            if self.thread is None or not self.thread.is_alive():
                self.thread = threading.Thread(
                    target=self._loop, args=(task.app,), name="blindspot-jobs", daemon=True
                )
                self.thread.start()
        self.inbox.put((task, job_id, token))

    def _loop(self, app: Any) -> None:
        while True:
            try:
                item = self.inbox.get(timeout=settings.BLINDSPOT_JOB_SWEEP_S)
            except queue.Empty:
                self._run(app.tasks.get(SWEEP_TASK), None, "")
                continue
            try:
                if item is None:  # stop()
                    return
                self._run(*item)
            finally:
                self.inbox.task_done()

    @staticmethod
    def _run(task: Any, job_id: int | None, token: str) -> None:
        if task is None:
            return
        try:
            if job_id is None:
                task.apply()
            else:
                task.apply(args=[job_id], task_id=token or None)
        except Exception:  # noqa: BLE001 - the job's own failure is on its row; the thread goes on
            log.exception("embedded worker: job %s raised", job_id)
        finally:
            connections.close_all()  # this thread's own connections

    def idle(self) -> bool:
        return self.inbox.unfinished_tasks == 0

    def wait_idle(self, timeout_s: float) -> bool:
        """Block until every job handed over has run (True) or ``timeout_s`` passes (False)."""
        deadline = time.monotonic() + timeout_s
        while not self.idle():
            if time.monotonic() > deadline:
                return False
            time.sleep(0.02)
        return True

    def stop(self, timeout_s: float = 30) -> None:
        """End the thread after the jobs already handed over (tests; the process exits anyway)."""
        with self.lock:
            thread, self.thread = self.thread, None
        if thread is not None and thread.is_alive():
            self.inbox.put(None)
            thread.join(timeout_s)


WORKER = EmbeddedWorker()


def submit(task: Any, job_id: int, token: str) -> None:
    """Run job ``job_id`` through ``task`` in the embedded worker, after those before it."""
    WORKER.submit(task, job_id, token)
