"""What the benchmark scripts share: a database of their own, dropped and made again on every
run, and Django set up on it (settings from the environment, as in production); the product's
servers (gunicorn, Celery) started and stopped as process groups."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from http.client import HTTPConnection
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


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_http(port: int, path: str, proc: subprocess.Popen, what: str) -> None:
    """Wait up to 60 s for ``path`` to answer on ``port`` (exit if ``proc`` dies first)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            conn = HTTPConnection("127.0.0.1", port, timeout=2)
            conn.request("GET", path)
            conn.getresponse().read()
            return
        except OSError:
            if proc.poll() is not None:
                raise SystemExit(f"{what} exited during start-up") from None
            time.sleep(0.3)
    raise SystemExit(f"{what} did not answer within 60 s")


def start(cmd: list[str], env: dict, log: Path) -> subprocess.Popen:
    """``cmd`` from the repository's root in a process group of its own, output to ``log``."""
    return subprocess.Popen(
        cmd,
        cwd=ROOT,
        env={**os.environ, **env},
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def stop(proc: subprocess.Popen) -> None:
    """SIGTERM to ``proc``'s process group, SIGKILL after 20 s."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def cpu_seconds(groups: dict[str, int | tuple[int, ...]]) -> dict[str, float]:
    """CPU time (user + system) used so far by every process of each named process group (or
    groups: a tuple of them)."""
    tick = os.sysconf("SC_CLK_TCK")
    used = dict.fromkeys(groups, 0.0)
    names = {
        pgid: name
        for name, pgids in groups.items()
        for pgid in (pgids if isinstance(pgids, tuple) else (pgids,))
    }
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        name = names.get(int(fields[2]))  # pgrp
        if name is not None:
            used[name] += (int(fields[11]) + int(fields[12])) / tick  # utime + stime
    return used


def machine_busy() -> tuple[float, float, float]:
    """(busy, total, stolen) CPU seconds of the whole machine so far (``/proc/stat``: every
    process, PostgreSQL, Redis and the simulated workers included, and anything else running).
    ``stolen`` (counted in ``busy`` too) is the hypervisor's steal time: seconds the virtual
    machine's cores were ready to run but given to another guest (a run with much of it is
    disturbed, whatever this machine was doing)."""
    with open("/proc/stat") as fh:
        fields = [int(v) for v in fh.readline().split()[1:]]
    tick = os.sysconf("SC_CLK_TCK")
    idle = fields[3] + fields[4]  # idle + iowait
    steal = fields[7] if len(fields) > 7 else 0
    return (sum(fields) - idle) / tick, sum(fields) / tick, steal / tick
