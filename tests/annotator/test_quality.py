"""Quality figures built from the database, checked against hand-computed values.

The vqa_choice queue (N = 3, majority, max 3, qualification: 2 gold items at 0 %) gets:

    task   u1       u2       u3       outcome
    T1     Yes 10s  Yes 5s   Yes 60s  Yes (decided)
    T2     Yes 20s  No  5s   Yes 60s  Yes (decided)
    T3     No  30s  No  5s   Yes 60s  No  (decided)
    T4     Yes 40s  No  5s   Unans 60s  no majority at max redundancy (undecided)
    T5     Yes 50s  Yes 5s   -        open
    gold   Yes,Yes 4s  Yes,No 4s  No,No (duration not reported)     gold answer: Yes
"""

from fractions import Fraction as F

import pytest

from annotator import services
from annotator.models import Enrollment, Task
from annotator.platform import roles
from annotator.quality import annotator_quality, kind_quality, queue_quality
from annotator.views.base import QUALITY_KEYS
from tests.factories import QueueFactory, TaskFactory, UserFactory, vqa_payload

YES, NO, UNANS = {"answer": "Yes"}, {"answer": "No"}, {"answer": "Unanswerable"}
TAXONOMY = [
    {
        "group": "Skills",
        "tags": [{"id": "a", "label": "A"}, {"id": "b", "label": "B"}, {"id": "c", "label": "C"}],
    }
]


def work(queue, user, answers, gold=()):
    """Claim and submit through the services until ``user`` meets a task not in ``answers``.

    ``answers`` maps task id -> (response, seconds); ``gold`` is the list of (response, seconds)
    given to the gold items in the order they are served.
    """
    gold = list(gold)
    queue.project.members.add(user)  # people work in their projects only
    claim = services.assignment_claim(queue=queue, annotator=user)
    while claim.assignment is not None:
        assignment = claim.assignment
        if assignment.is_gold:
            response, seconds = gold.pop(0)
        elif assignment.task_id in answers:
            response, seconds = answers[assignment.task_id]
        else:
            break
        claim = services.annotation_submit(
            task_id=assignment.task_id,
            annotator=user,
            response=response,
            duration_ms=seconds * 1000,
        ).next
    assert not gold


@pytest.fixture
def users(db):
    return [UserFactory(username=f"u{i}", role=roles.CROWDWORKER) for i in (1, 2, 3)]


@pytest.fixture
def vqa_queue(db, users):
    queue = QueueFactory(
        kind="vqa_choice",
        redundancy=3,
        max_redundancy=3,
        rule="majority",
        qualification_count=2,
        qualification_min_accuracy=0.0,
    )
    for i in range(2):
        TaskFactory(queue=queue, payload=vqa_payload(100 + i), is_gold=True, gold=YES)
    t = [TaskFactory(queue=queue, payload=vqa_payload(i)).id for i in range(5)]
    u1, u2, u3 = users
    work(
        queue,
        u1,
        {t[0]: (YES, 10), t[1]: (YES, 20), t[2]: (NO, 30), t[3]: (YES, 40), t[4]: (YES, 50)},
        gold=[(YES, 4), (YES, 4)],
    )
    work(
        queue,
        u2,
        {t[0]: (YES, 5), t[1]: (NO, 5), t[2]: (NO, 5), t[3]: (NO, 5), t[4]: (YES, 5)},
        gold=[(YES, 4), (NO, 4)],
    )
    work(
        queue,
        u3,
        {t[0]: (YES, 60), t[1]: (YES, 60), t[2]: (YES, 60), t[3]: (UNANS, 60)},
        gold=[(NO, 0), (NO, 0)],
    )
    return queue


