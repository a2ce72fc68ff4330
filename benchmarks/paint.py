#!/usr/bin/env python
"""Submit → next task painted, in Chromium, by keyboard, for every annotation kind (a script,
not a test).

One crowdworker in Debian's chromium (Playwright, headless) works through a redundancy-1 queue
of every kind on PostgreSQL, served by gunicorn (DEBUG off), by keyboard only: the kind's keys,
a think time, then Enter (Ctrl+Enter for write_text). Every task has images of its own (JPEG,
800×600, ~100–200 kB, under /media/ like a corpus's), so no image comes from the cache unless
the workspace preloaded it.

"Painted" is measured in the page: from the keydown of Enter to the first animation frame at
which the next task's ``#task-area`` is in the document with every image loaded and decoded
(``img.decode()``), i.e. the frame that shows the whole next task. The workspace paints the
task it rendered ahead (the look-ahead in ``<template data-look-ahead>``) at the keydown and
confirms it when the submit's answer comes: a painted task counts only if the server then hands
out that very task; if the answer replaces it, the time counted is when the replacement painted
("replaced"). "painted ahead" counts the submits whose next task was on screen before the
answer. The submit request's own time (Resource Timing: request start → response end) is
printed beside it, so the server's share can be told from the page's.
The first ``--warmup`` submits of each kind are not counted (gunicorn's first requests compile
templates).

``--no-preload`` disables the workspace's image preloading in the page (``new Image()`` does
nothing), to show what it saves; the rest of the product is the same.

The machine's load average is printed with the figures: on a shared machine, re-run when it is
quiet. The script drops and recreates its database (default ``blindspot_paint``) every run
(``--reuse-database``: migrates it and replaces the previous run's queues).

    python benchmarks/paint.py                 # 30 measured submits per kind (~4 min)
    python benchmarks/paint.py --quick         # 8 per kind
    python benchmarks/paint.py --no-preload    # the same without preloading the next images
"""

from __future__ import annotations

import argparse
import io
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

# This checkout's code first (not an installed copy), then the benchmarks folder (not a package).
sys.path[:0] = [str(Path(__file__).resolve().parent.parent), str(Path(__file__).resolve().parent)]
from claim_latency import (  # noqa: E402 (the benchmarks folder is not a package)
    configure_env,
    free_port,
    load_average,
    recreate_database,
    setup_django,
    start_gunicorn,
    stop,
    verdict,
)

DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/blindspot_paint"
CHROMIUM = "/usr/bin/chromium"
TARGET_P95_MS = 100.0
PASSWORD = "paint-bench-password"
TEXT = "A white plate on a wooden table holds five red apples."

# kind → (config, keys pressed before the submit key, submit key)
KINDS: dict[str, tuple[dict, list[str], str]] = {
    "pair_verify": ({}, ["n"], "Enter"),
    "vqa_choice": ({}, ["2"], "Enter"),
    "skill_tags": (
        {
            "taxonomy": [
                {"group": "Attribute", "tags": [{"id": "color", "label": "Color", "key": "c"}]},
                {"group": "Relation", "tags": [{"id": "spatial", "label": "Spatial relation"}]},
            ]
        },
        ["c"],
        "Enter",
    ),
    "forced_choice": ({}, ["a"], "Enter"),
    "review": (
        {
            "criteria": ["Fluent", "True to the image"],
            "reason_codes": [{"code": "f", "label": "F"}],
        },
        ["q", "w", "a"],
        "Enter",
    ),
    "write_text": (
        {"min_length": 20},
        ["e", "Control+a", f"type:{TEXT}", "Escape"],
        "Control+Enter",
    ),
}

