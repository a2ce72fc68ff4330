"""The next task painted before the submit's answer (issue 28): every task page renders the
look-ahead's first task in a <template>, the submit names it (``prefer``) and the claim hands
it out as painted, or another task when someone took it meanwhile; and the submit request's
statements, pinned so that a lookup added to the hot path shows up here."""

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotator import services
from annotator.models import Assignment, Task
from tests.factories import QueueFactory, TaskFactory, vqa_payload

pytestmark = pytest.mark.django_db
HX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def worker_client(client, crowdworker):
    client.force_login(crowdworker)
    return client


def held_id(html: str) -> int:
    return int(re.search(r'data-task-id="(\d+)"', html).group(1))


def split(html: str) -> tuple[str, str]:
    """The live task's fragment and the look-ahead rendered after it ("" when none)."""
    live, _, ahead = html.partition("<template data-look-ahead>")
    return live, ahead


def task_form(html: str) -> str:
    """The answer form as the person sees it (the CSRF token's mask changes per render)."""
    form = re.search(r'<form id="task-form".*?</form>', html, re.S).group(0)
    return re.sub(r'name="csrfmiddlewaretoken" value="[^"]*"', "", form)


def fc_payload(i: int) -> dict:
    return {
        "images": [{"url": f"/static/demo/img{i}.png"}],
        "instruction": f"Describe image {i}.",
        "candidates": [{"id": "m1", "text": f"First text {i}"}, {"id": "m2", "text": f"Other {i}"}],
    }


def test_the_submit_hands_out_the_task_painted_ahead_exactly_as_painted(
    project, worker_client, crowdworker
):
    # A forced-choice queue: each lease orders its two responses at random (its presentation)
    queue = QueueFactory(project=project, kind="forced_choice", redundancy=1, max_redundancy=1)
    for i in range(8):
        TaskFactory(queue=queue, payload=fc_payload(i))
    html = worker_client.get(reverse("work", args=[queue.pk])).content.decode()
    for _ in range(7):
        live, ahead = split(html)
        painted = held_id(ahead)
        # When the answer names the task the page painted ahead
        html = worker_client.post(
            reverse("work-submit", args=[held_id(live)]),
            {"choice": "left", "prefer": str(painted)},
            **HX,
        ).content.decode()
        # Then that task is handed out, and its form is the one painted: same order of responses
        assert held_id(html) == painted
        assert task_form(split(html)[0]) == task_form(ahead)
        lease = Assignment.objects.get(task_id=painted, annotator=crowdworker)
        assert lease.state == Assignment.State.LEASED
        assert lease.presentation == services.look_ahead_presentation(queue, painted, crowdworker)
    # The presentation is still drawn: over many tasks both orders come up (seven tasks alone
    # show one order with probability 1/64, which is why this looks past the seven above)
    sides = {
        services.look_ahead_presentation(queue, task_id, crowdworker)["swapped"]
        for task_id in range(1, 65)
    }
    assert sides == {True, False}


def test_a_task_painted_ahead_but_taken_meanwhile_is_not_handed_out_twice(
    project, worker_client, crowdworker, other_worker
):
    queue = QueueFactory(project=project, redundancy=1, max_redundancy=1)
    tasks = [TaskFactory(queue=queue, payload=vqa_payload(i)) for i in range(3)]
    live, ahead = split(worker_client.get(reverse("work", args=[queue.pk])).content.decode())
    assert held_id(ahead) == tasks[1].pk
    # Someone else claims the task painted ahead before the answer arrives
    assert services.assignment_claim(queue=queue, annotator=other_worker).task.pk == tasks[1].pk

    html = worker_client.post(
        reverse("work-submit", args=[held_id(live)]),
        {"answer": "Yes", "prefer": str(tasks[1].pk)},
        **HX,
    ).content.decode()

    # The claim goes on as without it: the next free task, the taken one held once
    assert held_id(html) == tasks[2].pk
    assert Task.objects.get(pk=tasks[1].pk).active_count == 1
    assert not Assignment.objects.filter(task=tasks[1], annotator=crowdworker).exists()


def test_a_preferred_task_from_another_queue_is_ignored(project, worker_client):
    queue = QueueFactory(project=project, redundancy=1, max_redundancy=1)
    elsewhere = TaskFactory(queue=QueueFactory(project=project))
    first, second = (TaskFactory(queue=queue, payload=vqa_payload(i)) for i in range(2))
    worker_client.get(reverse("work", args=[queue.pk]))
    html = worker_client.post(
        reverse("work-submit", args=[first.pk]),
        {"answer": "Yes", "prefer": str(elsewhere.pk)},
        **HX,
    ).content.decode()
    assert held_id(html) == second.pk
    assert Task.objects.get(pk=elsewhere.pk).active_count == 0


def test_the_last_task_renders_nothing_ahead(project, worker_client):
    queue = QueueFactory(project=project, redundancy=1, max_redundancy=1)
    TaskFactory(queue=queue)
    html = worker_client.get(reverse("work", args=[queue.pk])).content.decode()
    assert "data-look-ahead" not in html


@pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's statements")
@pytest.mark.django_db(transaction=True)  # real commits: what runs after them is counted too
def test_the_workspace_submit_runs_these_statements(project, worker_client):
    # Given a held task in a redundancy-1 queue (each answer decides its task)
    queue = QueueFactory(project=project, redundancy=1, max_redundancy=1)
    tasks = [TaskFactory(queue=queue, payload=vqa_payload(i)) for i in range(4)]
    live, ahead = split(worker_client.get(reverse("work", args=[queue.pk])).content.decode())
    # When the answer is submitted from the page
    with CaptureQueriesContext(connection) as ctx:
        response = worker_client.post(
            reverse("work-submit", args=[held_id(live)]),
            {"answer": "Yes", "prefer": str(held_id(ahead))},
            **HX,
        )
    assert held_id(response.content.decode()) == tasks[1].pk
    sqls = [q["sql"] for q in ctx.captured_queries]
    first_words = [sql.split(None, 1)[0].upper() for sql in sqls]
    # Then: no second read of the assignment, no session write (no second commit), the
    # counters and the undo check in one query, and no "queue finished?" check when the next
    # task was just handed out
    assert first_words == [
        "SELECT",  # session
        "SELECT",  # user with their roles (platform/auth.py)
        "BEGIN",
        "SELECT",  # task and queue, FOR UPDATE OF the task
        "SELECT",  # the assignment, FOR UPDATE
        "WITH",  # store the answer, close the lease, count it
        "SELECT",  # the task's answers, aggregated
        "UPDATE",  # the task decided
        "SELECT",  # the project's webhooks (their deliveries are written in this transaction)
        "SELECT",  # standing: enrollment and live lease
        "WITH",  # the claim of the task painted ahead
        "COMMIT",
        "SELECT",  # the counters: this session, today, and whether u can undo
        "SELECT",  # the look-ahead: the next tasks' ids and payloads
    ], sqls
