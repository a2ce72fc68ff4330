"""Shared test helpers: the project the evaluation tests' benchmarks belong to, and people who
are members of it (everything in evaluation is reached through a project)."""

from __future__ import annotations

from annotator.platform.models import Project
from tests.factories import UserFactory


def eval_project() -> Project:
    project, _ = Project.objects.get_or_create(
        slug="evaluation-tests", defaults={"name": "Evaluation tests"}
    )
    return project


def member(role: str | None = None, project: Project | None = None):
    """A user with ``role`` (none: no role) who is a member of ``project`` (default: the
    evaluation tests' project)."""
    user = UserFactory(role=role) if role else UserFactory()
    (project or eval_project()).members.add(user)
    return user
