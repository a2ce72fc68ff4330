#!/usr/bin/env python
"""Blindspot's own time per hunt step (a script, not a test; issue 24).

A hunt step is what a worker waits for after pressing "Ask the models": the question is
submitted (``POST …/submit/``, which stores the item and enqueues the ``hunt.ask`` job), the job
asks every target and the blind model at once through the LLM gateway, streams the answers to
the page with its wake-up (then stores each with its Generation), and the page's long-poll
(``GET …?part=status&wait=1``) returns with every answer on it. The models are the fake
OpenAI-compatible server of ``tests/fake_openai.py`` in its own process, answering every call
a fixed 200 ms after it arrives, its own work (reading the request, hashing the images) inside
those 200 ms, and keeping no request (``VLMPlayers``, ``record=False``); two vision targets and
a blind model, so three calls per step, in parallel.

    overhead = (time until every model answer is on the page) − 200 ms

The whole product runs as in production, on 127.0.0.1: PostgreSQL (a database of its own,
dropped and made again every run), gunicorn (gthread), Celery workers with threads pools on a
queue of their own (``BLINDSPOT_JOB_QUEUES=hunt.ask=<queue>``), Redis as broker and for the
wake-ups. Simulated workers are processes (no shared GIL with each other or the server), each
logged in with its own session, each submitting a new question as soon as its last one is
answered (no thinking time: the harshest load for a given number of workers). Every measured
step is written to ``<logs>/steps-<phase>.json``.

Prints ``1 workers: p50 … ms p99 … ms`` and ``20 workers: p50 … ms p99 … ms`` (overhead, no
thinking time), then the paced phase, the same 20 workers each spending ``--think`` seconds
(uniform from half to one and a half times it) writing every question:
``20 workers thinking ~10 s a question: p50 … ms p99 … ms``. Each line comes with the client's
total step time, the status requests a step took, a breakdown from the database (enqueue → job
start, job start → the page less the model calls) and the CPU per step of the product's
processes with the cores they and the whole machine kept busy, and how much of the machine the
hypervisor gave other guests meanwhile (steal: a run where it is not about 0 is disturbed).
Target: p99 overhead ≤ 50 ms at 20 workers.

    python benchmarks/hunt.py            # 1 and 20 workers 60 s each, paced 180 s (~6 min)
    python benchmarks/hunt.py --quick    # 15 s each, paced 60 s, after 10 s warm-ups (~3 min)
    python benchmarks/hunt.py --think 0  # without the paced phase

The product's models are imported inside the functions that run once ``configure_env`` has
pointed Django at the benchmark's own database: at the top of the script they would configure it
before the database is chosen.
"""

from __future__ import annotations

import argparse
import gc
import http.client
import http.cookies
import json
import multiprocessing as mp
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from http.client import HTTPConnection
from pathlib import Path
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.common import (  # noqa: E402
    cpu_seconds,
    free_port,
    machine_busy,
    recreate_database,
    start,
    stop,
    wait_http,
)
from benchmarks.hunt_figures import (  # noqa: E402
    MODEL_DELAY_S,
    TARGET_P99_MS,
    dump,
    reachable,
    report,
)

DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/blindspot_bench_hunt"
# The paced phase's default: 10 s to look at the picture and write a question meant to fool
# the models, and its answer — a deliberately fast person (model-in-the-loop collection such as
# AdVQA and Human-Adversarial VQA on Dynabench takes people tens of seconds or more an example).
THINK_S = 10.0
ANSWER = re.compile(r'data-testid="answer"')


