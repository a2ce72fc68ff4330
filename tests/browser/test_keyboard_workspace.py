"""A crowdworker completes one task of every kind with the keyboard alone (Debian chromium).

The live server and chromium come from tests/browser/conftest.py; the outcome is then checked
the way a curator sees it (through the ORM).
"""

import base64
import io

import pytest
from django.urls import reverse
from PIL import Image

from annotator import services
from annotator.models import Annotation, Task
from annotator.platform import roles
from tests.factories import PASSWORD, ProjectFactory, UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def png_data_url(color: str) -> str:
    buf = io.BytesIO()
    Image.new("RGB", (64, 48), color).save(buf, "PNG")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def build_queues(project):
    red, blue = png_data_url("red"), png_data_url("blue")
    specs = [
        (
            "pair_verify",
            {},
            {
                "images": [
                    {"url": red, "caption": "a red cube"},
                    {"url": blue, "caption": "一个蓝色的球"},
                ]
            },
        ),
        (
            "vqa_choice",
            {},
            {"image": {"url": red}, "question": "क्या घन लाल है?", "choices": ["हाँ", "नहीं"]},
        ),
        (
            "skill_tags",
            {
                "taxonomy": [
                    {"group": "Attribute", "tags": [{"id": "color", "label": "Color", "key": "c"}]},
                    {"group": "Relation", "tags": [{"id": "spatial", "label": "Spatial relation"}]},
                ]
            },
            {"images": [{"url": red}], "questions": ["Is the cube left of the ball?"]},
        ),
        (
            "forced_choice",
            {},
            {
                "images": [{"url": red}],
                "instruction": "Describe the image.",
                "candidates": [
                    {"id": "m1", "text": "A red square."},
                    {"id": "m2", "text": "Blue."},
                ],
            },
        ),
        (
            "review",
            {"criteria": ["Fluent"], "reason_codes": [{"code": "false", "label": "False"}]},
            {"title": "There is no ball", "images": [{"url": red}]},
        ),
        (
            "write_text",
            {"min_length": 5},
            {"prompt": "Write a question.", "images": [{"url": blue}], "draft": "Is it blue"},
        ),
    ]
    queues = []
    for priority, (kind, config, payload) in enumerate(specs):
        queue = services.queue_create(
            project=project,
            kind=kind,
            title=f"Queue {kind}",
            config=config,
            redundancy=1,
            max_redundancy=1,
            priority=100 - priority,  # home lists them in this order: keys 1..6
            instructions="Use the **keys**.",
        )
        services.tasks_bulk_create(queue=queue, rows=[services.TaskRow(payload)])
        queues.append(queue)
    return queues


# Keys pressed on each task page; "Enter" submits unless noted.
KEYSTROKES = {
    "pair_verify": ["n", "Enter"],
    "vqa_choice": ["2", "Enter"],
    # c toggles Color; "/" focuses the filter, Enter ticks the only match; then submit
    "skill_tags": ["c", "/", "type:spatial", "Enter", "Enter"],
    "forced_choice": ["a", "Enter"],
    # accept with the criterion unticked is refused inline; q ticks it, Enter accepts
    "review": ["a", "Enter", "wait:#task-alert [data-status='400']", "q", "Enter"],
    "write_text": ["e", "Control+a", "type:Is the ball blue?", "Escape", "Control+Enter"],
}


def test_crowdworker_completes_every_kind_with_the_keyboard(
    live_server, transactional_db, browser_page
):
    worker = UserFactory(username="kbworker", role=roles.CROWDWORKER)
    curator = UserFactory(username="kbcurator", role=roles.CURATOR)
    project = ProjectFactory(members=[worker, curator])
    queues = build_queues(project)
    page = browser_page
    page.set_default_timeout(15000)

    # Log in with the keyboard: the user name field has focus.
    page.goto(live_server.url + reverse("login"))
    page.keyboard.type("kbworker")
    page.keyboard.press("Tab")
    page.keyboard.type(PASSWORD)
    with page.expect_navigation():
        page.keyboard.press("Enter")
    assert page.url.rstrip("/") == live_server.url.rstrip("/")

    for index, queue in enumerate(queues, start=1):
        if index > 1:
            with page.expect_navigation():
                page.keyboard.press("h")  # from the empty state back to the queues
        with page.expect_navigation():
            page.keyboard.press(str(index))  # queues are on keys 1..6
        assert page.url.endswith(reverse("work", args=[queue.pk]))
        page.wait_for_selector("#task-area[data-task-id]")
        page.evaluate("window.__sameDocument = true")
        page.wait_for_timeout(300)  # let the timer run a little
        for stroke in KEYSTROKES[queue.kind]:
            if stroke.startswith("type:"):
                page.keyboard.type(stroke[5:])
            elif stroke.startswith("wait:"):
                page.wait_for_selector(stroke[5:])
            else:
                page.keyboard.press(stroke)
        # The next fragment (here: the friendly empty state) replaces the task without a reload.
        page.wait_for_selector("#task-area .empty", timeout=15000)
        assert "No more tasks" in page.inner_text("#task-area")
        assert page.evaluate("window.__sameDocument === true"), "the page reloaded"

    assert page.js_errors == []
    # no Content-Security-Policy refusal, no failed load but the one refused accept (400)
    refused = [e for e in page.console_errors if "status of 400" in e and "/submit/" in e]
    assert len(refused) == 1
    assert [e for e in page.console_errors if e not in refused] == []

    # As a curator: every task has its annotation and, with redundancy 1, a decision.
    expected = {
        "pair_verify": {"decision": "keep"},
        "vqa_choice": {"answer": "नहीं"},
        "skill_tags": {"tags": ["color", "spatial"]},
        "review": {"verdict": "accept", "checked": [0], "reason": None, "comment": ""},
        "write_text": {"text": "Is the ball blue?", "edited_from_draft": True},
    }
    for queue in queues:
        task = Task.objects.get(queue=queue)
        annotation = Annotation.objects.get(task=task)
        assert annotation.annotator == worker
        assert annotation.duration_ms > 0
        if queue.kind == "forced_choice":
            swapped = annotation.response["swapped"]
            assert annotation.response["choice"] == "left"
            assert annotation.response["winner"] == ("m2" if swapped else "m1")
        else:
            assert annotation.response == expected[queue.kind], queue.kind
        assert task.state == Task.State.DECIDED, queue.kind