@pytest.fixture
def tags_queue(vqa_queue, users):
    # S1: u1 {a,b}, u2 {b,a} -> same label; S2: u1 {a}, u2 {a,c}. Majority keeps {a,b}, {a}.
    queue = QueueFactory(
        project=vqa_queue.project,
        kind="skill_tags",
        config={"taxonomy": TAXONOMY},
        redundancy=2,
        max_redundancy=2,
    )
    payload = {"images": [{"url": "/static/demo/x.png"}], "questions": ["What is it?"]}
    s1, s2 = (TaskFactory(queue=queue, payload=payload).id for _ in range(2))
    u1, u2, _u3 = users
    work(queue, u1, {s1: ({"tags": ["a", "b"]}, 6), s2: ({"tags": ["a"]}, 6)})
    work(queue, u2, {s1: ({"tags": ["b", "a"]}, 6), s2: ({"tags": ["a", "c"]}, 6)})
    return queue


@pytest.fixture
def text_queue(vqa_queue, users):
    queue = QueueFactory(project=vqa_queue.project, kind="write_text", redundancy=1)
    task = TaskFactory(queue=queue, payload={"prompt": "Describe the image."}, required=1)
    work(queue, users[0], {task.id: ({"text": "A red cube."}, 100)})
    return queue


def by_name(rows):
    return {r["username"]: r for r in rows}


def test_queue_quality_matches_hand_computed_values(vqa_queue, users):
    # Given the table in the module docstring
    assert sorted(
        Task.objects.filter(queue=vqa_queue, is_gold=False).values_list("state", flat=True)
    ) == ["decided", "decided", "decided", "open", "undecided"]
    # When
    q = queue_quality(vqa_queue)
    # Then: percent agreement over T1..T5 = (1 + 1/3 + 1/3 + 0 + 1) / 5
    assert q["percent_agreement"] == pytest.approx(float(F(8, 15)), abs=1e-12)
    # Cohen: u1-u2 (5 items) 2/7, u1-u3 (4 items) -1/7, u2-u3 (4 items) 1/13; mean 20/273
    u1, u2, u3 = (u.pk for u in users)
    pairs = {(p["annotator_a"], p["annotator_b"]): p for p in q["cohen_kappa_pairs"]}
    assert pairs[(u1, u2)]["n_shared"] == 5
    assert pairs[(u1, u2)]["kappa"] == pytest.approx(2 / 7, abs=1e-12)
    assert pairs[(u1, u3)]["kappa"] == pytest.approx(-1 / 7, abs=1e-12)
    assert pairs[(u2, u3)]["kappa"] == pytest.approx(1 / 13, abs=1e-12)
    assert q["cohen_kappa"] == pytest.approx(20 / 273, abs=1e-12)
    # Fleiss over the four 3-rater items (T5 has 2 raters): P-bar 5/12, P_e 11/24 -> -1/13
    assert q["fleiss_raters"] == 3
    assert q["fleiss_kappa"] == pytest.approx(-1 / 13, abs=1e-12)
    # Krippendorff nominal over T1..T5: n = 14, off-diagonal coincidences 7,
    # sum n_c n_k = 196 - (81 + 16 + 1) = 98 -> alpha = 1 - 13·7/98 = 1/14
    assert q["krippendorff_alpha"] == pytest.approx(1 / 14, abs=1e-12)
    # Gold: 2 + 1 + 0 correct of 6
    assert q["gold_accuracy"] == 0.5
    assert q["gold_answered"] == 6
    # Speed: 18 reported durations, median (5 + 10) / 2 s, 18 tasks in 431 s
    assert q["median_seconds"] == 7.5
    assert q["tasks_per_hour"] == pytest.approx(18 * 3600 / 431, abs=1e-9)
    assert q["n_annotations"] == 20
    assert q["n_tasks_decided"] == 3
    assert q["n_items_compared"] == 5


