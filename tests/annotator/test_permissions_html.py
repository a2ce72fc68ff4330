"""Every HTML view × {anonymous, crowdworker, curator, researcher}.

Anonymous users are sent to the login page, users without the view's role get 404 (exactly like a
missing object), and a refused request changes nothing. A crowdworker never sees gold answers or
other people's responses on any page they can reach.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.views import redirect_to_login
from django.urls import reverse
from rest_framework.authtoken.models import Token

from annotator import services
from annotator import urls as annotator_urls
from annotator.models import (
    Annotation,
    Assignment,
    Enrollment,
    Report,
    SentBackAnnotation,
    Task,
    TaskQueue,
)
from annotator.platform import roles
from annotator.platform.models import Invitation, Job, Project, Webhook, WebhookDelivery
from tests.factories import QueueFactory, TaskFactory, vqa_payload

ROLES = ["anonymous", roles.CROWDWORKER, roles.CURATOR, roles.RESEARCHER]
QUEUE_POST = {
    "kind": "vqa_choice",
    "title": "Hacked",
    "config": "{}",
    "redundancy": 1,
    "rule": "majority",
    "max_redundancy": 1,
    "lease_minutes": 1,
    "priority": 99,
    "gold_rate": 0,
    "qualification_count": 0,
    "qualification_min_accuracy": 0,
    "gold_pause_min_answers": 1,
}


SETTLE_POST = {"pick": "majority", "reason": "settled from the matrix"}
SEND_BACK_POST = {"annotator": "worker2", "note": "look at the left image"}
HOOK_POST = {"url": "https://hooks.example.org/evil", "events": ["task.decided"]}


@dataclass
class View:
    args: list[str] = field(default_factory=list)  # attributes of the World, in order
    get: bool = True
    post: dict | None = None  # form data for a POST that would change something if accepted
    ok: tuple[int, ...] = (200, 204, 302)  # what an allowed role's request answers


class Of:
    """A form value read from the World (an id known only once the world is built)."""

    def __init__(self, name: str):
        self.name = name


def form_data(name: str, w: World) -> dict:
    post = VIEWS[name].post or {}
    return {k: getattr(w, v.name) if isinstance(v, Of) else v for k, v in post.items()}


# Every named HTML view of both helpers; a test below fails when a view is missing from here.
VIEWS: dict[str, View] = {
    # workspace
    "home": View(),
    "login": View(),
    "logout": View(get=False, post={}),
    "work": View(["queue"]),
    "work-submit": View(["held_task"], get=False, post={"answer": "Yes"}),
    "work-skip": View(["held_task"], get=False, post={}),
    "work-report": View(["held_task"], get=False, post={"reason": "broken_image"}),
    "work-heartbeat": View(["held_task"], get=False, post={}),
    "work-release": View(["held_task"], get=False, post={}),
    "work-undo": View(["queue"], get=False, post={}),
    "work-task-undo": View(["held_task"], get=False, post={}),
    "work-history": View(["queue"]),
    "work-progress": View(["queue"]),
    # curator
    "curator-projects": View(post={}),
    "curator-project-new": View(post={"name": "Evil", "slug": "evil"}),
    "curator-project": View(["project"], post={}),
    "curator-project-people": View(["project"], post={}),
    "curator-project-member-remove": View(["project", "member"], post={}),
    "curator-queue-new": View(["project"], post=QUEUE_POST),
    "curator-queue": View(["queue"], post={}),
    "curator-queue-edit": View(["queue"], post=QUEUE_POST),
    "curator-queue-status": View(["queue"], get=False, post={"status": "closed"}),
    "curator-queue-upload": View(["queue"], post={"text": json.dumps(vqa_payload(7))}),
    "curator-queue-disagreements": View(["queue"], post={}),
    "curator-queue-tasks-cancel": View(
        ["queue"], get=False, post={"ids": Of("held_task"), "reason": "withdrawn"}
    ),
    "curator-task": View(["held_task"], post={}),
    "curator-enrollment-resume": View(["enrollment"], get=False, post={}),
    "curator-invites": View(post={"role": "curator", "days": 3}),
    "invite-accept": View(["token"]),
    "token": View(post={}),
    "curator-jobs": View(post={}),
    "curator-job": View(["job"], post={}),
    "curator-job-retry": View(["job"], get=False, post={}),
    # the task browser and settling
    "curator-queue-tasks": View(["queue"]),
    "curator-queue-tasks-settle": View(["queue"], get=False, post=SETTLE_POST),
    "curator-task-settle": View(["held_task"], get=False, post=SETTLE_POST),
    # review: send back other_worker's answer to the held task; the reports inbox
    "curator-task-send-back": View(["held_task"], get=False, post=SEND_BACK_POST),
    "curator-project-reports": View(["project"]),
    "curator-report-handle": View(["report"], get=False, post={"action": "resolve"}),
    # webhooks
    # No public host resolves on a machine without a network, so an allowed curator's POST is
    # refused by the address check (400, the form again); test_webhooks registers real hooks.
    "curator-webhooks": View(["project"], post=HOOK_POST, ok=(200, 400)),
    "curator-webhook": View(["webhook"], post=HOOK_POST, ok=(200, 400)),
    "curator-webhook-test": View(["webhook"], get=False, post={}),
    "curator-webhook-active": View(["webhook"], get=False, post={"active": "0"}),
    "curator-webhook-secret": View(["webhook"], get=False, post={}),
    "curator-webhook-delete": View(["webhook"], get=False, post={}),
}
PATTERNS = {p.name: p for p in annotator_urls.urlpatterns}


@dataclass
class World:
    users: dict
    project: int
    member: int
    queue: int
    held_task: int
    enrollment: int
    job: int
    webhook: int
    token: str
    report: int


@pytest.fixture
def world(project, queue, crowdworker, other_worker, curator, researcher) -> World:
    task = TaskFactory(queue=queue)
    TaskFactory(queue=queue)
    services.assignment_claim(queue=queue, annotator=crowdworker)  # crowdworker holds `task`
    # other_worker answers `task` too (a curator may send it back) and reports the other one
    assert services.assignment_claim(queue=queue, annotator=other_worker).task == task
    following = services.annotation_submit(
        task_id=task.pk, annotator=other_worker, response={"answer": "No"}
    ).next.assignment
    services.assignment_report(
        task_id=following.task_id, annotator=other_worker, reason="broken_image"
    )
    enrollment, _made = Enrollment.objects.update_or_create(
        queue=queue,
        annotator=other_worker,
        defaults={"state": Enrollment.State.PAUSED, "reason": "low gold"},
    )
    job = Job.objects.create(
        kind="annotator.import_tasks",
        params={"queue_id": queue.pk, "rows": []},
        project=project,
        status=Job.Status.FAILED,
        error="boom",
    )
    invitation = services.invitation_create(created_by=curator, role=roles.CROWDWORKER)
    hook = Webhook.objects.create(
        project=project, url="https://hooks.example.org/in", events=["task.decided"], secret="s"
    )
    return World(
        users={
            roles.CROWDWORKER: crowdworker,
            roles.CURATOR: curator,
            roles.RESEARCHER: researcher,
        },
        project=project.pk,
        member=other_worker.pk,
        queue=queue.pk,
        held_task=task.pk,
        enrollment=enrollment.pk,
        job=job.pk,
        webhook=hook.pk,
        token=invitation.token,
        report=Report.objects.get(reporter=other_worker).pk,
    )


def snapshot() -> dict:
    """Everything a refused request could have changed."""
    return {
        "counts": {
            m.__name__: m.objects.count()
            for m in (
                Project,
                TaskQueue,
                Task,
                Assignment,
                Annotation,
                Enrollment,
                Invitation,
                Job,
                Token,
                WebhookDelivery,
                SentBackAnnotation,
                get_user_model(),
            )
        },
        "reports": list(Report.objects.order_by("pk").values("status", "handled_at")),
        "queues": list(TaskQueue.objects.order_by("pk").values()),
        "tasks": list(
            Task.objects.order_by("pk").values(
                "state", "active_count", "done_count", "required", "settled_at"
            )
        ),
        "assignments": list(
            Assignment.objects.order_by("pk").values("state", "expires_at", "report_reason")
        ),
        "enrollments": list(Enrollment.objects.order_by("pk").values("state", "reason")),
        "invitations": list(Invitation.objects.order_by("pk").values("used_at")),
        "jobs": list(Job.objects.order_by("pk").values("status")),
        "webhooks": list(Webhook.objects.order_by("pk").values()),
    }


def url_for(name: str, w: World) -> str:
    return reverse(name, args=[getattr(w, a) for a in VIEWS[name].args])


def allowed(name: str, role: str) -> bool | None:
    """None: a public view; otherwise whether this role may use it."""
    view_roles = getattr(PATTERNS[name].callback, "roles", None)
    if not view_roles:
        return None
    return role != "anonymous" and role in view_roles


def cases():
    for name, view in VIEWS.items():
        for role in ROLES:
            if view.get:
                yield pytest.param(name, role, "get", id=f"{name}-{role}-get")
            if view.post is not None:
                yield pytest.param(name, role, "post", id=f"{name}-{role}-post")


def test_the_matrix_covers_every_html_view():
    assert set(PATTERNS) == set(VIEWS)
    for name, pattern in PATTERNS.items():
        assert hasattr(pattern.callback, "roles"), f"{name} declares no roles"


@pytest.mark.parametrize(("name", "role", "method"), list(cases()))
def test_permission_matrix(client, world, name, role, method):
    if role != "anonymous":
        client.force_login(world.users[role])
    url = url_for(name, world)
    before = snapshot()
    if method == "get":
        response = client.get(url)
    else:
        response = client.post(url, form_data(name, world))
    may = allowed(name, role)
    if may is None:  # public: login, logout, invitation links
        assert response.status_code in (200, 302), response.status_code
    elif role == "anonymous":
        assert response.status_code == 302
        assert response.url == redirect_to_login(url).url
        assert snapshot() == before
    elif not may:
        assert response.status_code == 404
        assert snapshot() == before
    else:
        assert response.status_code in VIEWS[name].ok, response.status_code


def test_out_of_reach_objects_answer_like_missing_ones(client, world, curator, researcher):
    foreign_queue = QueueFactory()  # another project
    foreign_task = TaskFactory(queue=foreign_queue)
    foreign_job = Job.objects.create(kind="annotator.import_tasks", project=foreign_queue.project)
    ids = {"project": foreign_queue.project_id, "queue": foreign_queue.pk}
    ids |= {"held_task": foreign_task.pk, "job": foreign_job.pk, "enrollment": 10**9}
    foreign_hook = Webhook.objects.create(
        project=foreign_queue.project, url="https://hooks.example.org/x", events=[], secret="s"
    )
    ids |= {"member": world.member, "webhook": foreign_hook.pk}
    ids["report"] = Report.objects.create(
        task=foreign_task, queue=foreign_queue, reporter=world.users["crowdworker"], reason="x"
    ).pk
    for user in (curator, researcher):
        client.force_login(user)
        for name, view in VIEWS.items():
            if not view.args or name.startswith("work") or name == "invite-accept":
                continue
            url = reverse(name, args=[ids[a] for a in view.args])
            before = snapshot()
            data = form_data(name, world)
            response = client.get(url) if view.get else client.post(url, data)
            assert response.status_code == 404, (user, name)
            missing = reverse(name, args=[10**9 for _a in view.args])
            again = client.get(missing) if view.get else client.post(missing, data)
            assert again.status_code == 404
            assert snapshot() == before


@pytest.mark.parametrize("kind", ["write_text", "vqa_choice"])
def test_crowdworker_never_sees_gold_or_other_peoples_answers(
    client, project, crowdworker, other_worker, kind
):
    if kind == "write_text":
        payload = {"prompt": "Describe the image", "images": [{"url": "/static/x.png"}]}
        gold, theirs = {"text": "GOLD-SECRET-zebra"}, {"text": "OTHER-PERSON-secret"}
    else:
        payload = {"image": {"url": "/x.png"}, "question": "Q?", "choices": ["Yes", "No"]}
        gold, theirs = {"answer": "No"}, {"answer": "Yes"}
    queue = QueueFactory(project=project, kind=kind, redundancy=2, gold_rate=1.0)
    gold_task = TaskFactory(queue=queue, payload=payload, gold=gold, is_gold=True)
    task = TaskFactory(queue=queue, payload=payload)
    # another person answers the regular task first
    queue.gold_rate = 0
    other = services.assignment_claim(queue=queue, annotator=other_worker)
    assert other.assignment.task_id == task.pk
    services.annotation_submit(task_id=task.pk, annotator=other_worker, response=theirs)
    queue.gold_rate = 1.0
    client.force_login(crowdworker)
    secrets = [json.dumps(gold), json.dumps(theirs), "GOLD-SECRET", "OTHER-PERSON"]
    if kind == "vqa_choice":
        secrets = [json.dumps(gold), json.dumps(theirs), "gold_correct", '"gold"']
    seen = []
    reachable = [
        n
        for n, v in VIEWS.items()
        if v.get and allowed(n, roles.CROWDWORKER) is not False and "held_task" not in v.args
    ]
    for step in range(2):
        for name in reachable:
            if name == "invite-accept":
                continue
            args = [queue.pk if a == "queue" else project.pk for a in VIEWS[name].args]
            html = client.get(reverse(name, args=args)).content.decode()
            for secret in secrets:
                assert secret not in html, (name, step, secret)
        held = Assignment.objects.get(annotator=crowdworker, state=Assignment.State.LEASED)
        seen.append(held.task_id)
        answer = {"text": "my own answer here"} if kind == "write_text" else {"answer": "Yes"}
        services.annotation_submit(task_id=held.task_id, annotator=crowdworker, response=answer)
    # the crowdworker was shown the gold item and the task someone else had answered
    assert seen == [gold_task.pk, task.pk]
    # and curator pages stay out of reach
    for name in ("curator-task", "curator-queue-disagreements", "curator-queue"):
        arg = task.pk if name == "curator-task" else queue.pk
        assert client.get(reverse(name, args=[arg])).status_code == 404
