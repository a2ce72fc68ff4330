"""Report reasons are the queue's codes; free text only under "other" (issue 13 item 10)."""

import pytest
from django.urls import reverse

from annotator import services
from annotator.platform.errors import Invalid
from tests.annotator.helpers import token_api as api
from tests.factories import QueueFactory, TaskFactory

HX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def held(queue, crowdworker):
    TaskFactory.create_batch(2, queue=queue)
    return services.assignment_claim(queue=queue, annotator=crowdworker).assignment


def report(user, task_id, body):
    return api(user).post(f"/api/tasks/{task_id}/report/", body, format="json")


def state_of(assignment):
    assignment.refresh_from_db()
    return assignment.state, assignment.report_reason


@pytest.mark.parametrize(
    "body, message, field",
    [
        (
            {"reason": "nonsense-code"},
            "reason: “nonsense-code” is not a report reason of this queue; "
            "use one of: broken_image, unclear, offensive, other.",
            "reason",
        ),
        (
            {"reason": "unclear", "details": "and also this"},
            "details: free text goes only with the reason “other” (Something else).",
            "details",
        ),
        (
            {"reason": "other"},
            "details: say what is wrong when the reason is “other” (Something else).",
            "details",
        ),
        (
            {"reason": "other", "details": "   "},
            "details: say what is wrong when the reason is “other” (Something else).",
            "details",
        ),
    ],
    ids=["unknown-code", "text-without-other", "other-without-text", "other-blank-text"],
)
def test_bad_report_is_400_naming_the_field(held, crowdworker, body, message, field):
    response = report(crowdworker, held.task_id, body)
    assert response.status_code == 400
    assert response.json()["message"] == message
    assert [e["field"] for e in response.json()["errors"]] == [field]
    assert state_of(held) == ("leased", "")


def test_a_code_is_stored_as_given(held, crowdworker):
    response = report(crowdworker, held.task_id, {"reason": "offensive"})
    assert response.json() == {"task_id": held.task_id, "state": "reported"}
    assert state_of(held) == ("reported", "offensive")


def test_other_keeps_its_text(held, crowdworker):
    response = report(
        crowdworker, held.task_id, {"reason": "other", "details": " The text is in Latin "}
    )
    assert response.status_code == 200
    assert state_of(held) == ("reported", "other: The text is in Latin")


def test_a_queue_names_its_own_reasons(project, crowdworker, client):
    queue = QueueFactory(
        project=project, config={"report_reasons": [{"code": "blurry", "label": "Too blurry"}]}
    )
    task = TaskFactory(queue=queue)
    client.force_login(crowdworker)
    html = client.get(reverse("work", args=[queue.pk])).content.decode()
    assert '<option value="blurry">Too blurry</option>' in html
    assert '<option value="other">Something else</option>' in html
    assert 'value="broken_image"' not in html
    assert report(crowdworker, task.pk, {"reason": "broken_image"}).status_code == 400
    assert report(crowdworker, task.pk, {"reason": "blurry"}).status_code == 200
    detail = api(crowdworker).get(f"/api/queues/{queue.pk}/").json()
    assert detail["report_reasons"] == [
        {"code": "blurry", "label": "Too blurry"},
        {"code": "other", "label": "Something else"},
    ]


@pytest.mark.parametrize(
    "reasons, message",
    [
        ([{"code": "Bad Code", "label": "x"}], "config.report_reasons.0.code"),
        ([{"code": "a", "label": "A"}, {"code": "a", "label": "B"}], "codes must be unique"),
        ("blurry", "config.report_reasons"),
    ],
)
def test_bad_report_reason_settings_are_refused(project, reasons, message):
    with pytest.raises(Invalid) as err:
        services.queue_create(
            project=project, kind="vqa_choice", title="Q", config={"report_reasons": reasons}
        )
    assert message in err.value.message


def test_workspace_offers_the_default_reasons(client, held, crowdworker):
    client.force_login(crowdworker)
    html = client.get(reverse("work", args=[held.queue_id])).content.decode()
    options = [
        '<option value="broken_image">An image does not load or is broken</option>',
        '<option value="unclear">The task is unclear or cannot be answered</option>',
        '<option value="offensive">Offensive or private content</option>',
        '<option value="other">Something else</option>',
    ]
    assert "".join(options) in html


@pytest.mark.parametrize(
    "form, message",
    [
        ({"reason": "nonsense"}, "is not a report reason of this queue"),
        ({"reason": "unclear", "details": "blank"}, "free text goes only with the reason"),
        ({"reason": "other"}, "say what is wrong when the reason is"),
    ],
)
def test_workspace_says_what_is_wrong_with_a_report(client, held, crowdworker, form, message):
    client.force_login(crowdworker)
    url = reverse("work-report", args=[held.task_id])
    # htmx: an inline message, the task stays
    page = client.post(url, form, **HX)
    assert page.status_code == 400
    assert message in page.content.decode()
    # without JavaScript: back to the task with the message
    page = client.post(url, form, follow=True)
    assert page.status_code == 200
    assert page.redirect_chain == [(reverse("work", args=[held.queue_id]), 302)]
    assert message in page.content.decode()
    assert state_of(held) == ("leased", "")


def test_the_new_crowd_messages_are_translated(client, held, crowdworker):
    client.force_login(crowdworker)
    zh = {"HTTP_ACCEPT_LANGUAGE": "zh-hans"}
    page = client.get(reverse("work", args=[held.queue_id]), **zh).content.decode()
    assert "详情（仅在选择“其他问题”时填写，此时必填）" in page
    url = reverse("work-report", args=[held.task_id])
    refused = client.post(url, {"reason": "other"}, **HX, **zh).content.decode()
    assert "details：原因为“other”（其他问题）时，请说明有什么问题。" in refused
    submit = reverse("work-submit", args=[held.task_id])
    client.post(submit, {"answer": "Yes"}, **HX, **zh)
    again = client.post(submit, {"answer": "No"}, **HX, HTTP_ACCEPT_LANGUAGE="hi")
    assert again.status_code == 409
    assert "आप इस कार्य का उत्तर पहले ही दे चुके हैं; आपका पहला उत्तर रखा गया है।" in (again.content.decode())
