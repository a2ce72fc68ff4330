"""The crowdworker workspace: pages per kind, htmx submit/skip/report/heartbeat, and safety."""

import io
import re
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone
from PIL import Image

from annotator import services
from annotator.models import Annotation, Assignment, Task
from tests.factories import QueueFactory, TaskFactory, vqa_payload

HX = {"HTTP_HX_REQUEST": "true"}

TAXONOMY = [
    {
        "group": "Attribute",
        "tags": [
            {"id": "color", "label": "Color", "key": "c"},
            {"id": "count", "label": "Counting", "key": "n"},
        ],
    },
    {"group": "Relation", "tags": [{"id": "spatial", "label": "Spatial", "key": "p"}]},
]
IMG = {"url": "/media/x.png"}

KINDS = {
    "pair_verify": (
        {},
        {
            "images": [
                {"url": "/media/a.png", "caption": "A red cube left of a ball"},
                {"url": "/media/b.png", "caption": "一个蓝色的球"},
            ]
        },
        {"decision": "keep"},
        {"decision": "keep"},
    ),
    "vqa_choice": (
        {},
        {"image": IMG, "question": "क्या घन लाल है?", "choices": ["हाँ", "नहीं"]},
        {"answer": "नहीं"},
        {"answer": "नहीं"},
    ),
    "skill_tags": (
        {"taxonomy": TAXONOMY},
        {"images": [IMG], "questions": ["Is the cube red?"]},
        {"tags": ["color", "spatial"]},
        {"tags": ["color", "spatial"]},
    ),
    "forced_choice": (
        {},
        {
            "images": [IMG],
            "instruction": "Describe the cube.",
            "candidates": [
                {"id": "model-alpha", "text": "A red cube."},
                {"id": "model-beta", "text": "A box."},
            ],
        },
        {"choice": "left"},
        None,  # depends on the presentation; checked in its own test
    ),
    "review": (
        {
            "criteria": ["Fluent", "True of the image"],
            "reason_codes": [{"code": "false", "label": "Statement is false"}],
        },
        {"title": "There is no ball", "images": [IMG], "text": "There is no ball."},
        {"verdict": "reject", "checked": ["1"], "reason": "false", "comment": " odd "},
        {"verdict": "reject", "checked": [1], "reason": "false", "comment": "odd"},
    ),
    "write_text": (
        {"min_length": 5, "max_length": 200},
        {"prompt": "Write an instruction.", "images": [IMG], "draft": "What colour is it?"},
        {"text": "  What colour is the cube?  "},
        {"text": "What colour is the cube?", "edited_from_draft": True},
    ),
}


def make_queue(project, kind, *, tasks=1, redundancy=1, **fields):
    config, payload, _form, _expected = KINDS[kind]
    queue = QueueFactory(
        project=project,
        kind=kind,
        config=fields.pop("config", config),
        redundancy=redundancy,
        max_redundancy=redundancy,
        instructions=fields.pop("instructions", "Look **closely**.<script>alert(1)</script>"),
        **fields,
    )
    for _ in range(tasks):
        TaskFactory(queue=queue, payload=payload)
    return queue


@pytest.fixture
def worker_client(client, crowdworker):
    client.force_login(crowdworker)
    return client


def work_url(queue):
    return reverse("work", args=[queue.pk])


def submit_url(task_id):
    return reverse("work-submit", args=[task_id])


def task_id_in(html: str) -> int | None:
    match = re.search(r'data-task-id="(\d+)"', html)
    return int(match.group(1)) if match else None


# --- pages -------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_each_kind_renders_with_its_keys(worker_client, project, kind):
    queue = make_queue(project, kind)
    page = worker_client.get(work_url(queue))
    assert page.status_code == 200
    html = page.content.decode()
    task = Task.objects.get(queue=queue)
    assert task_id_in(html) == task.pk
    assert 'id="task-form"' in html and f'hx-post="{submit_url(task.pk)}"' in html
    expected_keys = {
        "pair_verify": ['data-key="y"', 'data-key="n"', "一个蓝色的球"],
        "vqa_choice": ['data-key="1"', 'data-key="2"', 'data-key="3"', "क्या घन लाल है?"],
        "skill_tags": ['data-key="c"', 'data-key="p"', "data-tag-filter", 'data-max="8"'],
        "forced_choice": ['data-key="a"', 'data-key="b"', "A red cube.", "A box."],
        "review": ['data-key="a"', 'data-key="r"', 'data-key="1"', "Statement is false"],
        "write_text": ['data-key="e"', "What colour is it?</textarea>"],
    }[kind]
    for needle in expected_keys:
        assert needle in html, needle
    # instructions: Markdown rendered, script stripped
    assert "<strong>closely</strong>" in html
    assert "<script>alert(1)</script>" not in html
    assert 'dir="auto"' in html


