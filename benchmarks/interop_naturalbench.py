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

``--hunt``: hunt rounds instead of the NaturalBench pipeline. A yes/no round and a two-option
round (stand-in targets, offline blind baseline) are hunted through the services and the real
``hunt.ask`` job: questions written, partners picked, the pairs' blindspots verified by two
other people (one in five rejected as "Unanswerable"); each round's validated items are
published as a NaturalBench-family version and exported as the hunt's NaturalBench Parquet. The
official side loads each Parquet file with ``datasets`` and scores, with ``extract_answer`` and
``get_scores``, the answers the hunt's own targets and blind model gave (read from the items'
provenance) and simulated outputs; Blindspot scores the same outputs on the published version
and on the Parquet imported back through the release reader. Also compared: the Index order,
the question types, and every prompt the hunt's blind model was sent against the official
``Question + SUFFIX_FOR_VQA[Question_Type]``.

    .venv/bin/python benchmarks/interop_naturalbench.py <official checkout> --hunt
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
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.common import recreate_database, setup_django  # noqa: E402

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


# The official side of --hunt: each Parquet file as the official code loads and scores it.
HUNT_RUNNER = r"""
import json, os, sys
from datasets import load_dataset
from naturalbench_vqa import SUFFIX_FOR_VQA, extract_answer, get_scores

work = sys.argv[1]
spec = json.load(open(os.path.join(work, "hunt.json")))
keys = ("q0_i0", "q0_i1", "q1_i0", "q1_i1")
out = {}
for name, entry in spec.items():
    dataset = load_dataset("parquet", data_files=os.path.join(work, entry["parquet"]))["train"]
    rows = []
    for item in dataset:
        for q, i in ((0, 0), (0, 1), (1, 0), (1, 1)):
            rows.append((item[f"Question_{q}"] + SUFFIX_FOR_VQA[item["Question_Type"]],
                         item["Question_Type"], item[f"Image_{i}"].size))
    result = {"samples": len(dataset), "indices": [item["Index"] for item in dataset],
              "types": sorted({item["Question_Type"] for item in dataset}),
              "prompts": [r[0] for r in rows], "images_ok": all(r[2][0] > 0 for r in rows),
              "scores": {}}
    for model, outputs in entry["outputs"].items():
        assert len(outputs) == len(rows), (model, len(outputs), len(rows))
        answers = {k: {key: extract_answer(outputs[4 * k + j], rows[4 * k + j][1])
                       for j, key in enumerate(keys)} for k in range(len(dataset))}
        result["scores"][model] = get_scores(answers)
    out[name] = result
print("OFFICIAL " + json.dumps(out))
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


# --------------------------------------------------------------------------------------------
# --hunt: hunt rounds published as NaturalBench versions, their Parquet read by the official code
# --------------------------------------------------------------------------------------------
HUNT_ITEMS = 12  # questions written per round


def _hunt_round(project, curator, workers, question_type: str):
    """A round hunted through the services and the real job; published and exported."""
    from annotator.services import annotation_submit, assignment_claim
    from curation.corpora import demo_corpus
    from curation.models import LLMProvider
    from curation.recipes.framework import exports
    from curation.recipes.framework.publish import publish_object
    from curation.recipes.framework.registry import recipe_of
    from curation.recipes.hunt import candidates, publish
    from curation.recipes.hunt.models import HuntCandidate, HuntCheck
    from curation.recipes.hunt.rounds import round_create

    author, *verifiers = workers
    targets = [
        LLMProvider.objects.get_or_create(
            project=project, name=name, defaults={"kind": LLMProvider.Kind.OFFLINE, "model": name}
        )[0]
        for name in ("stand-in a", "stand-in b")
    ]
    round_ = round_create(
        project=project,
        created_by=curator,
        name=f"Interop {question_type}",
        corpus=demo_corpus(project=project, created_by=curator),
        targets=targets,
        blind=None,
        question_type=question_type,
        max_per_minute=60,
        hide_targets=False,
    )
    two = question_type == "multiple_choice"
    images = list(round_.corpus.samples.order_by("position").values_list("image_id", flat=True))
    for k in range(HUNT_ITEMS):
        colours = ("red", "blue") if k % 2 else ("green", "yellow")
        cand = candidates.candidate_submit(
            round_=round_,
            worker=author,
            image_id=images[k % len(images)],
            question=f"Which colour is shape number {k}?" if two else f"Is shape {k} {colours[0]}?",
            options=colours if two else None,
            answer=("a" if k % 3 else "b") if two else ("yes" if k % 3 else "no"),
        )
        cand.refresh_from_db()
        if cand.state != HuntCandidate.State.PARTNER:
            continue
        candidates.candidate_pair(
            candidate=cand,
            worker=author,
            partner_id=cand.neighbours["images"][0]["id"],
            question_1=f"Which colour is shape number {k}?" if two else f"Is shape {k} dull?",
            options_1=colours[::-1] if two else None,
        )
    queue = type(round_).objects.get(pk=round_.pk).verify_queue
    for n, person in enumerate(verifiers):
        claim = assignment_claim(queue=queue, annotator=person)
        while claim.task is not None:
            check = HuntCheck.objects.get(task=claim.task)
            odd = n == 0 and check.candidate_id % 5 == 0 and check.slot == "q1_i1"
            answer = "Unanswerable" if odd else check.intended
            claim = annotation_submit(
                task_id=claim.task.pk, annotator=person, response={"answer": answer}
            ).next
    recipe = recipe_of("hunt")
    version = publish_object(recipe, round_, label="v1", created_by=curator)
    params = publish.export_params(round_, {"fmt": "parquet"}, {})
    job = exports.export_run_now(recipe, recipe.exports[0], round_, params, created_by=curator)
    if job.status != "succeeded":
        raise SystemExit(f"the Parquet export failed: {job.error}")
    states = Counter(round_.candidates.values_list("state", flat=True))
    return round_, version, job, dict(sorted(states.items()))


def _sent_prompt(generation) -> str:
    """The user text of a Generation's rendered prompt (images elided)."""
    content = generation.messages[-1]["content"]
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if part.get("type") == "text")
    return content


