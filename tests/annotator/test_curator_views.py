"""Curator and researcher pages: queues, uploads, status, invitations, jobs."""

import json

import pytest
from django.urls import reverse

from annotator import forms, kinds, services
from annotator.models import Enrollment, Task, TaskQueue
from annotator.platform import roles
from annotator.platform.models import Invitation, Job, Project
from tests.factories import PASSWORD, ProjectFactory, QueueFactory, TaskFactory, vqa_payload


def queue_post(**overrides) -> dict:
    data = {
        "kind": "vqa_choice",
        "title": "Is it red?",
        "instructions": "Look **closely**.",
        "config": "{}",
        "redundancy": 3,
        "rule": "majority",
        "max_redundancy": 5,
        "lease_minutes": 7,
        "priority": 2,
        "gold_rate": 0.1,
        "qualification_count": 0,
        "qualification_min_accuracy": 0.8,
        "gold_pause_below": "",
        "gold_pause_min_answers": 5,
        "outcome_handler": "",
    }
    data.update(overrides)
    return data


@pytest.fixture
def curator_client(client, curator):
    client.force_login(curator)
    return client


@pytest.fixture
def researcher_client(client, researcher):
    client.force_login(researcher)
    return client


# --- queues ------------------------------------------------------------------------------------
def test_create_queue(curator_client, project):
    url = reverse("curator-queue-new", args=[project.pk])
    response = curator_client.post(url, queue_post())
    queue = TaskQueue.objects.get(project=project)
    assert response.status_code == 302
    assert response.url == reverse("curator-queue-upload", args=[queue.pk])
    assert (queue.kind, queue.redundancy, queue.max_redundancy, queue.priority) == (
        "vqa_choice",
        3,
        5,
        2,
    )
    assert queue.lease_ttl.total_seconds() == 7 * 60


def test_create_queue_empty_config_takes_the_kinds_default(curator_client, project):
    url = reverse("curator-queue-new", args=[project.pk])
    curator_client.post(url, queue_post(kind="skill_tags", config=""))
    queue = TaskQueue.objects.get(project=project)
    assert queue.config["taxonomy"][0]["group"] == "Attribute"


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ("{not json", "Not valid JSON"),
        ("[1, 2]", "must be a JSON object"),
        ('{"min_length": NaN}', "NaN is not a number JSON can store"),
        ('{"taxonomy": []}', "config.taxonomy"),
        ('{"taxonomy": [{"group": "A", "tags": [{"id": "x", "label": "X", "key": "s"}]}]}',
         "shortcut keys"),
    ],
)  # fmt: skip
def test_create_queue_with_bad_config_saves_nothing(curator_client, project, config, expected):
    url = reverse("curator-queue-new", args=[project.pk])
    response = curator_client.post(url, queue_post(kind="skill_tags", config=config))
    assert response.status_code == 200
    assert expected in response.content.decode()
    assert "Nothing was saved" in response.content.decode()
    assert TaskQueue.objects.filter(project=project).count() == 0


def test_edit_queue_bad_config_keeps_old_values(curator_client, project):
    queue = QueueFactory(project=project, kind="review", config={"criteria": ["ok"]})
    url = reverse("curator-queue-edit", args=[queue.pk])
    response = curator_client.post(
        url, queue_post(kind="review", title="Renamed", config='{"criteria": "not a list"}')
    )
    assert response.status_code == 200
    assert "config.criteria" in response.content.decode()
    queue.refresh_from_db()
    assert (queue.title, queue.config) != ("Renamed", {"criteria": "not a list"})
    assert queue.config == {"criteria": ["ok"]}


def test_edit_queue_saves_and_cannot_change_kind(curator_client, project):
    queue = QueueFactory(project=project, kind="vqa_choice")
    url = reverse("curator-queue-edit", args=[queue.pk])
    response = curator_client.post(url, queue_post(kind="review", title="Renamed", redundancy=1))
    assert response.status_code == 302
    queue.refresh_from_db()
    assert (queue.title, queue.kind, queue.redundancy) == ("Renamed", "vqa_choice", 1)


