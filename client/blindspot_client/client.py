"""The client: one ``httpx.Client`` with the token, one method per operation, each naming its
endpoint in :data:`ENDPOINTS` (the tests hold that table to the server's OpenAPI schema)."""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from .errors import BlindspotError, ChecksumMismatch, JobFailed, RateLimited, error_for
from .progress import Progress

# name -> (method, path template): every call the client makes, and nothing else.
ENDPOINTS: dict[str, tuple[str, str]] = {
    "token": ("POST", "/api/token/"),
    "projects": ("GET", "/api/projects/"),
    "queues": ("GET", "/api/queues/"),
    "queue_create": ("POST", "/api/queues/"),
    "queue": ("GET", "/api/queues/{queue_id}/"),
    "queue_update": ("PATCH", "/api/queues/{queue_id}/"),
    "queue_status": ("POST", "/api/queues/{queue_id}/status/"),
    "tasks": ("GET", "/api/queues/{queue_id}/tasks/"),
    "tasks_upload": ("POST", "/api/queues/{queue_id}/tasks/"),
    "agreement": ("GET", "/api/queues/{queue_id}/agreement/"),
    "outcomes": ("GET", "/api/queues/{queue_id}/outcomes/"),
    "annotations": ("GET", "/api/queues/{queue_id}/annotations/"),
    "next": ("POST", "/api/queues/{queue_id}/next/"),
    "submit": ("POST", "/api/tasks/{task_id}/submit/"),
    "jobs": ("GET", "/api/jobs/"),
    "job": ("GET", "/api/jobs/{job_id}/"),
    "benchmarks": ("GET", "/api/eval/benchmarks/"),
    "benchmark_import": ("POST", "/api/eval/import/"),
    "version": ("GET", "/api/eval/versions/{version_id}/"),
    "runs": ("GET", "/api/eval/versions/{version_id}/runs/"),
    "run_import": ("POST", "/api/eval/versions/{version_id}/import/"),
    "run_model": ("POST", "/api/eval/versions/{version_id}/run/"),
    "judge": ("POST", "/api/eval/versions/{version_id}/judge/"),
    "run": ("GET", "/api/eval/runs/{run_id}/"),
    "run_compute": ("POST", "/api/eval/runs/{run_id}/compute/"),
    "recipes": ("GET", "/api/recipes/"),
    "recipe_objects": ("GET", "/api/recipes/{key}/objects/"),
    "recipe_stage": ("POST", "/api/recipes/{key}/objects/{object_id}/stages/{stage}/"),
    "recipe_export": ("POST", "/api/recipes/{key}/objects/{object_id}/exports/"),
    "recipe_export_file": ("GET", "/api/recipes/{key}/objects/{object_id}/exports/{job_id}/"),
    "webhooks": ("GET", "/api/projects/{project_id}/webhooks/"),
    "webhook_create": ("POST", "/api/projects/{project_id}/webhooks/"),
    "webhook_deliveries": ("GET", "/api/webhooks/{webhook_id}/deliveries/"),
    "webhook_test": ("POST", "/api/webhooks/{webhook_id}/test/"),
}
FINISHED = ("succeeded", "failed")


@dataclass(frozen=True)
class Project:
    id: int
    name: str
    slug: str
    description: str = ""


@dataclass(frozen=True)
class Queue:
    id: int
    project: int
    kind: str
    title: str
    status: str = ""
    progress: dict[str, Any] = field(default_factory=dict)
    raw: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def of(cls, data: Mapping[str, Any]) -> Queue:
        return cls(
            id=data["id"],
            project=data["project"],
            kind=data["kind"],
            title=data["title"],
            status=data.get("status", ""),
            progress=dict(data.get("progress") or {}),
            raw=dict(data),
        )


@dataclass(frozen=True)
class Job:
    id: int
    kind: str
    status: str
    done: int = 0
    total: int = 0
    percent: int = 0
    message: str = ""
    error: str = ""
    result: Any = None

    @classmethod
    def of(cls, data: Mapping[str, Any]) -> Job:
        fields = cls.__dataclass_fields__
        return cls(**{k: v for k, v in data.items() if k in fields})

    @property
    def finished(self) -> bool:
        return self.status in FINISHED