# Installed in every page before its own scripts: the clock starts at the keydown of Enter
# (capturing, before app.js sees it); __painted() resolves at the first frame showing the next
# task whole. --no-preload also replaces window.Image, which only app.js's preloading uses.
PAGE_SCRIPT = """
window.__bench = { t0: 0, from: null };
window.addEventListener("keydown", function (e) {
  if (e.key !== "Enter") return;
  var area = document.querySelector("#task-area");
  window.__bench.t0 = performance.now();
  window.__bench.from = area ? area.dataset.taskId : null;
  performance.clearResourceTimings();
}, true);
window.__painted = function () {
  var b = window.__bench;
  var deadline = performance.now() + 15000;
  function isNext(area) {
    return !!area && (area.dataset.taskId ? area.dataset.taskId !== b.from
                                          : !!area.querySelector(".empty"));
  }
  // The first frame at which ``want(area)`` holds and every image of the area is decoded.
  function frameWith(want) {
    return new Promise(function (resolve, reject) {
      function check() {
        var area = document.querySelector("#task-area");
        if (want(area)) {
          var imgs = Array.prototype.slice.call(area.querySelectorAll("img"));
          if (imgs.every(function (i) { return i.complete && i.naturalWidth > 0; })) {
            Promise.all(imgs.map(function (i) { return i.decode().catch(function () {}); }))
              .then(function () {
                requestAnimationFrame(function () {
                  resolve({ area: area, at: performance.now(), images: imgs.length,
                            ahead: area.dataset.pending === "1" });
                });
              });
            return;
          }
        }
        if (performance.now() > deadline) { reject(new Error("no next task within 15 s")); return; }
        requestAnimationFrame(check);
      }
      requestAnimationFrame(check);
    });
  }
  // A task painted ahead counts only if the server then hands out that very task: once the
  // answer is confirmed, a replaced one counts at the time its replacement painted.
  return frameWith(isNext).then(function (first) {
    return frameWith(function (area) {
      return isNext(area) && !document.querySelector("#task-area[data-pending]");
    }).then(function (final) {
      var sub = performance.getEntriesByType("resource").filter(function (r) {
        return r.name.indexOf("/submit/") >= 0;
      }).pop();
      var kept = final.area === first.area;
      return {
        ms: (kept ? first.at : final.at) - b.t0,
        request: sub ? sub.responseEnd - sub.startTime : null,
        task: final.area.dataset.taskId || null,
        images: final.images,
        ahead: kept && first.ahead,
        replaced: !kept,
      };
    });
  });
};
"""
NO_PRELOAD = """
window.Image = function () { return { decode: function () { return Promise.resolve(); } }; };
"""


