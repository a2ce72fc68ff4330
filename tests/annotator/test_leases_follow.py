"""Leases follow the person: leaving releases the held task at once; one queue at a time."""

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from annotator import services
from annotator.models import Assignment, Task
from tests.factories import QueueFactory, TaskFactory

pytestmark = pytest.mark.django_db


def test_release_returns_the_slot_and_the_person_may_get_it_again(client, queue, crowdworker):
    task = TaskFactory(queue=queue)
    client.force_login(crowdworker)
    client.get(reverse("work", args=[queue.pk]))
    assert Assignment.objects.get(task=task).state == Assignment.State.LEASED

    # When the page is left (the beacon posts the form's CSRF token like any form)
    resp = client.post(reverse("work-release", args=[task.pk]))

    # Then the lease ended at once and the slot is free
    assert resp.status_code == 204
    assert Assignment.objects.get(task=task).state == Assignment.State.EXPIRED
    assert Task.objects.get(pk=task.pk).active_count == 0
    assert client.post(reverse("work-release", args=[task.pk])).status_code == 204  # idempotent
    again = services.assignment_claim(queue=queue, annotator=crowdworker)
    assert again.task == task


def test_opening_another_queue_releases_the_first(client, project, crowdworker):
    first, second = QueueFactory(project=project), QueueFactory(project=project)
    held = TaskFactory(queue=first)
    TaskFactory(queue=second)
    client.force_login(crowdworker)
    client.get(reverse("work", args=[first.pk]))
    assert Task.objects.get(pk=held.pk).active_count == 1
    client.get(reverse("work", args=[second.pk]))
    assert Assignment.objects.get(task=held).state == Assignment.State.EXPIRED
    assert Task.objects.get(pk=held.pk).active_count == 0
    # and over the API too
    api = APIClient()
    api.force_authenticate(crowdworker)
    api.post(f"/api/queues/{first.pk}/next/")
    assert (
        Assignment.objects.filter(queue=second, annotator=crowdworker, state="leased").count() == 0
    )


def test_people_page_shows_who_holds_what_since_when(client, queue, crowdworker, curator):
    task = TaskFactory(queue=queue)
    services.assignment_claim(queue=queue, annotator=crowdworker)
    client.force_login(curator)
    html = client.get(reverse("curator-project-people", args=[queue.project_id])).content.decode()
    row = html[html.index(f'id="person-{crowdworker.pk}"') :]
    row = row[: row.index("</tr>")]
    assert f"#{task.pk}" in row and queue.title in row and "since" in row


def test_release_by_someone_removed_from_the_project_is_404(client, queue, crowdworker):
    task = TaskFactory(queue=queue)
    services.assignment_claim(queue=queue, annotator=crowdworker)
    queue.project.members.remove(crowdworker)
    client.force_login(crowdworker)
    assert client.post(reverse("work-release", args=[task.pk])).status_code == 404