def test_pause_and_resume(curator_client, queue):
    url = reverse("curator-queue-status", args=[queue.pk])
    curator_client.post(url, {"status": "paused"})
    queue.refresh_from_db()
    assert queue.status == TaskQueue.Status.PAUSED
    curator_client.post(url, {"status": "open"})
    queue.refresh_from_db()
    assert queue.status == TaskQueue.Status.OPEN


def test_resume_a_paused_annotator(curator_client, queue, crowdworker):
    enrollment = Enrollment.objects.create(
        queue=queue, annotator=crowdworker, state=Enrollment.State.PAUSED, reason="low gold"
    )
    page = curator_client.get(reverse("curator-queue", args=[queue.pk]))
    resume_url = reverse("curator-enrollment-resume", args=[enrollment.pk])
    assert resume_url in page.content.decode()
    curator_client.post(resume_url)
    enrollment.refresh_from_db()
    assert (enrollment.state, enrollment.reason) == (Enrollment.State.ACTIVE, "")


def test_queue_dashboard_shows_counts(curator_client, queue, crowdworker, other_worker):
    task = TaskFactory(queue=queue)
    TaskFactory(queue=queue)
    for person in (crowdworker, other_worker):
        services.assignment_claim(queue=queue, annotator=person)
        services.annotation_submit(task_id=task.pk, annotator=person, response={"answer": "Yes"})
    response = curator_client.get(reverse("curator-queue", args=[queue.pk]))
    html = response.content.decode()
    assert response.status_code == 200
    assert response.context["progress"]["decided"] == 1
    assert response.context["progress"]["total"] == 2
    assert f"/api/queues/{queue.pk}/outcomes/?format=csv" in html
    assert {a["username"] for a in response.context["annotators"]} == {"worker", "worker2"}


# --- upload ------------------------------------------------------------------------------------
def test_upload_bad_jsonl_lists_every_line_and_writes_nothing(curator_client, queue):
    lines = [
        json.dumps(vqa_payload(1)),
        "{broken",
        json.dumps({"question": "no image", "choices": ["a", "b"]}),
        json.dumps(vqa_payload(2)),
        "[1]",
    ]
    url = reverse("curator-queue-upload", args=[queue.pk])
    response = curator_client.post(url, {"text": "\n".join(lines)})
    html = response.content.decode()
    assert response.status_code == 400
    errors = response.context["error"].errors
    assert [e["line"] for e in errors] == [2, 3, 5]  # unreadable and schema errors, together
    assert "payload" in errors[1]["error"]
    assert "not valid JSON" in html
    assert Task.objects.count() == 0
    assert Job.objects.count() == 0
    # once the lines parse, schema errors are listed with their line numbers too
    response = curator_client.post(url, {"text": "\n".join([lines[0], lines[2], lines[3]])})
    assert [e["line"] for e in response.context["error"].errors] == [2]
    assert "payload" in response.context["error"].errors[0]["error"]
    assert Task.objects.count() == 0


def test_good_upload_imports_tasks(
    curator_client, queue, eager, django_capture_on_commit_callbacks
):
    rows = [json.dumps(vqa_payload(i)) for i in range(3)]
    rows.append(json.dumps({"id": "g1", "payload": vqa_payload(9), "gold": {"answer": "No"}}))
    url = reverse("curator-queue-upload", args=[queue.pk])
    with django_capture_on_commit_callbacks(execute=True):
        response = curator_client.post(url, {"text": "\n".join(rows)})
    job = Job.objects.get()
    assert response.status_code == 302
    assert response.url == reverse("curator-job", args=[job.pk])
    job.refresh_from_db()
    assert job.status == Job.Status.SUCCEEDED, job.error
    assert (job.done, job.total) == (4, 4)
    assert Task.objects.filter(queue=queue, is_gold=False).count() == 3
    gold = Task.objects.get(queue=queue, is_gold=True)
    assert (gold.external_id, gold.gold) == ("g1", {"answer": "No"})
    page = curator_client.get(reverse("curator-job", args=[job.pk]))
    assert page.status_code == 200
    assert "hx-trigger" not in page.content.decode()  # finished jobs stop polling