# --------------------------------------------------------------------------------------------
# Environment, database, services
# --------------------------------------------------------------------------------------------
def configure_env(url: str, broker: str, queue: str) -> dict[str, str]:
    env = {
        "DATABASE_URL": url,
        "DJANGO_SETTINGS_MODULE": "blindspot.settings",
        "DEBUG": "0",
        "SECRET_KEY": os.environ.get("SECRET_KEY", "benchmark-only-" + "x" * 40),
        "SECURE_SSL_REDIRECT": "0",
        "SECURE": "0",
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "CELERY_BROKER_URL": broker,
        "CELERY_TASK_ALWAYS_EAGER": "0",
        "CELERY_TASK_DEFAULT_QUEUE": f"{queue}-default",
        "BLINDSPOT_JOB_QUEUES": f"hunt.ask={queue}",
        "LOG_LEVEL": "ERROR",
        "STATICFILES_STORAGE": "django.contrib.staticfiles.storage.StaticFilesStorage",
        "PYTHONWARNINGS": "ignore:No directory at",
        "BLINDSPOT_VAR_DIR": os.environ.get("BLINDSPOT_VAR_DIR", tempfile.mkdtemp(prefix="hunt-")),
    }
    os.environ.update(env)
    sys.path.insert(0, str(ROOT))
    return env


FAKE_SERVER = """
import gc, os, sys, time, django
sys.path.insert(0, {root!r})
django.setup()
from tests.fake_openai import FakeOpenAI, VLMPlayers
fake = FakeOpenAI(keep_alive=True, record=False)
fake.default = VLMPlayers(delay={delay})
gc.collect()
gc.freeze()
print(fake.port, flush=True)
while True:
    time.sleep(3600)
"""


def start_fake_server(env: dict, workdir: Path) -> tuple[subprocess.Popen, int]:
    """The fake OpenAI-compatible server in its own process; returns it and its port."""
    proc = subprocess.Popen(
        [sys.executable, "-c", FAKE_SERVER.format(root=str(ROOT), delay=MODEL_DELAY_S)],
        cwd=ROOT,
        env={**os.environ, **env},
        stdout=subprocess.PIPE,
        stderr=(workdir / "fake.log").open("w"),
        start_new_session=True,
        text=True,
    )
    line = proc.stdout.readline().strip()
    if not line.isdigit():
        stop(proc)
        raise SystemExit(f"the fake server did not start (see {workdir / 'fake.log'})")
    return proc, int(line)


def start_gunicorn(env: dict, port: int, workers: int, threads: int, workdir: Path):
    gunicorn = Path(sys.executable).with_name("gunicorn")
    cmd = [
        str(gunicorn) if gunicorn.exists() else "gunicorn",
        "blindspot.wsgi:application",
        "--config",
        str(ROOT / "gunicorn.conf.py"),
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
    proc = start(cmd, env, workdir / "gunicorn.log")
    wait_http(port, "/login/", proc, "gunicorn")
    return proc


def start_celery(
    env: dict, queue: str, concurrency: int, workdir: Path, pool: str = "threads", n: int = 0
):
    """A Celery worker on ``queue``; ``n`` numbers the workers when several serve it."""
    celery = Path(sys.executable).with_name("celery")
    cmd = [
        str(celery) if celery.exists() else "celery",
        "-A",
        "blindspot",
        "worker",
        "-Q",
        queue,
        "--pool",
        pool,
        "--concurrency",
        str(concurrency),
        "--loglevel",
        "INFO",
        "--without-gossip",
        "--without-mingle",
        "--without-heartbeat",
        "-n",
        f"{queue}-{n}@%h",
    ]
    log = workdir / f"celery-{n}.log"
    proc = start(cmd, env, log)
    deadline = time.monotonic() + 120
    while " ready." not in log.read_text(errors="replace"):  # imports, broker, pool
        if proc.poll() is not None or time.monotonic() > deadline:
            stop(proc)
            raise SystemExit(f"the Celery worker did not start (see {log})")
        time.sleep(0.5)
    return proc


# --------------------------------------------------------------------------------------------
# The world: a project, a pool, two vision targets and a blind model on the fake server
# --------------------------------------------------------------------------------------------
def build_world(fake_port: int, n_workers: int) -> dict:
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0, interactive=False)
    from django.contrib.auth import get_user_model
    from django.test import Client

    from annotator import services as annotator_services
    from annotator.platform import roles
    from curation.corpora import demo_corpus
    from curation.models import LLMProvider
    from curation.recipes.hunt.rounds import round_create

    User = get_user_model()
    curator = User.objects.create_user("bench-curator")
    roles.grant_role(curator, roles.CURATOR)
    project = annotator_services.project_create(
        name="Hunt bench", slug="hunt-bench", created_by=curator
    )
    pool = demo_corpus(project=project, created_by=curator)
    base = f"http://127.0.0.1:{fake_port}/v1"

    def provider(name: str, model: str, vision: bool) -> LLMProvider:
        return LLMProvider.objects.create(
            project=project,
            name=name,
            model=model,
            base_url=base,
            api_key="sk-bench",
            supports_vision=vision,
            timeout_s=10.0,
            max_retries=1,
        )

    targets = [provider("Target A", "vision-a", True), provider("Target B", "vision-b", True)]
    round_ = round_create(
        project=project,
        created_by=curator,
        name="Bench round",
        corpus=pool,
        targets=targets,
        blind=provider("Blind", "blind", False),
        max_items_per_worker=100000,
        max_per_minute=10000,
    )
    sessions = []
    for k in range(n_workers):
        person = User.objects.create_user(f"bench-worker-{k}")
        roles.grant_role(person, roles.CROWDWORKER)
        project.members.add(person)
        client = Client()
        client.force_login(person)
        sessions.append(client.cookies["sessionid"].value)
    images = list(pool.samples.values_list("image_id", flat=True))
    return {"round": round_.pk, "sessions": sessions, "images": images, "answers": 3}


