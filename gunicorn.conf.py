"""Gunicorn settings read from the working directory: each worker freezes its start-up objects
so the cyclic garbage collector stops rescanning them (a full collection of the ~250k objects a
worker imports took up to 450 ms on a loaded 2-core machine; see benchmarks/README.md)."""

import gc


def post_worker_init(worker):
    gc.collect()
    gc.freeze()