def test_upload_file_field(curator_client, queue, eager, django_capture_on_commit_callbacks):
    from django.core.files.uploadedfile import SimpleUploadedFile

    data = "\n".join(json.dumps(vqa_payload(i)) for i in range(2)).encode()
    url = reverse("curator-queue-upload", args=[queue.pk])
    with django_capture_on_commit_callbacks(execute=True):
        curator_client.post(url, {"file": SimpleUploadedFile("t.jsonl", data)})
    assert Task.objects.filter(queue=queue).count() == 2


def test_upload_page_shows_example_for_kind(curator_client, project):
    queue = QueueFactory(project=project, kind="forced_choice")
    html = curator_client.get(reverse("curator-queue-upload", args=[queue.pk])).content.decode()
    assert "candidates" in html


# --- jobs --------------------------------------------------------------------------------------
def test_running_job_row_polls_and_retry_copies_failed_job(
    curator_client, project, curator, django_capture_on_commit_callbacks
):
    running = Job.objects.create(kind="annotator.import_tasks", project=project, total=10, done=3)
    failed = Job.objects.create(
        kind="annotator.nope", project=project, status=Job.Status.FAILED, error="Boom: broken"
    )
    page = curator_client.get(reverse("curator-jobs"))
    html = page.content.decode()
    assert 'hx-trigger="every 1s"' in html
    assert html.count('hx-trigger="every 1s"') == 1
    assert "Boom: broken" in html
    row = curator_client.get(
        reverse("curator-job", args=[running.pk]) + "?part=row", HTTP_HX_REQUEST="true"
    )
    assert row.content.decode().lstrip().startswith("<tr")
    assert "every 1s" in row.content.decode()
    with django_capture_on_commit_callbacks(execute=False):
        response = curator_client.post(reverse("curator-job-retry", args=[failed.pk]))
    copy = Job.objects.exclude(pk__in=[running.pk, failed.pk]).get()
    assert response.url == reverse("curator-job", args=[copy.pk])
    assert (copy.kind, copy.status, copy.created_by) == ("annotator.nope", "queued", curator)


def test_jobs_page_query_count(curator_client, project, django_assert_max_num_queries):
    for i in range(30):
        Job.objects.create(kind="annotator.import_tasks", project=project, total=i)
    with django_assert_max_num_queries(8):
        response = curator_client.get(reverse("curator-jobs"))
    assert response.status_code == 200


def test_projects_page_query_count(curator_client, curator, django_assert_max_num_queries):
    for _i in range(5):
        project = ProjectFactory(members=[curator])
        for _j in range(3):
            TaskFactory(queue=QueueFactory(project=project))
    with django_assert_max_num_queries(10):
        response = curator_client.get(reverse("curator-projects"))
    assert response.status_code == 200
    assert len(response.context["projects"]) == 5


def test_disagreements_query_count(curator_client, queue, django_assert_max_num_queries):
    for _i in range(15):
        TaskFactory(queue=queue, state=Task.State.UNDECIDED, agreement=0.5)
    with django_assert_max_num_queries(12):
        response = curator_client.get(reverse("curator-queue-disagreements", args=[queue.pk]))
    assert response.status_code == 200
    assert response.context["page"].paginator.count == 15