def test_home_lists_available_queues_and_today_count(worker_client, project, crowdworker):
    queue = make_queue(project, "vqa_choice", tasks=2)
    services.assignment_claim(queue=queue, annotator=crowdworker)
    task = Task.objects.filter(queue=queue).order_by("id").first()
    services.annotation_submit(task_id=task.pk, annotator=crowdworker, response={"answer": "हाँ"})
    page = worker_client.get(reverse("home"))
    assert page.status_code == 200
    html = page.content.decode()
    assert work_url(queue) in html
    assert re.search(r'data-testid="today-count">1<', html)


def test_home_for_curator_has_no_queue_list(client, curator, project):
    make_queue(project, "vqa_choice")
    client.force_login(curator)
    page = client.get(reverse("home"))
    assert page.status_code == 200
    assert "Available queues" not in page.content.decode()
    assert "Curation" in page.content.decode()


def test_work_page_refuses_anonymous_and_non_workers(client, curator, project):
    queue = make_queue(project, "vqa_choice")
    assert client.get(work_url(queue)).status_code == 302
    client.force_login(curator)
    assert client.get(work_url(queue)).status_code == 404
    assert not Assignment.objects.exists()


def test_queue_outside_reach_is_404(worker_client):
    other = QueueFactory()  # a project the worker is not a member of
    TaskFactory(queue=other)
    assert worker_client.get(work_url(other)).status_code == 404
    assert not Assignment.objects.exists()


# --- submit --------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", sorted(k for k in KINDS if KINDS[k][3] is not None))
def test_submit_each_kind_stores_its_response(worker_client, project, crowdworker, kind):
    queue = make_queue(project, kind)
    task = Task.objects.get(queue=queue)
    worker_client.get(work_url(queue))
    _config, _payload, form, expected = KINDS[kind]
    page = worker_client.post(submit_url(task.pk), {**form, "duration_ms": "1234"}, **HX)
    assert page.status_code == 200
    annotation = Annotation.objects.get(task=task, annotator=crowdworker)
    assert annotation.response == expected
    assert annotation.duration_ms == 1234
    task.refresh_from_db()
    assert task.state == Task.State.DECIDED
    assert "No more tasks" in page.content.decode()


@pytest.mark.parametrize(
    "swapped, picked, winner", [(False, "left", "model-alpha"), (True, "left", "model-beta")]
)
def test_forced_choice_left_right_follows_presentation(
    worker_client, project, crowdworker, swapped, picked, winner
):
    queue = make_queue(project, "forced_choice")
    task = Task.objects.get(queue=queue)
    worker_client.get(work_url(queue))
    Assignment.objects.filter(task=task).update(presentation={"swapped": swapped})
    page = worker_client.get(work_url(queue))
    html = page.content.decode()
    first, second = ("A box.", "A red cube.") if swapped else ("A red cube.", "A box.")
    assert html.index(first) < html.index(second)
    worker_client.post(submit_url(task.pk), {"choice": picked}, **HX)
    response = Annotation.objects.get(task=task).response
    assert response == {"choice": picked, "swapped": swapped, "winner": winner}


def test_htmx_submit_returns_next_task_fragment(worker_client, project, crowdworker):
    queue = make_queue(project, "vqa_choice", tasks=2)
    first, second = Task.objects.filter(queue=queue).order_by("id")
    page = worker_client.get(work_url(queue))
    assert task_id_in(page.content.decode()) == first.pk
    page = worker_client.post(submit_url(first.pk), {"answer": "हाँ"}, **HX)
    html = page.content.decode()
    assert page.status_code == 200
    assert "<html" not in html  # a fragment, not a page
    assert task_id_in(html) == second.pk
    assert re.search(r"data-session-done>1<", html)
    assert Assignment.objects.get(task=second, annotator=crowdworker).state == "leased"


def test_plain_post_redirects_back_to_the_work_page(worker_client, project, crowdworker):
    queue = make_queue(project, "vqa_choice", tasks=2)
    first = Task.objects.filter(queue=queue).order_by("id").first()
    worker_client.get(work_url(queue))
    page = worker_client.post(submit_url(first.pk), {"answer": "हाँ"})
    assert page.status_code == 302 and page["Location"] == work_url(queue)
    assert Annotation.objects.filter(task=first).count() == 1


def test_invalid_response_is_400_fragment_and_nothing_saved(worker_client, project):
    queue = make_queue(project, "vqa_choice")
    task = Task.objects.get(queue=queue)
    worker_client.get(work_url(queue))
    page = worker_client.post(submit_url(task.pk), {"answer": "Maybe"}, **HX)
    assert page.status_code == 400
    assert page["HX-Retarget"] == "#task-alert"
    assert "response.answer" in page.content.decode()
    assert not Annotation.objects.exists()
    assert Assignment.objects.get(task=task).state == "leased"