def pct(values: list[float], q: float) -> float:
    """The q-th percentile (nearest rank) of milliseconds."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, int(round(q / 100 * len(ordered) + 0.5)) - 1))]


# --------------------------------------------------------------------------------------------
# The world: images, one worker, a queue of every kind
# --------------------------------------------------------------------------------------------
def photo(rng: random.Random) -> bytes:
    """An 800×600 JPEG of coloured noise over a gradient: about the bytes of a photograph."""
    from PIL import Image

    size = (800, 600)
    base = Image.linear_gradient("L").resize(size)
    channels = [
        Image.blend(base, Image.effect_noise(size, rng.uniform(30, 70)), rng.uniform(0.3, 0.7))
        for _ in range(3)
    ]
    buf = io.BytesIO()
    Image.merge("RGB", channels).save(buf, "JPEG", quality=80)
    return buf.getvalue()


def payload(kind: str, i: int, images: list[str]) -> dict:
    first = {"url": images[0], "alt": f"photo {i}"}
    if kind == "pair_verify":
        second = {"url": images[1], "caption": f"caption {i} of the second image"}
        return {"images": [{**first, "caption": f"caption {i}"}, second]}
    if kind == "vqa_choice":
        return {"image": first, "question": f"Is there a cube? ({i})", "choices": ["Yes", "No"]}
    if kind == "skill_tags":
        return {"images": [first], "questions": [f"Is the cube left of the ball? ({i})"]}
    if kind == "forced_choice":
        return {
            "images": [first],
            "instruction": f"Describe the image ({i}).",
            "candidates": [{"id": "m1", "text": "A red square."}, {"id": "m2", "text": "Blue."}],
        }
    if kind == "review":
        return {"title": f"There is no ball ({i})", "images": [first]}
    return {"prompt": f"Write a caption ({i}).", "images": [first], "draft": "A plate"}


def build_world(tasks: int, media_root: Path) -> list:
    from django.contrib.auth import get_user_model

    from annotator import services
    from annotator.platform import roles
    from annotator.platform.models import Project

    rng = random.Random(7)
    # (--reuse-database: the previous run's world goes first)
    Project.objects.filter(slug="paint-bench").delete()
    get_user_model().objects.filter(username="painter").delete()
    user = get_user_model().objects.create_user("painter", password=PASSWORD)
    roles.grant_role(user, roles.CROWDWORKER)
    project = Project.objects.create(name="Paint benchmark", slug="paint-bench")
    project.members.add(user)
    folder = media_root / "demo" / "paint"
    folder.mkdir(parents=True, exist_ok=True)
    queues, n, total_bytes = [], 0, 0
    for priority, (kind, (config, _keys, _submit)) in enumerate(KINDS.items()):
        queue = services.queue_create(
            project=project,
            kind=kind,
            title=f"Paint {kind}",
            config=config,
            redundancy=1,
            max_redundancy=1,
            priority=100 - priority,
        )
        rows = []
        for i in range(tasks):
            urls = []
            for _ in range(2 if kind == "pair_verify" else 1):
                data = photo(rng)
                (folder / f"{n}.jpg").write_bytes(data)
                total_bytes += len(data)
                urls.append(f"/media/demo/paint/{n}.jpg")
                n += 1
            rows.append(services.TaskRow(payload(kind, i, urls)))
        services.tasks_bulk_create(queue=queue, rows=rows)
        queues.append(queue)
    print(
        f"  {len(queues)} queues × {tasks} tasks, {n} images ({total_bytes / n / 1024:.0f} kB each)"
    )
    return queues


# --------------------------------------------------------------------------------------------
# The browser
# --------------------------------------------------------------------------------------------
def press(page, stroke: str) -> None:
    if stroke.startswith("type:"):
        page.keyboard.type(stroke[5:])
    else:
        page.keyboard.press(stroke)


def walk(page, base: str, queue, *, tasks: int, warmup: int, think: float) -> dict:
    """Answer every task of ``queue``; the submit → painted times after the warm-up."""
    _config, keys, submit = KINDS[queue.kind]
    page.goto(f"{base}/work/{queue.pk}/")
    page.wait_for_selector("#task-area[data-task-id]")
    painted, requests, seen = [], [], set()
    ahead = replaced = 0
    for n in range(tasks):
        seen.add(page.get_attribute("#task-area", "data-task-id"))
        for stroke in keys:
            press(page, stroke)
        time.sleep(think)
        page.keyboard.press(submit)
        try:
            result = page.evaluate("window.__painted()")
        except Exception:
            shot = Path(tempfile.gettempdir()) / f"paint-{queue.kind}-stuck.png"
            page.screenshot(path=str(shot), full_page=True)
            alert = page.inner_text("#task-alert") if page.query_selector("#task-alert") else ""
            raise SystemExit(
                f"{queue.kind}: no next task after submit {n + 1} (alert: {alert!r}; {shot})"
            ) from None
        if result["task"] is None:  # the last submit: the queue's empty state
            assert n == tasks - 1, f"{queue.kind}: the queue ran dry after {n + 1} submits"
            break
        assert result["task"] not in seen, f"{queue.kind}: task {result['task']} came back"
        if n >= warmup:
            ahead += bool(result["ahead"])
            replaced += bool(result["replaced"])
            painted.append(result["ms"])
            if result["request"] is not None:
                requests.append(result["request"])
    return {
        "painted": painted,
        "request": requests,
        "ahead": ahead,
        "replaced": replaced,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="8 measured submits per kind")
    parser.add_argument("--database-url", default=DEFAULT_URL)
    parser.add_argument("--tasks", type=int, default=0, help="measured submits per kind")
    parser.add_argument("--warmup", type=int, default=3, help="uncounted first submits per kind")
    parser.add_argument("--think", type=float, default=1.0, help="seconds on each task")
    parser.add_argument("--no-preload", action="store_true", help="switch off image preloading")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn workers")
    parser.add_argument(
        "--reuse-database",
        action="store_true",
        help="migrate the database and replace the previous run's queues instead of recreating it",
    )
    args = parser.parse_args()
    measured = args.tasks or (8 if args.quick else 30)
    tasks = measured + args.warmup + 1  # the last submit shows the empty state: not measured

    from playwright.sync_api import sync_playwright

    media_root = Path(tempfile.mkdtemp(prefix="blindspot-paint-"))
    env = configure_env(args.database_url)
    static_root = media_root / "static"
    env.update(
        {
            "MEDIA_ROOT": str(media_root),
            "SECURE": "0",
            # Static files as production serves them: collected, hashed names, far-future cache.
            "STATIC_ROOT": str(static_root),
            "STATICFILES_STORAGE": "whitenoise.storage.CompressedManifestStaticFilesStorage",
        }
    )
    os.environ.update(env)
    if not args.reuse_database:
        recreate_database(args.database_url)
    setup_django(args.database_url)
    from django.core.management import call_command

    call_command("collectstatic", interactive=False, verbosity=0)
    queues = build_world(tasks, media_root)
    from django.db import connections

    connections.close_all()

    port = free_port()
    workdir = Path(tempfile.mkdtemp(prefix="blindspot-paint-gunicorn-"))
    server = start_gunicorn(env, port, args.workers, 4, workdir=workdir, freeze=True, wait_s=180)
    base = f"http://127.0.0.1:{port}"
    results: dict[str, dict] = {}
    loads = load_average()
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(
                executable_path=CHROMIUM,
                headless=True,
                args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"],
            )
            context = browser.new_context(viewport={"width": 1280, "height": 800})
            context.add_init_script(PAGE_SCRIPT + (NO_PRELOAD if args.no_preload else ""))
            page = context.new_page()
            page.set_default_timeout(20000)
            page.goto(f"{base}/login/")
            page.keyboard.type("painter")
            page.keyboard.press("Tab")
            page.keyboard.type(PASSWORD)
            with page.expect_navigation():
                page.keyboard.press("Enter")
            for queue in queues:
                results[queue.kind] = walk(
                    page, base, queue, tasks=tasks, warmup=args.warmup, think=args.think
                )
                loads += load_average()
                print(f"  {queue.kind:<14} done (load average {loads[-1]:.2f})")
            browser.close()
    finally:
        stop(server)
        shutil.rmtree(workdir, ignore_errors=True)
        shutil.rmtree(media_root, ignore_errors=True)

    preload = "off (--no-preload)" if args.no_preload else "on"
    print(
        f"\nSubmit → next task painted, chromium by keyboard, {measured} per kind after "
        f"{args.warmup} warm-up, think {args.think:g} s, preloading {preload}"
    )
    print(f"load average (1 min) during the run: {min(loads):.2f} – {max(loads):.2f}")
    print(
        f"{'kind':<14} {'n':>3} {'p50':>7} {'p95':>7} {'max':>7}   {'request p50':>11} {'p95':>7}"
        f"   {'painted ahead':>13} {'replaced':>8}"
    )
    everything: list[float] = []
    worst = 0.0
    for kind, r in results.items():
        ms, req = r["painted"], r["request"]
        everything += ms
        worst = max(worst, pct(ms, 95))
        print(
            f"{kind:<14} {len(ms):>3} {pct(ms, 50):7.1f} {pct(ms, 95):7.1f} {max(ms):7.1f}"
            f"   {pct(req, 50):11.1f} {pct(req, 95):7.1f}"
            f"   {r['ahead']:>7} / {len(ms):<3} {r['replaced']:>8}"
        )
    print(
        f"{'all kinds':<14} {len(everything):>3} {pct(everything, 50):7.1f} "
        f"{pct(everything, 95):7.1f} {max(everything):7.1f}"
    )
    print(verdict("worst kind's p95 (ms)", worst, TARGET_P95_MS))
    return 0 if worst <= TARGET_P95_MS else 1


if __name__ == "__main__":
    sys.exit(main())