class Outcomes:
    """A queue's tasks with their outcomes, read page by page as you iterate (nothing is read
    before). ``decided_only`` keeps the tasks decided by their answers."""

    def __init__(self, client: Client, queue_id: int, *, decided_only: bool = True) -> None:
        self.client, self.queue_id, self.decided_only = client, queue_id, decided_only

    def __iter__(self) -> Iterator[dict[str, Any]]:
        rows = self.client._paged("outcomes", queue_id=self.queue_id, params={"format": "json"})
        for row in rows:
            if self.decided_only and row.get("state") != "decided":
                continue
            yield row

    def to_list(self) -> list[dict[str, Any]]:
        return list(self)

    def to_pandas(self):
        """A DataFrame, one row per task; the outcome's keys become ``outcome.<key>`` columns."""
        import pandas as pd  # optional dependency: pip install "blindspot-client[pandas]"

        rows = self.to_list()
        frame = pd.json_normalize(rows, max_level=1, sep=".") if rows else pd.DataFrame()
        keep = [c for c in frame.columns if not c.startswith(("payload.", "gold."))]
        frame = frame[keep]
        if rows:
            frame["payload"] = [r.get("payload") for r in rows]
        return frame

    def to_datasets(self):
        """A Hugging Face ``datasets.Dataset`` (outcomes and payloads as JSON text)."""
        import datasets  # optional dependency: pip install "blindspot-client[datasets]"

        rows = [
            {
                **{k: v for k, v in r.items() if k not in ("outcome", "payload", "gold")},
                "outcome": json.dumps(r.get("outcome"), ensure_ascii=False),
                "payload": json.dumps(r.get("payload"), ensure_ascii=False),
            }
            for r in self
        ]
        return datasets.Dataset.from_list(rows)


