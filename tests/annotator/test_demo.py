"""``manage.py demo``: exact contents, every item valid for its kind, idempotent, resettable."""

from io import StringIO
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db.models import Count

from annotator import services
from annotator.kinds import get_kind
from annotator.models import Task, TaskQueue
from annotator.platform import roles
from annotator.platform.models import Job, Project

EXPECTED_TASKS = {
    "pair_verify": 12,
    "vqa_choice": 16,
    "skill_tags": 12,
    "forced_choice": 12,
    "review": 10,
    "write_text": 8,
}
EXPECTED_ROLES = {
    "worker": roles.CROWDWORKER,
    "worker2": roles.CROWDWORKER,
    "curator": roles.CURATOR,
    "researcher": roles.RESEARCHER,
    "admin": roles.ADMIN,
}


@pytest.fixture(scope="module")
def media_root(tmp_path_factory):
    # Shared by this module's tests so the images are drawn once.
    return tmp_path_factory.mktemp("media")


@pytest.fixture
def demo_settings(settings, media_root):
    settings.MEDIA_ROOT = media_root
    settings.MEDIA_URL = "/media/"
    return settings


def run_demo(*args) -> str:
    out = StringIO()
    call_command("demo", "--allow-insecure", *args, stdout=out)
    return out.getvalue()


def snapshot() -> dict:
    return {
        "users": sorted(get_user_model().objects.values_list("username", flat=True)),
        "projects": list(Project.objects.values_list("slug", flat=True)),
        "queues": sorted(TaskQueue.objects.values_list("id", "kind")),
        "tasks": sorted(Task.objects.values_list("id", flat=True)),
        "jobs": list(Job.objects.values_list("id", flat=True)),
    }


def image_urls(payload: dict) -> list[str]:
    images = payload.get("images", [])
    if "image" in payload:
        images = [payload["image"]]
    return [image["url"] for image in images]


@pytest.mark.django_db
def test_demo_creates_users_project_and_a_queue_of_every_kind(demo_settings):
    # When
    output = run_demo()

    # Then: one user per role (two crowdworkers), each a project member, with a token
    User = get_user_model()
    assert sorted(User.objects.values_list("username", flat=True)) == sorted(EXPECTED_ROLES)
    for username, role in EXPECTED_ROLES.items():
        user = User.objects.get(username=username)
        assert roles.user_roles(user) == {role}
        assert user.check_password(f"{username}-demo")
        assert user.auth_token.key in output
        assert f"{username}-demo" in output
    assert User.objects.get(username="admin").is_superuser
    assert not User.objects.filter(is_superuser=True).exclude(username="admin").exists()
    assert "http://127.0.0.1:8000/" in output

    project = Project.objects.get()
    assert project.name == "NaturalBench demo"
    assert sorted(project.members.values_list("username", flat=True)) == sorted(EXPECTED_ROLES)

    # exactly one queue per kind, with the expected number of tasks
    per_kind = dict(
        TaskQueue.objects.values_list("kind").annotate(n=Count("id")).values_list("kind", "n")
    )
    assert per_kind == dict.fromkeys(EXPECTED_TASKS, 1)
    tasks = dict(
        Task.objects.values_list("queue__kind")
        .annotate(n=Count("id"))
        .values_list("queue__kind", "n")
    )
    assert tasks == EXPECTED_TASKS
    assert Task.objects.count() == 70

    # gold items only in the VQA queue, which serves them at its gold rate
    assert (
        list(Task.objects.filter(is_gold=True).values_list("queue__kind", flat=True))
        == ["vqa_choice"] * 3
    )
    assert TaskQueue.objects.get(kind="vqa_choice").gold_rate == 0.2

    # the import job ran and filled the VQA queue with the Chinese and Hindi items
    job = Job.objects.get()
    assert job.kind == "annotator.import_tasks"
    assert job.status == Job.Status.SUCCEEDED
    assert job.result == {"created": 4, "queue_id": TaskQueue.objects.get(kind="vqa_choice").pk}
    assert job.project == project
    languages = sorted(
        t.payload["language"]
        for t in Task.objects.filter(queue__kind="vqa_choice")
        if "language" in t.payload
    )
    assert languages == ["hi", "hi", "zh", "zh"]


