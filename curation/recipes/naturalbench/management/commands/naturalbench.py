"""Run a NaturalBench pipeline stage in this process (no Celery worker needed).

manage.py naturalbench mine --pipeline 3
manage.py naturalbench export --pipeline 3 --label v2
manage.py naturalbench status --pipeline 3
manage.py naturalbench demo --project demo-naturalbench --curator curator

Each stage runs as a real Job (it shows on the pipeline page like one started from a button);
on a terminal its progress is drawn as a bar on standard error (``--quiet``: none).
"""

from __future__ import annotations

import json

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from annotator.platform.errors import Invalid
from annotator.platform.models import Job, Project
from annotator.platform.terminal import add_quiet_argument, command_bars
from curation.recipes.framework.stages import stage_run_now
from curation.recipes.naturalbench import selectors
from curation.recipes.naturalbench.demo import naturalbench_demo
from curation.recipes.naturalbench.models import NaturalBenchPipeline
from curation.recipes.naturalbench.recipe import RECIPE


class Command(BaseCommand):
    help = "Run one stage of a NaturalBench pipeline (mine, verify, draft, assemble, tag, export)."

    def add_arguments(self, parser):
        stages = [stage.name for stage in RECIPE.stages]
        parser.add_argument("stage", choices=[*stages, "status", "demo"])
        parser.add_argument("--pipeline", type=int, help="Pipeline id (every stage but demo).")
        parser.add_argument("--label", default="", help="export: the version label (v1, v2, …).")
        parser.add_argument("--project", default="", help="demo: the project's slug.")
        parser.add_argument("--curator", default="", help="demo: the curator's user name.")
        add_quiet_argument(parser)

    def handle(self, *args, stage: str, pipeline: int | None, **opts):
        if stage == "demo":
            return self.demo(opts["project"], opts["curator"])
        if pipeline is None:
            raise CommandError("Name the pipeline: --pipeline ID.")
        found = NaturalBenchPipeline.objects.select_related("project", "corpus").filter(pk=pipeline)
        target = found.first()
        if target is None:
            raise CommandError(f"No NaturalBench pipeline with id {pipeline}.")
        if stage == "status":
            return self.status(target)
        params = {"label": opts["label"]} if stage == "export" and opts["label"] else None
        try:
            with command_bars(self, opts):
                job = stage_run_now(RECIPE.stage(stage).run, target, params=params)
        except Invalid as exc:
            raise CommandError(exc.message) from exc
        if job.status != Job.Status.SUCCEEDED:
            raise CommandError(f"Job #{job.pk} ({stage}) failed: {job.error}")
        self.stdout.write(self.style.SUCCESS(f"Job #{job.pk} ({stage}) succeeded."))
        self.stdout.write(json.dumps(job.result, indent=2, ensure_ascii=False))
        self.status(target)

    def status(self, pipeline: NaturalBenchPipeline) -> None:
        f = selectors.funnel(pipeline)
        latest = f["versions"][0] if f["versions"] else None
        q, s = f["questions"], f["samples"]
        lines = [
            ("samples", f["corpus"]["samples"]),
            ("mismatched pairs", f["pairs"]["all"]),
            ("verified pairs", f"{f['pairs']['verified']} ({f['pairs']['review']} in review)"),
            ("drafted question pairs", f["questions"]["drafted"]),
            ("answered and kept", f"{q['kept']} ({q['given_up']} given up)"),
            ("assembled samples", f"{s['assembled']} ({s['refused']} refused)"),
            ("tagged", f["samples"]["tagged"]),
            ("exported", f"{latest.label}: {latest.sample_count}" if latest else 0),
        ]
        self.stdout.write(f"{pipeline.name} (#{pipeline.pk})")
        for label, value in lines:
            self.stdout.write(f"  {label:<24} {value}")

    def demo(self, slug: str, username: str) -> None:
        project = Project.objects.filter(slug=slug).first()
        if project is None:
            raise CommandError(f"No project with slug {slug!r} (--project).")
        curator = get_user_model().objects.filter(username=username).first()
        if curator is None:
            raise CommandError(f"No user named {username!r} (--curator).")
        pipeline = naturalbench_demo(project=project, curator=curator)
        self.status(pipeline)
