"""Freezing a server process's long-lived objects out of the cyclic garbage collector.

A web or job worker imports most of what it holds at start (frozen then: gunicorn.conf.py,
blindspot/celery.py), but much is made lazily by its first requests or jobs: compiled templates,
URL resolvers, translation catalogues, the ORM's and the clients' caches. Left in the collector,
each full collection rescans them all, and every request or job running in the process waits:
gen-2 pauses of 25–55 ms were logged in gunicorn workers during the hunt benchmark's paced phase
(after the start-up freeze). So the process freezes once more after its first ``AFTER`` requests
or jobs, when those caches are warm. What a request still in flight at that moment holds is
frozen with it (freed by reference counting when it ends, unless it is part of a cycle: a few
requests' worth, once)."""

from __future__ import annotations

import gc
import threading

AFTER = 200  # requests (gunicorn worker) or jobs (Celery worker) before the second freeze


class FreezeAfter:
    """Counts a process's requests or jobs; at the ``after``-th, collects and freezes."""

    def __init__(self, after: int = AFTER) -> None:
        self.after = after
        self.seen = 0
        self._lock = threading.Lock()

    def tick(self) -> bool:
        """One more request or job ended; True when this one froze the process."""
        with self._lock:
            self.seen += 1
            if self.seen != self.after:
                return False
        gc.collect()
        gc.freeze()
        return True


served = FreezeAfter()