# --------------------------------------------------------------------------------------------
# One simulated worker (a process)
# --------------------------------------------------------------------------------------------
class Session:
    """A logged-in browser: session and CSRF cookies over one keep-alive connection."""

    def __init__(self, port: int, session_id: str):
        self.port = port
        self.cookies = {"sessionid": session_id}
        self.conn = HTTPConnection("127.0.0.1", port, timeout=60)

    def request(self, method: str, path: str, body: dict | None = None, headers=None):
        head = {"Cookie": "; ".join(f"{k}={v}" for k, v in self.cookies.items())}
        head.update(headers or {})
        data = None
        if body is not None:
            data = urlencode(body)
            head["Content-Type"] = "application/x-www-form-urlencoded"
            head["X-CSRFToken"] = self.cookies.get("csrftoken", "")
            head["Referer"] = f"http://127.0.0.1:{self.port}/"
        try:
            self.conn.request(method, path, body=data, headers=head)
            response = self.conn.getresponse()
        except (OSError, http.client.HTTPException):
            self.conn.close()
            self.conn = HTTPConnection("127.0.0.1", self.port, timeout=60)
            self.conn.request(method, path, body=data, headers=head)
            response = self.conn.getresponse()
        text = response.read().decode()
        for header in response.headers.get_all("Set-Cookie") or []:
            jar = http.cookies.SimpleCookie(header)
            for key, morsel in jar.items():
                self.cookies[key] = morsel.value
        return response.status, response.headers, text


