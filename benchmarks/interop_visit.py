"""Blindspot's VisIT-Bench exports read by the sandbox's own code, side by side.

    .venv/bin/python benchmarks/interop_visit.py /work/.mirror/Hritikbansal+visit_bench_sandbox/repo

A script, not a test: it needs PostgreSQL and a copy of Hritikbansal/visit_bench_sandbox (fetched,
never copied into this project; a git directory without a work tree is fine: its files are read
with ``git archive``). It drops and recreates its own database (``blindspot_interop_visit`` by
default), then, with the sandbox's files in a temporary folder (outside the project):

1. Model files: the sandbox's published dataset becomes a version and every model-output CSV of
   its ``full_model_predictions/`` is imported by Blindspot's output-column rule with tolerant
   matching; the imported / skipped counts are printed beside the rows ``make_pairs.py`` matches.
2. Dataset CSV: Blindspot's export of that version replaces ``single_image_full_dataset.csv`` and
   the official ``make_pairs.py`` runs on it, and again on the published file: the pair files it
   writes must be identical.
3. Judgments: a simulated judge (the family's demo, in the official layout) over the first
   instances of four models and the reference is imported, rated (online Elo, win rate vs the
   reference) and exported as the head-to-head JSON; the official ``elo_analysis.py`` reads the
   export. Its win rates and Elo are printed beside Blindspot's.

4. Multi-image (with ``--multi-images visit_bench_multi_images.csv``; the sandbox does not ship the
   published multi-image file): it becomes a version and its multi-image CSV export must read back
   to the same instances; three models answer the kept instances and Blindspot's own judge (the
   offline length judge, a real judge job) rates them with the multi-image prompt. The prompt of
   every judge call is compared with what the sandbox's ``pairwise_eval.generate_request(...,
   multi_image=True)`` builds for the same captions, instruction and responses, and
   ``elo_analysis.py`` reads the head-to-head export: its Elo and win rates beside Blindspot's.

``elo_analysis.py`` imports ``pytz`` (unused); when the interpreter lacks it, it is installed with
pip into a temporary folder for the official process only. Exit status 1 when a number differs.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import re
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.common import recreate_database, setup_django  # noqa: E402

DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/blindspot_interop_visit"
JUDGED = {  # output column → quality for the simulated judge (the reference is strongest)
    "human_verified_reference": 200.0,
    "llava13b_output": 60.0,
    "instruct_blip_output": 0.0,
    "openflamingo": -60.0,
    "panda_gpt_13b_output": -150.0,
}
JUDGED_FILES = {
    "llava13b_output": "llava13b_output.csv",
    "instruct_blip_output": "instruct_blip_13b_out.csv",
    "openflamingo": "openflamingo_single_fixed.csv",
    "panda_gpt_13b_output": "PandaGPT_13b_out.csv",
}


# What the official scripts read (the snapshot may lack large files such as the GPT-4 cache).
NEEDED = (
    "make_pairs.py",
    "elo_analysis.py",
    "pairwise_eval.py",
    "prompts.py",
    "single_image_full_dataset.csv",
    "full_model_predictions",
)


def extract(source: Path, into: Path) -> Path:
    """The sandbox's files: a checkout as it is, or ``git archive`` of a git directory."""
    if (source / "make_pairs.py").is_file():
        return source
    archive = subprocess.run(
        ["git", f"--git-dir={source}", "archive", "--format=tar", "HEAD", *NEEDED],
        capture_output=True,
        check=False,
    )
    if archive.returncode != 0:
        raise SystemExit(f"cannot read {source}: {archive.stderr.decode().strip()}")
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(into, filter="data")
    return into


def official(args: list[str], cwd: Path, extra_path: str = "") -> str:
    """Run one of the sandbox's scripts in its folder, with this interpreter; its stdout."""
    # make_pairs.py seeds each new model's draw with hash(name): fixed string hashing makes two
    # runs comparable.
    env = {**os.environ, "PYTHONPATH": extra_path, "PYTHONHASHSEED": "0"}
    done = subprocess.run(
        [sys.executable, *args], cwd=cwd, capture_output=True, text=True, env=env, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"{args[0]} failed:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}")
    return done.stdout


