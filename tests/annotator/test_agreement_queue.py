"""The issue's 24-item skill-tag case through the engine: services, the queue page, the API and
the figures a frozen version's card keeps (``queue_agreement``)."""

import pytest
from django.urls import reverse

from annotator.models import Task
from annotator.platform import roles
from annotator.quality import queue_agreement
from tests.annotator.helpers import session_api
from tests.annotator.test_quality import work
from tests.factories import QueueFactory, TaskFactory, UserFactory

TAXONOMY = [
    {
        "group": "Attribute",
        "tags": [
            {"id": "shape", "label": "Shape"},
            {"id": "color", "label": "Color"},
            {"id": "count", "label": "Count"},
        ],
    }
]
MINUS_23_48 = -23 / 48  # hand-computed in tests/annotator/test_agreement_sets.py


@pytest.fixture
def tag_queue(project):
    queue = QueueFactory(
        project=project,
        kind="skill_tags",
        config={"taxonomy": TAXONOMY},
        redundancy=3,
        max_redundancy=3,
    )
    payload = {"images": [{"url": "/static/demo/x.png"}], "questions": ["What is it?"]}
    ids = [TaskFactory(queue=queue, payload=payload).id for _ in range(24)]
    for name, tags in (
        ("ann", ["shape"]),
        ("bea", ["shape", "color"]),
        ("cal", ["shape", "count"]),
    ):
        work(
            queue,
            UserFactory(username=name, role=roles.CROWDWORKER),
            {i: ({"tags": tags}, 5) for i in ids},
        )
    return queue


def test_every_task_is_decided_shape_at_two_thirds(tag_queue):
    tasks = Task.objects.filter(queue=tag_queue)
    assert {t.state for t in tasks} == {"decided"}
    assert {tuple(t.outcome["label"]) for t in tasks} == {("shape",)}
    assert {round(t.agreement, 2) for t in tasks} == {0.67}


def test_api_gives_per_tag_set_and_per_annotator_figures(tag_queue, curator, researcher):
    for user in (curator, researcher):
        response = session_api(user).get(reverse("api-queue-agreement", args=[tag_queue.pk]))
        assert response.status_code == 200
        body = response.json()
        assert body["multilabel"] is True and body["kind"] == "skill_tags"
        # the old whole-set figures are still there, named for what they are
        assert (body["percent_agreement"], body["cohen_kappa"]) == (0.0, 0.0)
        tags = {t["tag"]: t for t in body["per_tag"]}
        assert tags["shape"]["percent_agreement"] == 1.0
        assert tags["shape"]["n_votes"] == 72
        assert tags["color"]["percent_agreement"] == pytest.approx(1 / 3)
        assert body["set_alpha_masi"] == pytest.approx(MINUS_23_48)
        assert body["mean_set_similarity"] == pytest.approx(4 / 9)
        people = {p["username"]: p for p in body["per_annotator"]}
        # (item, tag) decisions over 24 items × 3 tags. ann vs bea: agree on shape and count,
        # p_o 2/3; yes shares 1/3 and 2/3, p_e 4/9 -> κ (2/3 − 4/9)/(5/9) = 0.4 (ann vs cal the
        # same). bea vs cal: agree on shape only, p_o 1/3; p_e 5/9 -> κ −0.5. Means: ann 0.4,
        # bea and cal (0.4 − 0.5)/2 = −0.05.
        assert set(people) == {"ann", "bea", "cal"}
        assert people["ann"]["cohen_kappa"] == pytest.approx(0.4)
        assert people["bea"]["cohen_kappa"] == pytest.approx(-0.05)


def test_single_label_queue_has_no_set_figures(queue, curator):
    body = session_api(curator).get(reverse("api-queue-agreement", args=[queue.pk])).json()
    assert body["multilabel"] is False
    assert "per_tag" not in body and body["per_annotator"] == []


def test_queue_page_shows_per_tag_and_set_alpha(tag_queue, client, curator):
    client.force_login(curator)
    html = client.get(reverse("curator-queue", args=[tag_queue.pk])).content.decode()
    assert "Set α (MASI)" in html and "-0.48" in html
    assert "<code>shape</code>" in html
    assert "1.000" in html  # shape's per-tag percent agreement


def test_card_figures_number_people_and_keep_per_tag(tag_queue):
    card = queue_agreement(tag_queue)
    assert card["multilabel"] is True
    assert {t["tag"]: t["percent_agreement"] for t in card["per_tag"]}["shape"] == 1.0
    assert [p["annotator"] for p in card["per_annotator"]] == ["A1", "A2", "A3"]
    assert card["set_alpha_jaccard"] == pytest.approx(MINUS_23_48)