class Client:
    """Blindspot's REST API. ``Client(url, token)``, or ``Client()`` reading BLINDSPOT_URL and
    BLINDSPOT_TOKEN. Every refusal raises a :class:`~blindspot_client.errors.BlindspotError`
    subclass carrying the server's message."""

    def __init__(
        self,
        url: str | None = None,
        token: str | None = None,
        *,
        timeout: float = 60.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        url = url or os.environ.get("BLINDSPOT_URL", "")
        token = token or os.environ.get("BLINDSPOT_TOKEN", "")
        if not url:
            raise ValueError("Give Client(url, token) or set BLINDSPOT_URL (and BLINDSPOT_TOKEN).")
        if not token:
            raise ValueError(
                "Give Client(url, token) or set BLINDSPOT_TOKEN (see /account/token/)."
            )
        self.url = url.rstrip("/")
        self.http = httpx.Client(
            base_url=self.url,
            headers={"Authorization": f"Token {token}", "Accept": "application/json"},
            timeout=timeout,
            follow_redirects=False,
            transport=transport,
        )
        self.calls: list[tuple[str, str]] = []  # (method, template) of each call made

    @classmethod
    def login(cls, url: str, username: str, password: str, **kw: Any) -> Client:
        """A client for ``username``, exchanging the password for the API token (throttled
        like the login page: :class:`RateLimited` after repeated wrong passwords)."""
        method, path = ENDPOINTS["token"]
        try:
            with httpx.Client(
                transport=kw.get("transport"), timeout=kw.get("timeout", 60.0)
            ) as http:
                response = http.post(
                    url.rstrip("/") + path, json={"username": username, "password": password}
                )
        except httpx.HTTPError as exc:
            raise BlindspotError(f"{type(exc).__name__}: {exc}", method=method, path=path) from exc
        if response.status_code >= 400:
            raise cls._error(response, method, path)
        return cls(url, response.json()["token"], **kw)

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.http.close()

    # ----------------------------------------------------------------------------------------
    # The one way a call is made
    # ----------------------------------------------------------------------------------------
    def _request(
        self,
        name: str,
        *,
        params: Mapping[str, Any] | None = None,
        json_body: Any = None,
        content: bytes | str | None = None,
        headers: Mapping[str, str] | None = None,
        data: Mapping[str, Any] | None = None,
        files: Mapping[str, Any] | None = None,
        stream: bool = False,
        **path: Any,
    ) -> httpx.Response:
        method, template = ENDPOINTS[name]
        self.calls.append((method, template))
        url = template.format(**path)
        request = self.http.build_request(
            method,
            url,
            params=params,
            json=json_body,
            content=content,
            headers=headers,
            data=data,
            files=files,
        )
        try:
            response = self.http.send(request, stream=stream)
        except httpx.HTTPError as exc:
            raise BlindspotError(f"{type(exc).__name__}: {exc}", method=method, path=url) from exc
        if response.status_code >= 400:
            if stream:
                response.read()
            raise self._error(response, method, url)
        return response

    @staticmethod
    def _error(response: httpx.Response, method: str, path: str) -> BlindspotError:
        try:
            body = response.json()
        except ValueError:
            body = {}
        message = body.get("message") if isinstance(body, dict) else None
        if not message:
            message = response.text.strip()[:300] or response.reason_phrase
        kind = error_for(response.status_code)
        exc = kind(
            message,
            status=response.status_code,
            errors=body.get("errors") if isinstance(body, dict) else None,
            method=method,
            path=path,
        )
        if isinstance(exc, RateLimited):
            retry = response.headers.get("Retry-After")
            exc.retry_after = float(retry) if retry and retry.replace(".", "").isdigit() else None
        return exc

    def _json(self, name: str, **kw: Any) -> Any:
        return self._request(name, **kw).json()

    def _paged(self, name: str, *, params: Mapping[str, Any] | None = None, **path: Any):
        """Every item of a paginated list, one page read at a time."""
        page = 1
        while True:
            body = self._json(name, params={**(params or {}), "page": page}, **path)
            if isinstance(body, list):  # an endpoint that is not paginated
                yield from body
                return
            yield from body["results"]
            if not body.get("next"):
                return
            page += 1

    # ----------------------------------------------------------------------------------------
    # Projects and queues
    # ----------------------------------------------------------------------------------------
    def projects(self) -> list[Project]:
        """The projects you are a member of."""
        return [
            Project(p["id"], p["name"], p["slug"], p.get("description", ""))
            for p in self._paged("projects")
        ]

    def queues(self, project: int | None = None) -> list[Queue]:
        """The queues you can see (of one project when ``project`` is given)."""
        queues = [Queue.of(q) for q in self._paged("queues")]
        return [q for q in queues if project is None or q.project == project]

    def queue(self, queue_id: int) -> Queue:
        return Queue.of(self._json("queue", queue_id=queue_id))

    def create_queue(self, *, project: int, kind: str, title: str, **settings: Any) -> Queue:
        """A new queue; ``settings`` are the queue's fields (redundancy, rule, instructions …)."""
        body = {"project": project, "kind": kind, "title": title, **settings}
        return Queue.of(self._json("queue_create", json_body=body))

    def update_queue(self, queue_id: int, **settings: Any) -> Queue:
        return Queue.of(self._json("queue_update", queue_id=queue_id, json_body=settings))

    def set_queue_status(self, queue_id: int, status: str) -> Queue:
        """``open``, ``paused`` or ``closed``."""
        body = {"status": status}
        return Queue.of(self._json("queue_status", queue_id=queue_id, json_body=body))

    def upload_tasks(
        self,
        queue_id: int,
        tasks: Iterable[Mapping[str, Any]] | str | os.PathLike[str] | Any,
        *,
        chunk_size: int = 500,
        progress: bool = True,
    ) -> int:
        """Add tasks to a queue: a list (or any iterable) of dicts, a JSON Lines file, or a
        pandas DataFrame (one task per row; a ``payload`` column, or every column as the
        payload). Each item is a payload, or ``{"payload", "gold", "id"}``. Sent in chunks of
        ``chunk_size``, each all or nothing; returns how many were created. A refused chunk
        raises :class:`InvalidRequest` (the chunks before it are kept) whose ``errors`` each
        name their ``task`` by its position in ``tasks``."""
        rows = _task_rows(tasks)
        total = len(rows)
        created = 0
        with Progress(total, "Uploading tasks", enabled=progress) as bar:
            for start in range(0, total, chunk_size):
                chunk = rows[start : start + chunk_size]
                try:
                    body = self._json("tasks_upload", queue_id=queue_id, json_body=chunk)
                except BlindspotError as exc:
                    # Each error names its task by position in ``tasks`` (counted from 0).
                    for error in exc.errors:
                        if isinstance(error.get("index"), int):
                            error["task"] = start + error["index"]
                        elif isinstance(error.get("line"), int):
                            error["task"] = start + error["line"] - 1
                    raise
                created += int(body.get("created", 0))
                bar.update(len(chunk))
        return created

    def tasks(self, queue_id: int) -> Iterator[dict[str, Any]]:
        """Every task of the queue with its gold and outcome (lazily, page by page)."""
        return self._paged("tasks", queue_id=queue_id)

    def progress(self, queue_id: int) -> dict[str, Any]:
        """Counts by state (``total``, ``open``, ``decided`` …) and the percent done."""
        return self.queue(queue_id).progress

    def agreement(self, queue_id: int) -> dict[str, Any]:
        """Inter-annotator agreement of the queue (percent, Cohen's and Fleiss' κ, α …)."""
        return self._json("agreement", queue_id=queue_id)

    def wait_for_queue(
        self,
        queue_id: int,
        *,
        timeout: float | None = None,
        poll: float = 2.0,
        progress: bool = True,
    ) -> Queue:
        """Wait until no task of the queue is open (every one decided, undecided or
        cancelled), showing a progress bar; ``TimeoutError`` after ``timeout`` seconds."""
        deadline = None if timeout is None else time.monotonic() + timeout
        queue = self.queue(queue_id)
        with Progress(queue.progress.get("total", 0), "Deciding tasks", enabled=progress) as bar:
            while True:
                counts = queue.progress
                total = int(counts.get("total", 0))
                bar.total = total
                bar.set(total - int(counts.get("open", 0)))
                if total and not counts.get("open"):
                    return queue
                if deadline is not None and time.monotonic() > deadline:
                    raise TimeoutError(
                        f"Queue {queue_id} still has {counts.get('open')} open tasks."
                    )
                time.sleep(poll)
                queue = self.queue(queue_id)

    def outcomes(self, queue_id: int, *, decided_only: bool = True) -> Outcomes:
        """The queue's decided tasks and their outcomes, read lazily (``.to_pandas()``,
        ``.to_datasets()``, or iterate); ``decided_only=False`` gives every task."""
        return Outcomes(self, queue_id, decided_only=decided_only)

    def annotations(self, queue_id: int) -> Iterator[dict[str, Any]]:
        """Every answer given in the queue (annotator, response, duration, time)."""
        return self._paged("annotations", queue_id=queue_id, params={"format": "json"})

    # ----------------------------------------------------------------------------------------
    # Annotating (crowdworkers' tokens): automation and tests
    # ----------------------------------------------------------------------------------------
    def next_task(self, queue_id: int) -> dict[str, Any] | None:
        """Claim your next task in the queue, or None when there is none for you now."""
        body = self._json("next", queue_id=queue_id)
        return body.get("task") or None

    def submit(self, task_id: int, response: Mapping[str, Any], **extra: Any) -> dict[str, Any]:
        """Answer a task you hold; the answer holds the next task, if any."""
        body = {"response": dict(response), **extra}
        return self._json("submit", task_id=task_id, json_body=body)

    # ----------------------------------------------------------------------------------------
    # Jobs
    # ----------------------------------------------------------------------------------------
    def jobs(self) -> Iterator[Job]:
        return (Job.of(j) for j in self._paged("jobs"))

    def job(self, job_id: int) -> Job:
        return Job.of(self._json("job", job_id=job_id))

    def wait_for_job(
        self,
        job_id: int,
        *,
        timeout: float | None = None,
        poll: float = 1.0,
        progress: bool = True,
    ) -> Job:
        """Wait for a background job with a progress bar; raises :class:`JobFailed` when it
        fails and ``TimeoutError`` after ``timeout`` seconds."""
        deadline = None if timeout is None else time.monotonic() + timeout
        job = self.job(job_id)
        with Progress(job.total, f"Job {job.id} {job.kind}", enabled=progress) as bar:
            while True:
                bar.total = job.total
                bar.set(job.done if not job.finished else job.total)
                bar.describe(job.message)
                if job.status == "failed":
                    raise JobFailed(job)
                if job.status == "succeeded":
                    return job
                if deadline is not None and time.monotonic() > deadline:
                    raise TimeoutError(f"Job {job_id} is still {job.status}.")
                time.sleep(poll)
                job = self.job(job_id)

    # ----------------------------------------------------------------------------------------
    # Recipes
    # ----------------------------------------------------------------------------------------
    def recipes(self) -> list[dict[str, Any]]:
        """Every recipe (``key``, ``label``) with its ``stages`` and ``exports``."""
        return self._json("recipes")

    def pipelines(self, recipe: str) -> list[dict[str, Any]]:
        """A recipe's objects (pipelines, case sets, benches) in the projects you curate, each
        with its funnel ``counts``."""
        return list(self._paged("recipe_objects", key=recipe))

    def start_stage(self, recipe: str, pipeline: int, stage: str, **params: Any) -> Job:
        """Start a stage (its page's button; ``params`` are the button's form fields)."""
        body = {"params": params}
        return Job.of(
            self._json("recipe_stage", key=recipe, object_id=pipeline, stage=stage, json_body=body)
        )

    def start_export(
        self,
        recipe: str,
        pipeline: int,
        kind: str,
        *,
        params: Mapping[str, Any] | None = None,
        **args: Any,
    ) -> Job:
        """Start an export job: ``kind`` as listed by :meth:`recipes`, ``args`` its route's
        arguments (``fmt="jsonl"``), ``params`` its form fields."""
        body = {"kind": kind, "args": args, "params": dict(params or {})}
        return Job.of(self._json("recipe_export", key=recipe, object_id=pipeline, json_body=body))

    def download_export(
        self,
        recipe: str,
        pipeline: int,
        job_id: int,
        path: str | os.PathLike[str],
        *,
        progress: bool = True,
    ) -> Path:
        """Save a finished export's file to ``path`` (a folder: under the file's own name),
        streamed, and check its SHA-256 against the one the job recorded; a mismatch removes
        the file and raises :class:`ChecksumMismatch`. A redirect to a signed storage URL is
        followed without your token."""
        result = self.job(job_id).result or {}
        target = Path(path)
        if target.is_dir():
            target = target / (result.get("filename") or f"export-{job_id}")
        response = self._request(
            "recipe_export_file", key=recipe, object_id=pipeline, job_id=job_id, stream=True
        )
        try:
            if response.status_code in (301, 302, 303, 307, 308):
                location = response.headers["Location"]
                response.close()
                if location.startswith("/"):  # served by the app itself after all
                    location = self.url + location
                response = httpx.get(location, follow_redirects=False, timeout=self.http.timeout)
                if response.status_code >= 400:
                    raise self._error(response, "GET", location.split("?", 1)[0])
            size = int(response.headers.get("Content-Length") or result.get("size") or 0)
            digest = hashlib.sha256()
            with Progress(size, f"Downloading {target.name}", enabled=progress) as bar:
                with open(target, "wb") as fh:
                    for block in response.iter_bytes(1 << 20):
                        fh.write(block)
                        digest.update(block)
                        bar.update(len(block))
        finally:
            response.close()
        expected = result.get("sha256")
        if expected and digest.hexdigest() != expected:
            target.unlink(missing_ok=True)
            raise ChecksumMismatch(
                f"{target.name}: SHA-256 {digest.hexdigest()} is not the recorded {expected}."
            )
        return target

    # ----------------------------------------------------------------------------------------
    # Evaluation
    # ----------------------------------------------------------------------------------------
    def benchmarks(self) -> list[dict[str, Any]]:
        """Benchmarks of your projects, each with its versions."""
        return list(self._paged("benchmarks"))

    def version(self, version_id: int) -> dict[str, Any]:
        return self._json("version", version_id=version_id)

    def import_benchmark(
        self,
        *,
        project: int,
        family: str,
        benchmark: str,
        label: str,
        path: str | os.PathLike[str] | None = None,
        content: str | None = None,
        publish: bool = True,
    ) -> int:
        """Import a benchmark version from a file in its family's layout; returns the job id."""
        body = {
            "project": project,
            "family": family,
            "benchmark": benchmark,
            "label": label,
            "publish": publish,
            "content": _text(path, content),
        }
        return int(self._json("benchmark_import", json_body=body)["job_id"])

    def import_run(
        self,
        version_id: int,
        *,
        model: str,
        path: str | os.PathLike[str] | None = None,
        content: str | None = None,
        label: str = "",
        **options: Any,
    ) -> int:
        """Import a model's predictions (a file in the family's layout) as a run of the
        version; its metrics are computed by the job. Returns the job id."""
        body = {"model": model, "content": _text(path, content), **options}
        if label:
            body["label"] = label
        return int(self._json("run_import", version_id=version_id, json_body=body)["job_id"])

    def run_model(self, version_id: int, **options: Any) -> dict[str, Any]:
        """Start a model run on the version (``provider_id`` or ``scorer_id``, ``model_name``,
        ``limit`` …); returns ``{"job_id", "run_id", "items"}``."""
        return self._json("run_model", version_id=version_id, json_body=options)

    def judge(self, version_id: int, *, label: str, **options: Any) -> dict[str, Any]:
        """Start an LLM judge on a pairwise version; returns ``{"job_id", ...}``."""
        body = {"label": label, **options}
        return self._json("judge", version_id=version_id, json_body=body)

    def runs(self, version_id: int) -> list[dict[str, Any]]:
        return list(self._paged("runs", version_id=version_id))

    def run(self, run_id: int) -> dict[str, Any]:
        return self._json("run", run_id=run_id)

    def compute_metrics(self, run_id: int) -> int:
        """Compute a run's metrics again; returns the job id."""
        return int(self._json("run_compute", run_id=run_id)["job_id"])

    def leaderboard(self, version_id: int) -> list[dict[str, Any]]:
        """One row per finished run of the version: run, model, label and each metric's value
        (``<metric>``) with its interval (``<metric>_low`` / ``<metric>_high``)."""
        rows = []
        for run in self.runs(version_id):
            if run.get("status") != "succeeded":
                continue
            row: dict[str, Any] = {"run": run["id"], "model": run["model"], "label": run["label"]}
            for metric in run.get("metrics") or []:
                name = metric["metric"]
                row[name] = metric["value"]
                row[f"{name}_low"] = metric.get("interval_low")
                row[f"{name}_high"] = metric.get("interval_high")
            rows.append(row)
        return rows

    # ----------------------------------------------------------------------------------------
    # Webhooks
    # ----------------------------------------------------------------------------------------
    def webhooks(self, project: int) -> list[dict[str, Any]]:
        return self._json("webhooks", project_id=project)

    def create_webhook(
        self, *, project: int, url: str, events: Iterable[str], description: str = ""
    ) -> dict[str, Any]:
        """Register a webhook; the answer's ``secret`` is shown this once."""
        body = {"url": url, "events": list(events), "description": description}
        return self._json("webhook_create", project_id=project, json_body=body)

    def test_webhook(self, webhook_id: int) -> dict[str, Any]:
        return self._json("webhook_test", webhook_id=webhook_id)

    def webhook_deliveries(self, webhook_id: int) -> Iterator[dict[str, Any]]:
        return self._paged("webhook_deliveries", webhook_id=webhook_id)


# --------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------
def _text(path: str | os.PathLike[str] | None, content: str | None) -> str:
    if (path is None) == (content is None):
        raise ValueError("Give either path= or content=.")
    return Path(path).read_text(encoding="utf-8") if path is not None else str(content)


def _task_rows(tasks: Any) -> list[dict[str, Any]]:
    """Tasks as a list of dicts, from dicts, a JSON Lines file or a DataFrame."""
    if isinstance(tasks, str | os.PathLike):
        rows = []
        with open(tasks, encoding="utf-8") as fh:
            for number, line in enumerate(fh, start=1):
                if line.strip():
                    try:
                        rows.append(json.loads(line))
                    except ValueError as exc:
                        raise ValueError(f"{tasks}: line {number}: not JSON ({exc})") from None
        return rows
    if hasattr(tasks, "to_dict") and hasattr(tasks, "columns"):  # a pandas DataFrame
        records = tasks.to_dict(orient="records")
        if "payload" in tasks.columns:
            return [{k: v for k, v in r.items() if k in ("payload", "gold", "id")} for r in records]
        return records
    return [dict(t) for t in tasks]


def sha256_of(path: str | os.PathLike[str]) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


__all__ = [
    "ENDPOINTS",
    "ChecksumMismatch",
    "Client",
    "Job",
    "Outcomes",
    "Project",
    "Queue",
    "sha256_of",
]
