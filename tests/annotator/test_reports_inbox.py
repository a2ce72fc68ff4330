"""The reports inbox: every "Report a problem" reaches it; resolve, requeue, cancel."""

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from annotator import selectors, services
from annotator.models import Assignment, Report, Task
from annotator.platform.errors import Conflict, Invalid, NotFound
from tests.factories import ProjectFactory, QueueFactory, TaskFactory

pytestmark = pytest.mark.django_db


def reported(queue, person, reason="broken_image", details=""):
    claim = services.assignment_claim(queue=queue, annotator=person)
    services.assignment_report(
        task_id=claim.task.pk, annotator=person, reason=reason, details=details
    )
    return claim.task


@pytest.fixture
def inbox(project, crowdworker, other_worker):
    """Two reports on two tasks of a one-answer queue (each person holds one before reporting)."""
    queue = QueueFactory(project=project, redundancy=1, max_redundancy=1)
    tasks = [TaskFactory(queue=queue) for _ in range(3)]
    first = services.assignment_claim(queue=queue, annotator=crowdworker).task
    second = services.assignment_claim(queue=queue, annotator=other_worker).task
    services.assignment_report(task_id=first.pk, annotator=crowdworker, reason="broken_image")
    services.assignment_report(
        task_id=second.pk,
        annotator=other_worker,
        reason="other",
        details="The two images are the same",
    )
    return queue, tasks, first, second


def test_every_report_reaches_the_inbox_with_reason_who_and_when(project, inbox, crowdworker):
    queue, _tasks, first, second = inbox
    reports = list(selectors.project_reports(project))
    assert [(r.task_id, r.reporter.username, r.reason) for r in reports] == [
        (second.pk, "worker2", "other: The two images are the same"),
        (first.pk, "worker", "broken_image"),
    ]
    assert all(r.status == "open" and r.created_at for r in reports)
    assert selectors.open_report_counts(project) == {queue.pk: 2}


def test_resolve_keeps_the_task_as_it_was(project, inbox, curator):
    queue, _tasks, first, _second = inbox
    report = Report.objects.get(task=first)
    before = Task.objects.filter(pk=first.pk).values().get()
    done = services.report_handle(
        reports=selectors.managed_reports_for(curator),
        report_id=report.pk,
        action="resolve",
        by=curator,
        note="image fixed",
    )
    report.refresh_from_db()
    assert (report.status, report.handled_by, report.note) == ("resolved", curator, "image fixed")
    assert report.handled_at is not None
    assert Task.objects.filter(pk=first.pk).values().get() == before
    assert "resolved" in done.message
    # a second action on it is refused with who handled it
    with pytest.raises(Conflict, match="curator"):
        services.report_handle(
            reports=selectors.managed_reports_for(curator),
            report_id=report.pk,
            action="cancel",
            by=curator,
        )


def test_requeue_offers_the_task_to_its_reporter_again(project, inbox, curator, crowdworker):
    queue, _tasks, first, _second = inbox
    report = Report.objects.get(task=first)
    services.report_handle(
        reports=selectors.managed_reports_for(curator),
        report_id=report.pk,
        action="requeue",
        by=curator,
    )
    assert Assignment.objects.get(task=first, annotator=crowdworker).state == "expired"
    assert Report.objects.get(pk=report.pk).status == "requeued"
    assert first.pk in selectors_free_for(queue, crowdworker)
    # and the claim gives it to them (the lowest id with a free slot)
    assert services.assignment_claim(queue=queue, annotator=crowdworker).task == first


def selectors_free_for(queue, person) -> set[int]:
    """Tasks the claim may offer ``person`` (open, a free slot, not theirs but expired)."""
    mine = Assignment.objects.filter(annotator=person).exclude(state="expired")
    return set(
        Task.objects.filter(queue=queue, state="open")
        .exclude(pk__in=mine.values("task_id"))
        .values_list("pk", flat=True)
    )


