"""Blindspot's VLind-Bench exports read by the official code (klee972/VLind-Bench), side by side.

    .venv/bin/python benchmarks/interop_vlind.py /work/.mirror/klee972+VLind-Bench/repo

A script, not a test: it needs PostgreSQL and a copy of the official repository (fetched, never
copied into this project; a git directory without a work tree is fine: ``eval/`` is read with
``git archive``). It drops and recreates its own database (``blindspot_interop_vlind`` by
default), runs the VLind-Bench recipe's demo (offline drafter, Pillow placeholders, simulated
reviewers) up to its published version and that version's archive, and starts a small
OpenAI-compatible server on 127.0.0.1 that plays one deterministic vision model (below). Then:

1. Blindspot: a model run of the version through the gateway against that server (the family's
   runner, the official prompts and images), its CK / VP / CB / LP, and its answers exported
   (``evaluate export-predictions``) in the layout ``gpt4o_eval.py`` writes.
2. Official, in a separate process in a temporary folder (outside the project): ``eval/
   gpt4o_eval.py`` on the exported ``data.json`` and image folders, its OpenAI client pointed at
   the same server (``OPENAI_BASE_URL``; the file reads its key from a global
   ``OPENAI_API_KEY`` the user is meant to define, so that one name is given to it, nothing
   else), then ``eval/score_pipeline.py`` on what it wrote (``-mid gpt4o``) and on Blindspot's
   exported answers (``-mid blindspot``). Both are run unchanged with ``runpy``; the scores are
   read from score_pipeline's own totals (full precision) and its printed line.
3. Blindspot imports the official answers file back and scores it.

The model: it finds which exported image it was shown (nearest 16 x 16 thumbnail: Blindspot's
gateway re-encodes images, the official code sends the files) and answers the statement right
90% of the time, in varied phrasings (and "cannot tell" 4% of the time), from a hash of the prompt
and that image; it never looks at the model name. The requests of the two sides are compared.
``gpt4o_eval.py`` imports ``backoff``; when the interpreter lacks it, it is installed with pip into
a temporary folder for the official process only. Exit status 1 when a number differs.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import io
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import threading
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
from PIL import Image as PILImage

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.common import recreate_database, setup_django  # noqa: E402

DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/blindspot_interop_vlind"
METRICS = (("s_ck", "CK"), ("s_vp", "VP"), ("s_cb", "CB (pipeline)"), ("s_lp", "LP (pipeline)"))
PLAIN = (("cb", "CB (plain)"), ("lp", "LP (plain)"))
PHRASES = ("{A}", "{A}.", "{a}", "The statement is {a}.", "{A}, as the image shows.", "{A}\nSee.")

# Run by the official side, in eval/ (its relative paths), with its files unchanged.
OFFICIAL_RUNNER = r"""
import contextlib, io, json, runpy, sys
work = sys.argv[1]
data, out = f"{work}/export/data.json", f"{work}/data_gpt4o.json"
sys.argv = ["gpt4o_eval.py", "-dp", data, "-op", out,
            "-id", f"{work}/export/counterfactual", "-fid", f"{work}/export/factual"]
with contextlib.redirect_stderr(io.StringIO()):  # its tqdm bar
    runpy.run_path("gpt4o_eval.py", init_globals={"OPENAI_API_KEY": "sk-fake"},
                   run_name="__main__")

def score(path, mid):
    sys.argv = ["score_pipeline.py", "-dp", path, "-mid", mid]
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        g = runpy.run_path("score_pipeline.py", run_name="__main__")
    t, n = g["concept2scores"]["total"], g["concept2num_instance"]["total"]
    return {"s_ck": t["a_pass_ratio"], "s_vp": t["b_pass_ratio"], "s_cb": t["c_pass_ratio"],
            "s_lp": t["d_pass_ratio_macro"], "cb": t["c"] / n, "lp": t["d_macro"] / n,
            "n": n, "printed": printed.getvalue().strip().splitlines()[-1].strip()}

print("OFFICIAL " + json.dumps({"gpt4o_eval": score(out, "gpt4o"),
                                "blindspot_export": score(f"{work}/data_blindspot.json",
                                                          "blindspot")}))
