#!/usr/bin/env python
"""Claim latency of the annotation engine on PostgreSQL (a script, not a test).

Phase 1 (service layer): queues of 10k and 1M tasks, 50 simulated annotators, each a separate
process with its own database connection, loop claim → (think) → submit for a bounded time.
"Claim" is every call of ``services.assignment_claim`` — the first one and the one inside every
submit that hands out the next task. By default the annotators work on both queues at once,
each holding a lease in each and taking them in turn task by task, for 120 s in 6 rounds, so
that the two tails are measured at the same moments of a shared machine (``--layout turns``:
one queue at a time, the queues taking turns round by round). Prints p50 / p95 / p99 claim
latency, submit latency, submits per second, and p99(1M) / p99(10k), per round and in all.

Phase 2 (HTTP): the app under gunicorn on 127.0.0.1, a 100k-task queue, 10 users with API
tokens doing ``POST /api/queues/<id>/next/`` then ``POST /api/tasks/<id>/submit/`` over
keep-alive connections, 60 s after a 5 s warm-up. Prints p50 / p95 / p99 for both calls as the
client sees them (a submit also claims the next task; the ``next`` that follows returns that
lease), and with ``--server-timing`` the workers' own times too.

Every phase prints the machine's load average while it measured. The script drops and recreates
its own database (default ``blindspot_bench``) every run.

    python benchmarks/claim_latency.py            # full run (~5 min on 2 cores)
    python benchmarks/claim_latency.py --quick    # smoke run (~1 min)
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from http.client import HTTPConnection
from pathlib import Path

from annotator.platform.errors import ServiceError

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.common import free_port, recreate_database, stop  # noqa: E402

DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/blindspot_bench"
TARGETS = {"service_p99_ms": 25.0, "ratio": 1.3, "http_next_p99_ms": 30.0}


# --------------------------------------------------------------------------------------------
# Environment and database
# --------------------------------------------------------------------------------------------
def configure_env(url: str) -> dict[str, str]:
    """Production-like settings (DEBUG off) that still answer plain HTTP on 127.0.0.1."""
    env = {
        "DATABASE_URL": url,
        "DJANGO_SETTINGS_MODULE": "blindspot.settings",
        "DEBUG": "0",
        "SECRET_KEY": os.environ.get("SECRET_KEY", "benchmark-only-" + "x" * 40),
        "SECURE_SSL_REDIRECT": "0",
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "CONN_MAX_AGE": "60",
        "CELERY_TASK_ALWAYS_EAGER": "1",
        "LOG_LEVEL": "ERROR",
        # No collectstatic for a benchmark: serve static files without the manifest.
        "STATICFILES_STORAGE": "django.contrib.staticfiles.storage.StaticFilesStorage",
        # …and no warning from WhiteNoise, in every gunicorn worker, that STATIC_ROOT is empty.
        "PYTHONWARNINGS": "ignore:No directory at",
    }
    os.environ.update(env)
    sys.path.insert(0, str(ROOT))
    return env


def setup_django(url: str) -> None:
    import django
    from django.core.management import call_command

    django.setup()
    t = time.perf_counter()
    call_command("migrate", verbosity=0, interactive=False)
    print(f"database ready (migrated in {time.perf_counter() - t:.1f} s)")


def make_people(n: int, prefix: str):
    from django.contrib.auth import get_user_model
    from rest_framework.authtoken.models import Token

    from annotator.platform import roles

    User = get_user_model()
    User.objects.bulk_create([User(username=f"{prefix}{i}") for i in range(n)])
    people = list(User.objects.filter(username__startswith=prefix).order_by("id"))
    for person in people:
        roles.grant_role(person, roles.CROWDWORKER)
    Token.objects.bulk_create([Token(user=p, key=Token.generate_key()) for p in people])
    return people


def make_queue(project, size: int, title: str):
    """Insert ``size`` vqa_choice tasks in one INSERT … SELECT generate_series (seconds for 1M)."""
    from django.db import connection

    from annotator import services

    queue = services.queue_create(
        project=project, kind="vqa_choice", title=title, redundancy=2, max_redundancy=2
    )
    t = time.perf_counter()
    with connection.cursor() as cur:
        cur.execute(
            """
            INSERT INTO annotator_task (queue_id, payload, gold, is_gold, external_id, state,
                required, active_count, done_count, escalations, created_at)
            SELECT %s,
                jsonb_build_object(
                    'image', jsonb_build_object(
                        'url', '/static/demo/bench/' || (i %% 97) || '.png'),
                    'question', 'Is the cube left of the ball? (' || i || ')',
                    'choices', jsonb_build_array('Yes', 'No')),
                NULL, false, 'bench-' || i, 'open', %s, 0, 0, 0, now()
            FROM generate_series(1, %s) AS i
            """,
            [queue.pk, queue.redundancy, size],
        )
        # Let the queue settle before it is measured, as autovacuum and the checkpointer would
        # soon after a real import: the phase then times claims, not the aftermath of a bulk
        # load (hint bits, an empty visibility map, a checkpoint flushing 1M new rows mid-run).
        cur.execute("VACUUM (ANALYZE) annotator_task")
        cur.execute("VACUUM (ANALYZE) annotator_assignment")
        cur.execute("CHECKPOINT")
    print(f"  {size:>9,} tasks inserted, vacuumed and analysed in {time.perf_counter() - t:.1f} s")
    return queue


# --------------------------------------------------------------------------------------------
# Statistics
# --------------------------------------------------------------------------------------------
def load_average() -> list[float]:
    """The 1-minute load average: on a shared machine, the context every figure needs."""
    try:
        return [float(Path("/proc/loadavg").read_text().split()[0])]
    except (OSError, ValueError):
        return []


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    k = max(0, min(len(ordered) - 1, int(round(q / 100 * len(ordered) + 0.5)) - 1))
    return ordered[k] * 1000


@dataclass
class Stats:
    label: str
    claims: list[float] = field(default_factory=list)
    submits: list[float] = field(default_factory=list)
    n_submits: int = 0
    empty: int = 0
    errors: list[str] = field(default_factory=list)
    seconds: float = 0.0
    server: dict[str, list[float]] = field(default_factory=dict)  # worker-side, HTTP only
    loads: list[float] = field(default_factory=list)  # 1-min load average, start and end

    def merge(self, part: dict) -> None:
        self.claims += part["claims"]
        self.submits += part["submits"]
        self.n_submits += part["n_submits"]
        self.empty += part["empty"]
        self.errors += part["errors"]

    def absorb(self, other: Stats) -> None:
        """Add the figures of another round on the same queue."""
        self.merge(other.__dict__)
        self.seconds += other.seconds
        self.loads += other.loads

    def load_text(self) -> str:
        if not self.loads:
            return "?"
        low, high = min(self.loads), max(self.loads)
        return f"{low:.2f}" if low == high else f"{low:.2f}–{high:.2f}"

    def line(self, what: str, values: list[float]) -> str:
        return (
            f"  {what:<22} n={len(values):>6}  p50 {pct(values, 50):6.2f} ms  "
            f"p95 {pct(values, 95):6.2f} ms  p99 {pct(values, 99):6.2f} ms  "
            f"max {max(values, default=float('nan')) * 1000:7.1f} ms"
        )


# --------------------------------------------------------------------------------------------
# Phase 1: service layer
# --------------------------------------------------------------------------------------------
def service_annotator(queue_ids, user_id, think, seed, window, out) -> None:
    """One simulated annotator in its own process (own connection): claim → think → submit.

    With several queues the annotator holds a lease in each and takes them in turn, task by
    task (a crowdworker with one tab per queue): every moment of the run then falls on all the
    queues alike. ``window`` is (start, record_from, end) in wall-clock seconds: the loop runs
    from start to end, and only calls that begin at or after record_from are recorded (warm-up
    excluded). Puts one part per queue, in the order of ``queue_ids``.
    """
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.db import connections

    from annotator import services
    from annotator.models import TaskQueue

    start_at, record_from, end = window
    rng = random.Random(seed)
    parts = {
        qid: {"claims": [], "submits": [], "n_submits": 0, "empty": 0, "errors": []}
        for qid in queue_ids
    }
    original = services.assignment_claim

    def timed_claim(**kwargs):
        t = time.perf_counter()
        began = time.time()
        try:
            return original(**kwargs)
        finally:
            if began >= record_from:
                parts[kwargs["queue"].pk]["claims"].append(time.perf_counter() - t)

    # annotation_submit looks claiming.assignment_claim up at call time, so its next-task claim
    # is timed too.
    services.assignment_claim = services.claiming.assignment_claim = timed_claim
    try:
        queues = list(TaskQueue.objects.filter(pk__in=queue_ids).order_by("pk"))
        rng.shuffle(queues)  # half the annotators start on each queue
        person = get_user_model().objects.get(pk=user_id)
        # People do not arrive in the same millisecond: each starts within one think time.
        time.sleep(max(0.0, start_at - time.time()) + rng.uniform(0, think[1] if think else 0))
        held = {q.pk: services.assignment_claim(queue=q, annotator=person) for q in queues}
        live = list(queues)
        turn = 0
        while live and time.time() < end:
            queue = live[turn % len(live)]
            part, got = parts[queue.pk], held[queue.pk]
            if got.assignment is None:
                part["empty"] += 1
                if got.retry_after is None:
                    live.remove(queue)
                    continue
                time.sleep(0.05)
                held[queue.pk] = services.assignment_claim(queue=queue, annotator=person)
                continue
            turn += 1
            if think:
                time.sleep(rng.uniform(*think))
            t = time.perf_counter()
            began = time.time()
            try:
                result = services.annotation_submit(
                    task_id=got.assignment.task_id,
                    annotator=person,
                    response={"answer": rng.choice(["Yes", "Yes", "No"])},
                    duration_ms=1500,
                )
            except ServiceError as exc:
                part["errors"].append(exc.message)
                held[queue.pk] = services.assignment_claim(queue=queue, annotator=person)
                continue
            if began >= record_from:
                part["submits"].append(time.perf_counter() - t)
                part["n_submits"] += 1
            held[queue.pk] = result.next
    except Exception as exc:  # noqa: BLE001 - reported by the parent
        parts[queue_ids[0]]["errors"].append(f"{type(exc).__name__}: {exc}")
    finally:
        connections.close_all()
        out.put([parts[qid] for qid in queue_ids])


def run_processes(
    target, arg_sets: list[tuple], labels: list[str], seconds: float, warmup: float, at_record=None
) -> list[Stats]:
    """Run one process per argument set for ``warmup`` + ``seconds``; the figures cover the
    last ``seconds`` only. Each process puts one part per label. ``at_record`` runs when
    recording starts."""
    from django.db import connections

    connections.close_all()  # children must not share the parent's socket
    ctx = mp.get_context("fork")
    out = ctx.Queue()
    start_at = time.time() + 1.5 + 0.02 * len(arg_sets)
    record_from = start_at + warmup
    window = (start_at, record_from, record_from + seconds)
    procs = [ctx.Process(target=target, args=(*a, window, out)) for a in arg_sets]
    for p in procs:
        p.start()
    if at_record is not None:
        time.sleep(max(0.0, record_from - time.time()))
        at_record()
    results = [Stats(label) for label in labels]
    loads = load_average()
    for _ in procs:
        for stats, part in zip(results, out.get(timeout=warmup + seconds + 120), strict=True):
            stats.merge(part)
    for p in procs:
        p.join(timeout=30)
    loads += load_average()
    for stats in results:
        stats.seconds, stats.loads = seconds, list(loads)
    return results


def explain_claim(queue, person) -> str:
    """EXPLAIN (ANALYZE, BUFFERS) of the claim statement for one annotator (rolled back)."""
    from django.db import connection, transaction
    from django.utils import timezone

    from annotator import services

    now = timezone.now()
    params = {
        "queue": queue.pk,
        "person": person.pk,
        "now": now,
        "expires": now + queue.lease_ttl,
        "presentation": "{}",
    }
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + services.claiming._PG_CLAIM, params)
        plan = "\n".join(row[0] for row in cursor.fetchall())
        transaction.set_rollback(True)
    return plan


def service_phase(project, people, sizes: list[int], args) -> list[Stats]:
    """Measure the queues against each other under the same load.

    The load of a shared 2-core machine drifts from second to second, and a ratio of two tails
    measured at different moments compares the moments as much as the queues. ``paired`` (the
    default): the annotators work on all the queues at once, each holding a lease in every
    queue and taking them in turn, so that any disturbance falls on every queue alike; each
    queue gets ``args.seconds`` worth of claims (the run lasts ``args.seconds`` × queues).
    ``turns``: one queue at a time, all the annotators on it, queues taking turns round by round
    (10k, 1M, 10k, 1M, …), ``args.seconds`` per queue."""
    queues = [make_queue(project, size, f"bench {size}") for size in sizes]
    think = (args.think_min / 1000, args.think_max / 1000) if args.think_max else None
    annotators = people[: args.annotators]
    results = [Stats(f"{size:,} tasks") for size in sizes]
    if args.layout == "paired":
        seconds = args.seconds * len(queues) / args.rounds
        print(
            f"  {len(annotators)} annotators on all {len(queues)} queues at once, taking them "
            f"in turn task by task; {args.rounds} round(s) of {args.round_warmup:g} s warm-up "
            f"+ {seconds:g} s …",
            flush=True,
        )
        batches = [(queues, results)]
    else:
        seconds = args.seconds / args.rounds
        print(
            f"  {len(annotators)} annotators per queue; {args.rounds} round(s) per queue of "
            f"{args.round_warmup:g} s warm-up + {seconds:g} s, queues in turn …",
            flush=True,
        )
        batches = [([q], [r]) for q, r in zip(queues, results, strict=True)]
    for number in range(1, args.rounds + 1):
        for batch, totals in batches:
            ids = [q.pk for q in batch]
            arg_sets = [(ids, p.pk, think, i) for i, p in enumerate(annotators)]
            labels = [t.label for t in totals]
            parts = run_processes(service_annotator, arg_sets, labels, seconds, args.round_warmup)
            figures = "  ".join(
                f"{p.label}: p50 {pct(p.claims, 50):5.2f} p99 {pct(p.claims, 99):6.2f} ms"
                for p in parts
            )
            if len(parts) >= 2:
                figures += f"  ratio {pct(parts[-1].claims, 99) / pct(parts[0].claims, 99):4.2f}"
            print(
                f"    round {number}  {figures}  (load average {parts[0].load_text()})",
                flush=True,
            )
            for total, part in zip(totals, parts, strict=True):
                total.absorb(part)
    if args.explain:
        for queue in queues:
            print(f"  EXPLAIN ANALYZE of the claim query on {queue.title!r} after the run:")
            print("    " + explain_claim(queue, people[-1]).replace("\n", "\n    "))
    return results


# --------------------------------------------------------------------------------------------
# Phase 2: HTTP
# --------------------------------------------------------------------------------------------
# Gunicorn settings of the HTTP phase beyond the command line (written to a temporary file).
GUNICORN_CONF = """
import gc


