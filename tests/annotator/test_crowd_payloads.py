"""A crowdworker's JSON carries only what their task page shows (issue 13 item 9).

For every task kind, a payload and queue config salted with what a recipe keeps for itself
(candidate ids naming models, source ids, categories, notes) and a gold answer: the task the
API hands out is exactly the kind's public payload, every text in it is on the HTML page, and
none of the hidden values reach either. forced_choice candidates go out by side only, and a
"left"/"right" answer still records the right candidate.
"""

import io
import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from django.utils.html import escape
from PIL import Image

from annotator import services
from annotator.kinds import get_kind
from annotator.models import Annotation, Assignment
from tests.annotator.helpers import token_api as api
from tests.factories import QueueFactory, TaskFactory

HIDDEN = [
    "LLaVA (13B)",
    "human_verified_reference",
    "SECRET-SOURCE-ID",
    "SECRET-CATEGORY",
    "SECRET-IMAGE-ORIGIN",
    "SECRET-CONFIG-NOTE",
    "GOLD-ANSWER",
    "OTHER-PERSON-TEXT",
    "https://example.org/secret-source.jpg",
]
IMAGE = {"url": "/static/demo/a.png", "alt": "A red cube", "origin": "SECRET-IMAGE-ORIGIN"}
PUBLIC_IMAGE = {"url": "/static/demo/a.png", "alt": "A red cube"}
EXTRA = {"source_id": "SECRET-SOURCE-ID", "category": "SECRET-CATEGORY"}
NOTE = {"note": "SECRET-CONFIG-NOTE"}


def salted(shown: dict, *, image_key: str = "images", **case) -> dict:
    """A case whose payload is `shown` salted with the image's origin and EXTRA; the public
    payload is `shown` with the image alone (one image under "image", a list under "images")."""
    payload_image, public_image = (
        (IMAGE, PUBLIC_IMAGE) if image_key == "image" else ([IMAGE], [PUBLIC_IMAGE])
    )
    return dict(
        payload={**shown, image_key: payload_image, **EXTRA},
        public={**shown, image_key: public_image},
        **case,
    )


CASES = {
    "pair_verify": dict(
        config=NOTE,
        payload={
            "images": [
                {**IMAGE, "caption": "A cube left of a ball"},
                {"url": "/static/demo/b.png", "caption": "A ball left of a cube"},
            ],
            **EXTRA,
        },
        gold={"decision": "keep"},
        public={
            "images": [
                {**PUBLIC_IMAGE, "caption": "A cube left of a ball"},
                {"url": "/static/demo/b.png", "caption": "A ball left of a cube"},
            ]
        },
        answer={"decision": "keep"},
    ),
    "vqa_choice": salted(
        {"question": "Is the cube red?", "choices": ["Yes", "No"], "language": "en"},
        image_key="image",
        config=NOTE,
        gold={"answer": "No"},
        answer={"answer": "Yes"},
    ),
    "skill_tags": salted(
        {"questions": ["How many cubes?"]},
        config={
            **NOTE,
            "taxonomy": [
                {
                    "group": "Reasoning",
                    "note": "SECRET-CONFIG-NOTE",
                    "tags": [
                        {
                            "id": "count",
                            "label": "Counting",
                            "key": "c",
                            "source": "SECRET-SOURCE-ID",
                        },
                        {"id": "space", "label": "Spatial", "description": "Where things are"},
                    ],
                }
            ],
            "max_tags": 2,
        },
        gold={"tags": ["count"]},
        answer={"tags": ["count"]},
    ),
    "forced_choice": dict(
        config=NOTE,
        payload={
            "images": [IMAGE],
            "instruction": "Describe the image",
            "caption": "Three cubes on a table",
            "candidates": [
                {"id": "LLaVA (13B)", "text": "Two cubes."},
                {"id": "human_verified_reference", "text": "Three red cubes."},
            ],
            "source_image": "https://example.org/secret-source.jpg",
            **EXTRA,
        },
        gold={"winner": "human_verified_reference"},
        public=None,  # by side: built in the test from the assignment's presentation
        answer={"choice": "left"},
    ),
    "review": salted(
        {
            "title": "Check the statement",
            "text": "Concept: cubes",
            "fields": {"Context": "A table", "Statement": "Cubes are red"},
        },
        config={
            **NOTE,
            "criteria": ["The statement is true"],
            "reason_codes": [{"code": "wrong", "label": "Wrong fact", "why": "SECRET-CONFIG-NOTE"}],
        },
        gold={"verdict": "accept"},
        answer={"verdict": "accept", "checked": [0]},
    ),
    "write_text": salted(
        {
            "prompt": "Write an instruction",
            "draft": "Count the cubes",
            "context": "A table with cubes",
        },
        config={**NOTE, "min_length": 3, "max_length": 400},
        gold={"text": "GOLD-ANSWER"},
        answer={"text": "OTHER-PERSON-TEXT"},
    ),
}