def test_queue_quality_per_annotator(vqa_queue, users):
    rows = by_name(queue_quality(vqa_queue)["per_annotator"])
    assert list(rows) == ["u1", "u2", "u3"]
    u1, u2, u3 = rows["u1"], rows["u2"], rows["u3"]
    assert (u1["n"], u2["n"], u3["n"]) == (7, 7, 6)
    assert (u1["gold_answered"], u2["gold_answered"], u3["gold_answered"]) == (2, 2, 2)
    assert (u1["gold_accuracy"], u2["gold_accuracy"], u3["gold_accuracy"]) == (1.0, 0.5, 0.0)
    # Non-gold answers on decided tasks T1..T3 against Yes, Yes, No
    assert u1["agreement_with_outcome"] == 1.0
    assert u2["agreement_with_outcome"] == pytest.approx(2 / 3)
    assert u3["agreement_with_outcome"] == pytest.approx(2 / 3)
    assert (u1["median_seconds"], u2["median_seconds"], u3["median_seconds"]) == (20, 5, 60)
    assert u1["tasks_per_hour"] == pytest.approx(7 * 3600 / 158)
    assert u2["tasks_per_hour"] == pytest.approx(7 * 3600 / 33)
    assert u3["tasks_per_hour"] == pytest.approx(60.0)
    assert u1["cohen_kappa"] == pytest.approx(1 / 14, abs=1e-12)
    assert u2["cohen_kappa"] == pytest.approx(33 / 182, abs=1e-12)
    assert u3["cohen_kappa"] == pytest.approx(-3 / 91, abs=1e-12)
    enrollment = Enrollment.objects.get(queue=vqa_queue, annotator=users[0])
    assert u1["annotator_id"] == users[0].pk
    assert u1["enrollment_id"] == enrollment.pk
    assert u1["enrollment_state"] == "active"
    assert u1["enrollment_reason"] == ""


def test_paused_annotator_without_answers_is_listed_with_reason(vqa_queue):
    paused = UserFactory(username="u9", role=roles.CROWDWORKER)
    Enrollment.objects.create(
        queue=vqa_queue, annotator=paused, state="paused", reason="Below 80 % on gold."
    )
    row = by_name(queue_quality(vqa_queue)["per_annotator"])["u9"]
    assert row["n"] == 0
    assert row["gold_accuracy"] is None
    assert row["agreement_with_outcome"] is None
    assert row["median_seconds"] is None
    assert row["tasks_per_hour"] is None
    assert row["cohen_kappa"] is None
    assert (row["enrollment_state"], row["enrollment_reason"]) == ("paused", "Below 80 % on gold.")


def test_empty_queue_has_no_numbers_and_no_nan(db):
    q = queue_quality(QueueFactory())
    for key in set(QUALITY_KEYS) - {"n_annotations"}:
        assert q[key] is None, key
    assert (q["n_annotations"], q["n_tasks_decided"], q["per_annotator"]) == (0, 0, [])


def test_multilabel_queue_uses_tag_sets_as_labels(tags_queue):
    q = queue_quality(tags_queue)
    # S1 agree ({a,b} both), S2 differ ({a} vs {a,c})
    assert q["percent_agreement"] == 0.5
    # p_o 1/2, p_e 1/4 -> 1/3
    assert q["cohen_kappa"] == pytest.approx(1 / 3, abs=1e-12)
    # P-bar 1/2, P_e = 1/4 + 1/16 + 1/16 -> (1/2 - 3/8) / (5/8) = 1/5
    assert q["fleiss_kappa"] == pytest.approx(0.2, abs=1e-12)
    # n = 4, off-diagonal 2, sum n_c n_k = 16 - 6 = 10 -> 1 - 3·2/10
    assert q["krippendorff_alpha"] == pytest.approx(0.4, abs=1e-12)
    assert q["n_tasks_decided"] == 2
    rows = by_name(q["per_annotator"])
    assert rows["u1"]["agreement_with_outcome"] == 1.0
    assert rows["u2"]["agreement_with_outcome"] == 0.5


def test_write_text_has_no_agreement_but_has_speed(text_queue):
    q = queue_quality(text_queue)
    assert q["percent_agreement"] is None
    assert q["cohen_kappa"] is None
    assert q["fleiss_kappa"] is None
    assert q["krippendorff_alpha"] is None
    assert q["cohen_kappa_pairs"] == []
    assert q["median_seconds"] == 100
    assert q["tasks_per_hour"] == 36.0
    assert q["n_tasks_decided"] == 1
    assert by_name(q["per_annotator"])["u1"]["agreement_with_outcome"] is None