@pytest.mark.django_db
def test_every_demo_item_fits_its_kind_and_its_images_exist(demo_settings):
    run_demo()
    media = Path(demo_settings.MEDIA_ROOT)

    for queue in TaskQueue.objects.all():
        kind = get_kind(queue.kind)
        kind.validate_config(queue.config)
        assert queue.instructions.startswith("## ")
        first = queue.tasks.order_by("id").first()
        for key in kind.keys(queue.config, first.payload)[:2]:
            assert f"`{key.key}`" in queue.instructions, (queue.kind, key.key)
        for task in queue.tasks.all():
            kind.validate_payload(task.payload)
            if task.is_gold:
                kind.validate_gold(task.gold, queue.config, task.payload)
            else:
                assert task.gold is None
            assert task.state == Task.State.OPEN
            assert task.required == queue.redundancy
            for url in image_urls(task.payload):
                assert url.startswith("/media/demo/")
                path = media / url.removeprefix("/media/")
                assert path.is_file() and path.stat().st_size > 2000, url

    # the skill taxonomy is NaturalBench App. C: 27 skills in four groups, each on its own key
    config = TaskQueue.objects.get(kind="skill_tags").config
    assert [g["group"] for g in config["taxonomy"]] == [
        "Object",
        "Attribute",
        "Relation",
        "Reasoning",
    ]
    assert [len(g["tags"]) for g in config["taxonomy"]] == [8, 8, 6, 5]
    keys = [t["key"] for g in config["taxonomy"] for t in g["tags"]]
    assert len(set(keys)) == 27 and not set(keys) & {"s", "?", "/", "!", "i", "z"}

    # forced choice compares two real model outputs from VisIT-Bench
    for task in Task.objects.filter(queue__kind="forced_choice"):
        assert [c["id"] for c in task.payload["candidates"]] == ["llava-13b", "instructblip-13b"]
        assert all(c["text"] for c in task.payload["candidates"])


@pytest.mark.django_db
def test_a_crowdworker_can_claim_and_answer_in_every_demo_queue(demo_settings):
    run_demo()
    worker = get_user_model().objects.get(username="worker")
    answers = {
        "pair_verify": {"decision": "keep"},
        "skill_tags": {"tags": ["items", "color"]},
        "forced_choice": {"choice": "left"},
        "review": {"verdict": "reject", "reason": "poor_image", "checked": [0]},
        "write_text": {"text": "A white plate on a wooden table holds five red apples."},
    }
    for queue in TaskQueue.objects.all():
        claim = services.assignment_claim(queue=queue, annotator=worker)
        assert claim.assignment is not None, (queue.kind, claim.message)
        response = answers.get(queue.kind) or {"answer": claim.task.payload["choices"][0]}
        result = services.annotation_submit(
            task_id=claim.task.pk, annotator=worker, response=response, duration_ms=1200
        )
        assert result.created


@pytest.mark.django_db
def test_running_the_demo_twice_changes_nothing(demo_settings):
    run_demo()
    before = snapshot()

    output = run_demo()

    assert snapshot() == before
    assert "Nothing new" in output
    assert get_user_model().objects.get(username="curator").check_password("curator-demo")


@pytest.mark.django_db
def test_reset_rebuilds_the_demo_project(demo_settings):
    run_demo()
    before = snapshot()
    worker = get_user_model().objects.get(username="worker")
    worker.set_password("changed")
    worker.save()

    run_demo("--reset")

    after = snapshot()
    assert after["users"] == before["users"]
    assert len(after["tasks"]) == len(before["tasks"]) == 70
    assert not set(after["tasks"]) & set(before["tasks"])
    assert len(after["jobs"]) == 1 and after["jobs"] != before["jobs"]
    worker.refresh_from_db()
    assert worker.check_password("worker-demo")


@pytest.mark.django_db
def test_demo_refuses_to_run_with_debug_off_unless_told(demo_settings):
    demo_settings.DEBUG = False

    with pytest.raises(CommandError, match="DEBUG is off"):
        call_command("demo", stdout=StringIO())

    assert not get_user_model().objects.exists()
    assert not Project.objects.exists()


@pytest.mark.django_db
def test_demo_prints_the_real_address(demo_settings, monkeypatch):
    # PORT as `make run PORT=…` serves it, and --url with or without its trailing slash
    monkeypatch.setenv("PORT", "8123")
    out = run_demo()
    assert "ready at http://127.0.0.1:8123/" in out
    assert "API docs at http://127.0.0.1:8123/api/docs/" in out
    out = run_demo("--url", "http://127.0.0.1:18766")
    assert "ready at http://127.0.0.1:18766/" in out
    assert "API docs at http://127.0.0.1:18766/api/docs/" in out