def test_invalid_response_without_js_redirects_with_message(worker_client, project):
    queue = make_queue(project, "vqa_choice")
    task = Task.objects.get(queue=queue)
    worker_client.get(work_url(queue))
    page = worker_client.post(submit_url(task.pk), {}, follow=True)
    assert page.status_code == 200
    assert "response" in page.content.decode() and "required" in page.content.decode()
    assert not Annotation.objects.exists()


def test_skill_tags_more_than_eight_is_refused(worker_client, project):
    tags = [{"id": f"t{i}", "label": f"Tag {i}"} for i in range(10)]
    queue = make_queue(project, "skill_tags", config={"taxonomy": [{"group": "G", "tags": tags}]})
    task = Task.objects.get(queue=queue)
    worker_client.get(work_url(queue))
    page = worker_client.post(submit_url(task.pk), {"tags": [t["id"] for t in tags[:9]]}, **HX)
    assert page.status_code == 400
    page = worker_client.post(submit_url(task.pk), {"tags": []}, **HX)
    assert page.status_code == 400
    assert not Annotation.objects.exists()


def test_expired_lease_is_409_and_nothing_saved(worker_client, project):
    queue = make_queue(project, "vqa_choice")
    task = Task.objects.get(queue=queue)
    worker_client.get(work_url(queue))
    Assignment.objects.filter(task=task).update(expires_at=timezone.now() - timedelta(seconds=1))
    page = worker_client.post(submit_url(task.pk), {"answer": "हाँ"}, **HX)
    assert page.status_code == 409
    html = page.content.decode()
    assert "expired" in html and "Next task" in html
    assert not Annotation.objects.exists()


def test_double_submit_stores_one_annotation_and_same_next(worker_client, project, crowdworker):
    queue = make_queue(project, "vqa_choice", tasks=3)
    first = Task.objects.filter(queue=queue).order_by("id").first()
    worker_client.get(work_url(queue))
    one = worker_client.post(submit_url(first.pk), {"answer": "हाँ"}, **HX)
    two = worker_client.post(submit_url(first.pk), {"answer": "हाँ"}, **HX)
    assert one.status_code == two.status_code == 200
    assert Annotation.objects.filter(task=first).count() == 1
    assert Annotation.objects.get(task=first).response == {"answer": "हाँ"}
    assert task_id_in(one.content.decode()) == task_id_in(two.content.decode()) is not None
    # A different answer to the answered task is refused with a message; the first is kept
    three = worker_client.post(submit_url(first.pk), {"answer": "नहीं"}, **HX)
    assert three.status_code == 409
    assert "You already answered this task; your first answer is kept." in three.content.decode()
    assert Annotation.objects.get(task=first).response == {"answer": "हाँ"}


def test_foreign_task_is_404(worker_client, project, other_worker):
    queue = make_queue(project, "vqa_choice")
    task = Task.objects.get(queue=queue)
    services.assignment_claim(queue=queue, annotator=other_worker)
    for name in ("work-submit", "work-skip", "work-heartbeat"):
        assert (
            worker_client.post(reverse(name, args=[task.pk]), {"answer": "हाँ"}).status_code == 404
        )
    assert not Annotation.objects.exists()
    assert Assignment.objects.get(task=task).state == "leased"


