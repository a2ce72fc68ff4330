"""`manage.py evaluate`: import files, compute metrics and print leaderboards in the terminal.

manage.py evaluate import-version FAMILY dataset.csv \
        --project my-project --benchmark NAME --label v1
manage.py evaluate import-version FAMILY ./release-folder --project P --benchmark NAME
        # a family's published release (its ``release`` reader): a folder of Hugging Face Parquet
        # shards, one .parquet, or a metadata folder; images are ingested, nothing downloaded
manage.py evaluate import-run 3 model_output.csv --model MODEL [--option COLUMN-OR-ID]
manage.py evaluate compute 7
manage.py evaluate export-predictions 7 [--out FILE]   # as the paper's own code reads them
manage.py evaluate leaderboard 3 [--sort METRIC] [--format csv|json]
manage.py evaluate import-judgments 3 head2head.json --kind llm --label "GPT-4 judge"
manage.py evaluate import-judgments 3 preferences.csv --kind human \
        --label Crowd --alias "model_output=MODEL"
manage.py evaluate judgments 3    # Elo, win-rates and agreement of every judgment set
manage.py evaluate rank-correlation 3 [A B]   # Spearman rho between two rankings (or list them)
manage.py evaluate run 3 --provider "My VLM" [--label L] [--limit 20] [--logprobs]
manage.py evaluate run 3          # the default provider, else the offline blind baseline
manage.py evaluate run 5 --scorer 1   # a family scored by a CLIP-style scorer
manage.py evaluate judge 3 --model MODEL --label "GPT-4 judge" [--instances 150 --seed 0]
manage.py evaluate judge 3 --pairs pairs.jsonl --label "GPT-4 judge"   # {instance_id, a_model,
        b_model} per line
manage.py evaluate list
manage.py evaluate demo --project my-project   # synthetic versions and runs for every family

The jobs an action runs here (run, judge, compute …) draw a progress bar on standard error when
it is a terminal; ``--quiet`` (or ``-v 0``) leaves it out.

FAMILY is a registered benchmark family (``evaluation.registry.choices()``); what a family
offers (a prediction option, a scorer, run options, pairwise judgments) comes from its
declaration.

Every action takes ``--user NAME``: it then acts as that person, through the same project-scoped
selectors as the pages (a version, run or project outside their projects, or an action their role
does not allow, is reported like a missing one). Without it the command acts as the operator at
the server's shell, who reaches every project, as an admin does.
"""

from __future__ import annotations

import json
from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.http import Http404

from annotator.platform.errors import ServiceError
from annotator.platform.models import Job, Project
from annotator.platform.terminal import command_bars
from curation.gateway.providers import provider_for
from curation.models import LLMProvider, Scorer
from evaluation import importers, jobs, runners, selectors, services
from evaluation.management.arguments import add_arguments, run_option_names
from evaluation.management.terminal import print_board, print_judgments
from evaluation.models import BenchmarkVersion, ModelRun
from evaluation.rankings import correlate
from evaluation.registry import LLMRunner, ScorerRunner, families, family_of
from evaluation.selectors import EVALUATE, READ
from evaluation.views.leaderboard import leaderboard_csv, leaderboard_json


class _DemoSink:
    """Imports a family's demo files, as ``import-version`` and ``import-run`` would."""

    def __init__(self, project: Project, user):
        self.project, self.user, self.family = project, user, ""

    def version(self, name: str, content: str, filename: str) -> BenchmarkVersion:
        label = f"demo-{BenchmarkVersion.objects.count() + 1}"
        params = {
            "target": "items",
            "project_id": self.project.pk,
            "family": self.family,
            "benchmark": name,
            "label": label,
            "content": content,
            "filename": filename,
        }
        result = services.import_run(params, created_by=self.user)
        return BenchmarkVersion.objects.get(pk=result["version_id"])

    def run(
        self, version: BenchmarkVersion, model: str, content: str, filename: str, option: str = ""
    ) -> None:
        params = {
            "target": "predictions",
            "family": version.benchmark.family,
            "version_id": version.pk,
            "model": model,
            "content": content,
            "filename": filename,
            "option": option,
        }
        services.import_run(params, created_by=self.user)