def hunt_worker(port, world, session_id, seed, window, think, out) -> None:
    """Write a question (``think`` seconds, uniform from half to one and a half times it; none
    when 0), submit it, long-poll until every answer is on the page, again, for the window."""
    start_at, record_from, end = window
    rng = random.Random(seed)
    session = Session(port, session_id)
    round_id = world["round"]
    session.request("GET", f"/work/hunt/{round_id}/")  # the CSRF cookie
    steps, totals, posts, ends, errors, polls, n = [], [], [], [], [], [], 0
    # This process's own garbage collections are not Blindspot's time: none while a step is
    # timed, only between steps (gen-1 collections of ~1.5 ms were logged inside steps).
    gc.collect()
    gc.freeze()
    gc.disable()
    while time.time() < start_at:
        time.sleep(0.01)
    while time.time() < end:
        gc.collect()
        if think > 0:
            time.sleep(rng.uniform(0.5 * think, 1.5 * think))
            if time.time() >= end:
                break
        n += 1
        body = {
            "image": rng.choice(world["images"]),
            "question": f"Is there a thing number {seed} {n} {time.time_ns()} here?",
            "answer": rng.choice(("yes", "no")),
        }
        t0 = time.perf_counter()
        status, headers, text = session.request("POST", f"/work/hunt/{round_id}/submit/", body)
        posted = time.perf_counter() - t0
        if status != 302:
            errors.append(f"submit {status}: {text[:200]}")
            time.sleep(0.5)
            continue
        item = headers["Location"]
        answers = asked = 0
        while answers < world["answers"] and time.time() < end + 30:
            asked += 1
            status, _h, text = session.request(
                "GET", f"{item}?part=status&wait=1", headers={"HX-Request": "true"}
            )
            if status != 200:
                errors.append(f"status {status}")
                break
            answers = len(ANSWER.findall(text))
        elapsed = time.perf_counter() - t0
        started = time.time() - elapsed
        if answers >= world["answers"] and started >= record_from:
            totals.append(elapsed * 1000)
            posts.append(posted * 1000)
            ends.append(time.time())
            steps.append(item)
            polls.append(asked)
    out.put(
        {
            "totals": totals,
            "posts": posts,
            "ends": ends,
            "items": steps,
            "polls": polls,
            "errors": errors[:20],
        }
    )