def test_write_text_image_upload_is_stored(worker_client, project, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path
    queue = make_queue(
        project, "write_text", config={"min_length": 5, "allow_image": True, "max_length": 100}
    )
    task = Task.objects.get(queue=queue)
    page = worker_client.get(work_url(queue))
    assert 'hx-encoding="multipart/form-data"' in page.content.decode()
    buf = io.BytesIO()
    Image.new("RGB", (8, 8), "red").save(buf, "PNG")
    buf.name = "pic.png"
    buf.seek(0)
    from django.core.files.uploadedfile import SimpleUploadedFile

    upload = SimpleUploadedFile("pic.png", buf.getvalue(), content_type="image/png")
    page = worker_client.post(submit_url(task.pk), {"text": "Hello there", "image": upload}, **HX)
    assert page.status_code == 200
    response = Annotation.objects.get(task=task).response
    assert response["image"].startswith("/media/uploads/")
    assert len(list(tmp_path.rglob("*.png"))) == 1


def test_write_text_rejects_non_image_upload(worker_client, project, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path
    queue = make_queue(project, "write_text", config={"allow_image": True})
    task = Task.objects.get(queue=queue)
    worker_client.get(work_url(queue))
    from django.core.files.uploadedfile import SimpleUploadedFile

    upload = SimpleUploadedFile("x.png", b"not an image", content_type="image/png")
    page = worker_client.post(submit_url(task.pk), {"text": "Hello there", "image": upload}, **HX)
    assert page.status_code == 400
    assert not Annotation.objects.exists()
    assert not list(tmp_path.rglob("*.*"))


# --- skip, report, heartbeat ---------------------------------------------------------------------
def test_skip_returns_next_and_never_offers_again(worker_client, project, crowdworker):
    queue = make_queue(project, "vqa_choice", tasks=2)
    first, second = Task.objects.filter(queue=queue).order_by("id")
    worker_client.get(work_url(queue))
    page = worker_client.post(reverse("work-skip", args=[first.pk]), **HX)
    assert page.status_code == 200
    assert task_id_in(page.content.decode()) == second.pk
    assert Assignment.objects.get(task=first, annotator=crowdworker).state == "skipped"


def test_report_needs_a_reason_and_releases(worker_client, project, crowdworker):
    queue = make_queue(project, "vqa_choice", tasks=1)
    task = Task.objects.get(queue=queue)
    worker_client.get(work_url(queue))
    page = worker_client.post(reverse("work-report", args=[task.pk]), {"reason": ""}, **HX)
    assert page.status_code == 400
    assert Assignment.objects.get(task=task).state == "leased"
    page = worker_client.post(
        reverse("work-report", args=[task.pk]),
        {"reason": "other", "details": "the second image is blank"},
        **HX,
    )
    assert page.status_code == 200
    assignment = Assignment.objects.get(task=task, annotator=crowdworker)
    assert assignment.state == "reported"
    assert assignment.report_reason == "other: the second image is blank"


def test_heartbeat_extends_and_reports_lost_lease(worker_client, project):
    queue = make_queue(project, "vqa_choice")
    task = Task.objects.get(queue=queue)
    worker_client.get(work_url(queue))
    soon = timezone.now() + timedelta(seconds=5)
    Assignment.objects.filter(task=task).update(expires_at=soon)
    url = reverse("work-heartbeat", args=[task.pk])
    assert worker_client.post(url, **HX).status_code == 204
    assert Assignment.objects.get(task=task).expires_at > soon + timedelta(minutes=5)
    Assignment.objects.filter(task=task).update(expires_at=timezone.now() - timedelta(seconds=1))
    page = worker_client.post(url, **HX)
    assert page.status_code == 409
    assert "expired" in page.content.decode()


def test_waiting_for_leases_polls(worker_client, project, other_worker):
    queue = make_queue(project, "vqa_choice", tasks=1)
    services.assignment_claim(queue=queue, annotator=other_worker)
    page = worker_client.get(work_url(queue), **HX)
    html = page.content.decode()
    assert page.status_code == 200
    assert 'hx-trigger="every ' in html and f'hx-get="{work_url(queue)}"' in html


# --- safety and speed ----------------------------------------------------------------------------
def test_gold_answers_never_reach_the_page(worker_client, project, crowdworker):
    queue = make_queue(project, "forced_choice", tasks=0, gold_rate=1.0)
    _config, payload, _form, _expected = KINDS["forced_choice"]
    TaskFactory(queue=queue, payload=payload, gold={"winner": "model-beta"}, is_gold=True)
    wq = make_queue(project, "write_text", tasks=0, gold_rate=1.0)
    _config, wpayload, _form, _expected = KINDS["write_text"]
    TaskFactory(queue=wq, payload=wpayload, gold={"text": "SECRET GOLD SENTENCE"}, is_gold=True)
    for q, secret in ((queue, "model-beta"), (wq, "SECRET GOLD SENTENCE")):
        html = worker_client.get(work_url(q)).content.decode()
        assert Assignment.objects.get(queue=q, annotator=crowdworker).is_gold
        assert secret not in html
        assert "gold" not in html.lower()


def test_other_peoples_responses_never_reach_the_page(worker_client, project, other_worker):
    queue = make_queue(project, "write_text", tasks=1, redundancy=2)
    task = Task.objects.get(queue=queue)
    services.assignment_claim(queue=queue, annotator=other_worker)
    services.annotation_submit(
        task_id=task.pk, annotator=other_worker, response={"text": "OTHER PERSON WROTE THIS"}
    )
    html = worker_client.get(work_url(queue)).content.decode()
    assert task_id_in(html) == task.pk
    assert "OTHER PERSON WROTE THIS" not in html


def test_fragment_query_count(worker_client, project, crowdworker, django_assert_max_num_queries):
    queue = make_queue(project, "vqa_choice", tasks=5)
    for i in range(5):
        TaskFactory(queue=queue, payload=vqa_payload(i))
    worker_client.get(work_url(queue))
    # (the ninth: the look-ahead of the next tasks, whose images the page preloads)
    with django_assert_max_num_queries(9):
        page = worker_client.get(work_url(queue), **HX)
    assert page.status_code == 200
    first = task_id_in(page.content.decode())
    with django_assert_max_num_queries(30):
        page = worker_client.post(submit_url(first), {"answer": "Unanswerable"}, **HX)
    assert page.status_code == 200
