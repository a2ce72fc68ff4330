"""Blindspot's NaturalBench exports read by the official code (Baiqi-Li/NaturalBench), side by side.

    .venv/bin/python benchmarks/interop_naturalbench.py /work/.mirror/Baiqi-Li+NaturalBench/repo

A script, not a test: it needs PostgreSQL and a copy of the official repository (fetched, never
copied into this project; a git directory without a work tree is fine: the two files are read
with ``git show``). It drops and recreates its own database (``blindspot_interop`` by default),
runs the NaturalBench demo pipeline end to end (tiny random-weights scorer, offline drafter,
simulated annotators) up to its export, and then, in a separate Python process started in a
temporary folder (outside the project):

1. VQA: the exported Parquet loaded with ``datasets.load_dataset("parquet")`` and scored by the
   official ``naturalbench_vqa.py`` (``SUFFIX_FOR_VQA``, ``extract_answer``, ``get_scores``) on
   simulated model outputs; Blindspot scores the same outputs on the evaluation version the
   export made, and on the Parquet imported back through the Hugging Face release reader.
2. Retrieval: the exported ``NaturalBench-Retrieval/`` folder read by the official
   ``NaturalBench_Retrieval`` dataset class (``index == i`` asserted per item, image paths under
   ``images/``); simulated CLIP scores in the official ``scores[i][image][caption]`` tensor are
   imported by Blindspot on the same folder imported back, and the run's own export
   (``evaluate export-predictions``) is what the official ``evaluate_scores``
   (``get_retrieval_scores`` + ``get_retrieval_acc``) scores.

``naturalbench_retrieval.py`` imports ``t2v_metrics`` (the scoring models) at the top; the
loader and the scoring functions never use it, and it cannot be installed here (no model
weights), so the official process gets an empty stand-in module of that name, nothing else.
Prints every number twice and whether they are equal; exit status 1 when one differs.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from urllib.parse import urlparse

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/blindspot_interop"
OFFICIAL_FILES = ("naturalbench_vqa.py", "naturalbench_retrieval.py")

# Run by the official side, in its own process, with the official files first on sys.path.
OFFICIAL_RUNNER = r"""
import json, sys
import numpy as np
from datasets import load_dataset
from naturalbench_vqa import SUFFIX_FOR_VQA, extract_answer, get_scores
from naturalbench_retrieval import NaturalBench_Retrieval
import os

work = sys.argv[1]
outputs = json.load(open(os.path.join(work, "outputs.json")))
dataset = load_dataset("parquet", data_files=os.path.join(work, "naturalbench.parquet"))
naturalbench = []
for item in dataset["train"]:
    for q, i in ((0, 0), (0, 1), (1, 0), (1, 1)):
        prompt = item[f"Question_{q}"] + SUFFIX_FOR_VQA[item["Question_Type"]]
        naturalbench.append([prompt, item[f"Image_{i}"], item[f"Image_{i}_Question_{q}"],
                             item["Question_Type"]])
