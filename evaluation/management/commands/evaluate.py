"""`manage.py evaluate`: import files, compute metrics and print leaderboards in the terminal.

manage.py evaluate import-version visit single_image_full_dataset.csv \
        --project my-project --benchmark VisIT-Bench --label v1
manage.py evaluate import-run 3 llava13b_output.csv --model LLaVA-13B
manage.py evaluate compute 7
manage.py evaluate leaderboard 3 [--sort rouge_l] [--format csv|json]
manage.py evaluate import-judgments 3 gpt-4_head2head.json --kind llm --label "GPT-4 judge"
manage.py evaluate import-judgments 3 visit_bench_human_preferences.csv --kind human \
        --label Crowd --alias "llava13b_output=LLaVA-13B"
manage.py evaluate judgments 3    # Elo, win-rates and agreement of every judgment set
manage.py evaluate rank-correlation 3 [A B]   # Spearman rho between two rankings (or list them)
manage.py evaluate run 3 --provider "My VLM" [--label L] [--limit 20] [--logprobs]
manage.py evaluate run 3          # the default provider, else the offline blind baseline
manage.py evaluate run 5 --scorer 1   # NaturalBench-Retrieval with a CLIP-style scorer
manage.py evaluate judge 3 --model LLaVA-13B --label "GPT-4 judge" [--instances 150 --seed 0]
manage.py evaluate judge 3 --pairs pairs.jsonl --label "GPT-4 judge"   # {instance_id, a_model,
        b_model} per line
manage.py evaluate list
manage.py evaluate demo --project my-project   # synthetic versions and runs for every family

Every action takes ``--user NAME``: it then acts as that person, through the same project-scoped
selectors as the pages (a version, run or project outside their projects, or an action their role
does not allow, is reported like a missing one). Without it the command acts as the operator at
the server's shell, who reaches every project, as an admin does.
"""

from __future__ import annotations

import argparse
import json
from functools import partial
from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.http import Http404

from annotator.platform.errors import ServiceError
from annotator.platform.models import Job, Project
from evaluation import compute, demo, importers, jobs, pairwise, runners, selectors, services
from evaluation.models import BenchmarkVersion, Family, ModelRun
from evaluation.selectors import EVALUATE, READ


def _format(result, spec) -> str:
    if result is None:
        return "—"
    if result.value is None:
        return "n/a"
    kind = spec.kind if spec else "share"

    def number(x: float) -> str:
        if kind == "share":
            return f"{x * 100:.1f}"
        if kind == "count":
            return f"{x:.0f}"
        if kind == "tokens":
            return f"{x:.1f}"
        return f"{x:.0f}" if abs(x) >= 100 else f"{x:.3f}"

    text = number(result.value)
    if result.interval_low is not None and result.interval_high is not None:
        text += f" [{number(result.interval_low)}, {number(result.interval_high)}]"
    return text