"""


class VisionModel:
    """The deterministic model both sides ask (see the module docstring)."""

    def __init__(self, export: Path):
        self.thumbs = {
            str(p.relative_to(export)): self._thumb(PILImage.open(p))
            for p in sorted(export.glob("*/**/*.jpg"))
        }
        self.truth = {}
        for line in (export / "tests.jsonl").read_text().splitlines():
            test = json.loads(line)
            self.truth[(test["prompt"], test["image"])] = test["expected"]
        self.asked: dict[str, list[tuple[str, str]]] = {}
        self.worst_match = 0.0
        self.lock = threading.Lock()

    @staticmethod
    def _thumb(image) -> np.ndarray:
        return np.asarray(image.convert("RGB").resize((16, 16), PILImage.BILINEAR), dtype=float)

    def which(self, data_url: str) -> str:
        data = base64.b64decode(data_url.split(",", 1)[1])
        thumb = self._thumb(PILImage.open(io.BytesIO(data)))
        distances = {path: float(np.abs(t - thumb).mean()) for path, t in self.thumbs.items()}
        path = min(distances, key=distances.__getitem__)
        with self.lock:
            self.worst_match = max(self.worst_match, distances[path])
        return path

    def answer(self, body: dict) -> str:
        content = body["messages"][-1]["content"]
        text = "\n".join(p["text"] for p in content if p["type"] == "text")
        urls = [p["image_url"]["url"] for p in content if p["type"] == "image_url"]
        image = self.which(urls[0]) if urls else ""
        side = "official" if body.get("model", "").startswith("gpt-4o") else "blindspot"
        with self.lock:
            self.asked.setdefault(side, []).append((text, image))
        expected = self.truth.get((text, image))
        h = hashlib.sha256(f"{text}\x1f{image}".encode()).digest()
        if expected is None or h[2] < 10:
            return "I cannot tell from this picture."
        value = expected == "True" if h[0] < 230 else expected != "True"
        word = "True" if value else "False"
        return PHRASES[h[1] % len(PHRASES)].format(A=word, a=word.lower())


def serve(model: VisionModel) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format, *args):  # noqa: A002 - quiet
            return

        def do_POST(self):  # noqa: N802 - http.server's naming
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
            reply = {
                "id": "chatcmpl-interop",
                "object": "chat.completion",
                "created": 1_700_000_000,
                "model": body.get("model", ""),
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": model.answer(body)},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            }
            data = json.dumps(reply).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def official_eval(source: Path, into: Path) -> Path:
    """The official eval/ folder: a checkout's, or ``git archive`` of a git directory."""
    if (source / "eval" / "gpt4o_eval.py").is_file():
        return source / "eval"
    archive = subprocess.run(
        ["git", f"--git-dir={source}", "archive", "--format=tar", "HEAD", "eval"],
        capture_output=True,
        check=False,
    )
    if archive.returncode != 0:
        raise SystemExit(f"cannot read {source}: {archive.stderr.decode().strip()}")
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(into, filter="data")
    return into / "eval"


def backoff_path(work: Path) -> str:
    """A folder holding backoff for gpt4o_eval.py's import, when this interpreter lacks it."""
    try:
        import backoff  # noqa: F401

        return ""
    except ImportError:
        target = work / "site"
        subprocess.run(
            [sys.executable, "-m", "pip", "install", "-q", "--target", str(target), "backoff"],
            check=True,
        )
        return str(target)


