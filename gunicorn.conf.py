"""Gunicorn settings read from the working directory: each worker freezes its start-up objects
so the cyclic garbage collector stops rescanning them (a full collection of the ~250k objects a
worker imports took up to 450 ms on a loaded 2-core machine; see benchmarks/README.md), and
once more after its first requests (blindspot/gcfreeze.py)."""

import gc

from blindspot.gcfreeze import served


def post_worker_init(worker):
    gc.collect()
    gc.freeze()


def post_request(worker, req, environ, resp):
    served.tick()  # once warm, the lazily made caches are frozen too (blindspot/gcfreeze.py)