def test_disagreements_show_all_responses_side_by_side(
    curator_client, queue, crowdworker, other_worker
):
    task = TaskFactory(queue=queue)
    for person, answer in ((crowdworker, "Yes"), (other_worker, "No")):
        services.assignment_claim(queue=queue, annotator=person)
        services.annotation_submit(
            task_id=task.pk, annotator=person, response={"answer": answer}, duration_ms=4200
        )
    task.refresh_from_db()
    assert task.state == Task.State.UNDECIDED
    html = curator_client.get(
        reverse("curator-queue-disagreements", args=[queue.pk])
    ).content.decode()
    for text in ("worker", "worker2", ">Yes<", ">No<", "4 s"):
        assert text in html
    detail = curator_client.get(reverse("curator-task", args=[task.pk]))
    assert detail.status_code == 200
    assert "worker2" in detail.content.decode()


# --- invitations -------------------------------------------------------------------------------
def test_invite_flow_is_one_time(client, curator, project):
    client.force_login(curator)
    client.post(
        reverse("curator-invites"), {"role": "crowdworker", "project": project.pk, "days": 3}
    )
    invitation = Invitation.objects.get()
    assert (invitation.role, invitation.project) == ("crowdworker", project)
    client.logout()
    url = reverse("invite-accept", args=[invitation.token])
    assert client.get(url).status_code == 200
    response = client.post(
        url, {"username": "newbie", "password1": PASSWORD, "password2": PASSWORD}
    )
    assert response.status_code == 302
    assert response.url == reverse("home")
    from django.contrib.auth import get_user_model

    user = get_user_model().objects.get(username="newbie")
    assert roles.user_roles(user) == {"crowdworker"}
    assert project.members.filter(pk=user.pk).exists()
    assert int(client.session["_auth_user_id"]) == user.pk
    client.logout()
    assert client.get(url).status_code == 404
    again = client.post(url, {"username": "other", "password1": PASSWORD, "password2": PASSWORD})
    assert again.status_code == 404
    assert not get_user_model().objects.filter(username="other").exists()


def test_curator_cannot_invite_admin(curator_client):
    response = curator_client.post(reverse("curator-invites"), {"role": "admin", "days": 3})
    assert response.status_code == 200
    assert Invitation.objects.count() == 0


def test_invite_bad_password_creates_nobody(client, curator):
    invitation = services.invitation_create(created_by=curator, role=roles.RESEARCHER)
    url = reverse("invite-accept", args=[invitation.token])
    response = client.post(url, {"username": "x", "password1": "abc", "password2": "abc"})
    assert response.status_code == 200
    invitation.refresh_from_db()
    assert invitation.used_at is None


def test_token_page_and_regenerate(client, crowdworker):
    from rest_framework.authtoken.models import Token

    client.force_login(crowdworker)
    response = client.get(reverse("token"))
    first = Token.objects.get(user=crowdworker).key
    assert first in response.content.decode()
    client.post(reverse("token"))
    assert Token.objects.get(user=crowdworker).key != first


# --- researchers read, never change -----------------------------------------------------------
def test_researcher_reads_but_cannot_change(researcher_client, queue, crowdworker):
    task = TaskFactory(queue=queue)
    enrollment = Enrollment.objects.create(
        queue=queue, annotator=crowdworker, state=Enrollment.State.PAUSED
    )
    for name, args in [
        ("curator-projects", []),
        ("curator-project", [queue.project_id]),
        ("curator-queue", [queue.pk]),
        ("curator-queue-disagreements", [queue.pk]),
        ("curator-task", [task.pk]),
        ("curator-jobs", []),
    ]:
        assert researcher_client.get(reverse(name, args=args)).status_code == 200, name
    html = researcher_client.get(reverse("curator-queue", args=[queue.pk])).content.decode()
    assert reverse("curator-queue-status", args=[queue.pk]) not in html
    before = (TaskQueue.objects.values().get(pk=queue.pk), Task.objects.count())
    posts = [
        (reverse("curator-queue-status", args=[queue.pk]), {"status": "closed"}),
        (reverse("curator-queue-edit", args=[queue.pk]), queue_post(title="Hacked")),
        (reverse("curator-queue-upload", args=[queue.pk]), {"text": json.dumps(vqa_payload())}),
        (reverse("curator-queue-new", args=[queue.project_id]), queue_post()),
        (reverse("curator-enrollment-resume", args=[enrollment.pk]), {}),
        (reverse("curator-invites"), {"role": "curator", "days": 3}),
        (reverse("curator-project-new"), {"name": "X", "slug": "x"}),
    ]
    for url, data in posts:
        assert researcher_client.post(url, data).status_code == 404, url
    assert (TaskQueue.objects.values().get(pk=queue.pk), Task.objects.count()) == before
    enrollment.refresh_from_db()
    assert enrollment.state == Enrollment.State.PAUSED
    assert Invitation.objects.count() == 0
    assert Job.objects.count() == 0
    assert TaskQueue.objects.count() == 1