def test_cancel_withdraws_the_task_and_closes_its_reports(
    project, curator, crowdworker, other_worker
):
    queue = QueueFactory(project=project, redundancy=2, max_redundancy=2)
    task = TaskFactory(queue=queue)
    assert reported(queue, crowdworker) == task
    assert reported(queue, other_worker, "unclear") == task
    first = Report.objects.filter(task=task).order_by("id").first()
    done = services.report_handle(
        reports=selectors.managed_reports_for(curator),
        report_id=first.pk,
        action="cancel",
        by=curator,
    )
    task.refresh_from_db()
    assert task.state == "cancelled"
    assert set(Report.objects.filter(task=task).values_list("status", flat=True)) == {"cancelled"}
    assert done.closed == 2
    # requeue or cancel of a task no longer open is refused: resolve it instead
    reported_elsewhere = TaskFactory(queue=queue)
    Report.objects.create(task=reported_elsewhere, queue=queue, reporter=crowdworker, reason="x")
    Task.objects.filter(pk=reported_elsewhere.pk).update(state="decided")
    late = Report.objects.get(task=reported_elsewhere)
    with pytest.raises(Conflict, match="resolve"):
        services.report_handle(
            reports=selectors.managed_reports_for(curator),
            report_id=late.pk,
            action="requeue",
            by=curator,
        )


def test_refusals(project, inbox, curator, researcher):
    _queue, _tasks, first, _second = inbox
    report = Report.objects.get(task=first)
    with pytest.raises(Invalid):
        services.report_handle(
            reports=selectors.managed_reports_for(curator),
            report_id=report.pk,
            action="delete",
            by=curator,
        )
    # a researcher reads reports but handles none; another project's curator sees none
    with pytest.raises(NotFound):
        services.report_handle(
            reports=selectors.managed_reports_for(researcher),
            report_id=report.pk,
            action="resolve",
            by=researcher,
        )
    assert selectors.reports_for(researcher).filter(pk=report.pk).exists()
    other = ProjectFactory()
    assert not Report.objects.filter(queue__project=other).exists()
    assert Report.objects.get(pk=report.pk).status == "open"


def test_the_inbox_page_and_the_api(client, project, inbox, curator, researcher):
    queue, _tasks, first, second = inbox
    url = reverse("curator-project-reports", args=[project.pk])
    client.force_login(researcher)
    html = client.get(url).content.decode()
    assert "The two images are the same" in html and "broken_image" in html
    assert reverse("curator-report-handle", args=[1])[: -len("1/handle/")] not in html
    client.force_login(curator)
    html = client.get(url + f"?queue={queue.pk}").content.decode()
    report = Report.objects.get(task=first)
    assert reverse("curator-report-handle", args=[report.pk]) in html
    assert client.get(url + "?status=nonsense").status_code == 400
    # the API lists, handles, and exports
    api = APIClient()
    api.force_login(curator)
    listed = api.get(f"/api/projects/{project.pk}/reports/").json()
    assert [(r["task"], r["reporter"], r["status"]) for r in listed["results"]] == [
        (second.pk, "worker2", "open"),
        (first.pk, "worker", "open"),
    ]
    assert api.get(f"/api/projects/{project.pk}/reports/?status=x").status_code == 400
    done = api.post(
        f"/api/reports/{report.pk}/handle/", {"action": "resolve", "note": "ok"}, format="json"
    )
    assert done.status_code == 200, done.content
    assert (done.json()["report"]["status"], done.json()["report"]["handled_by"]) == (
        "resolved",
        "curator",
    )
    again = api.post(f"/api/reports/{report.pk}/handle/", {"action": "resolve"}, format="json")
    assert again.status_code == 409 and "curator" in again.json()["message"]
    bad = api.post(f"/api/reports/{report.pk}/handle/", {"action": "drop"}, format="json")
    assert bad.status_code == 400
    csv_text = b"".join(
        api.get(f"/api/queues/{queue.pk}/reports/?format=csv").streaming_content
    ).decode()
    lines = csv_text.splitlines()
    assert lines[0].split(",")[:4] == ["id", "task_id", "external_id", "reason"]
    assert len(lines) == 3 and "resolved" in csv_text and "other: The two images" in csv_text
    # the project page counts the open ones
    html = client.get(reverse("curator-project", args=[project.pk])).content.decode()
    assert 'data-testid="queue-open-reports"' in html and "1 report" in html
