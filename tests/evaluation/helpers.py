"""Shared test helpers: the project the evaluation tests' benchmarks belong to, and people who
are members of it (everything in evaluation is reached through a project)."""

from __future__ import annotations

import io

from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotator.platform.models import Project
from curation.models import LLMProvider
from evaluation import services
from tests.factories import UserFactory


def eval_project() -> Project:
    project, _ = Project.objects.get_or_create(
        slug="evaluation-tests", defaults={"name": "Evaluation tests"}
    )
    return project


def eval_version(family: str, name: str, rows, label: str = "v1"):
    """A version of the benchmark `name` of `family` in the evaluation tests' project."""
    benchmark = services.benchmark_get_or_create(family=family, name=name, project=eval_project())
    return services.version_create(benchmark=benchmark, label=label, rows=rows)


def version_import_data(
    family: str, benchmark: str, *, project: Project | None = None, label: str = "v1", **fields
) -> dict:
    """What the version import form and endpoint take (default: the evaluation tests' project);
    ``fields``: the file (``text`` for the form, ``content`` for the API), ``publish``…"""
    return {
        "project": (project or eval_project()).pk,
        "family": family,
        "benchmark": benchmark,
        "label": label,
        **fields,
    }


def fake_provider(base_url: str, **fields) -> LLMProvider:
    """An LLM provider answered by the fake OpenAI-compatible server at `base_url`, with a short
    timeout and one retry."""
    return LLMProvider.objects.create(
        base_url=base_url, api_key="sk-test", timeout_s=5.0, max_retries=1, **fields
    )


def evaluate(*args: str, stderr=None) -> str:
    """What ``manage.py evaluate <args>`` prints (its progress bars go to ``stderr``)."""
    out = io.StringIO()
    call_command("evaluate", *args, stdout=out, stderr=stderr or io.StringIO())
    return out.getvalue()


def member(role: str | None = None, project: Project | None = None):
    """A user with ``role`` (none: no role) who is a member of ``project`` (default: the
    evaluation tests' project)."""
    user = UserFactory(role=role) if role else UserFactory()
    (project or eval_project()).members.add(user)
    return user


def login(client, role: str):
    """Sign `client` in as a new member with `role`; returns the user."""
    user = member(role)
    client.force_login(user)
    return user


def page(client, role: str, name: str, *args, max_queries: int):
    """The page `name` (URL arguments `args`) for a new member with `role`: it answers 200 after
    at most `max_queries` database queries."""
    login(client, role)
    with CaptureQueriesContext(connection) as queries:
        response = client.get(reverse(name, args=args))
    assert len(queries) <= max_queries, f"{len(queries)} queries, at most {max_queries} expected"
    assert response.status_code == 200
    return response