def texts(value, *, with_keys=False) -> list[str]:
    """Every text in a JSON value (and, for free-form objects, their keys)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [t for item in value for t in texts(item, with_keys=with_keys)]
    if isinstance(value, dict):
        keys = list(value) if with_keys else []
        return keys + [t for k, v in value.items() for t in texts(v, with_keys=k == "fields")]
    return []


@pytest.fixture
def kind_queue(request, project, crowdworker, other_worker):
    name = request.param
    case = CASES[name]
    queue = QueueFactory(project=project, kind=name, config=case["config"])
    regular = TaskFactory(queue=queue, payload=case["payload"])
    TaskFactory(queue=queue, payload=case["payload"])  # the next task of a submit
    TaskFactory(queue=queue, payload=case["payload"], is_gold=True, gold=case["gold"])
    # Another person's answer on the task the crowdworker will get
    services.assignment_claim(queue=queue, annotator=other_worker)
    services.annotation_submit(task_id=regular.pk, annotator=other_worker, response=case["answer"])
    return name, case, queue, regular


def expected_public(name, case, assignment) -> dict:
    if case["public"] is not None:
        return case["public"]
    first, second = case["payload"]["candidates"]
    left, right = (second, first) if assignment.presentation["swapped"] else (first, second)
    return {
        "images": [PUBLIC_IMAGE],
        "instruction": "Describe the image",
        "caption": "Three cubes on a table",
        "candidates": [
            {"side": "left", "text": left["text"]},
            {"side": "right", "text": right["text"]},
        ],
    }


@pytest.mark.parametrize("kind_queue", list(CASES), indirect=True)
def test_the_api_task_is_what_the_page_shows(client, kind_queue, crowdworker):
    name, case, queue, regular = kind_queue
    # When the crowdworker asks the API for a task
    response = api(crowdworker).post(f"/api/queues/{queue.pk}/next/")
    body = response.json()
    task = body["task"]
    assignment = Assignment.objects.get(task_id=task["id"], annotator=crowdworker)
    # Then it carries exactly the kind's public payload, and no more keys
    assert set(task) == {"id", "queue", "kind", "payload", "keys", "expires_at"}
    assert task["payload"] == expected_public(name, case, assignment)
    assert task["payload"] == get_kind(name).public_payload(
        assignment.task.payload, assignment.presentation
    )
    # And no hidden value, gold answer or other person's answer is anywhere in the body
    raw = response.content.decode()
    for secret in HIDDEN:
        assert secret not in raw, secret
    assert '"gold' not in raw and "is_gold" not in raw and "presentation" not in raw
    # When the same person opens the task page (the same lease)
    client.force_login(crowdworker)
    html = client.get(reverse("work", args=[queue.pk])).content.decode()
    assert f'data-task-id="{task["id"]}"' in html
    # Then every text the JSON carries is on the page, and the keys too
    for text in texts(task["payload"], with_keys=False) + texts(
        task["payload"].get("fields", {}), with_keys=True
    ):
        assert escape(text) in html, text
    for key in task["keys"]:
        assert escape(key["label"]) in html, key
    # And nothing hidden is on the page either
    for secret in HIDDEN:
        assert escape(secret) not in html, secret


@pytest.mark.parametrize("kind_queue", list(CASES), indirect=True)
def test_every_crowdworker_endpoint_keeps_to_the_public_payload(kind_queue, crowdworker):
    name, case, queue, regular = kind_queue
    client = api(crowdworker)
    first = client.post(f"/api/queues/{queue.pk}/next/").json()["task"]
    bodies = [client.post(f"/api/tasks/{first['id']}/heartbeat/")]
    # The submit's next task is public too
    submitted = client.post(
        f"/api/tasks/{first['id']}/submit/", {"response": case["answer"]}, format="json"
    )
    assert submitted.status_code == 201
    following = submitted.json()["next"]["task"]
    assignment = Assignment.objects.get(task_id=following["id"], annotator=crowdworker)
    assert following["payload"] == get_kind(name).public_payload(
        assignment.task.payload, assignment.presentation
    )
    bodies += [submitted, client.post(f"/api/tasks/{following['id']}/skip/")]
    bodies += [client.get(f"/api/queues/{queue.pk}/"), client.get("/api/queues/")]
    for response in bodies:
        assert response.status_code in (200, 201)
        raw = response.content.decode()
        for secret in HIDDEN:
            assert secret not in raw, (response.request["PATH_INFO"], secret)
    # The queue as a crowdworker sees it: the kind's public settings, and the report reasons
    detail = bodies[-2].json()
    assert detail["config"] == get_kind(name).public_config(case["config"])
    assert [r["code"] for r in detail["report_reasons"]] == [
        "broken_image",
        "unclear",
        "offensive",
        "other",
    ]
    assert set(bodies[1].json()) == {"annotation_id", "created", "next"}
    assert set(bodies[0].json()) == {"task_id", "expires_at"}
    assert set(bodies[2].json()) == {"task_id", "state"}


def test_public_config_per_kind():
    assert get_kind("pair_verify").public_config(CASES["pair_verify"]["config"]) == {}
    assert get_kind("skill_tags").public_config(CASES["skill_tags"]["config"]) == {
        "max_tags": 2,
        "taxonomy": [
            {
                "group": "Reasoning",
                "tags": [
                    {"id": "count", "label": "Counting", "key": "c"},
                    {"id": "space", "label": "Spatial", "description": "Where things are"},
                ],
            }
        ],
    }
    assert get_kind("review").public_config(CASES["review"]["config"]) == {
        "criteria": ["The statement is true"],
        "criteria_advisory": False,
        "reason_codes": [{"code": "wrong", "label": "Wrong fact"}],
    }
    assert get_kind("write_text").public_config(CASES["write_text"]["config"]) == {
        "min_length": 3,
        "max_length": 400,
    }


@pytest.mark.parametrize("swapped", [False, True])
@pytest.mark.parametrize("choice", ["left", "right"])
def test_a_side_records_the_candidate_shown_there(project, crowdworker, swapped, choice):
    # Given a forced_choice lease shown in a known order
    case = CASES["forced_choice"]
    queue = QueueFactory(project=project, kind="forced_choice")
    task = TaskFactory(queue=queue, payload=case["payload"])
    client = api(crowdworker)
    client.post(f"/api/queues/{queue.pk}/next/")
    Assignment.objects.filter(task=task).update(presentation={"swapped": swapped})
    # The API shows the candidates by side (read again: the presentation is on the lease)
    shown = client.post(f"/api/queues/{queue.pk}/next/").json()["task"]["payload"]["candidates"]
    text = {c["side"]: c["text"] for c in shown}[choice]
    # When they pick a side
    response = client.post(
        f"/api/tasks/{task.pk}/submit/", {"response": {"choice": choice}}, format="json"
    )
    assert response.status_code == 201
    # Then the candidate whose text was on that side wins
    winner = next(c["id"] for c in case["payload"]["candidates"] if c["text"] == text)
    assert Annotation.objects.get(task=task).response == {
        "choice": choice,
        "swapped": swapped,
        "winner": winner,
    }


def test_a_different_answer_is_409_and_the_same_stays_idempotent(queue, crowdworker):
    TaskFactory.create_batch(2, queue=queue)
    client = api(crowdworker)
    task = client.post(f"/api/queues/{queue.pk}/next/").json()["task"]
    url = f"/api/tasks/{task['id']}/submit/"
    first = client.post(url, {"response": {"answer": "Yes"}}, format="json")
    same = client.post(url, {"response": {"answer": "Yes"}, "duration_ms": 5}, format="json")
    other = client.post(url, {"response": {"answer": "No"}}, format="json")
    garbage = client.post(url, {"response": {"answer": "Maybe"}}, format="json")
    assert (first.status_code, same.status_code) == (201, 200)
    assert same.json()["next"] == first.json()["next"]
    assert (other.status_code, other.json()) == (
        409,
        {"message": "You already answered this task; your first answer is kept."},
    )
    assert garbage.status_code == 409
    assert list(Annotation.objects.values_list("response", flat=True)) == [{"answer": "Yes"}]


def test_json_dump_of_hidden_values_is_not_a_false_pass():
    # The secrets are spelt exactly as they sit in the payloads (so the absence checks bite)
    dumped = json.dumps(CASES)
    for secret in HIDDEN:
        assert secret in dumped, secret


def test_a_double_click_with_an_image_upload_stays_idempotent(
    client, project, crowdworker, settings, tmp_path
):
    settings.MEDIA_ROOT = tmp_path
    queue = QueueFactory(
        project=project, kind="write_text", config={"allow_image": True, "min_length": 3}
    )
    task, _next = (
        TaskFactory(queue=queue, payload={"prompt": "Describe"}),
        TaskFactory(queue=queue, payload={"prompt": "Describe again"}),
    )
    client.force_login(crowdworker)
    client.get(reverse("work", args=[queue.pk]))
    buf = io.BytesIO()
    Image.new("RGB", (8, 8), "red").save(buf, "PNG")

    def post(text):
        upload = SimpleUploadedFile("pic.png", buf.getvalue(), content_type="image/png")
        return client.post(
            reverse("work-submit", args=[task.pk]),
            {"text": text, "image": upload},
            HTTP_HX_REQUEST="true",
        )

    # The same form posted twice (a double click, the file re-sent) is one answer
    assert (post("A red square").status_code, post("A red square").status_code) == (200, 200)
    # Another text is refused; one answer and one stored file remain
    assert post("A blue square").status_code == 409
    assert Annotation.objects.get(task=task).response["text"] == "A red square"
    assert len(list(tmp_path.rglob("*.png"))) == 1
