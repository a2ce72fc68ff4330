#!/usr/bin/env python
"""Where the workspace's submit request spends its time (a script, not a test).

One crowdworker answers a redundancy-1 queue of every kind through Django's test client with
the htmx header, as the workspace's Enter does (session login, DEBUG off): per kind, the number
of SQL statements the submit request runs, the median time of the request in the process, and
the time spent in SQL. ``--sql`` lists the statements of one submit (first 120 characters each).

    python benchmarks/submit_profile.py                # 20 submits per kind
    python benchmarks/submit_profile.py --sql          # and the statements of one submit
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parent.parent), str(Path(__file__).resolve().parent)]
from paint import KINDS, payload  # noqa: E402 (the benchmarks folder is not a package)

DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/blindspot_profile"

# The posted answer per kind (the fields the kind's keys tick in paint.py).
ANSWERS = {
    "pair_verify": {"decision": "discard"},
    "vqa_choice": {"answer": "No"},
    "skill_tags": {"tags": ["color"]},
    "forced_choice": {"choice": "left"},
    "review": {"checked": ["0", "1"], "verdict": "accept"},
    "write_text": {"text": "A white plate on a wooden table holds five red apples."},
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database-url", default=os.environ.get("DATABASE_URL", DEFAULT_URL))
    parser.add_argument("--submits", type=int, default=20)
    parser.add_argument("--sql", action="store_true", help="print one submit's statements")
    args = parser.parse_args()
    os.environ.update(
        {
            "DATABASE_URL": args.database_url,
            "DJANGO_SETTINGS_MODULE": "blindspot.settings",
            "DEBUG": "0",
            "SECRET_KEY": os.environ.get("SECRET_KEY", "profile-only-" + "x" * 40),
            "SECURE_SSL_REDIRECT": "0",
            "ALLOWED_HOSTS": "testserver,127.0.0.1",
            "LOG_LEVEL": "ERROR",
            "STATICFILES_STORAGE": "django.contrib.staticfiles.storage.StaticFilesStorage",
        }
    )
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext
    from django.urls import reverse

    from annotator import services
    from annotator.platform import roles
    from annotator.platform.models import Project

    call_command("migrate", verbosity=0, interactive=False)
    Project.objects.filter(slug="submit-profile").delete()
    get_user_model().objects.filter(username="profiler").delete()
    user = get_user_model().objects.create_user("profiler")
    roles.grant_role(user, roles.CROWDWORKER)
    project = Project.objects.create(name="Submit profile", slug="submit-profile")
    project.members.add(user)
    client = Client(HTTP_HX_REQUEST="true")
    client.force_login(user)
    print(f"{'kind':<14} {'statements':>10} {'request p50 ms':>15} {'in SQL p50 ms':>14}")
    for priority, (kind, (config, _keys, _submit)) in enumerate(KINDS.items()):
        queue = services.queue_create(
            project=project,
            kind=kind,
            title=f"Profile {kind}",
            config=config,
            redundancy=1,
            max_redundancy=1,
            priority=100 - priority,
        )
        images = ["/media/a.jpg", "/media/b.jpg"]
        rows = [services.TaskRow(payload(kind, i, images)) for i in range(args.submits + 2)]
        services.tasks_bulk_create(queue=queue, rows=rows)
        page = client.get(reverse("work", args=[queue.pk]))
        held = int(page.content.decode().split('data-task-id="', 1)[1].split('"', 1)[0])
        counts, walls, sql_ms, shown = [], [], [], False
        for _ in range(args.submits):
            with CaptureQueriesContext(connection) as ctx:
                t = time.perf_counter()
                response = client.post(reverse("work-submit", args=[held]), ANSWERS[kind])
                walls.append((time.perf_counter() - t) * 1000)
            assert response.status_code == 200, (kind, response.status_code, response.content)
            html = response.content.decode()
            counts.append(len(ctx.captured_queries))
            sql_ms.append(sum(float(q["time"]) for q in ctx.captured_queries) * 1000)
            if args.sql and not shown:
                shown = True
                print(f"-- {kind}: one submit's statements")
                for q in ctx.captured_queries:
                    print(f"   {float(q['time']) * 1000:6.2f} ms  {q['sql'][:120]}")
            held = int(html.split('data-task-id="', 1)[1].split('"', 1)[0])
        print(
            f"{kind:<14} {statistics.median(counts):>10.0f} {statistics.median(walls):>15.1f}"
            f" {statistics.median(sql_ms):>14.1f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