def hunt_side(work: Path) -> dict:
    """Two hunted rounds (yes/no, two options), each published, exported as Parquet, and
    scored by Blindspot on the version and on the Parquet imported back."""
    from django.contrib.auth import get_user_model
    from django.core.files.storage import default_storage

    from annotator.platform import roles
    from annotator.platform.models import Project
    from curation.models import Generation
    from evaluation import importers, services
    from evaluation.families.naturalbench import layout
    from evaluation.families.naturalbench import release as nb_release
    from evaluation.models import BenchmarkVersion

    users = get_user_model().objects
    curator = users.create_user("interop-curator")
    roles.grant_role(curator, roles.CURATOR)
    project = Project.objects.create(slug="interop-hunt", name="Interop hunt")
    workers = []
    for name in ("hunter", "verifier-1", "verifier-2"):
        person = users.create_user(name)
        roles.grant_role(person, roles.CROWDWORKER)
        workers.append(person)
    project.members.add(curator, *workers)

    def score(version, model: str, outputs: list[str], indices: list[str]) -> dict:
        lines = "\n".join(
            json.dumps({"Index": index, "outputs": outputs[4 * k : 4 * k + 4]})
            for k, index in enumerate(indices)
        )
        rows = importers.parse_predictions("naturalbench", lines, "p.jsonl")
        run = services.run_import(version=version, model_name=model, rows=rows)
        return services.metrics_compute(run=run, rounds=20)

    ours, spec = {}, {}
    for question_type in ("yes_no", "multiple_choice"):
        round_, version, job, states = _hunt_round(project, curator, workers, question_type)
        name = f"hunt-{question_type}.parquet"
        with default_storage.open(job.result["path"], "rb") as fh:
            (work / name).write_bytes(fh.read())
        items = sorted(version.items.all(), key=lambda item: int(item.item_id))
        indices = [item.item_id for item in items]
        outputs: dict[str, list[str]] = {}
        sent = []
        for item in items:
            by = {(a["model"], a["slot"]): a for a in item.data["hunt"]["answers"]}
            for model in sorted({m for m, _slot in by}):
                outputs.setdefault(f"{model} (hunt answers)", []).extend(
                    by[(model, key)]["text"] for key in ("q0_i0", "q0_i1", "q1_i0", "q1_i1")
                )
            for key in ("q0_i0", "q0_i1", "q1_i0", "q1_i1"):
                generation = Generation.objects.get(pk=by[("blind", key)]["generation"])
                sent.append(_sent_prompt(generation))
        records = []
        for item in items:
            truth = layout.expected_answers(item.data["question_type"])
            records.append(
                {"Question_Type": item.data["question_type"]}
                | dict(zip(layout.ANSWER_FIELDS, truth, strict=True))
            )
        outputs["simulated"] = simulated_outputs(records, seed=7)
        result = services.import_run(
            {
                "target": "items",
                "project_id": project.pk,
                "family": "naturalbench",
                "benchmark": f"Imported hunt {question_type}",
                "label": "parquet",
                "content": (release := nb_release.read_release(work / name)).content,
                "filename": release.filename,
            },
            created_by=curator,
        )
        imported = BenchmarkVersion.objects.get(pk=result["version_id"])
        ours[question_type] = {
            "round": round_.pk,
            "version": version.pk,
            "states": states,
            "samples": len(items),
            "indices": [int(i) for i in indices],
            "types": sorted({item.data["question_type"] for item in items}),
            "prompts": sent,
            "scores": {m: score(version, m, o, indices) for m, o in outputs.items()},
            "hf_import": score(imported, "simulated", outputs["simulated"], indices),
        }
        spec[question_type] = {"parquet": name, "outputs": outputs}
    (work / "hunt.json").write_text(json.dumps(spec))
    return ours