class Command(BaseCommand):
    help = "Import benchmark files, compute metrics and print leaderboards."

    user = None

    def add_arguments(self, parser):
        person = argparse.ArgumentParser(add_help=False)
        person.add_argument(
            "--user",
            default="",
            help="act as this person: only their projects and what their role allows "
            "(default: the operator, who reaches every project)",
        )
        sub = parser.add_subparsers(dest="action", required=True)
        add = partial(sub.add_parser, parents=[person])
        p = add("import-version", help="a benchmark version from its dataset file")
        p.add_argument("family", choices=Family.values)
        p.add_argument("file")
        p.add_argument("--project", required=True, help="slug of the benchmark's project")
        p.add_argument("--benchmark", required=True)
        p.add_argument("--label", default="v1")
        p.add_argument("--draft", action="store_true", help="do not publish (freeze) yet")
        p = add("import-run", help="a model's predictions on a version")
        p.add_argument("version", type=int)
        p.add_argument("file")
        p.add_argument("--model", required=True)
        p.add_argument("--label", default="")
        p.add_argument("--option", default="", help="VisIT output column / VLind model id")
        p.add_argument("--seed", type=int, default=0)
        p.add_argument("--no-compute", action="store_true")
        p.add_argument("--rounds", type=int, default=1000)
        p = add("compute", help="compute the metrics of a run")
        p.add_argument("run", type=int)
        p.add_argument("--rounds", type=int, default=1000)
        p.add_argument("--no-text-metrics", action="store_true")
        p = add("leaderboard", help="print a version's leaderboard")
        p.add_argument("version", type=int)
        p.add_argument("--sort", default="")
        p.add_argument("--format", choices=["table", "csv", "json"], default="table")
        p = add("import-judgments", help="VisIT-Bench judge battles or crowd votes")
        p.add_argument("version", type=int)
        p.add_argument("file")
        p.add_argument("--kind", choices=["llm", "human"], required=True)
        p.add_argument("--label", required=True)
        p.add_argument("--judge", default="")
        p.add_argument("--with-reference", action="store_true")
        p.add_argument("--reference-player", default="human_verified_reference")
        p.add_argument(
            "--alias", action="append", default=[], help="rename a player: 'name in file=new'"
        )
        p.add_argument("--no-compute", action="store_true")
        p.add_argument("--no-text-metrics", action="store_true")
        p.add_argument("--rounds", type=int, default=1000)
        p = add("judgments", help="ratings and agreement of a version's judgment sets")
        p.add_argument("version", type=int)
        p.add_argument("--compute", action="store_true", help="recompute first")
        p.add_argument("--no-text-metrics", action="store_true")
        p.add_argument("--rounds", type=int, default=1000)
        p = add("rank-correlation", help="Spearman rho between two rankings")
        p.add_argument("version", type=int)
        p.add_argument("a", nargs="?", default="")
        p.add_argument("b", nargs="?", default="")
        p = add("run", help="answer a version's items with a model (LLM gateway)")
        p.add_argument("version", type=int)
        p.add_argument(
            "--provider",
            default="",
            help="LLM provider name or id (default: the default provider, else the offline "
            "blind baseline, which answers from the question text alone)",
        )
        p.add_argument("--scorer", type=int, help="scorer id (NaturalBench-Retrieval)")
        p.add_argument("--model-name", default="")
        p.add_argument("--label", default="")
        p.add_argument("--limit", type=int)
        p.add_argument("--seed", type=int, default=0)
        p.add_argument("--space-before-suffix", action="store_true")
        p.add_argument("--logprobs", action="store_true")
        p.add_argument("--post-hoc", action="store_true")
        p.add_argument("--rounds", type=int, default=1000)
        p.add_argument("--no-text-metrics", action="store_true")
        p = add("judge", help="VisIT-Bench LLM judge, both orders (App. F)")
        p.add_argument("version", type=int)
        p.add_argument("--label", default="LLM judge")
        p.add_argument("--model", default="", help="draw pairs for this run's model")
        p.add_argument("--pairs", default="", help="JSONL of {instance_id, a_model, b_model}")
        p.add_argument("--provider", default="")
        p.add_argument("--instances", type=int, default=runners.DEFAULT_JUDGE_INSTANCES)
        p.add_argument("--seed", type=int, default=0)
        p.add_argument("--no-opponents", action="store_true")
        p.add_argument("--with-reference", action="store_true")
        p.add_argument("--rounds", type=int, default=1000)
        p.add_argument("--no-text-metrics", action="store_true")
        add("list", help="benchmarks, versions and runs")
        p = add("demo", help="synthetic versions and runs for every family")
        p.add_argument("--project", required=True, help="slug of the project to fill")

    def handle(self, *args, **options):
        self.user = None
        if options.get("user"):
            self.user = get_user_model().objects.filter(username=options["user"]).first()
            if self.user is None or not self.user.is_active:
                raise CommandError(f"No active user {options['user']!r}.")
        try:
            getattr(self, "do_" + options["action"].replace("-", "_"))(options)
        except ServiceError as exc:
            lines = [exc.message] + [
                f"  line {e['line']}: {e['error']}" for e in getattr(exc, "errors", [])[:50]
            ]
            raise CommandError("\n".join(lines)) from exc

    def _read(self, path: str) -> str:
        file = Path(path)
        if not file.is_file():
            raise CommandError(f"No such file: {path}")
        return file.read_text(encoding="utf-8-sig")

    def _project(self, slug: str) -> Project:
        """A project the person curates (any project for the operator)."""
        projects = (
            Project.objects.all() if self.user is None else selectors.curated_projects(self.user)
        )
        project = projects.filter(slug=slug).first()
        if project is None:
            mine = "" if self.user is None else " among the projects you curate"
            raise CommandError(f"No project {slug!r}{mine}.")
        return project

    def _version(self, pk: int, allowed=READ) -> BenchmarkVersion:
        if self.user is None:
            version = BenchmarkVersion.objects.select_related("benchmark").filter(pk=pk).first()
        else:
            try:
                version = selectors.version_for_user_or_404(self.user, pk, allowed=allowed)
            except Http404:
                version = None
        if version is None:
            raise CommandError(f"No version {pk}")
        return version

    def _run(self, pk: int, allowed=EVALUATE) -> ModelRun:
        if self.user is None:
            run = ModelRun.objects.select_related("version__benchmark").filter(pk=pk).first()
        else:
            try:
                run = selectors.run_for_user_or_404(self.user, pk, allowed=allowed)
            except Http404:
                run = None
        if run is None:
            raise CommandError(f"No run {pk}")
        return run

    def do_import_version(self, o):
        params = {
            "target": "items",
            "project_id": self._project(o["project"]).pk,
            "family": o["family"],
            "benchmark": o["benchmark"],
            "label": o["label"],
            "publish": not o["draft"],
            "filename": Path(o["file"]).name,
            "content": self._read(o["file"]),
        }
        result = services.import_run(params, created_by=self.user)
        self.stdout.write(
            f"version {result['version_id']}: {result['items']} items, {result['kept']} kept"
        )

    def do_import_run(self, o):
        version = self._version(o["version"], EVALUATE)
        params = {
            "target": "predictions",
            "family": version.benchmark.family,
            "version_id": version.pk,
            "model": o["model"],
            "label": o["label"],
            "option": o["option"],
            "seed": o["seed"],
            "filename": Path(o["file"]).name,
            "content": self._read(o["file"]),
            "compute": not o["no_compute"],
            "rounds": o["rounds"],
        }
        result = services.import_run(params, created_by=self.user)
        self.stdout.write(f"run {result['run_id']}: {result['predictions']} predictions")
        if result.get("metrics"):
            self._print_board(version, "")

    def do_compute(self, o):
        run = self._run(o["run"], EVALUATE)
        values = services.metrics_compute(
            run=run, rounds=o["rounds"], text_metrics=not o["no_text_metrics"]
        )
        specs = compute.spec_map(run.version.benchmark.family)
        for name, value in values.items():
            label = specs[name].label if name in specs else name
            self.stdout.write(f"{label:40} {'n/a' if value is None else f'{value:.4f}'}")

    def do_leaderboard(self, o):
        # A table is read on screen; CSV and JSON are downloads.
        version = self._version(o["version"], READ if o["format"] == "table" else EVALUATE)
        if o["format"] == "table":
            self._print_board(version, o["sort"])
            return
        from evaluation.views import _leaderboard_csv, _leaderboard_json

        board = selectors.leaderboard(version, sort=o["sort"])
        if o["format"] == "json":
            self.stdout.write(json.dumps(_leaderboard_json(version, board), indent=2))
        else:
            self.stdout.write(_leaderboard_csv(version, board).content.decode())

    def _print_board(self, version: BenchmarkVersion, sort: str) -> None:
        board = selectors.leaderboard(version, sort=sort)
        headers = ["#", "model"] + [s.label for s in board["columns"]]
        rows = [
            [
                str(r["rank"] or "—"),
                r["run"].model.name + (f" ({r['run'].label})" if r["run"].label else ""),
            ]
            + [_format(cell, spec) for spec, cell in r["cells"]]
            for r in board["rows"]
        ]
        widths = [
            max(len(h), *(len(r[k]) for r in rows)) if rows else len(h)
            for k, h in enumerate(headers)
        ]
        self.stdout.write(
            f"{version.benchmark.name} · {version.label} — {version.kept_count} items, "
            f"sorted by {board['sort']} (95% bootstrap intervals)"
        )
        self.stdout.write("  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)))
        self.stdout.write("  ".join("-" * w for w in widths))
        for row in rows:
            self.stdout.write("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)))

    def do_import_judgments(self, o):
        version = self._version(o["version"], EVALUATE)
        params = {
            "target": "judgments",
            "version_id": version.pk,
            "kind": o["kind"],
            "label": o["label"],
            "judge": o["judge"],
            "with_reference": o["with_reference"],
            "reference_player": o["reference_player"],
            "aliases": importers.parse_aliases("\n".join(o["alias"])),
            "filename": Path(o["file"]).name,
            "content": self._read(o["file"]),
            "compute": not o["no_compute"],
            "text_metrics": not o["no_text_metrics"],
            "rounds": o["rounds"],
        }
        result = services.import_run(params, created_by=self.user)
        self.stdout.write(f"judgment set {result['judgment_set_id']}: {result['pairs']} pairs")
        if result.get("computed"):
            self._print_judgments(version)

    def do_judgments(self, o):
        version = self._version(o["version"], EVALUATE if o["compute"] else READ)
        if o["compute"]:
            services.judgments_compute(
                version=version, rounds=o["rounds"], text_metrics=not o["no_text_metrics"]
            )
        self._print_judgments(version)

    def _print_judgments(self, version: BenchmarkVersion) -> None:
        sets = list(selectors.judgment_sets(version))
        if not sets:
            self.stdout.write("No judgments on this version: use import-judgments.")
        for judgment_set in sets:
            results = judgment_set.results or {}
            self.stdout.write(
                f"\n{judgment_set.label} [{judgment_set.kind}] — {judgment_set.pair_count} pairs, "
                f"{results.get('battles', 0)} battles (bootstrap {results.get('rounds', 0)} rounds,"
                f" seed {judgment_set.bootstrap_seed}; online seed {judgment_set.seed})"
            )
            for k, p in enumerate(results.get("players", []), start=1):
                win = (p.get("win_rate") or {}).get("text", "—")
                self.stdout.write(
                    f"{k:3}  {p['model'][:32]:32}  Elo {p['elo']:5d} [{p['low']:.0f}, "
                    f"{p['high']:.0f}]  matches {p['matches']:5d}  vs reference {win}"
                )
            agreement = results.get("agreement")
            if agreement:
                self.stdout.write(
                    f"  agreement with the crowd majority on {agreement['pairs']} pairs "
                    "(all / 5/5 / 4/5 / 3/5):"
                )
                for m in agreement["metrics"]:
                    if m.get("unavailable"):
                        self.stdout.write(f"    {m['name'][:30]:30}  n/a ({m['unavailable']})")
                        continue
                    cells = [m["overall"]] + [m["strata"][s] for s in ("5/5", "4/5", "3/5")]
                    text = "  ".join(
                        "  n/a" if c["value"] is None else f"{100 * c['value']:5.1f}" for c in cells
                    )
                    self.stdout.write(f"    {m['name'][:30]:30}  {text}")

    def do_rank_correlation(self, o):
        version = self._version(o["version"])
        options = {r.key: r for r in selectors.rankings(version)}
        if not o["a"] or not o["b"]:
            for r in options.values():
                self.stdout.write(f"{r.key:32} {r.label} ({len(r.values)} systems)")
            return
        for key in (o["a"], o["b"]):
            if key not in options:
                raise CommandError(f"Unknown ranking {key!r}; run without A and B to list them.")
        result = pairwise.correlate(options[o["a"]], options[o["b"]])
        rho = "n/a" if result["rho"] is None else f"{result['rho']:.3f}"
        p_value = "" if result["p_value"] is None else f" (p = {result['p_value']:.4f})"
        self.stdout.write(f"Spearman rho = {rho}{p_value} over {result['n']} systems")
        if result["reason"]:
            self.stdout.write(result["reason"])
        for row in result["rows"]:
            self.stdout.write(f"  {row['system'][:40]:40} {row['rank_a']:5g} {row['rank_b']:5g}")

    def _provider(self, value: str, version: BenchmarkVersion):
        from curation.gateway.providers import provider_for
        from curation.models import LLMProvider

        project = version.benchmark.project
        if not value:
            return provider_for(project)
        usable = (
            LLMProvider.objects.all()
            if self.user is None
            else selectors.providers_for(self.user, project)
        )
        found = usable.filter(name=value).order_by("id").first()
        if found is None and value.isdigit():
            found = usable.filter(pk=int(value)).first()
        if found is None:
            names = ", ".join(usable.values_list("name", flat=True)) or "none"
            raise CommandError(f"No LLM provider {value!r} (providers: {names}).")
        return found

    def _execute(self, task, job: Job) -> dict:
        """Run the job's task in this process, as a worker would, and report its outcome."""
        task.apply(args=[job.pk])
        job.refresh_from_db()
        if job.status != Job.Status.SUCCEEDED:
            raise CommandError(f"job {job.pk} failed: {job.error}")
        return job.result or {}

    def do_run(self, o):
        version = self._version(o["version"], EVALUATE)
        common = {
            "version": version,
            "created_by": self.user,
            "limit": o["limit"],
            "label": o["label"],
            "model_name": o["model_name"],
            "enqueue": False,
        }
        if version.benchmark.family == Family.NATURALBENCH_RETRIEVAL:
            from curation.models import Scorer

            scorer = Scorer.objects.filter(pk=o["scorer"] or 0).first()
            if scorer is None:
                raise CommandError(
                    "Give --scorer ID (NaturalBench-Retrieval is scored, not asked)."
                )
            job = runners.score_model_start(scorer=scorer, rounds=o["rounds"], **common)
        else:
            provider = self._provider(o["provider"], version)
            self.stdout.write(f"provider: {runners.provider_label(provider)}")
            options = {
                k: o[k]
                for k in ("space_before_suffix", "logprobs", "post_hoc")
                if version.benchmark.family == Family.NATURALBENCH or o[k]
            }
            job = runners.run_model_start(
                provider=provider,
                seed=o["seed"],
                options=options,
                rounds=o["rounds"],
                text_metrics=not o["no_text_metrics"],
                **common,
            )
        result = self._execute(jobs.run_model, job)
        self.stdout.write(
            f"run {result['run_id']}: {result.get('items', 0)} items answered, "
            f"{result.get('failed_calls', 0)} failed calls, {result.get('reused', 0)} reused, "
            f"{result.get('failed_items', 0)} items with failures"
        )
        self._print_board(version, "")

    def do_judge(self, o):
        version = self._version(o["version"], EVALUATE)
        pairing = None
        if o["pairs"]:
            pairs = []
            for number, line in enumerate(self._read(o["pairs"]).splitlines(), start=1):
                if not line.strip():
                    continue
                try:
                    pairs.append(json.loads(line))
                except json.JSONDecodeError as exc:
                    raise CommandError(f"{o['pairs']} line {number}: {exc.msg}") from exc
        elif o["model"]:
            pairs = runners.judge_pairs_sample(
                version=version,
                model=o["model"],
                n=o["instances"],
                seed=o["seed"],
                opponents=not o["no_opponents"],
            )
            pairing = {
                "model": o["model"],
                "instances": o["instances"],
                "seed": o["seed"],
                "opponents": not o["no_opponents"],
            }
        else:
            raise CommandError("Give --model (pairs drawn with --seed) or --pairs FILE.")
        provider = self._provider(o["provider"], version)
        self.stdout.write(f"judge: {runners.provider_label(provider, judge=True)}")
        job = runners.judge_start(
            version=version,
            judgment_set_name=o["label"],
            pairs=pairs,
            provider=provider,
            created_by=self.user,
            seed=o["seed"],
            with_reference=o["with_reference"],
            rounds=o["rounds"],
            text_metrics=not o["no_text_metrics"],
            pairing=pairing,
            enqueue=False,
        )
        result = self._execute(jobs.judge, job)
        self.stdout.write(
            f"judgment set {result['judgment_set_id']}: {result['judged']} pairs judged now, "
            f"{result['extractions']} extraction calls, {result['failed']} failed"
        )
        self._print_judgments(version)

    def do_list(self, o):
        versions = (
            BenchmarkVersion.objects.select_related("benchmark__project")
            if self.user is None
            else selectors.versions_visible(self.user)
        )
        for version in versions.order_by("id"):
            self.stdout.write(
                f"version {version.pk}: {version.benchmark.name} [{version.benchmark.family}] "
                f"in {version.benchmark.project.slug}: "
                f"{version.label} — {version.item_count} items"
                f"{' (frozen)' if version.frozen else ''}"
            )
            for run in version.runs.select_related("model").order_by("id"):
                self.stdout.write(f"    run {run.pk}: {run.model.name} {run.label}".rstrip())

    def do_demo(self, o):
        project = self._project(o["project"])

        def version(family: str, name: str, content: str, filename: str) -> BenchmarkVersion:
            label = f"demo-{BenchmarkVersion.objects.count() + 1}"
            result = services.import_run(
                {
                    "target": "items",
                    "project_id": project.pk,
                    "family": family,
                    "benchmark": name,
                    "label": label,
                    "content": content,
                    "filename": filename,
                },
                created_by=self.user,
            )
            return BenchmarkVersion.objects.get(pk=result["version_id"])

        def run(v: BenchmarkVersion, model: str, content: str, filename: str, option: str = ""):
            services.import_run(
                {
                    "target": "predictions",
                    "family": v.benchmark.family,
                    "version_id": v.pk,
                    "model": model,
                    "content": content,
                    "filename": filename,
                    "option": option,
                },
                created_by=self.user,
            )

        v = version("naturalbench", "NaturalBench (demo)", demo.naturalbench_items(60), "nb.jsonl")
        for name, acc, seed in (("Model A", 0.85, 1), ("Model B", 0.7, 2), ("Model C", 0.55, 3)):
            run(v, name, demo.naturalbench_predictions(60, accuracy=acc, seed=seed), "p.jsonl")
        v = version("vhexpansion", "VHExpansion (demo)", demo.vh_items(40), "vh.jsonl")
        for name, acc, seed in (("Model A", 0.8, 1), ("Model B", 0.6, 2), ("Always-yes", 0.0, 3)):
            run(
                v,
                name,
                demo.vh_predictions(40, accuracy=acc, p_yes=1.0 if acc == 0 else 0.6, seed=seed),
                "p.jsonl",
            )
        data = demo.vlind_data(28, models={"model_a": 0.9, "model_b": 0.7, "model_c": 0.55})
        v = version("vlind", "VLind-Bench (demo)", data, "data.json")
        for mid in ("model_a", "model_b", "model_c"):
            run(v, mid, data, "data.json", option=mid)
        v = version(
            "naturalbench_retrieval",
            "NaturalBench-Retrieval (demo)",
            demo.retrieval_items(),
            "r.jsonl",
        )
        for name, seed in (("CLIP-like A", 3), ("CLIP-like B", 4)):
            run(v, name, demo.retrieval_predictions(seed=seed), "p.jsonl")
        self.stdout.write(self.style.SUCCESS("Demo versions and runs created."))