def test_queue_of_another_project_is_404(curator_client):
    foreign = QueueFactory()  # a project the curator is not a member of
    for name in ("curator-queue", "curator-queue-edit", "curator-queue-upload"):
        assert curator_client.get(reverse(name, args=[foreign.pk])).status_code == 404
    assert curator_client.get(reverse("curator-queue", args=[999999])).status_code == 404
    response = curator_client.post(
        reverse("curator-queue-status", args=[foreign.pk]), {"status": "closed"}
    )
    assert response.status_code == 404
    foreign.refresh_from_db()
    assert foreign.status == TaskQueue.Status.OPEN


def test_create_project(curator_client, curator):
    response = curator_client.post(
        reverse("curator-project-new"), {"name": "NaturalBench", "slug": "nb", "description": ""}
    )
    project = Project.objects.get(slug="nb")
    assert response.url == reverse("curator-project", args=[project.pk])
    assert project.members.filter(pk=curator.pk).exists()
    empty = curator_client.get(response.url).content.decode()
    assert "Create a queue" in empty and "Upload tasks" in empty


@pytest.mark.parametrize("kind", sorted(forms.DEFAULT_CONFIGS))
def test_default_configs_and_examples_fit_their_kind(kind):
    k = kinds.get_kind(kind)
    k.validate_config(forms.DEFAULT_CONFIGS[kind])
    k.validate_payload(forms.EXAMPLE_PAYLOADS[kind])
    k.validate_gold(
        forms.EXAMPLE_GOLD[kind], forms.DEFAULT_CONFIGS[kind], forms.EXAMPLE_PAYLOADS[kind]
    )
    assert set(forms.DEFAULT_CONFIGS) == set(kinds.REGISTRY)


def _count_queries(client, url) -> int:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as ctx:
        assert client.get(url).status_code == 200
    return len(ctx.captured_queries)


def test_dashboard_and_project_pages_have_no_n_plus_1(curator_client, project, queue):
    from tests.factories import UserFactory

    def answer(n_people: int) -> None:
        for _i in range(n_people):
            person = UserFactory(role=roles.CROWDWORKER)
            project.members.add(person)
            TaskFactory(queue=queue)
            held = services.assignment_claim(queue=queue, annotator=person).assignment
            services.annotation_submit(
                task_id=held.task_id, annotator=person, response={"answer": "No"}
            )
            Enrollment.objects.filter(annotator=person).update(state=Enrollment.State.PAUSED)
            Job.objects.create(
                kind="annotator.import_tasks", project=project, params={"queue_id": queue.pk}
            )
            QueueFactory(project=project)

    pages = [
        reverse("curator-queue", args=[queue.pk]),
        reverse("curator-project", args=[project.pk]),
        reverse("curator-invites"),
    ]
    answer(1)
    small = [_count_queries(curator_client, url) for url in pages]
    answer(6)
    big = [_count_queries(curator_client, url) for url in pages]
    assert big == small
    assert max(small) <= 25