def hunt_compare(ours: dict, theirs: dict) -> bool:
    ok = True
    metrics = (("acc", "Acc"), ("q_acc", "Q_Acc"), ("i_acc", "I_Acc"), ("g_acc", "G_Acc"))
    for qtype, mine in ours.items():
        official = theirs[qtype]
        same_prompts = mine["prompts"] == official["prompts"]
        same_order = mine["indices"] == official["indices"]
        states = ", ".join(f"{k} {v}" for k, v in mine["states"].items())
        print(
            f"\n{qtype}: round {mine['round']} ({states}) -> version {mine['version']}: "
            f"{mine['samples']} samples (official loader: {official['samples']}; Index order "
            f"equal: {same_order}; Question_Type "
            f"{mine['types']} / {official['types']}; images decode: {official['images_ok']})"
        )
        print(
            f"  prompts the hunt's blind model was sent == official Question + SUFFIX_FOR_VQA: "
            f"{same_prompts} ({len(mine['prompts'])}); e.g. {official['prompts'][0]!r}"
        )
        ok = ok and same_prompts and same_order and official["images_ok"]
        ok = (
            ok and mine["samples"] == official["samples"] > 0 and mine["types"] == official["types"]
        )
        print(f"  {'outputs':26} {'metric':6} {'Blindspot':>10} {'official':>10}  equal")
        rows = [(m, label, s) for m, s in mine["scores"].items() for label in metrics]
        rows += [("simulated (HF import)", label, mine["hf_import"]) for label in metrics]
        for model, (key, name), scores in rows:
            base = model.replace(" (HF import)", "")
            value, their = scores[key], official["scores"][base][name]
            ok = ok and value == their
            same = "yes" if value == their else "NO"
            print(f"  {model:26} {name:6} {value:10.6f} {their:10.6f}  {same}")
    return ok


def run_hunt(args, work: Path, official_dir: Path) -> int:
    recreate_database(args.database_url)
    setup_django(args.database_url, work / "media")
    ours = hunt_side(work)
    env = {**os.environ, "PYTHONPATH": str(official_dir), "HF_DATASETS_OFFLINE": "1"}
    env["HF_HOME"] = str(work / "hf")
    done = subprocess.run(
        [sys.executable, "-c", HUNT_RUNNER, str(work)],
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
    ok = hunt_compare(ours, json.loads(line[len("OFFICIAL ") :]))
    print("\nall equal" if ok else "\nDIFFERENCES")
    return 0 if ok else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("official", type=Path, help="the fetched Baiqi-Li/NaturalBench checkout")
    parser.add_argument("--database-url", default=DEFAULT_URL)
    parser.add_argument(
        "--hunt", action="store_true", help="hunt rounds' published versions (Parquet) instead"
    )
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="nb-interop-") as tmp:
        work = Path(tmp)
        official_dir = work / "official"
        official_dir.mkdir()
        official_files(args.official.resolve(), official_dir)
        if args.hunt:
            return run_hunt(args, work, official_dir)
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