def pytz_path(work: Path) -> str:
    """A folder holding pytz for elo_analysis.py's import, when this interpreter lacks it."""
    try:
        import pytz  # noqa: F401

        return ""
    except ImportError:
        target = work / "pytz"
        subprocess.run(
            [sys.executable, "-m", "pip", "install", "-q", "--target", str(target), "pytz"],
            check=True,
        )
        return str(target)


def make_pairs_outputs(folder: Path) -> dict[str, bytes]:
    files = [folder / "all_pairs_with_references_original_set.jsonl"]
    files += sorted((folder / "leaderboard_submission_model_queries").glob("*.jsonl"))
    return {str(f.relative_to(folder)): f.read_bytes() for f in files}


def main() -> int:  # noqa: C901 — one linear report, step by step
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sandbox", type=Path, help="visit_bench_sandbox checkout or git dir")
    parser.add_argument("--database-url", default=DEFAULT_URL)
    parser.add_argument("--instances", type=int, default=60, help="judged instances")
    parser.add_argument("--rounds", type=int, default=1000, help="bootstrap rounds")
    parser.add_argument(
        "--multi-images", type=Path, default=None, help="visit_bench_multi_images.csv (step 4)"
    )
    parser.add_argument("--multi-only", action="store_true", help="step 4 alone")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="blindspot-visit-interop-"))
    sandbox = extract(args.sandbox.resolve(), work / "sandbox")
    recreate_database(args.database_url)
    setup_django(args.database_url, work / "media")

    from annotator.platform.models import Project
    from curation.recipes.framework.exports import records_write
    from evaluation import importers, services
    from evaluation.families.visit import demo as visit_demo
    from evaluation.families.visit import exports
    from evaluation.families.visit import parse as visit_parse
    from evaluation.models import JudgmentSet

    ok = True
    dataset_text = (sandbox / "single_image_full_dataset.csv").read_text(encoding="utf-8-sig")
    project = Project.objects.create(name="VisIT interop", slug="visit-interop")
    if args.multi_only and args.multi_images:
        ok = multi_image_step(args.multi_images, project, sandbox, work, args.rounds)
        print("ALL EQUAL" if ok else "SOME NUMBERS DIFFER")
        return 0 if ok else 1
    benchmark = services.benchmark_get_or_create(
        family="visit", name="VisIT-Bench", project=project
    )
    version = services.version_create(
        benchmark=benchmark, label="single-image", rows=visit_parse.parse_items(dataset_text)
    )
    print(f"version: {version.item_count} instances, {version.kept_count} kept (make_pairs: 529)")

    # 1. Every published model file, by the output-column rule, tolerant matching.
    print("\n1. Model-output CSVs (Blindspot: imported / skipped; official: rows make_pairs.py")
    print("   keeps = rows whose (image, instruction, category) is among the 529 kept)")
    kept = {
        (r["image"], r["instruction"], r["instruction_category"])
        for r in csv.DictReader(io.StringIO(dataset_text))
        if r["human_ratings_gpt4_correct"] == "TRUE"
        and r["human_ratings_problem_in_caption"] == "FALSE"
    }
    kept_ids = set(version.items.filter(kept=True).values_list("item_id", flat=True))
    for path in sorted((sandbox / "full_model_predictions").glob("*.csv")):
        content = path.read_text(encoding="utf-8-sig")
        column = visit_parse.prediction_column(content)
        try:
            rows = importers.parse_predictions("visit", content, path.name)
            run = services.run_import(
                version=version, model_name=column or path.stem, rows=rows, skip_unmatched=True
            )
        except Exception as exc:  # report every file, whatever fails
            ok = False
            print(f"   {path.name:48} FAILED: {exc}")
            continue
        skipped = run.prompt_settings["unmatched"]["skipped_count"]
        on_kept = run.predictions.filter(item__item_id__in=kept_ids).count()
        table = list(csv.DictReader(io.StringIO(content)))
        official_kept = sum(
            1 for r in table if (r["image"], r["instruction"], r["instruction_category"]) in kept
        )
        same = on_kept == official_kept
        ok &= same
        print(
            f"   {path.name:48} column {column!r:32} imported {run.prediction_count:3d}"
            f" skipped {skipped:2d} | on kept: Blindspot {on_kept:3d},"
            f" make_pairs {official_kept:3d}"
            f" {'=' if same else '≠'}"
        )

    # 2. The dataset export through make_pairs.py, against the published file.
    buffer = io.BytesIO()
    records = [
        visit_parse.published_record(d) for d in version.items.values_list("data", flat=True)
    ]
    records_write(buffer, records, columns=visit_parse.PUBLISHED_COLUMNS, fmt="csv")
    runs = {}
    for label, text in (("published", dataset_text.encode()), ("export", buffer.getvalue())):
        folder = work / f"make_pairs_{label}"
        folder.mkdir()
        for name in ("make_pairs.py", "full_model_predictions"):
            os.symlink(sandbox / name, folder / name)
        (folder / "single_image_full_dataset.csv").write_bytes(text)
        out = official(["make_pairs.py"], folder)
        runs[label] = (make_pairs_outputs(folder), out)
    same = runs["published"][0] == runs["export"][0]
    ok &= same
    pairs = runs["export"][0]["all_pairs_with_references_original_set.jsonl"].count(b"\n") + 1
    final = re.search(r"final set .*?: (\d+)", runs["export"][1])
    print("\n2. make_pairs.py on Blindspot's dataset CSV export")
    print(
        f"   final set (official filter): {final.group(1) if final else '?'} (Blindspot kept:"
        f" {version.kept_count})"
    )
    print(
        f"   pair files identical to those from the published file: {same}"
        f" ({len(runs['export'][0])} files, {pairs} original-set pairs)"
    )

    # 3. Judgments: Blindspot's head-to-head export read by elo_analysis.py.
    first = visit_demo._visit_responses(dataset_text, {})  # noqa: SLF001 — its row order
    keys = {(row["image"], row["instruction"]) for row, _r in first[: args.instances]}
    models = {}
    for column, name in JUDGED_FILES.items():
        table = list(
            csv.DictReader(
                io.StringIO(
                    (sandbox / "full_model_predictions" / name).read_text(encoding="utf-8-sig")
                )
            )
        )
        out = io.StringIO()
        writer = csv.DictWriter(out, fieldnames=list(table[0]))
        writer.writeheader()
        writer.writerows(r for r in table if (r["image"], r["instruction"]) in keys)
        models[column] = out.getvalue()
    head2head = visit_demo.visit_llm_judgments(
        dataset_text, models, quality=JUDGED, n_instances=args.instances, tie_rate=0.15, seed=3
    )
    result = services.import_run(
        {
            "target": "judgments",
            "version_id": version.pk,
            "kind": "llm",
            "label": "Simulated judge",
            "content": head2head,
            "filename": "gpt-4_head2head.json",
            "rounds": args.rounds,
            "text_metrics": False,
        }
    )
    judgment_set = JudgmentSet.objects.get(pk=result["judgment_set_id"])
    _name, exported = exports.head2head_export(judgment_set)
    folder = work / "elo"
    folder.mkdir()
    os.symlink(sandbox / "elo_analysis.py", folder / "elo_analysis.py")
    (folder / "blindspot_head2head.json").write_text(exported, encoding="utf-8")
    out = official(
        ["elo_analysis.py", "--head2head_file", "blindspot_head2head.json"],
        folder,
        pytz_path(work),
    )
    official_wr = dict(re.findall(r"^(\S+) (\d+\.\d\d% n=\d+)$", out, re.M))
    official_elo = {
        m: (int(e), int(n))
        for m, e, n in re.findall(r"^\s*\d+, (\S+)\s*, (-?\d+), (\d+)$", out, re.M)
    }
    players = judgment_set.results["players"]
    print(
        f"\n3. elo_analysis.py on Blindspot's head-to-head export ({judgment_set.pair_count}"
        f" pairs, {judgment_set.results['battles']} battles)"
    )
    print(
        f"   {'model':26} {'Elo B.':>7} {'Elo off.':>8} {'matches':>9}"
        f"  {'win vs reference (Blindspot)':30} {'(official)':20}  bootstrap median [95%]"
    )
    for rank, p in enumerate(players, start=1):
        name = p["player"]
        mine_wr = (p.get("win_rate") or {}).get("text", "—")
        theirs_wr = official_wr.get(name, "—")
        theirs_elo, theirs_n = official_elo.get(name, (None, None))
        mine_elo = round(p["online"])
        same = mine_elo == theirs_elo and p["matches"] == theirs_n
        if p.get("win_rate"):
            w = p["win_rate"]
            same &= theirs_wr == f"{100 * w['wins'] / w['n']:.2f}% n={w['n']}"
        ok &= same
        print(
            f"   {rank}. {name:23} {mine_elo:7d} {theirs_elo!s:>8} {p['matches']:4d}/{theirs_n!s:4}"
            f"  {mine_wr:30} {theirs_wr:20}  {p['elo']} [{p['low']:.0f}, {p['high']:.0f}]"
            f"  {'=' if same else '≠'}"
        )
    order = [p["player"] for p in players]
    theirs = sorted(official_elo, key=lambda m: -official_elo[m][0])
    ok &= order == theirs
    print(f"   ranking identical: {order == theirs}")
    if args.multi_images:
        ok &= multi_image_step(args.multi_images, project, sandbox, work, args.rounds)
    print(f"\nfiles in {work}")
    print("ALL EQUAL" if ok else "SOME NUMBERS DIFFER")
    return 0 if ok else 1


