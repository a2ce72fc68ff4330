"""What the benchmark scripts share: a database of their own, dropped and made again on every
run, and Django set up on it (settings from the environment, as in production)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from urllib.parse import urlparse

import django
import psycopg
from django.conf import settings
from django.core.management import call_command

ROOT = Path(__file__).resolve().parent.parent


def recreate_database(url: str) -> None:
    """Drop and create the database of ``url`` (PostgreSQL; its name must be a plain word)."""
    parts = urlparse(url)
    name = parts.path.lstrip("/")
    if not name.replace("_", "").isalnum():
        raise SystemExit(f"refusing odd database name {name!r}")
    admin = parts._replace(path="/postgres").geturl()
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')


def setup_django(url: str, media: Path) -> None:
    """Django on ``url`` with eager Celery and uploads under ``media``, migrated."""
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
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    django.setup()
    settings.MEDIA_ROOT = str(media)
    call_command("migrate", verbosity=0, interactive=False)