def grow(bench, curator, slots: tuple[int, ...]) -> None:
    """The rest of the demo's bench assembled as a curator and three reviewers would: every
    triple reviewed, placeholder images in ``slots`` of the triples without images (reviews of
    0-3 accepts), factual images and nouns, all through the recipe's services."""
    from curation import assets, gateway
    from curation.recipes.framework.demo import demo_annotators
    from curation.recipes.vlind import images, nouns
    from curation.recipes.vlind.demo import REVIEWER_NAMES, placeholder_png, reviews_answer
    from curation.recipes.vlind.models import VLindImage, VLindTriple

    people = demo_annotators(bench.project, REVIEWER_NAMES)
    reviews_answer(bench.triple_queue, people, lambda task_id: 3)
    kept = list(bench.triples.filter(status=VLindTriple.Status.KEPT).order_by("pk"))
    for triple in kept:
        if triple.images.exists():
            continue
        for slot in slots:
            style = {0: "photorealistic", 1: "illustration", 2: "cartoon"}[slot // 4]
            data = placeholder_png(
                text=triple.context, style=style, label=f"#{slot}", seed=triple.pk * 31 + slot
            )
            image, _ = assets.image_ingest(
                data=data, name=f"interop-{triple.pk}-{slot}.png", source="placeholder (interop)"
            )
            images.image_record(triple, slot, image, VLindImage.Origin.PLACEHOLDER)
    reviews_answer(bench.image_queue, people, lambda task_id: (task_id * 7 + 1) % 4)
    for triple in kept:
        triple.refresh_from_db()
        if triple.factual_image_id is None:
            text = triple.factual_context or triple.false_statement
            data = placeholder_png(text=text, style="photorealistic", label="factual", seed=7)
            upload = images.Upload(name=f"factual-{triple.pk}.png", data=data)
            images.factual_upload(triple=triple, upload=upload, created_by=curator)
    nouns.nouns_draft(bench=bench, provider=gateway.provider_offline(), created_by=curator)
    for triple in kept:
        triple.refresh_from_db()
        if not triple.existent_noun and triple.noun_candidates.get("nouns"):
            candidates = triple.noun_candidates
            nouns.nouns_pick(
                triple=triple,
                existent=candidates["nouns"][0],
                non_existent=candidates["non-existent_nouns"][0],
            )


def demo_export(work: Path, quick: bool):
    """The recipe demo's bench (grown unless ``quick``), published, and the archive of that
    version unzipped into work/export."""
    from django.contrib.auth import get_user_model
    from django.core.files.storage import default_storage

    from annotator.platform import roles
    from annotator.platform.models import Project
    from curation.recipes.framework.exports import export_jobs, export_run_now
    from curation.recipes.framework.publish import publish_object, published_versions
    from curation.recipes.framework.registry import recipe_for
    from curation.recipes.vlind.demo import vlind_demo
    from evaluation.models import BenchmarkVersion

    user = get_user_model().objects.create_user("interop-curator")
    roles.grant_role(user, roles.CURATOR)
    project = Project.objects.create(slug="interop", name="Interop")
    project.members.add(user)
    bench = vlind_demo(project=project, curator=user)
    recipe = recipe_for(bench)
    if not quick:
        grow(bench, user, slots=(0, 1, 2, 4, 5, 8, 9, 10))
        published = publish_object(recipe, bench, label="interop", created_by=user)
        params = {"version_id": published.pk, "appendix_b": False}
        export_run_now(recipe, recipe.exports[0], bench, params, created_by=user)
    version = published_versions(recipe, bench).first()
    job = export_jobs(recipe, bench).first()
    if version is None or job is None or not (job.result or {}).get("path"):
        raise SystemExit("the demo published no version or wrote no archive")
    with default_storage.open(job.result["path"], "rb") as fh:
        zipfile.ZipFile(io.BytesIO(fh.read())).extractall(work / "export")
    return user, BenchmarkVersion.objects.get(pk=version.pk)


def blindspot_side(work: Path, quick: bool) -> dict:
    from django.conf import settings
    from django.core.management import call_command

    from curation.models import LLMProvider
    from evaluation import jobs, runners, services
    from evaluation.models import ModelRun

    user, version = demo_export(work, quick)
    settings.BLINDSPOT_EVAL_IMAGE_ROOT = str(work / "export")
    model = VisionModel(work / "export")
    server = serve(model)
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    provider = LLMProvider.objects.create(
        name="interop VLM", base_url=url, api_key="sk-fake", model="interop-vlm",
        supports_vision=True, timeout_s=30.0, max_retries=1,
    )  # fmt: skip
    job = runners.run_model_start(
        version=version, provider=provider, created_by=user, rounds=20, enqueue=False
    )
    jobs.run_model.apply(args=[job.pk])
    job.refresh_from_db()
    if job.status != job.Status.SUCCEEDED:
        raise SystemExit(f"the model run failed: {job.error}")
    run = ModelRun.objects.get(job=job)
    out = {"run": services.metrics_compute(run=run, rounds=20), "model": model, "server": server}
    call_command(
        "evaluate", "export-predictions", str(run.pk), "--out", str(work / "data_blindspot.json")
    )
    out["version"], out["items"] = version, version.items.count()
    return out


def import_official(version, path: Path) -> dict:
    """The official answers file imported back into Blindspot and scored."""
    from evaluation import importers, services

    rows = importers.parse_predictions("vlind", path.read_text(), path.name, option="gpt4o")
    run = services.run_import(version=version, model_name="gpt4o_eval.py", rows=rows)
    return services.metrics_compute(run=run, rounds=20)


def printed_line(scores: dict) -> str:
    """Blindspot's numbers in score_pipeline.py's printed line (×100, one decimal, '& ')."""
    keys = ("s_ck", "s_vp", "s_cb", "s_lp", "cb", "lp")
    return "& ".join(f"{(scores[k] or 0.0) * 100:.1f} " for k in keys) + "&"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("official", type=Path, help="the fetched klee972/VLind-Bench checkout")
    parser.add_argument("--database-url", default=DEFAULT_URL)
    parser.add_argument(
        "--quick", action="store_true", help="the demo's published version as it is (3 instances)"
    )
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="vlind-interop-") as tmp:
        work = Path(tmp)
        eval_dir = official_eval(args.official.resolve(), work / "official")
        extra = backoff_path(work)
        recreate_database(args.database_url)
        setup_django(args.database_url, work / "media")
        ours = blindspot_side(work, args.quick)
        port = ours["server"].server_address[1]
        env = {**os.environ, "PYTHONPATH": extra, "OPENAI_BASE_URL": f"http://127.0.0.1:{port}/v1"}
        env.pop("OPENAI_API_KEY", None)
        done = subprocess.run(
            [sys.executable, "-c", OFFICIAL_RUNNER, str(work)],
            cwd=eval_dir,
            env=env,
            capture_output=True,
            text=True,
            check=False,
            timeout=1800,
        )
        line = next((x for x in done.stdout.splitlines() if x.startswith("OFFICIAL ")), None)
        if done.returncode != 0 or line is None:
            print(done.stdout[-3000:], done.stderr[-3000:], sep="\n")
            return 1
        theirs = json.loads(line[len("OFFICIAL ") :])
        back = import_official(ours["version"], work / "data_gpt4o.json")
        ours["server"].shutdown()
    return report(ours, theirs, back)


