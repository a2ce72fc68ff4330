#!/usr/bin/env python
"""Claim latency of the annotation engine on PostgreSQL (a script, not a test).

Phase 1 (service layer): queues of 10k and 1M tasks, 50 simulated annotators, each a separate
process with its own database connection, loop claim → (think) → submit for a bounded time.
"Claim" is every call of ``services.assignment_claim`` — the first one and the one inside every
submit that hands out the next task. Prints p50 / p95 / p99 claim latency, submit latency,
submits per second, and p99(1M) / p99(10k).

Phase 2 (HTTP): the app under gunicorn on 127.0.0.1, a 100k-task queue, 10 users with API
tokens doing ``POST /api/queues/<id>/next/`` then ``POST /api/tasks/<id>/submit/``. Prints
p50 / p95 / p99 for both calls (a submit also claims the next task; the ``next`` that follows
returns that lease).

The script drops and recreates its own database (default ``blindspot_bench``) every run.

    python benchmarks/claim_latency.py            # full run (~5 min on 2 cores)
    python benchmarks/claim_latency.py --quick    # smoke run (~1 min)
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import random
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from http.client import HTTPConnection
from pathlib import Path
from urllib.parse import urlparse

ROOT = Path(__file__).resolve().parent.parent
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
    }
    os.environ.update(env)
    sys.path.insert(0, str(ROOT))
    return env


def recreate_database(url: str) -> None:
    import psycopg

    parts = urlparse(url)
    name = parts.path.lstrip("/")
    if not name.replace("_", "").isalnum():
        raise SystemExit(f"refusing odd database name {name!r}")
    admin = parts._replace(path="/postgres").geturl()
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')


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

    from annotator import roles

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
        cur.execute("ANALYZE annotator_task")
        cur.execute("ANALYZE annotator_assignment")
    print(f"  {size:>9,} tasks inserted and analysed in {time.perf_counter() - t:.1f} s")
    return queue


# --------------------------------------------------------------------------------------------
# Statistics
# --------------------------------------------------------------------------------------------
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

    def merge(self, part: dict) -> None:
        self.claims += part["claims"]
        self.submits += part["submits"]
        self.n_submits += part["n_submits"]
        self.empty += part["empty"]
        self.errors += part["errors"]

    def line(self, what: str, values: list[float]) -> str:
        return (
            f"  {what:<22} n={len(values):>6}  p50 {pct(values, 50):6.2f} ms  "
            f"p95 {pct(values, 95):6.2f} ms  p99 {pct(values, 99):6.2f} ms  "
            f"max {max(values, default=float('nan')) * 1000:7.1f} ms"
        )


# --------------------------------------------------------------------------------------------
# Phase 1: service layer
# --------------------------------------------------------------------------------------------
def service_annotator(queue_id, user_id, seconds, think, seed, start_at, out) -> None:
    """One simulated annotator in its own process (own connection): claim → think → submit."""
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.db import connections

    from annotator import services
    from annotator.models import TaskQueue

    rng = random.Random(seed)
    part = {"claims": [], "submits": [], "n_submits": 0, "empty": 0, "errors": []}
    original = services.assignment_claim

    def timed_claim(**kwargs):
        t = time.perf_counter()
        try:
            return original(**kwargs)
        finally:
            part["claims"].append(time.perf_counter() - t)

    # annotation_submit looks the name up at call time, so its next-task claim is timed too.
    services.assignment_claim = timed_claim
    try:
        queue = TaskQueue.objects.get(pk=queue_id)
        person = get_user_model().objects.get(pk=user_id)
        # People do not arrive in the same millisecond: each starts within one think time.
        time.sleep(max(0.0, start_at - time.time()) + rng.uniform(0, think[1] if think else 0))
        end = time.monotonic() + seconds
        got = services.assignment_claim(queue=queue, annotator=person)
        while time.monotonic() < end:
            if got.assignment is None:
                part["empty"] += 1
                if got.retry_after is None:
                    break
                time.sleep(0.05)
                got = services.assignment_claim(queue=queue, annotator=person)
                continue
            if think:
                time.sleep(rng.uniform(*think))
            t = time.perf_counter()
            try:
                result = services.annotation_submit(
                    task_id=got.assignment.task_id,
                    annotator=person,
                    response={"answer": rng.choice(["Yes", "Yes", "No"])},
                    duration_ms=1500,
                )
            except services.ServiceError as exc:
                part["errors"].append(exc.message)
                got = services.assignment_claim(queue=queue, annotator=person)
                continue
            part["submits"].append(time.perf_counter() - t)
            part["n_submits"] += 1
            got = result.next
    except Exception as exc:  # noqa: BLE001 - reported by the parent
        part["errors"].append(f"{type(exc).__name__}: {exc}")
    finally:
        connections.close_all()
        out.put(part)


def run_processes(target, arg_sets: list[tuple], label: str, seconds: float) -> Stats:
    from django.db import connections

    connections.close_all()  # children must not share the parent's socket
    ctx = mp.get_context("fork")
    out = ctx.Queue()
    start_at = time.time() + 1.5 + 0.02 * len(arg_sets)
    procs = [ctx.Process(target=target, args=(*a, start_at, out)) for a in arg_sets]
    for p in procs:
        p.start()
    stats = Stats(label)
    for _ in procs:
        stats.merge(out.get(timeout=seconds + 120))
    for p in procs:
        p.join(timeout=30)
    stats.seconds = seconds
    return stats


def explain_claim(queue, person) -> str:
    """EXPLAIN ANALYZE of the claim query for one annotator (rolled back)."""
    from django.db import transaction
    from django.db.models import F

    from annotator import services
    from annotator.models import Task

    qs = (
        Task.objects.select_for_update(skip_locked=True)
        .filter(queue=queue, state=Task.State.OPEN, is_gold=False, active_count__lt=F("required"))
        .exclude(services._not_answered_by(person))
        .order_by(F("required") - F("active_count"), "id")[:1]
    )
    with transaction.atomic():
        plan = qs.explain(analyze=True, buffers=True)
        transaction.set_rollback(True)
    return plan


def service_phase(project, people, size, args) -> Stats:
    queue = make_queue(project, size, f"bench {size}")
    think = (args.think_min / 1000, args.think_max / 1000) if args.think_max else None
    arg_sets = [
        (queue.pk, p.pk, args.seconds, think, i) for i, p in enumerate(people[: args.annotators])
    ]
    print(f"  {len(arg_sets)} annotators for {args.seconds:.0f} s …", flush=True)
    stats = run_processes(service_annotator, arg_sets, f"{size:,} tasks", args.seconds)
    if args.explain:
        print("  EXPLAIN ANALYZE of the claim query after the run:")
        print("    " + explain_claim(queue, people[-1]).replace("\n", "\n    "))
    return stats


# --------------------------------------------------------------------------------------------
# Phase 2: HTTP
# --------------------------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_gunicorn(env: dict, port: int, workers: int, threads: int) -> subprocess.Popen:
    gunicorn = Path(sys.executable).with_name("gunicorn")
    cmd = [
        str(gunicorn) if gunicorn.exists() else "gunicorn",
        "blindspot.wsgi:application",
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
    proc = subprocess.Popen(cmd, cwd=ROOT, env={**os.environ, **env}, start_new_session=True)
    deadline = time.monotonic() + 30
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
    raise SystemExit("gunicorn did not answer within 30 s")


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def http_user(port, queue_id, token, seconds, think, seed, start_at, out) -> None:
    """One API user: POST next → (think) → POST submit, over one keep-alive connection."""
    rng = random.Random(seed)
    part = {"claims": [], "submits": [], "n_submits": 0, "empty": 0, "errors": []}
    headers = {"Authorization": f"Token {token}", "Content-Type": "application/json"}
    conn = HTTPConnection("127.0.0.1", port, timeout=30)

    def post(path: str, body: dict | None = None) -> tuple[int, dict, float]:
        data = json.dumps(body).encode() if body is not None else b""
        t = time.perf_counter()
        conn.request("POST", path, body=data, headers=headers)
        response = conn.getresponse()
        raw = response.read()
        elapsed = time.perf_counter() - t
        return response.status, json.loads(raw or b"{}"), elapsed

    try:
        time.sleep(max(0.0, start_at - time.time()) + rng.uniform(0, think[1] if think else 0))
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            status, body, elapsed = post(f"/api/queues/{queue_id}/next/")
            if status != 200:
                part["errors"].append(f"next {status}: {body}")
                break
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
            status, body, elapsed = post(f"/api/tasks/{task['id']}/submit/", answer)
            if status not in (200, 201):
                part["errors"].append(f"submit {status}: {body}")
                continue
            part["submits"].append(elapsed)
            part["n_submits"] += 1
    except Exception as exc:  # noqa: BLE001 - reported by the parent
        part["errors"].append(f"{type(exc).__name__}: {exc}")
    finally:
        conn.close()
        out.put(part)


def http_phase(project, people, args, env) -> Stats:
    from rest_framework.authtoken.models import Token

    queue = make_queue(project, args.http_tasks, "bench http")
    users = people[: args.http_users]
    tokens = dict(Token.objects.filter(user__in=users).values_list("user_id", "key"))
    port = free_port()
    proc = start_gunicorn(env, port, args.gunicorn_workers, args.gunicorn_threads)
    print(
        f"  gunicorn on 127.0.0.1:{port} ({args.gunicorn_workers} workers × "
        f"{args.gunicorn_threads} threads, gthread); {len(users)} users for {args.seconds:.0f} s …",
        flush=True,
    )
    think = (args.think_min / 1000, args.think_max / 1000) if args.think_max else None
    try:
        warm = HTTPConnection("127.0.0.1", port, timeout=10)
        auth = {"Authorization": f"Token {next(iter(tokens.values()))}"}
        for _ in range(2 * args.gunicorn_workers * args.gunicorn_threads):
            warm.request("GET", "/api/queues/", headers=auth)
            warm.getresponse().read()
        warm.close()
        arg_sets = [
            (port, queue.pk, tokens[u.pk], args.seconds, think, i) for i, u in enumerate(users)
        ]
        return run_processes(http_user, arg_sets, f"HTTP {args.http_tasks:,} tasks", args.seconds)
    finally:
        stop(proc)


# --------------------------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------------------------
def report(stats: Stats, claim_name: str = "claim") -> None:
    print(f"\n[{stats.label}]")
    print(stats.line(claim_name, stats.claims))
    print(stats.line("submit (+ next claim)", stats.submits))
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
    parser.add_argument("--seconds", type=float, default=20.0, help="duration of each phase")
    parser.add_argument("--think-min", type=float, default=500.0, help="ms before a submit")
    parser.add_argument("--think-max", type=float, default=1500.0, help="0 = no think time")
    parser.add_argument("--http-tasks", type=int, default=100_000)
    parser.add_argument("--http-users", type=int, default=10)
    parser.add_argument("--gunicorn-workers", type=int, default=3)
    parser.add_argument("--gunicorn-threads", type=int, default=4)
    parser.add_argument("--skip-service", action="store_true")
    parser.add_argument("--skip-http", action="store_true")
    parser.add_argument("--explain", action="store_true", help="print EXPLAIN ANALYZE")
    args = parser.parse_args()
    if args.quick:
        args.sizes, args.annotators, args.seconds = "2000,50000", 10, 5.0
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
        for size in [int(s) for s in args.sizes.split(",")]:
            results.append(service_phase(project, people, size, args))
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
        print(verdict("HTTP submit (+ claim) p99", pct(http.submits, 99), 30.0))
        ok &= next_p99 <= TARGETS["http_next_p99_ms"]
    errors = sum(len(s.errors) for s in [*results, *([http] if http else [])])
    if errors:
        print(f"  {errors} error(s) during the run (see above)")
    return 0 if ok and not errors else 1


if __name__ == "__main__":
    sys.exit(main())