# The sandbox's judge request for one multi-image pair, printed as JSON (run in its folder).
GENERATE_REQUEST = """
import json, sys
import pairwise_eval
for case in json.load(sys.stdin):
    print(json.dumps(pairwise_eval.generate_request(
        case["captions"], case["instruction"], case["A"], case["B"], multi_image=True)))
"""


def multi_image_step(path: Path, project, sandbox: Path, work: Path, rounds: int) -> bool:
    """Step 4: the published multi-image file through a version, a real (offline) judge job and
    the sandbox's own prompt builder and elo_analysis.py."""
    from curation.gateway.providers import provider_offline
    from curation.models import Generation
    from curation.recipes.framework.exports import records_write
    from evaluation import jobs, services
    from evaluation.families.visit import exports, judge
    from evaluation.families.visit import parse as visit_parse
    from evaluation.importers import PredictionRow
    from evaluation.models import JudgmentSet, PairJudgment

    ok = True
    content = path.read_text(encoding="utf-8-sig")
    items = visit_parse.parse_items(content)
    benchmark = services.benchmark_get_or_create(
        family="visit", name="VisIT-Bench multi-image", project=project
    )
    version = services.version_create(benchmark=benchmark, label="multi-image", rows=items)
    buffer = io.BytesIO()
    records = [
        visit_parse.published_record(d) for d in version.items.values_list("data", flat=True)
    ]
    records_write(buffer, records, columns=visit_parse.MULTI_COLUMNS, fmt="csv")
    again = visit_parse.parse_items(buffer.getvalue().decode())
    same = [(i.item_id, i.kept, i.data) for i in again] == [
        (i.item_id, i.kept, i.data) for i in items
    ]
    ok &= same
    print(
        f"\n4. Multi-image: {len(items)} instances, {sum(i.kept for i in items)} kept (Table 2: 63)"
    )
    print(f"   multi-image CSV export reads back to the same instances: {same}")
    kept = [i for i in items if i.kept]
    styles = {
        "terse-model": lambda k: f"Image {k % 2 + 1}.",
        "medium-model": lambda k: (
            "The answer depends on comparing the images one by one. " * (k % 3 + 1)
        ),
        "verbose-model": lambda k: "Looking at every image in turn, I compare them carefully. " * 4,
    }
    for name, text in styles.items():
        services.run_import(
            version=version,
            model_name=name,
            rows=[PredictionRow(i.item_id, text(k), k + 1) for k, i in enumerate(kept)],
        )
    pairs = [
        {"instance_id": i.item_id, "a_model": a, "b_model": b}
        for k, i in enumerate(kept)
        for a, b in (
            ("terse-model", judge.REFERENCE_PLAYER),
            ("medium-model", "verbose-model"),
            (("verbose-model", "terse-model"), ("medium-model", judge.REFERENCE_PLAYER))[k % 2],
        )
    ]
    job = judge.judge_start(
        version=version,
        judgment_set_name="Offline multi-image judge",
        pairs=pairs,
        provider=provider_offline(),
        created_by=None,
        rounds=rounds,
        text_metrics=False,
        enqueue=False,
    )
    jobs.judge.apply(args=[job.pk])
    judgment_set = JudgmentSet.objects.get(version=version, label="Offline multi-image judge")
    # Every judge call's prompt beside the sandbox's generate_request for the same pair and order.
    cases, ours = [], []
    judged = PairJudgment.objects.filter(judgment_set=judgment_set).select_related("item")
    for j in judged:
        responses = {j.model_a: j.response_a, j.model_b: j.response_b}
        for output in j.outputs:
            generation = Generation.objects.get(pk=output["generation_id"])
            ours.append(generation.messages)
            cases.append(
                {
                    "captions": j.item.data["captions"],
                    "instruction": j.item.data["instruction"],
                    "A": responses[output["shown_a"]],
                    "B": responses[output["shown_b"]],
                }
            )
    folder = work / "multi"
    folder.mkdir()
    for name in ("pairwise_eval.py", "prompts.py"):
        os.symlink(sandbox / name, folder / name)
    (folder / "generate.py").write_text(GENERATE_REQUEST)
    done = subprocess.run(
        [sys.executable, "generate.py"],
        cwd=folder,
        input=json.dumps(cases),
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"generate_request failed:\n{done.stderr[-3000:]}")
    theirs = [json.loads(line) for line in done.stdout.splitlines()]
    prompts_same = sum(a == b for a, b in zip(ours, theirs, strict=True))
    ok &= prompts_same == len(ours)
    print(
        f"   judge prompts identical to the sandbox's generate_request(multi_image=True):"
        f" {prompts_same} of {len(ours)} calls"
    )
    _name, exported = exports.head2head_export(judgment_set)
    (folder / "multi_head2head.json").write_text(exported, encoding="utf-8")
    os.symlink(sandbox / "elo_analysis.py", folder / "elo_analysis.py")
    out = official(
        [
            "elo_analysis.py",
            "--head2head_file",
            "multi_head2head.json",
            "--tsv_category",
            "Multiple Images",
        ],
        folder,
        pytz_path(work),
    )
    official_wr = dict(re.findall(r"^(\S+) (\d+\.\d\d% n=\d+)$", out, re.M))
    official_elo = {
        m: (int(e), int(n))
        for m, e, n in re.findall(r"^\s*\d+, (\S+)\s*, (-?\d+), (\d+)$", out, re.M)
    }
    print(f"   elo_analysis.py on the export ({judgment_set.pair_count} pairs):")
    for p in judgment_set.results["players"]:
        name = p["player"]
        theirs_elo, theirs_n = official_elo.get(name, (None, None))
        same = round(p["online"]) == theirs_elo and p["matches"] == theirs_n
        w = p.get("win_rate") or {}
        if w.get("n"):
            same &= official_wr.get(name) == f"{100 * w['wins'] / w['n']:.2f}% n={w['n']}"
        elif w:  # no decisive battle against the reference: elo_analysis.py prints no line
            same &= name not in official_wr
        ok &= same
        print(
            f"   {name:26} Elo {round(p['online']):5d} / official {theirs_elo!s:>5}"
            f"  matches {p['matches']}/{theirs_n}  win vs reference"
            f" {(p.get('win_rate') or {}).get('text', '—'):18} / {official_wr.get(name, '—'):16}"
            f" {'=' if same else '≠'}"
        )
    return ok


if __name__ == "__main__":
    raise SystemExit(main())