def report(ours: dict, theirs: dict, back: dict) -> int:
    model: VisionModel = ours["model"]
    asked = {side: sorted(model.asked.get(side, [])) for side in ("blindspot", "official")}
    unknown = sum((q in model.truth) is False for q in asked["blindspot"] + asked["official"])
    same_requests = asked["blindspot"] == asked["official"]
    official, exported = theirs["gpt4o_eval"], theirs["blindspot_export"]
    print(
        f"instances: {ours['items']} in the version, {official['n']} with a good image scored by "
        f"score_pipeline.py; requests: Blindspot {len(asked['blindspot'])}, gpt4o_eval.py "
        f"{len(asked['official'])}, the same (prompt, image) pairs: "
        f"{'yes' if same_requests else 'NO'}; outside tests.jsonl: {unknown}; worst image match: "
        f"{model.worst_match:.2f} / 255"
    )
    columns = ("Blindspot run", "official", "off. on export", "import back")
    print(f"{'metric':16}" + "".join(f"{c:>16}" for c in columns) + "  equal")
    ok = same_requests and unknown == 0
    for key, label in METRICS + PLAIN:
        values = [ours["run"][key], official[key], exported[key], back[key]]
        # score_pipeline.py writes 0 for an empty denominator, Blindspot n/a (None)
        same = all((v or 0.0) == (values[0] or 0.0) for v in values)
        ok = ok and same
        cells = "".join(f"{'n/a' if v is None else f'{v:.12f}':>16}" for v in values)
        print(f"{label:16}{cells}  {'yes' if same else 'NO'}")
    mine = printed_line(ours["run"])
    print(f"score_pipeline.py printed: {official['printed']}")
    print(f"Blindspot, same format:    {mine}")
    ok = ok and mine == official["printed"] == exported["printed"]
    print("ALL EQUAL" if ok else "DIFFERENCES")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
