"""The done-when, end to end: a fresh virtual environment, ``pip install "./client[pandas]"``
from the registry, and the README's example run as written against a live server while two
annotators decide the tasks through the API."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
import venv
from pathlib import Path

import pytest
from blindspot_client import Client

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]
ROOT = Path(__file__).resolve().parents[2]


def readme_example() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## Python client", 1)[1].split("\n## ", 1)[0]
    return section.split("```python\n", 1)[1].split("```", 1)[0]


def test_the_readme_example_is_a_dozen_lines():
    lines = [line for line in readme_example().splitlines() if line.strip()]
    assert len(lines) <= 16, lines


def _annotators(url: str, tokens: list[str], title: str, stop: threading.Event) -> None:
    """Two crowdworkers, driven through the API, decide every task of the queue named
    ``title`` once it holds its tasks."""
    workers = [Client(url, token) for token in tokens]
    try:
        while not stop.is_set():
            queue = next((q for q in workers[0].queues() if q.title == title), None)
            if queue is not None and workers[0].queue(queue.id).raw.get("status") == "open":
                time.sleep(1.0)  # let the upload finish (the example sends one chunk)
                for worker in workers:
                    task = worker.next_task(queue.id)
                    while task is not None:
                        task = worker.submit(task["id"], {"answer": "Yes"})["next"]["task"]
                return
            time.sleep(0.2)
    finally:
        for worker in workers:
            worker.close()


def test_fresh_venv_install_and_readme_example(site, tmp_path):
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    install = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", f"{ROOT / 'client'}[pandas]"],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert install.returncode == 0, install.stderr[-3000:]
    script = tmp_path / "example.py"
    script.write_text(readme_example(), encoding="utf-8")
    stop = threading.Event()
    crowd = threading.Thread(
        target=_annotators,
        args=(site.url, [site.tokens["worker1"], site.tokens["worker2"]], "Is it red?", stop),
        daemon=True,
    )
    crowd.start()
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp_path),
        "BLINDSPOT_URL": site.url,
        "BLINDSPOT_TOKEN": site.tokens["curator"],
    }
    try:
        run = subprocess.run(
            [str(python), str(script)],
            capture_output=True,
            text=True,
            timeout=300,
            env=env,
            cwd=tmp_path,  # not the repository: the installed package is the one imported
        )
    finally:
        stop.set()
        crowd.join(30)
    assert run.returncode == 0, run.stderr[-3000:]
    out = run.stdout
    for i in range(4):
        assert f"cube-{i}" in out
    assert out.count("Yes") == 4, out
    assert sys.executable != str(python)
