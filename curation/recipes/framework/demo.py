"""What the recipes' demos share: a builder made once per project (``demo_once``), simulated
annotators (accounts nobody can log in as) who work through a queue with the real claim and submit
services, leaving chosen tasks for a visitor, and jobs run in this process while a demo is built."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Container

from celery import current_app
from django.contrib.auth import get_user_model
from django.db.models import Model

from annotator.models import TaskQueue
from annotator.platform import roles
from annotator.platform.models import Project
from annotator.services import annotation_submit, assignment_claim, assignment_skip


def demo_once(model: type[Model], name: str, *, jobs_here: bool = False):
    """A recipe's demo builder, ``build(*, project, curator)``, made idempotent: it runs only when
    ``project`` has no ``model`` row named ``name`` (else that row is returned as it is); with
    ``jobs_here`` the jobs it enqueues run in this process (``jobs_in_process``)."""

    def wrap(build):
        @functools.wraps(build)
        def demo(*, project: Project, curator):
            existing = model.objects.filter(project=project, name=name).first()
            if existing is not None:
                return existing
            with jobs_in_process() if jobs_here else contextlib.nullcontext():
                return build(project=project, curator=curator)

        return demo

    return wrap


def demo_annotators(project: Project, usernames) -> list:
    """The demo's crowdworkers (made once, with unusable passwords), members of ``project``."""
    User = get_user_model()
    users = []
    for username in usernames:
        user = User.objects.filter(username=username).first()
        if user is None:
            user = User.objects.create_user(username=username)
            user.set_unusable_password()
            user.save(update_fields=["password"])
            roles.grant_role(user, roles.CROWDWORKER)
        users.append(user)
    project.members.add(*users)
    return users


@contextlib.contextmanager
def jobs_in_process():
    """Jobs run here, in this process, as they are enqueued: a demo never needs a broker."""
    before = current_app.conf.task_always_eager
    current_app.conf.task_always_eager = True
    try:
        yield
    finally:
        current_app.conf.task_always_eager = before


def demo_work(
    queue: TaskQueue, annotator, respond, *, assignment: bool = False, leave: Container[int] = ()
) -> int:
    """Claim and answer as ``annotator`` until the queue has nothing left for them; ``respond``
    gets the claimed task (with ``assignment``: the claimed Assignment, its presentation too) and
    returns a response, or None to skip the task (leaving it for someone else), as the tasks whose
    id is in ``leave`` are skipped."""
    answered = 0
    claim = assignment_claim(queue=queue, annotator=annotator)
    while claim.task is not None:
        claimed = claim.assignment if assignment else claim.task
        response = None if claim.task.pk in leave else respond(claimed)
        if response is None:
            assignment_skip(task_id=claim.task.pk, annotator=annotator)
            claim = assignment_claim(queue=queue, annotator=annotator)
            continue
        result = annotation_submit(task_id=claim.task.pk, annotator=annotator, response=response)
        answered += 1
        claim = result.next
    return answered
