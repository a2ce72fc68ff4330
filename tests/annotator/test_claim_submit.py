from datetime import timedelta

import pytest
from django.utils import timezone

from annotator import services
from annotator.models import Annotation, Assignment, Task
from annotator.platform.errors import Conflict
from tests.factories import TaskFactory


def test_claim_prefers_fullest_task_and_never_repeats(queue, crowdworker, other_worker):
    # Given two open tasks, one already half done by another person
    first, _second = TaskFactory(queue=queue), TaskFactory(queue=queue)
    got = services.assignment_claim(queue=queue, annotator=other_worker).assignment
    assert got.task_id == first.id
    services.annotation_submit(task_id=first.id, annotator=other_worker, response={"answer": "Yes"})
    # When the worker claims
    claim = services.assignment_claim(queue=queue, annotator=crowdworker)
    # Then they get the task closest to completion
    assert claim.assignment.task_id == first.id


def test_submit_decides_majority_and_is_idempotent(queue, crowdworker, other_worker):
    task = TaskFactory(queue=queue)
    TaskFactory(queue=queue)
    for person in (crowdworker, other_worker):
        services.assignment_claim(queue=queue, annotator=person)
    r1 = services.annotation_submit(
        task_id=task.id, annotator=crowdworker, response={"answer": "No"}
    )
    again = services.annotation_submit(
        task_id=task.id, annotator=crowdworker, response={"answer": "No"}
    )
    assert again.created is False
    assert again.annotation.pk == r1.annotation.pk
    assert again.next.assignment.pk == r1.next.assignment.pk
    services.annotation_submit(task_id=task.id, annotator=other_worker, response={"answer": "No"})
    task.refresh_from_db()
    assert task.state == Task.State.DECIDED
    assert task.outcome["label"] == "No"
    assert task.agreement == 1.0
    assert Annotation.objects.filter(task=task).count() == 2


def test_expired_lease_returns_to_pool_and_submit_conflicts(queue, crowdworker, other_worker):
    queue.redundancy = 1
    queue.max_redundancy = 1
    queue.save()
    task = TaskFactory(queue=queue)
    services.assignment_claim(queue=queue, annotator=crowdworker)
    later = timezone.now() + queue.lease_ttl + timedelta(seconds=1)
    claim = services.assignment_claim(queue=queue, annotator=other_worker, now=later)
    assert claim.assignment.task_id == task.id
    with pytest.raises(Conflict):
        services.annotation_submit(
            task_id=task.id, annotator=crowdworker, response={"answer": "Yes"}, now=later
        )
    assert Assignment.objects.get(task=task, annotator=crowdworker).state == "expired"
    assert not Annotation.objects.filter(annotator=crowdworker).exists()