def test_kind_quality_pools_queues_of_a_kind(vqa_queue, tags_queue, text_queue, users):
    # Given a second vqa_choice queue where u1 and u2 agree on two items
    other = QueueFactory(project=vqa_queue.project, kind="vqa_choice", redundancy=2)
    o1, o2 = (TaskFactory(queue=other, payload=vqa_payload(50 + i)).id for i in range(2))
    work(other, users[0], {o1: (YES, 2), o2: (NO, 2)})
    work(other, users[1], {o1: (YES, 2), o2: (NO, 2)})
    # When
    kinds = kind_quality(type(vqa_queue).objects.filter(project=vqa_queue.project))
    # Then
    assert list(kinds) == ["skill_tags", "vqa_choice", "write_text"]
    vqa = kinds["vqa_choice"]
    assert vqa["n_queues"] == 2
    assert vqa["n_annotations"] == 24
    assert vqa["n_tasks_decided"] == 5
    # (8/3 + 1 + 1) / 7 items = 2/3
    assert vqa["percent_agreement"] == pytest.approx(float(F(2, 3)), abs=1e-12)
    # u1-u2 now share 7 items: u1 Y Y N Y Y Y N, u2 Y N N N Y Y N -> p_o 5/7,
    # u1 Y 5/7 N 2/7, u2 Y 3/7 N 4/7, p_e = 23/49, kappa = (35/49 - 23/49) / (26/49) = 6/13
    pairs = {(p["annotator_a"], p["annotator_b"]): p["kappa"] for p in vqa["cohen_kappa_pairs"]}
    assert pairs[(users[0].pk, users[1].pk)] == pytest.approx(6 / 13, abs=1e-12)
    assert vqa["gold_accuracy"] == 0.5
    assert kinds["skill_tags"]["krippendorff_alpha"] == pytest.approx(0.4, abs=1e-12)
    assert kinds["write_text"]["krippendorff_alpha"] is None
    assert kinds["write_text"]["n_annotations"] == 1
    # The pooled per-queue figures of a single-queue kind equal queue_quality's
    single = queue_quality(tags_queue)
    for key in ("percent_agreement", "cohen_kappa", "fleiss_kappa", "median_seconds"):
        assert kinds["skill_tags"][key] == single[key]


def test_annotator_quality_across_queues(vqa_queue, tags_queue, text_queue, users):
    u2 = annotator_quality(users[1])
    assert u2["username"] == "u2"
    assert u2["n"] == 9
    assert u2["gold_answered"] == 2
    assert u2["gold_accuracy"] == 0.5
    # vqa 2 of 3 decided answers, tags 1 of 2 -> 3/5
    assert u2["agreement_with_outcome"] == pytest.approx(0.6)
    # durations 4,4,5,5,5,5,5,6,6 s
    assert u2["median_seconds"] == 5
    assert u2["tasks_per_hour"] == pytest.approx(9 * 3600 / 45)
    per_queue = {r["kind"]: r for r in u2["per_queue"]}
    assert set(per_queue) == {"vqa_choice", "skill_tags"}
    assert per_queue["vqa_choice"]["agreement_with_outcome"] == pytest.approx(2 / 3)
    assert per_queue["vqa_choice"]["enrollment_state"] == "active"
    assert per_queue["skill_tags"]["agreement_with_outcome"] == 0.5
    assert per_queue["skill_tags"]["n"] == 2
    # Scoped to one queue
    scoped = annotator_quality(users[1], queues=type(vqa_queue).objects.filter(pk=tags_queue.pk))
    assert scoped["n"] == 2
    assert [r["queue_id"] for r in scoped["per_queue"]] == [tags_queue.pk]


def test_queries_are_bounded(vqa_queue, tags_queue, text_queue, users, django_assert_num_queries):
    with django_assert_num_queries(5):  # the fifth counts curator-settled tasks
        queue_quality(vqa_queue)
    with django_assert_num_queries(3):
        kind_quality(type(vqa_queue).objects.all())
    with django_assert_num_queries(3):
        annotator_quality(users[0])
