"""``manage.py demo``: demo users, the "NaturalBench demo" project and a queue of every kind.

Idempotent: a second run only creates what is missing. ``--reset`` deletes the demo project
(queues, tasks, answers, jobs), rewrites the images, sets the demo users' passwords back to the
printed ones and builds everything again. Every queue and task goes through the services,
exactly like a curator's upload, so the demo cannot hold an item the app would refuse.
"""

from __future__ import annotations

import os
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction
from rest_framework.authtoken.models import Token

from annotator import services
from annotator.demo import content, images
from annotator.jobs import import_tasks
from annotator.models import TaskQueue
from annotator.platform import roles
from annotator.platform.models import Job, Project

# (username, role, password). The passwords are published: the command refuses to run with
# DEBUG off unless told that this is not a production database.
DEMO_USERS = [
    ("worker", roles.CROWDWORKER, "worker-demo"),
    ("worker2", roles.CROWDWORKER, "worker2-demo"),
    ("curator", roles.CURATOR, "curator-demo"),
    ("researcher", roles.RESEARCHER, "researcher-demo"),
    ("admin", roles.ADMIN, "admin-demo"),
]
IMPORT_JOB = "annotator.import_tasks"


def server_url(given: str | None) -> str:
    """The address the demo's server answers at, ending in "/" so paths can be appended:
    ``--url`` as given, else ``http://$HOST:$PORT/`` (the Makefile's variables)."""
    if not given:
        host = os.environ.get("HOST") or "127.0.0.1"
        given = f"http://{host}:{os.environ.get('PORT') or '8000'}/"
    return given if given.endswith("/") else given + "/"


def media_url() -> str:
    url = settings.MEDIA_URL
    return url if url.startswith(("/", "http://", "https://")) else f"/{url}"


def demo_image_dir() -> Path:
    return Path(settings.MEDIA_ROOT) / "demo"


class Command(BaseCommand):
    help = "Create demo users and a demo project with one queue of every task kind (idempotent)."
    # migrate and runserver check the project; skipping here saves seconds of imports.
    requires_system_checks: list[str] = []

    def add_arguments(self, parser):
        parser.add_argument(
            "--reset",
            action="store_true",
            help="Delete the demo project (queues, tasks, answers, jobs) and images, then rebuild.",
        )
        parser.add_argument(
            "--url",
            default=None,
            help="Where the server will answer (default: http://$HOST:$PORT/, as `make run` "
            "serves it; 127.0.0.1 and 8000 when unset).",
        )
        parser.add_argument(
            "--allow-insecure",
            action="store_true",
            help="Run even with DEBUG off (the demo passwords are printed and published).",
        )

    def handle(self, *args, reset: bool, url: str | None, allow_insecure: bool, **options):
        url = server_url(url)
        if not settings.DEBUG and not allow_insecure:
            raise CommandError(
                "DEBUG is off: this looks like production, and the demo users have published "
                "passwords. Run with DEBUG=1, or pass --allow-insecure on a throwaway database."
            )
        if reset:
            Project.objects.filter(slug=content.PROJECT_SLUG).delete()
        written = images.write_all(demo_image_dir(), force=reset)
        users = self.ensure_users(reset_passwords=reset)
        project = self.ensure_project(users)
        created = [
            spec.kind
            for spec in content.queue_specs(media_url())
            if self.ensure_queue(project, spec, users["curator"])
        ]
        self.report(project, users, url, created=created, images_written=written)

    # --- people and project --------------------------------------------------------------------
    def ensure_users(self, *, reset_passwords: bool) -> dict:
        User = get_user_model()
        users = {}
        for username, role, password in DEMO_USERS:
            user, created = User.objects.get_or_create(username=username)
            # Hashing is deliberately slow, so existing users keep theirs unless --reset.
            if created or reset_passwords:
                user.set_password(password)
            if role == roles.ADMIN:
                user.is_superuser = user.is_staff = True
            user.save()
            roles.grant_role(user, role)
            Token.objects.get_or_create(user=user)
            users[username] = user
        return users

    def ensure_project(self, users: dict) -> Project:
        project = Project.objects.filter(slug=content.PROJECT_SLUG).first()
        if project is None:
            project = services.project_create(
                name=content.PROJECT_NAME,
                slug=content.PROJECT_SLUG,
                description=content.PROJECT_DESCRIPTION,
                created_by=users["curator"],
            )
        project.members.add(*users.values())
        return project

    # --- queues and tasks ----------------------------------------------------------------------
    def ensure_queue(self, project: Project, spec: content.QueueSpec, curator) -> bool:
        """Create the queue with its tasks unless a queue of that kind and title exists."""
        if TaskQueue.objects.filter(project=project, kind=spec.kind, title=spec.title).exists():
            return False
        with transaction.atomic():
            queue = services.queue_create(
                project=project,
                kind=spec.kind,
                title=spec.title,
                instructions=spec.instructions,
                **spec.fields,
            )
            services.tasks_bulk_create(queue=queue, rows=services.parse_task_rows(spec.rows))
        if spec.job_rows:
            self.run_import_job(queue, spec.job_rows, curator)
        return True

    def run_import_job(self, queue: TaskQueue, rows: list[dict], curator) -> Job:
        """A real import job, run in this process so the demo never needs a broker."""
        job = Job.objects.create(
            kind=IMPORT_JOB,
            params={"queue_id": queue.pk, "rows": rows, "filename": "multilingual-vqa.jsonl"},
            project=queue.project,
            created_by=curator,
            total=len(rows),
            message="Queued",
        )
        import_tasks.apply(args=[job.pk])
        job.refresh_from_db()
        if job.status != Job.Status.SUCCEEDED:
            raise CommandError(f"The demo import job failed: {job.error}")
        return job

    # --- output ----------------------------------------------------------------------------------
    def report(self, project, users, url, *, created, images_written) -> None:
        out = self.stdout
        style = self.style
        queues = TaskQueue.objects.filter(project=project).order_by("-priority", "id")
        out.write("")
        out.write(style.SUCCESS(f"Blindspot demo is ready at {url}"))
        out.write("")
        rows = [("user", "role", "password", "API token")]
        for username, role, password in DEMO_USERS:
            token = Token.objects.get(user=users[username]).key
            rows.append((username, roles.ROLE_LABELS[role].lower(), password, token))
        widths = [max(len(r[i]) for r in rows) for i in range(4)]
        for i, row in enumerate(rows):
            line = "  ".join(cell.ljust(widths[j]) for j, cell in enumerate(row)).rstrip()
            out.write(f"  {style.MIGRATE_HEADING(line) if i == 0 else line}")
            if i == 0:
                out.write("  " + "  ".join("-" * w for w in widths))
        out.write("")
        out.write(f'  Project "{project.name}" ({project.members.count()} members):')
        for queue in queues:
            tasks = queue.tasks.count()
            gold = queue.tasks.filter(is_gold=True).count()
            extra = f", {gold} gold" if gold else ""
            out.write(f"    {queue.kind:<14} {tasks:>3} tasks{extra:<9} {queue.title}")
        jobs = Job.objects.filter(project=project).count()
        out.write(f"  Jobs: {jobs}.  Images: {demo_image_dir()} ({images_written} written now).")
        if created:
            out.write(f"  Created queues: {', '.join(created)}.")
        else:
            out.write("  Nothing new: the demo was already in place (use --reset to rebuild).")
        out.write("")
        out.write(f"  Log in as worker / worker-demo at {url} to annotate,")
        out.write(f"  as curator / curator-demo to manage queues; API docs at {url}api/docs/")
        out.write("")