class Command(BaseCommand):
    help = "Import benchmark files, compute metrics and print leaderboards."

    user = None

    def add_arguments(self, parser):
        add_arguments(parser)

    def handle(self, *args, **options):
        self.user = None
        if options.get("user"):
            self.user = get_user_model().objects.filter(username=options["user"]).first()
            if self.user is None or not self.user.is_active:
                raise CommandError(f"No active user {options['user']!r}.")
        try:
            with command_bars(self, options):
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

    def _find(self, what: str, pk: int, everything, for_user, allowed):
        """The `what` numbered `pk`: any of `everything` for the operator, else one the person
        reaches with `allowed` (``for_user(user, pk, allowed=…)``, 404 when out of reach)."""
        if self.user is None:
            found = everything.filter(pk=pk).first()
        else:
            try:
                found = for_user(self.user, pk, allowed=allowed)
            except Http404:
                found = None
        if found is None:
            raise CommandError(f"No {what} {pk}")
        return found

    def _version(self, pk: int, allowed=READ) -> BenchmarkVersion:
        everything = BenchmarkVersion.objects.select_related("benchmark")
        return self._find("version", pk, everything, selectors.version_for_user_or_404, allowed)

    def _run(self, pk: int, allowed=EVALUATE) -> ModelRun:
        everything = ModelRun.objects.select_related("version__benchmark")
        return self._find("run", pk, everything, selectors.run_for_user_or_404, allowed)

    def _release(self, family: str, path: Path) -> tuple[str, str]:
        """A published release (a folder, or a Parquet file) as the family's importable text,
        its images ingested; ``(filename, content)``."""
        reader = family_of(family).release
        if reader is None:
            raise CommandError(
                f"{family_of(family).label} reads one file, not a folder or Parquet release: "
                f"give its file. Families with a published release: "
                + ", ".join(f.key for f in families() if f.release is not None)
            )
        release = reader(path)
        self.stdout.write(f"release {path}: {release.images} images ingested")
        return release.filename, release.content

    def do_import_version(self, o):
        project = self._project(o["project"])
        path = Path(o["file"])
        if path.is_dir() or path.suffix.lower() == ".parquet":
            filename, content = self._release(o["family"], path)
        else:
            filename, content = path.name, self._read(o["file"])
        params = {
            "target": "items",
            "project_id": project.pk,
            "family": o["family"],
            "benchmark": o["benchmark"],
            "label": o["label"],
            "publish": not o["draft"],
            "filename": filename,
            "content": content,
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
            "skip_unmatched": o["skip_unmatched"],
        }
        result = services.import_run(params, created_by=self.user)
        self.stdout.write(f"run {result['run_id']}: {result['predictions']} predictions")
        if o["skip_unmatched"]:
            lines = ", ".join(map(str, result["skipped_lines"])) or "none"
            self.stdout.write(
                f"skipped {result['skipped_count']} rows that match no item (lines: {lines})"
            )
        if result.get("metrics"):
            print_board(self.stdout.write, version, "")

    def do_compute(self, o):
        run = self._run(o["run"], EVALUATE)
        values = services.metrics_compute(
            run=run, rounds=o["rounds"], text_metrics=not o["no_text_metrics"]
        )
        specs = family_of(run.version.benchmark.family).spec_map()
        for name, value in values.items():
            label = specs[name].label if name in specs else name
            self.stdout.write(f"{label:40} {'n/a' if value is None else f'{value:.4f}'}")

    def do_export_predictions(self, o):
        run = self._run(o["run"], EVALUATE)
        family = family_of(run.version.benchmark.family)
        if family.predictions_file is None:
            raise CommandError(
                f"{family.label} has no published predictions layout; families with one: "
                + ", ".join(f.key for f in families() if f.predictions_file is not None)
            )
        items, predictions = services.run_inputs(run)
        name, content = family.predictions_file(items, predictions)
        if not o["out"]:
            self.stdout.write(content)
            return
        Path(o["out"]).write_text(content, encoding="utf-8")
        self.stdout.write(f"{name}: {len(predictions)} predictions written to {o['out']}")

    def do_leaderboard(self, o):
        # A table is read on screen; CSV and JSON are downloads.
        version = self._version(o["version"], READ if o["format"] == "table" else EVALUATE)
        sortable = [s.key for s in family_of(version.benchmark.family).specs if s.headline]
        if o["sort"] and o["sort"] not in sortable:
            raise CommandError(
                f"Unknown --sort {o['sort']!r}: {version.benchmark.name} sorts by "
                + ", ".join(sortable)
            )
        if o["format"] == "table":
            print_board(self.stdout.write, version, o["sort"])
            return
        board = selectors.leaderboard(version, sort=o["sort"])
        if o["format"] == "json":
            self.stdout.write(json.dumps(leaderboard_json(version, board), indent=2))
        else:
            self.stdout.write(leaderboard_csv(version, board).content.decode())

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
            print_judgments(self.stdout.write, version)

    def do_judgments(self, o):
        version = self._version(o["version"], EVALUATE if o["compute"] else READ)
        if o["compute"]:
            services.judgments_compute(
                version=version, rounds=o["rounds"], text_metrics=not o["no_text_metrics"]
            )
        print_judgments(self.stdout.write, version)

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
        result = correlate(options[o["a"]], options[o["b"]])
        rho = "n/a" if result["rho"] is None else f"{result['rho']:.3f}"
        p_value = "" if result["p_value"] is None else f" (p = {result['p_value']:.4f})"
        self.stdout.write(f"Spearman rho = {rho}{p_value} over {result['n']} systems")
        if result["reason"]:
            self.stdout.write(result["reason"])
        for row in result["rows"]:
            self.stdout.write(f"  {row['system'][:40]:40} {row['rank_a']:5g} {row['rank_b']:5g}")

    def _provider(self, value: str, version: BenchmarkVersion):
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
        declared = family_of(version.benchmark.family)
        if isinstance(declared.runner, ScorerRunner):
            scorer = Scorer.objects.filter(pk=o["scorer"] or 0).first()
            if scorer is None:
                raise CommandError(f"Give --scorer ID ({declared.label} is scored, not asked).")
            job = runners.score_model_start(scorer=scorer, rounds=o["rounds"], **common)
        else:
            provider = self._provider(o["provider"], version)
            self.stdout.write(f"provider: {runners.provider_label(provider)}")
            accepted = (
                [f.name for f in declared.runner.options.fields]
                if isinstance(declared.runner, LLMRunner)
                else []
            )
            options = {k: o[k] for k in run_option_names() if k in accepted or o[k]}
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
        print_board(self.stdout.write, version, "")

    def do_judge(self, o):
        version = self._version(o["version"], EVALUATE)
        judge = services.require_pairwise(version).judge
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
            pairs = judge.sample(
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
        job = judge.start(
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
        print_judgments(self.stdout.write, version)

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
        sink = _DemoSink(self._project(o["project"]), self.user)
        for f in sorted((f for f in families() if f.demo), key=lambda f: f.demo.order):
            sink.family = f.key
            f.demo.build(sink)
        self.stdout.write(self.style.SUCCESS("Demo versions and runs created."))