def post_worker_init(worker):
    # The ~250k objects a worker holds after start-up (Django, DRF, numpy, …) live for its whole
    # life. Freezing them keeps them out of the cyclic collector, whose full passes would
    # otherwise scan all of them in the middle of a request (about 100 ms on 2 cores).
    if {freeze}:
        gc.collect()
        gc.freeze()
"""


def start_gunicorn(
    env: dict,
    port: int,
    workers: int,
    threads: int,
    *,
    workdir: Path,
    freeze: bool,
    access_log: Path | None = None,
    wait_s: float = 30.0,
) -> subprocess.Popen:
    gunicorn = Path(sys.executable).with_name("gunicorn")
    conf = workdir / "gunicorn_bench.conf.py"
    conf.write_text(GUNICORN_CONF.format(freeze=freeze))
    cmd = [
        str(gunicorn) if gunicorn.exists() else "gunicorn",
        "blindspot.wsgi:application",
        "--config",
        str(conf),
        "--bind",
        f"127.0.0.1:{port}",
        "--workers",
        str(workers),
        "--worker-class",
        "gthread",
        "--threads",
        str(threads),
        "--log-level",
        "warning",
    ]
    if access_log is not None:
        # %(D)s: microseconds from the worker taking the request to the response's last byte.
        cmd += ["--access-logfile", str(access_log), "--access-logformat", "%(m)s %(U)s %(D)s"]
    proc = subprocess.Popen(cmd, cwd=ROOT, env={**os.environ, **env}, start_new_session=True)
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        try:
            conn = HTTPConnection("127.0.0.1", port, timeout=2)
            conn.request("GET", "/login/")
            conn.getresponse().read()
            return proc
        except OSError:
            if proc.poll() is not None:
                raise SystemExit("gunicorn exited during start-up") from None
            time.sleep(0.3)
    stop(proc)
    raise SystemExit(f"gunicorn did not answer within {wait_s:g} s")


def http_user(port, queue_id, token, think, seed, window, out) -> None:
    """One API user: POST next → (think) → POST submit, over one keep-alive connection.

    Latency is the client's: from sending the request to having read the whole response.
    """
    start_at, record_from, end = window
    rng = random.Random(seed)
    part = {"claims": [], "submits": [], "n_submits": 0, "empty": 0, "errors": []}
    headers = {"Authorization": f"Token {token}", "Content-Type": "application/json"}
    conn = HTTPConnection("127.0.0.1", port, timeout=30)

    def post(path: str, body: dict | None = None) -> tuple[int, dict, float, bool]:
        data = json.dumps(body).encode() if body is not None else b""
        recorded = time.time() >= record_from
        t = time.perf_counter()
        conn.request("POST", path, body=data, headers=headers)
        response = conn.getresponse()
        raw = response.read()
        elapsed = time.perf_counter() - t
        return response.status, json.loads(raw or b"{}"), elapsed, recorded

    try:
        time.sleep(max(0.0, start_at - time.time()) + rng.uniform(0, think[1] if think else 0))
        while time.time() < end:
            status, body, elapsed, recorded = post(f"/api/queues/{queue_id}/next/")
            if status != 200:
                part["errors"].append(f"next {status}: {body}")
                break
            if recorded:
                part["claims"].append(elapsed)
            task = body["task"]
            if task is None:
                part["empty"] += 1
                if body.get("retry_after") is None:
                    break
                time.sleep(0.05)
                continue
            if think:
                time.sleep(rng.uniform(*think))
            answer = {"response": {"answer": rng.choice(["Yes", "No"])}, "duration_ms": 1500}
            status, body, elapsed, recorded = post(f"/api/tasks/{task['id']}/submit/", answer)
            if status not in (200, 201):
                part["errors"].append(f"submit {status}: {body}")
                continue
            if recorded:
                part["submits"].append(elapsed)
                part["n_submits"] += 1
    except Exception as exc:  # noqa: BLE001 - reported by the parent
        part["errors"].append(f"{type(exc).__name__}: {exc}")
    finally:
        conn.close()
        out.put([part])


def read_server_times(access_log: Path) -> dict[str, list[float]]:
    """Seconds per request as the workers saw them, from the access log (``%(D)s``)."""
    times: dict[str, list[float]] = {"next": [], "submit": []}
    for line in access_log.read_text().splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0] == "POST":
            what = parts[1].rstrip("/").rsplit("/", 1)[-1]
            if what in times:
                times[what].append(int(parts[2]) / 1e6)
    return times


def http_phase(project, people, args, env) -> Stats:
    from rest_framework.authtoken.models import Token

    queue = make_queue(project, args.http_tasks, "bench http")
    users = people[: args.http_users]
    tokens = dict(Token.objects.filter(user__in=users).values_list("user_id", "key"))
    port = free_port()
    workdir = Path(tempfile.mkdtemp(prefix="claim-bench-"))
    access_log = workdir / "access.log" if args.server_timing else None
    proc = start_gunicorn(
        env,
        port,
        args.gunicorn_workers,
        args.gunicorn_threads,
        workdir=workdir,
        freeze=args.gc_freeze,
        access_log=access_log,
    )
    print(
        f"  gunicorn on 127.0.0.1:{port} ({args.gunicorn_workers} workers × "
        f"{args.gunicorn_threads} threads, gthread, gc.freeze {'on' if args.gc_freeze else 'off'})"
        f"; {len(users)} users for {args.warmup:g} s warm-up + {args.seconds:g} s …",
        flush=True,
    )
    think = (args.think_min / 1000, args.think_max / 1000) if args.think_max else None

    def start_recording() -> None:
        if access_log is not None:
            os.truncate(access_log, 0)  # the workers append: warm-up lines go, new ones stay

    try:
        arg_sets = [(port, queue.pk, tokens[u.pk], think, i) for i, u in enumerate(users)]
        [stats] = run_processes(
            http_user,
            arg_sets,
            [f"HTTP {args.http_tasks:,} tasks"],
            args.seconds,
            args.warmup,
            start_recording,
        )
    finally:
        stop(proc)
    if access_log is not None:
        stats.server = read_server_times(access_log)
    shutil.rmtree(workdir, ignore_errors=True)
    return stats


# --------------------------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------------------------
def report(stats: Stats, claim_name: str = "claim") -> None:
    print(f"\n[{stats.label}]  (load average {stats.load_text()} while measuring)")
    print(stats.line(claim_name, stats.claims))
    print(stats.line("submit (+ next claim)", stats.submits))
    for what, values in stats.server.items():
        print(stats.line(f"  server: {what}", values))
    rate = stats.n_submits / stats.seconds if stats.seconds else 0
    print(f"  submits/s              {rate:8.1f}   ({stats.n_submits} in {stats.seconds:.0f} s)")
    if stats.empty:
        print(f"  empty answers          {stats.empty}")
    if stats.errors:
        print(f"  ERRORS ({len(stats.errors)}): {stats.errors[:5]}")


def verdict(name: str, value: float, limit: float, unit: str = "ms") -> str:
    mark = "OK  " if value <= limit else "MISS"
    return f"  [{mark}] {name:<28} {value:7.2f} {unit:<2} (target ≤ {limit:g})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small smoke run (~1 min)")
    parser.add_argument("--database-url", default=os.environ.get("DATABASE_URL", DEFAULT_URL))
    parser.add_argument("--sizes", default="10000,1000000", help="service-layer queue sizes")
    parser.add_argument("--annotators", type=int, default=50)
    parser.add_argument(
        "--seconds",
        type=float,
        default=60.0,
        help="measured seconds per queue (paired: the run lasts this × queues) and for HTTP",
    )
    parser.add_argument(
        "--warmup", type=float, default=5.0, help="HTTP: seconds run before measuring"
    )
    parser.add_argument(
        "--layout",
        choices=["paired", "turns"],
        default="paired",
        help="service layer: all queues at once, annotators taking them in turn (paired), or "
        "one queue at a time, queues taking turns round by round (turns)",
    )
    parser.add_argument("--rounds", type=int, default=6, help="service layer: rounds")
    parser.add_argument(
        "--round-warmup",
        type=float,
        default=3.0,
        help="service layer: seconds run before measuring, in each round",
    )
    parser.add_argument("--think-min", type=float, default=500.0, help="ms before a submit")
    parser.add_argument("--think-max", type=float, default=1500.0, help="0 = no think time")
    parser.add_argument("--http-tasks", type=int, default=100_000)
    parser.add_argument("--http-users", type=int, default=10)
    parser.add_argument("--gunicorn-workers", type=int, default=3)
    parser.add_argument("--gunicorn-threads", type=int, default=4)
    parser.add_argument(
        "--no-gc-freeze",
        dest="gc_freeze",
        action="store_false",
        help="do not freeze each worker's start-up objects (gc.freeze)",
    )
    parser.add_argument(
        "--server-timing",
        action="store_true",
        help="also print the workers' own request times (gunicorn access log)",
    )
    parser.add_argument("--skip-service", action="store_true")
    parser.add_argument("--skip-http", action="store_true")
    parser.add_argument("--explain", action="store_true", help="print EXPLAIN ANALYZE")
    args = parser.parse_args()
    if args.quick:
        args.sizes, args.annotators, args.seconds, args.warmup = "2000,50000", 10, 6.0, 2.0
        args.rounds, args.round_warmup = 2, 1.0
        args.http_tasks, args.http_users = 5000, 3
    if not args.database_url.startswith(("postgres://", "postgresql://")):
        raise SystemExit("the benchmark needs PostgreSQL: --database-url postgres://…")

    env = configure_env(args.database_url)
    print(f"Blindspot claim latency benchmark — {args.database_url}  ({os.cpu_count()} CPUs)")
    recreate_database(args.database_url)
    setup_django(args.database_url)
    from annotator import services

    people = make_people(max(args.annotators, args.http_users), "bench")
    project = services.project_create(name="Benchmark", slug="benchmark", members=people)
    think = f"{args.think_min:g}–{args.think_max:g} ms" if args.think_max else "none"
    print(f"think time per task: {think}")

    results: list[Stats] = []
    if not args.skip_service:
        print("\nPhase 1: service layer")
        results = service_phase(project, people, [int(s) for s in args.sizes.split(",")], args)
    http = None
    if not args.skip_http:
        print("\nPhase 2: HTTP")
        http = http_phase(project, people, args, env)

    print("\n" + "=" * 78)
    for stats in results:
        report(stats)
    if http is not None:
        report(http, claim_name="POST next")
    print("\nTargets")
    ok = True
    if results:
        worst = max(pct(s.claims, 99) for s in results)
        print(verdict("service claim p99 (worst)", worst, TARGETS["service_p99_ms"]))
        ok &= worst <= TARGETS["service_p99_ms"]
    if len(results) >= 2:
        ratio = pct(results[-1].claims, 99) / pct(results[0].claims, 99)
        print(verdict(f"p99({results[-1].label}) / p99({results[0].label})", ratio, 1.3, "×"))
        ok &= ratio <= TARGETS["ratio"]
    if http is not None:
        next_p99 = pct(http.claims, 99)
        print(verdict("HTTP next p99", next_p99, TARGETS["http_next_p99_ms"]))
        submit_p99 = pct(http.submits, 99)
        print(f"  [info] {'HTTP submit (+ claim) p99':<28} {submit_p99:7.2f} ms (not a target)")
        ok &= next_p99 <= TARGETS["http_next_p99_ms"]
    errors = sum(len(s.errors) for s in [*results, *([http] if http else [])])
    if errors:
        print(f"  {errors} error(s) during the run (see above)")
    return 0 if ok and not errors else 1


if __name__ == "__main__":
    sys.exit(main())