def run_phase(
    port: int,
    world: dict,
    n_workers: int,
    seconds: float,
    warmup: float,
    groups=None,
    think: float = 0.0,
    seed: int = 0,
) -> dict:
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    start_at = time.time() + 2.0
    window = (start_at, start_at + warmup, start_at + warmup + seconds)
    procs = [
        ctx.Process(
            target=hunt_worker,
            args=(port, world, world["sessions"][k], seed + k, window, think, out),
        )
        for k in range(n_workers)
    ]
    load_before = os.getloadavg()
    for p in procs:
        p.start()
    # CPU of the product's processes over the measured window (after the warm-up).
    time.sleep(max(0.0, window[1] - time.time()))
    cpu_before, machine_before = cpu_seconds(groups or {}), machine_busy()
    parts = [out.get(timeout=seconds + warmup + 2 * think + 120) for _ in procs]
    cpu_after, machine_after = cpu_seconds(groups or {}), machine_busy()
    for p in procs:
        p.join(timeout=30)
    return {
        "totals": [t for part in parts for t in part["totals"]],
        "posts": [t for part in parts for t in part["posts"]],
        "ends": [t for part in parts for t in part["ends"]],
        "items": [i for part in parts for i in part["items"]],
        "polls": [p for part in parts for p in part["polls"]],
        "errors": [e for part in parts for e in part["errors"]],
        "load": (load_before, os.getloadavg()),
        "cpu": {k: cpu_after[k] - cpu_before[k] for k in cpu_after},
        # cores busy on average while the workers ran, from the end of the warm-up
        "machine": (machine_after[0] - machine_before[0])
        / max(1e-9, machine_after[1] - machine_before[1])
        * os.cpu_count(),
        # of which the hypervisor gave to other guests (steal): a disturbed run when not ~0
        "stolen": (machine_after[2] - machine_before[2])
        / max(1e-9, machine_after[1] - machine_before[1])
        * os.cpu_count(),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--quick", action="store_true", help="15 s per phase, 60 s paced (~3 min in all)"
    )
    parser.add_argument(
        "--database-url", default=os.environ.get("HUNT_BENCH_DATABASE_URL", DEFAULT_URL)
    )
    parser.add_argument(
        "--broker",
        default=os.environ.get("CELERY_BROKER_URL", "redis://127.0.0.1:6379/0"),
        help="Redis URL (broker and wake-ups)",
    )
    parser.add_argument("--workers", default="1,20", help="concurrent workers per phase")
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument(
        "--warmup",
        type=float,
        default=10.0,
        help="seconds run before measuring (the worker's first job imports and connects)",
    )
    parser.add_argument(
        "--think",
        type=float,
        default=THINK_S,
        help="the paced phase: seconds each worker spends writing a question (uniform from half "
        "to 1.5 times it) before submitting it; 0 leaves the phase out",
    )
    parser.add_argument(
        "--think-seconds", type=float, default=180.0, help="measured seconds of the paced phase"
    )
    # Defaults for 2 cores as the README's "Production" advises: gunicorn two processes a core,
    # a Celery worker a core on the hunt's queue (steps meet in one GIL less often).
    parser.add_argument("--gunicorn-workers", type=int, default=4)
    parser.add_argument("--gunicorn-threads", type=int, default=8)
    parser.add_argument("--celery-threads", type=int, default=16, help="per Celery worker")
    parser.add_argument(
        "--celery-processes", type=int, default=2, help="Celery workers on the hunt's queue"
    )
    parser.add_argument("--celery-pool", default="threads", choices=("threads", "prefork"))
    args = parser.parse_args()
    if args.quick:
        args.seconds, args.think_seconds = 15.0, 60.0
    phases = [int(n) for n in args.workers.split(",")]
    queue = f"hunt-bench-{os.getpid()}"
    env = configure_env(args.database_url, args.broker, queue)
    recreate_database(args.database_url)
    workdir = Path(tempfile.mkdtemp(prefix="hunt-bench-"))
    fake, fake_port = start_fake_server(env, workdir)
    procs = [fake]
    try:
        world = build_world(fake_port, max(phases))
        from django.db import connections

        connections.close_all()
        port = free_port()
        procs.append(
            start_gunicorn(env, port, args.gunicorn_workers, args.gunicorn_threads, workdir)
        )
        celeries = [
            start_celery(env, queue, args.celery_threads, workdir, args.celery_pool, n)
            for n in range(args.celery_processes)
        ]
        procs.extend(celeries)
        print(
            f"hunt steps: fake models answer in {MODEL_DELAY_S * 1000:.0f} ms, 2 targets + blind; "
            f"gunicorn {args.gunicorn_workers}×{args.gunicorn_threads} gthread, Celery "
            f"{args.celery_processes}×{args.celery_threads} {args.celery_pool}; "
            f"{args.seconds:g} s per phase after {args.warmup:g} s"
            + (f"; paced phase {args.think_seconds:g} s" if args.think > 0 else ""),
            flush=True,
        )
        most = max(phases)
        groups = {
            "gunicorn": procs[1].pid,
            "celery": tuple(c.pid for c in celeries),
            "fake models": fake.pid,
        }
        verdicts, reach = [], ""
        for n in phases:
            # No thinking time: each worker submits again as soon as its answers are shown.
            phase = run_phase(port, world, n, args.seconds, args.warmup, groups)
            p99 = report(f"{n} workers", phase, args.seconds)
            dump(workdir, f"{n} workers", phase)
            if n == most:
                verdicts.append((f"{n} workers, no thinking time", p99))
                reach = reachable(n, phase, args.seconds)
        if args.think > 0:
            # The same workers at a person's pace: each writes a question for ~think seconds.
            phase = run_phase(
                port, world, most, args.think_seconds, args.warmup, groups, args.think, 1000
            )
            label = f"{most} workers thinking ~{args.think:g} s a question"
            verdicts.append((label, report(label, phase, args.think_seconds)))
            dump(workdir, label, phase)
        for label, p99 in verdicts:
            mark = "OK" if p99 <= TARGET_P99_MS else "MISS"
            print(f"[{mark}] p99 overhead, {label}: {p99:.1f} ms (target ≤ {TARGET_P99_MS:g})")
            if mark == "MISS" and label.endswith("no thinking time") and reach:
                print(f"    {reach}")
        print(json.dumps({"logs": str(workdir)}))
    finally:
        for proc in reversed(procs):
            stop(proc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