assert len(outputs) == len(naturalbench)
answers = {}
for i in range(len(outputs) // 4):
    answers[i] = {key: extract_answer(outputs[i * 4 + k], naturalbench[i * 4 + k][3])
                  for k, key in enumerate(("q0_i0", "q0_i1", "q1_i0", "q1_i1"))}
vqa = get_scores(answers)
prompts = [row[0] for row in naturalbench]

retrieval = NaturalBench_Retrieval(root_dir=os.path.join(work, "export"), download=False)
paths_ok = all(os.path.isfile(p) for k in range(len(retrieval)) for p in retrieval[k]["images"])
scores = np.array(json.load(open(os.path.join(work, "scores.json"))))
assert scores.shape == (len(retrieval), 2, 2)
acc = retrieval.evaluate_scores(scores)["all"]
print("OFFICIAL " + json.dumps({"vqa": vqa, "retrieval": acc, "pairs": len(retrieval),
                                "paths_ok": paths_ok, "prompts": prompts[:4]}))
"""


def official_files(source: Path, into: Path) -> None:
    """The two official files from a checkout or a git directory without a work tree."""
    for name in OFFICIAL_FILES:
        if (source / name).is_file():
            (into / name).write_bytes((source / name).read_bytes())
            continue
        shown = subprocess.run(
            ["git", f"--git-dir={source}", "show", f"HEAD:{name}"],
            capture_output=True,
            check=False,
        )
        if shown.returncode != 0:
            raise SystemExit(f"{name} not found in {source}: {shown.stderr.decode().strip()}")
        (into / name).write_bytes(shown.stdout)
    stub = into / "t2v_metrics"
    stub.mkdir()
    (stub / "__init__.py").write_text('"""Stand-in: the official loader only imports it."""\n')


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


def setup_django(url: str, media: Path) -> None:
    os.environ.update(
        {
            "DATABASE_URL": url,
            "DJANGO_SETTINGS_MODULE": "blindspot.settings",
            "DEBUG": "1",
            "CELERY_TASK_ALWAYS_EAGER": "1",
            "MEDIA_ROOT": str(media),
            "LOG_LEVEL": "ERROR",
        }
    )
    sys.path.insert(0, str(ROOT))
    import django
    from django.conf import settings
    from django.core.management import call_command

    django.setup()
    settings.MEDIA_ROOT = str(media)
    call_command("migrate", verbosity=0, interactive=False)


def simulated_outputs(records: list[dict], seed: int) -> list[str]:
    """A model's answers, four per sample in q0_i0, q0_i1, q1_i0, q1_i1 order: right 70% of the
    time, with the phrasings the official parser meets (and 3% with neither word)."""
    rng = random.Random(seed)
    out = []
    for record in records:
        kind = record["Question_Type"]
        truth = [
            record["Image_0_Question_0"],
            record["Image_1_Question_0"],
            record["Image_0_Question_1"],
            record["Image_1_Question_1"],
        ]
        for answer in truth:
            if rng.random() < 0.03:
                out.append("I cannot tell from the picture.")
                continue
            if rng.random() > 0.7:
                answer = {"Yes": "No", "No": "Yes", "A": "B", "B": "A"}[answer]
            if kind == "yes_no":
                out.append(rng.choice([answer, f"{answer}.", f"{answer.lower()}, I think"]))
            else:
                out.append(rng.choice([answer, f"{answer}.", f"The answer is {answer}"]))
    return out


def simulated_scores(n: int, seed: int) -> list:
    """CLIP-like scores[i][image][caption]: the matching caption a little higher, with noise."""
    rng = random.Random(seed)
    return [
        [
            [round(rng.gauss(0.25, 0.04) + (0.03 if img == cap else 0.0), 5) for cap in (0, 1)]
            for img in (0, 1)
        ]
        for _ in range(n)
    ]


def blindspot_side(work: Path, outputs: list[str], scores_path: Path) -> dict:
    """Blindspot's numbers on its own export: the evaluation version made at export, the
    Parquet imported back through the release reader, and the retrieval folder."""
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    from annotator.platform import roles
    from annotator.platform.models import Project
    from curation.recipes.naturalbench.demo import naturalbench_demo
    from evaluation import importers, services
    from evaluation.families.naturalbench import release as nb_release
    from evaluation.families.retrieval import release as retrieval_release
    from evaluation.models import BenchmarkVersion

    user = get_user_model().objects.create_user("interop-curator")
    roles.grant_role(user, roles.CURATOR)
    project = Project.objects.create(slug="interop", name="Interop")
    project.members.add(user)
    pipeline = naturalbench_demo(project=project, curator=user)
    version = pipeline.versions.order_by("-id").first()
    if version is None:
        raise SystemExit("the demo pipeline made no export")
    with version.archive.open("rb") as fh:
        zipfile.ZipFile(io.BytesIO(fh.read())).extractall(work / "export")
    with version.parquet.open("rb") as fh:
        (work / "naturalbench.parquet").write_bytes(fh.read())
    records = [
        json.loads(line)
        for line in (work / "export" / "naturalbench.jsonl").read_text().splitlines()
    ]
    outputs[:] = simulated_outputs(records, seed=7)
    metadata = json.loads(
        (work / "export" / "NaturalBench-Retrieval" / "metadata.json").read_text()
    )
    scores_path.write_text(json.dumps(simulated_scores(len(metadata), seed=11)))

    runs = []

    def score(benchmark_version, family: str, content: str, option: str = "") -> dict:
        rows = importers.parse_predictions(family, content, "p.json", option=option)
        run = services.run_import(version=benchmark_version, model_name="simulated", rows=rows)
        runs.append(run)
        return services.metrics_compute(run=run, rounds=20)

    predictions = "\n".join(
        json.dumps({"Index": r["Index"], "outputs": outputs[4 * k : 4 * k + 4]})
        for k, r in enumerate(records)
    )
    exported = BenchmarkVersion.objects.get(pk=version.benchmark_version_id)
    out = {"samples": len(records), "vqa_export": score(exported, "naturalbench", predictions)}

    def imported(family: str, release, label: str) -> BenchmarkVersion:
        result = services.import_run(
            {
                "target": "items",
                "project_id": project.pk,
                "family": family,
                "benchmark": f"Imported {family}",
                "label": label,
                "content": release.content,
                "filename": release.filename,
            },
            created_by=user,
        )
        return BenchmarkVersion.objects.get(pk=result["version_id"])

    parquet_version = imported(
        "naturalbench", nb_release.read_release(work / "naturalbench.parquet"), "hf"
    )
    out["vqa_hf_import"] = score(parquet_version, "naturalbench", predictions)
    retrieval_version = imported(
        "naturalbench_retrieval", retrieval_release.read_release(work / "export"), "folder"
    )
    out["retrieval"] = score(retrieval_version, "naturalbench_retrieval", scores_path.read_text())
    out["pairs"] = len(metadata)
    # The official side reads Blindspot's own score export of that run, not the file given.
    call_command("evaluate", "export-predictions", str(runs[-1].pk), "--out", str(scores_path))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("official", type=Path, help="the fetched Baiqi-Li/NaturalBench checkout")
    parser.add_argument("--database-url", default=DEFAULT_URL)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="nb-interop-") as tmp:
        work = Path(tmp)
        official_dir = work / "official"
        official_dir.mkdir()
        official_files(args.official.resolve(), official_dir)
        recreate_database(args.database_url)
        setup_django(args.database_url, work / "media")
        outputs: list[str] = []
        ours = blindspot_side(work, outputs, work / "scores.json")
        (work / "outputs.json").write_text(json.dumps(outputs))
        env = {**os.environ, "PYTHONPATH": str(official_dir), "HF_DATASETS_OFFLINE": "1"}
        env["HF_HOME"] = str(work / "hf")
        done = subprocess.run(
            [sys.executable, "-c", OFFICIAL_RUNNER, str(work)],
            cwd=official_dir,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        line = next((x for x in done.stdout.splitlines() if x.startswith("OFFICIAL ")), None)
        if done.returncode != 0 or line is None:
            print(done.stdout[-3000:], done.stderr[-3000:], sep="\n")
            return 1
        theirs = json.loads(line[len("OFFICIAL ") :])

    rows = []
    for ours_key, label in (("vqa_export", "export"), ("vqa_hf_import", "HF import")):
        for mine, official in (
            ("acc", "Acc"),
            ("q_acc", "Q_Acc"),
            ("i_acc", "I_Acc"),
            ("g_acc", "G_Acc"),
        ):
            rows.append(
                (f"VQA {official} ({label})", ours[ours_key][mine], theirs["vqa"][official])
            )
    for name in ("text", "image", "group"):
        rows.append((f"Retrieval {name}", ours["retrieval"][name], theirs["retrieval"][name]))
    print(
        f"samples: {ours['samples']} (official loader: {len(outputs) // 4}); retrieval pairs: "
        f"{ours['pairs']} (official loader: {theirs['pairs']}; every image path exists: "
        f"{theirs['paths_ok']})"
    )
    print(f"first official prompt: {theirs['prompts'][0]!r}")
    print(f"{'metric':32} {'Blindspot':>12} {'official':>12}  equal")
    ok = theirs["paths_ok"] and ours["pairs"] == theirs["pairs"]
    for label, mine, official in rows:
        same = mine == official
        ok = ok and same
        print(f"{label:32} {mine:12.6f} {official:12.6f}  {'yes' if same else 'NO'}")
    print("all equal" if ok else "DIFFERENCES")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
