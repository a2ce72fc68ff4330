"""The annotation engine's services: claiming, leases, submitting, gold, aggregation, outcomes.

Times are passed explicitly (``now=``) so lease arithmetic is exact.
"""

from datetime import timedelta

import pytest
from django.utils import timezone

from annotator import services
from annotator.kinds import get_kind
from annotator.models import Annotation, Assignment, Enrollment, Task, TaskQueue
from annotator.outcomes import outcome_handler
from annotator.platform import roles
from annotator.platform.errors import Conflict, Invalid, NotFound
from tests.annotator.helpers import workers
from tests.factories import QueueFactory, TaskFactory, UserFactory

TTL = timedelta(minutes=10)
NO_MORE = "No more tasks for you in this queue. Thank you!"

# --- an outcome handler that records its calls --------------------------------------------------
CALLS: list[tuple[int, bool, object]] = []

pytestmark = pytest.mark.django_db


@outcome_handler("tests.record")
def record_outcome(task, decision):
    CALLS.append((task.pk, decision.decided, decision.label))


@pytest.fixture(autouse=True)
def _reset_calls():
    CALLS.clear()
    yield
    CALLS.clear()


# --- helpers ------------------------------------------------------------------------------------
def claim(queue, person, now=None) -> services.ClaimResult:
    queue.refresh_from_db()
    queue.project.members.add(person)  # people work in their projects only
    return services.assignment_claim(queue=queue, annotator=person, now=now)


def answer(queue, person, response, now=None) -> services.SubmitResult:
    """Claim and answer whatever the engine hands ``person``."""
    got = claim(queue, person, now=now)
    assert got.assignment is not None, got.message
    return services.annotation_submit(
        task_id=got.assignment.task_id, annotator=person, response=response, now=now
    )


def reload(task: Task) -> Task:
    task.refresh_from_db()
    return task


def gold_task(queue, answer_="Yes", i=0) -> Task:
    return TaskFactory(queue=queue, is_gold=True, gold={"answer": answer_})


# =================================================================================================
# Claiming
# =================================================================================================
def test_claim_offers_fullest_task_first_then_lowest_id(queue, crowdworker, other_worker):
    # Given three open tasks; someone skipped the first and now holds a slot of the second
    a, b, c = (TaskFactory(queue=queue) for _ in range(3))
    p0, p3 = workers(2)
    assert claim(queue, p0).assignment.task_id == a.id  # all equally empty: lowest id
    services.assignment_skip(task_id=a.id, annotator=p0)
    assert claim(queue, p0).assignment.task_id == b.id
    # When others claim in turn
    # Then the task closest to completion goes first, then the lowest id among equals
    assert claim(queue, crowdworker).assignment.task_id == b.id
    assert claim(queue, other_worker).assignment.task_id == a.id
    assert claim(queue, p3).assignment.task_id == a.id
    assert [reload(t).active_count for t in (a, b, c)] == [2, 2, 0]


def test_claim_returns_the_live_lease_again(queue, crowdworker):
    TaskFactory(queue=queue)
    TaskFactory(queue=queue)
    first = claim(queue, crowdworker)
    again = claim(queue, crowdworker)
    assert again.assignment.pk == first.assignment.pk
    assert Assignment.objects.filter(annotator=crowdworker).count() == 1
    assert reload(first.assignment.task).active_count == 1


def test_claim_sets_a_lease_of_the_queue_ttl(queue, crowdworker):
    TaskFactory(queue=queue)
    now = timezone.now()
    got = claim(queue, crowdworker, now=now)
    a = Assignment.objects.get(pk=got.assignment.pk)
    assert a.state == Assignment.State.LEASED
    assert a.leased_at == now
    assert a.expires_at == now + TTL
    assert a.is_gold is False
    assert a.presentation == {}


@pytest.mark.parametrize("how", ["submit", "skip", "report"])
def test_task_is_never_offered_again_after_answer_skip_or_report(queue, crowdworker, how):
    # Given one task with room for two people
    task = TaskFactory(queue=queue)
    got = claim(queue, crowdworker)
    assert got.assignment.task_id == task.id
    # When the worker finishes with it one way or another
    if how == "submit":
        services.annotation_submit(
            task_id=task.id, annotator=crowdworker, response={"answer": "Yes"}
        )
    elif how == "skip":
        services.assignment_skip(task_id=task.id, annotator=crowdworker)
    else:
        services.assignment_report(task_id=task.id, annotator=crowdworker, reason="broken_image")
    # Then the task still has a free slot, but never for them: the truth is "no more tasks"
    task = reload(task)
    assert task.state == Task.State.OPEN
    assert task.active_count == (1 if how == "submit" else 0)
    again = claim(queue, crowdworker)
    assert again.assignment is None
    assert again.message == NO_MORE
    assert again.retry_after is None
    # And also after every lease anywhere has long expired
    later = claim(queue, crowdworker, now=timezone.now() + 2 * TTL)
    assert later.assignment is None
    assert later.message == NO_MORE


def test_expired_lease_is_reclaimable_by_the_same_person(queue, crowdworker):
    # Given a single task whose lease ran out (a closed tab)
    queue.redundancy = queue.max_redundancy = 1
    queue.save()
    task = TaskFactory(queue=queue)
    t0 = timezone.now()
    first = claim(queue, crowdworker, now=t0)
    # When the same person comes back after the TTL
    t1 = t0 + TTL + timedelta(seconds=1)
    again = claim(queue, crowdworker, now=t1)
    # Then they get the same task on the same assignment row, with a fresh lease
    assert again.assignment.task_id == task.id
    assert again.assignment.pk == first.assignment.pk
    a = Assignment.objects.get(pk=first.assignment.pk)
    assert a.state == Assignment.State.LEASED
    assert a.leased_at == t1
    assert a.expires_at == t1 + TTL
    assert a.finished_at is None
    assert reload(task).active_count == 1
    # And they can answer it
    services.annotation_submit(
        task_id=task.id, annotator=crowdworker, response={"answer": "No"}, now=t1
    )
    assert reload(task).state == Task.State.DECIDED


def test_redundancy_is_never_exceeded(queue):
    # Given one task with N = 2 and three people
    task = TaskFactory(queue=queue)
    p1, p2, p3 = workers(3)
    now = timezone.now()
    assert claim(queue, p1, now=now).assignment.task_id == task.id
    assert claim(queue, p2, now=now).assignment.task_id == task.id
    # When the third claims while both slots are leased
    third = claim(queue, p3, now=now)
    # Then they get nothing, told truthfully that the task may come back, and when
    assert third.assignment is None
    assert third.message == (
        "1 task(s) are being worked on by others and may come back to the pool; "
        "checking again shortly."
    )
    assert third.retry_after == 600
    assert reload(task).active_count == 2
    assert Assignment.objects.filter(task=task).count() == 2
    # When both answer, the third is told there is nothing more (the task is decided)
    for p in (p1, p2):
        services.annotation_submit(task_id=task.id, annotator=p, response={"answer": "Yes"})
    final = claim(queue, p3)
    assert final.assignment is None
    assert final.message == NO_MORE
    assert Annotation.objects.filter(task=task).count() == 2


def test_no_more_tasks_only_when_true(queue, crowdworker, other_worker):
    # Given N = 1 and a single task held by someone else
    queue.redundancy = queue.max_redundancy = 1
    queue.save()
    task = TaskFactory(queue=queue)
    t0 = timezone.now()
    claim(queue, other_worker, now=t0)
    # When the worker asks 100 s later
    got = claim(queue, crowdworker, now=t0 + timedelta(seconds=100))
    # Then they hear the task may come back and when to look again
    assert got.assignment is None
    assert got.message.startswith("1 task(s) are being worked on by others")
    assert got.retry_after == 500
    # When the other lease expires, the task is theirs
    later = t0 + TTL + timedelta(seconds=1)
    got = claim(queue, crowdworker, now=later)
    assert got.assignment.task_id == task.id
    # And once it is answered, the other person is told there is nothing more
    services.annotation_submit(
        task_id=task.id, annotator=crowdworker, response={"answer": "Yes"}, now=later
    )
    final = claim(queue, other_worker, now=later)
    assert final.assignment is None
    assert final.message == NO_MORE


def test_held_tasks_already_answered_by_me_do_not_count_as_waiting(queue, crowdworker):
    task = TaskFactory(queue=queue)
    p2, p3 = workers(2)
    answer(queue, crowdworker, {"answer": "Yes"})
    claim(queue, p2)  # holds the last slot
    got = claim(queue, crowdworker)
    assert got.assignment is None
    assert got.message == NO_MORE
    assert reload(task).active_count == 2
    assert claim(queue, p3).retry_after is not None


@pytest.mark.parametrize("status", ["paused", "closed"])
def test_claim_refused_on_a_queue_that_is_not_open(queue, crowdworker, status):
    TaskFactory(queue=queue)
    services.queue_set_status(queue=queue, status=status)
    got = claim(queue, crowdworker)
    assert got.assignment is None
    assert got.message == f"This queue is {status.capitalize()}."
    assert not Assignment.objects.exists()


# =================================================================================================
# Leases
# =================================================================================================
def test_leases_expire_returns_expired_leases_to_the_pool(queue, crowdworker, other_worker):
    t1, t2 = TaskFactory(queue=queue), TaskFactory(queue=queue)
    t0 = timezone.now()
    a1 = claim(queue, crowdworker, now=t0).assignment
    a2 = claim(queue, other_worker, now=t0 + timedelta(minutes=5)).assignment
    assert (a1.task_id, a2.task_id) == (t1.id, t1.id)
    # Nothing is due before the TTL
    assert services.leases_expire(now=t0 + TTL - timedelta(seconds=1)) == 0
    # Exactly at the TTL the first lease is due, the second not yet
    assert services.leases_expire(now=t0 + TTL) == 1
    a1 = Assignment.objects.get(pk=a1.pk)
    assert a1.state == Assignment.State.EXPIRED
    assert a1.finished_at == t0 + TTL
    assert Assignment.objects.get(pk=a2.pk).state == Assignment.State.LEASED
    assert reload(t1).active_count == 1
    # Running it again changes nothing (idempotent beat job)
    assert services.leases_expire(now=t0 + TTL) == 0
    assert reload(t1).active_count == 1
    assert reload(t2).active_count == 0
    # Scoped to another queue it leaves this one alone
    other = QueueFactory(project=queue.project)
    assert services.leases_expire(queue=other, now=t0 + 2 * TTL) == 0
    assert services.leases_expire(queue=queue, now=t0 + 2 * TTL) == 1
    assert reload(t1).active_count == 0


def test_claim_expires_stale_leases_lazily(queue, crowdworker, other_worker):
    queue.redundancy = queue.max_redundancy = 1
    queue.save()
    task = TaskFactory(queue=queue)
    t0 = timezone.now()
    a = claim(queue, crowdworker, now=t0).assignment
    got = claim(queue, other_worker, now=t0 + TTL + timedelta(seconds=1))
    assert got.assignment.task_id == task.id
    assert Assignment.objects.get(pk=a.pk).state == Assignment.State.EXPIRED
    assert reload(task).active_count == 1


def test_heartbeat_extends_the_lease(queue, crowdworker):
    task = TaskFactory(queue=queue)
    t0 = timezone.now()
    claim(queue, crowdworker, now=t0)
    t1 = t0 + timedelta(minutes=9)
    beat = services.assignment_heartbeat(task_id=task.id, annotator=crowdworker, now=t1)
    assert beat.expires_at == t1 + TTL
    assert Assignment.objects.get(pk=beat.pk).expires_at == t1 + TTL
    # The old expiry has passed, the lease has not
    t2 = t0 + TTL + timedelta(minutes=1)
    assert services.leases_expire(now=t2) == 0
    services.annotation_submit(
        task_id=task.id, annotator=crowdworker, response={"answer": "Yes"}, now=t2
    )
    assert Annotation.objects.filter(task=task, annotator=crowdworker).count() == 1


@pytest.mark.parametrize("expired_by_job", [False, True])
def test_heartbeat_after_expiry_conflicts(queue, crowdworker, expired_by_job):
    task = TaskFactory(queue=queue)
    t0 = timezone.now()
    claim(queue, crowdworker, now=t0)
    late = t0 + TTL + timedelta(seconds=5)
    if expired_by_job:
        assert services.leases_expire(now=late) == 1
    with pytest.raises(Conflict) as err:
        services.assignment_heartbeat(task_id=task.id, annotator=crowdworker, now=late)
    assert err.value.status == 409
    assert "Your lease on this task expired at" in err.value.message
    assert "your answer was not saved" in err.value.message
    a = Assignment.objects.get(task=task, annotator=crowdworker)
    assert a.expires_at == t0 + TTL  # not extended


def test_heartbeat_on_a_task_never_claimed_is_not_found(queue, crowdworker):
    task = TaskFactory(queue=queue)
    with pytest.raises(NotFound):
        services.assignment_heartbeat(task_id=task.id, annotator=crowdworker)
    with pytest.raises(NotFound):
        services.assignment_heartbeat(task_id=999_999, annotator=crowdworker)


def test_skip_releases_the_slot_and_is_idempotent(queue, crowdworker, other_worker):
    task, second = TaskFactory(queue=queue), TaskFactory(queue=queue)
    now = timezone.now()
    claim(queue, crowdworker, now=now)
    skipped = services.assignment_skip(task_id=task.id, annotator=crowdworker, now=now)
    assert skipped.state == Assignment.State.SKIPPED
    assert skipped.finished_at == now
    assert reload(task).active_count == 0
    # A double click changes nothing
    services.assignment_skip(task_id=task.id, annotator=crowdworker, now=now)
    assert reload(task).active_count == 0
    # The worker moves on to the next task; the skipped one goes to others
    assert claim(queue, crowdworker).assignment.task_id == second.id
    assert claim(queue, other_worker).assignment.task_id == second.id
    assert claim(queue, UserFactory(role=roles.CROWDWORKER)).assignment.task_id == task.id
    # Answering a skipped task is refused
    with pytest.raises(Conflict) as err:
        services.annotation_submit(
            task_id=task.id, annotator=crowdworker, response={"answer": "Yes"}
        )
    assert err.value.message == "You skipped this task; it can no longer be answered."


def test_report_records_the_reason_and_releases(queue, crowdworker):
    task = TaskFactory(queue=queue)
    claim(queue, crowdworker)
    with pytest.raises(Invalid) as err:
        services.assignment_report(task_id=task.id, annotator=crowdworker, reason="   ")
    assert err.value.message == (
        "reason: say what is wrong with this task "
        "(one of: broken_image, unclear, offensive, other)."
    )
    assert reload(task).active_count == 1
    reported = services.assignment_report(
        task_id=task.id, annotator=crowdworker, reason=" other ", details=" The image is dark  "
    )
    assert reported.state == Assignment.State.REPORTED
    a = Assignment.objects.get(task=task, annotator=crowdworker)
    assert a.report_reason == "other: The image is dark"
    assert reload(task).active_count == 0
    with pytest.raises(Conflict) as err:
        services.assignment_skip(task_id=task.id, annotator=crowdworker)
    assert err.value.message == "You reported this task; it can no longer be answered."


def test_skip_after_expiry_conflicts_and_keeps_counters(queue, crowdworker):
    task = TaskFactory(queue=queue)
    t0 = timezone.now()
    claim(queue, crowdworker, now=t0)
    services.leases_expire(now=t0 + TTL)
    with pytest.raises(Conflict):
        services.assignment_skip(task_id=task.id, annotator=crowdworker, now=t0 + TTL)
    assert reload(task).active_count == 0
    assert Assignment.objects.get(task=task).state == Assignment.State.EXPIRED


# =================================================================================================
# Submitting
# =================================================================================================
def test_submit_is_idempotent(queue, crowdworker):
    # Given two tasks and a claimed lease
    task, nxt = TaskFactory(queue=queue), TaskFactory(queue=queue)
    claim(queue, crowdworker)
    # When the same answer arrives twice (a double click), even with another duration
    r1 = services.annotation_submit(
        task_id=task.id, annotator=crowdworker, response={"answer": "No"}, duration_ms=1234
    )
    r2 = services.annotation_submit(
        task_id=task.id, annotator=crowdworker, response={"answer": "No"}, duration_ms=99
    )
    # Then one annotation is stored and both calls hand out the same next task
    assert (r1.created, r2.created) == (True, False)
    assert r2.annotation.pk == r1.annotation.pk
    assert r1.next.assignment.task_id == nxt.id
    assert r2.next.assignment.pk == r1.next.assignment.pk
    stored = Annotation.objects.get(task=task, annotator=crowdworker)
    assert stored.response == {"answer": "No"}
    assert stored.duration_ms == 1234
    assert stored.is_gold is False
    assert stored.gold_correct is None
    task = reload(task)
    assert (task.active_count, task.done_count, task.state) == (1, 1, Task.State.OPEN)
    assert Assignment.objects.get(task=task).state == Assignment.State.SUBMITTED
    assert Assignment.objects.filter(annotator=crowdworker).count() == 2


def test_submit_validates_the_response_and_writes_nothing(queue, crowdworker):
    task = TaskFactory(queue=queue)
    claim(queue, crowdworker)
    with pytest.raises(Invalid) as err:
        services.annotation_submit(
            task_id=task.id, annotator=crowdworker, response={"answer": "Maybe"}
        )
    assert err.value.status == 400
    assert err.value.message.startswith("response.answer:")
    with pytest.raises(Invalid):
        services.annotation_submit(task_id=task.id, annotator=crowdworker, response=["Yes"])
    assert not Annotation.objects.exists()
    a = Assignment.objects.get(task=task)
    assert a.state == Assignment.State.LEASED
    assert (reload(task).done_count, reload(task).active_count) == (0, 1)


def test_submit_on_someone_elses_task_is_not_found(queue, crowdworker, other_worker):
    task = TaskFactory(queue=queue)
    claim(queue, crowdworker)
    with pytest.raises(NotFound) as err:
        services.annotation_submit(
            task_id=task.id, annotator=other_worker, response={"answer": "Yes"}
        )
    assert err.value.status == 404
    assert not Annotation.objects.exists()


def test_submit_after_expiry_conflicts(queue, crowdworker):
    task = TaskFactory(queue=queue)
    t0 = timezone.now()
    claim(queue, crowdworker, now=t0)
    with pytest.raises(Conflict) as err:
        services.annotation_submit(
            task_id=task.id,
            annotator=crowdworker,
            response={"answer": "Yes"},
            now=t0 + TTL,
        )
    assert "expired" in err.value.message
    assert not Annotation.objects.exists()


def test_duration_is_clamped(queue, crowdworker):
    task = TaskFactory(queue=queue)
    claim(queue, crowdworker)
    services.annotation_submit(
        task_id=task.id, annotator=crowdworker, response={"answer": "Yes"}, duration_ms=-5
    )
    assert Annotation.objects.get().duration_ms == 0


# =================================================================================================
# Qualification, gold mixing, automatic pause
# =================================================================================================
def test_qualification_gold_first_then_active(crowdworker):
    # Given a queue asking for K = 2 gold items at 50 %, with 3 gold and 2 regular tasks
    queue = QueueFactory(qualification_count=2, qualification_min_accuracy=0.5)
    golds = [gold_task(queue) for _ in range(3)]
    regular = [TaskFactory(queue=queue) for _ in range(2)]
    # When the worker starts, they get gold items first, even though regular work exists
    first = claim(queue, crowdworker)
    assert first.assignment.is_gold is True
    assert first.assignment.task_id in {g.id for g in golds}
    enrollment = Enrollment.objects.get(queue=queue, annotator=crowdworker)
    assert enrollment.state == Enrollment.State.QUALIFYING
    r1 = services.annotation_submit(
        task_id=first.assignment.task_id, annotator=crowdworker, response={"answer": "Yes"}
    )
    assert r1.annotation.is_gold is True
    assert r1.annotation.gold_correct is True
    assert r1.next.assignment.is_gold is True
    r2 = services.annotation_submit(
        task_id=r1.next.assignment.task_id, annotator=crowdworker, response={"answer": "No"}
    )
    assert r2.annotation.gold_correct is False
    # Then 1 of 2 = 50 % passes: they are active and the next item is regular work
    enrollment.refresh_from_db()
    assert enrollment.state == Enrollment.State.ACTIVE
    assert (enrollment.gold_answered, enrollment.gold_correct) == (2, 1)
    assert enrollment.reason == ""
    assert r2.next.assignment.is_gold is False
    assert r2.next.assignment.task_id == regular[0].id
    # Gold items never touch the counters that guard redundancy
    assert all(reload(g).active_count == 0 and reload(g).done_count == 0 for g in golds)


def test_qualification_failed_with_reason_and_no_more_tasks(crowdworker):
    queue = QueueFactory(qualification_count=2, qualification_min_accuracy=0.75)
    for _ in range(2):
        gold_task(queue)
    TaskFactory(queue=queue)
    r = answer(queue, crowdworker, {"answer": "No"})
    r = services.annotation_submit(
        task_id=r.next.assignment.task_id, annotator=crowdworker, response={"answer": "Yes"}
    )
    reason = "You answered 1 of 2 qualification items correctly (50%); this queue asks for 75%."
    enrollment = Enrollment.objects.get(queue=queue, annotator=crowdworker)
    assert enrollment.state == Enrollment.State.FAILED
    assert enrollment.reason == reason
    assert r.next.assignment is None
    assert r.next.message == reason
    again = claim(queue, crowdworker)
    assert (again.assignment, again.message) == (None, reason)
    assert not Assignment.objects.filter(annotator=crowdworker, is_gold=False).exists()


def test_qualification_without_gold_items_lets_people_work(crowdworker):
    queue = QueueFactory(qualification_count=3, qualification_min_accuracy=0.9)
    task = TaskFactory(queue=queue)
    got = claim(queue, crowdworker)
    assert got.assignment.task_id == task.id
    assert Enrollment.objects.get(annotator=crowdworker).state == Enrollment.State.ACTIVE


def test_gold_rate_one_serves_gold_while_any_is_left(crowdworker):
    queue = QueueFactory(gold_rate=1.0)
    golds = {gold_task(queue).id for _ in range(2)}
    regular = [TaskFactory(queue=queue) for _ in range(2)]
    served = []
    r = answer(queue, crowdworker, {"answer": "Yes"})
    served.append((r.annotation.task_id, r.annotation.is_gold))
    while r.next.assignment is not None:
        r = services.annotation_submit(
            task_id=r.next.assignment.task_id, annotator=crowdworker, response={"answer": "Yes"}
        )
        served.append((r.annotation.task_id, r.annotation.is_gold))
    assert {t for t, g in served[:2]} == golds
    assert [g for _, g in served] == [True, True, False, False]
    assert [t for t, _ in served[2:]] == [regular[0].id, regular[1].id]
    assert r.next.message == NO_MORE
    enrollment = Enrollment.objects.get(queue=queue, annotator=crowdworker)
    assert (enrollment.state, enrollment.gold_answered, enrollment.gold_correct) == (
        Enrollment.State.ACTIVE,
        2,
        2,
    )


def test_gold_rate_zero_never_serves_gold(crowdworker):
    queue = QueueFactory(gold_rate=0.0)
    for _ in range(3):
        gold_task(queue)
    regular = [TaskFactory(queue=queue) for _ in range(3)]
    served = []
    for _ in range(3):
        served.append(answer(queue, crowdworker, {"answer": "Yes"}).annotation)
    assert [a.task_id for a in served] == [t.id for t in regular]
    assert not any(a.is_gold for a in served)
    assert claim(queue, crowdworker).message == NO_MORE
    assert not Assignment.objects.filter(is_gold=True).exists()


def test_automatic_pause_on_gold_below_threshold_and_resume(crowdworker):
    # Given a queue that serves gold only and pauses below 50 % after 2 answers
    queue = QueueFactory(gold_rate=1.0, gold_pause_below=0.5, gold_pause_min_answers=2)
    for _ in range(4):
        gold_task(queue)
    TaskFactory(queue=queue)
    # One wrong answer is not enough evidence
    r = answer(queue, crowdworker, {"answer": "No"})
    enrollment = Enrollment.objects.get(queue=queue, annotator=crowdworker)
    assert enrollment.state == Enrollment.State.ACTIVE
    assert r.next.assignment.is_gold is True
    # The second wrong answer pauses them and tells them why
    r = services.annotation_submit(
        task_id=r.next.assignment.task_id, annotator=crowdworker, response={"answer": "No"}
    )
    reason = (
        "Paused automatically: you answered 0 of 2 check items correctly (0%), below this "
        "queue's 50%. A curator will review and can resume you."
    )
    enrollment.refresh_from_db()
    assert enrollment.state == Enrollment.State.PAUSED
    assert enrollment.reason == reason
    assert r.next.assignment is None
    assert r.next.message == reason
    assert claim(queue, crowdworker).message == reason
    # A curator resumes them: they work again
    resumed = services.enrollment_resume(enrollment=enrollment)
    assert (resumed.state, resumed.reason) == (Enrollment.State.ACTIVE, "")
    got = claim(queue, crowdworker)
    assert got.assignment is not None
    assert got.assignment.is_gold is True
    # Answering correctly now: 1 of 3 = 33 % is still below 50 % — paused again
    r = services.annotation_submit(
        task_id=got.assignment.task_id, annotator=crowdworker, response={"answer": "Yes"}
    )
    enrollment.refresh_from_db()
    assert enrollment.state == Enrollment.State.PAUSED
    assert "you answered 1 of 3 check items correctly (33%)" in enrollment.reason


def test_no_pause_at_exactly_the_threshold(crowdworker):
    queue = QueueFactory(gold_rate=1.0, gold_pause_below=0.5, gold_pause_min_answers=2)
    for _ in range(3):
        gold_task(queue)
    r = answer(queue, crowdworker, {"answer": "No"})
    r = services.annotation_submit(
        task_id=r.next.assignment.task_id, annotator=crowdworker, response={"answer": "Yes"}
    )
    enrollment = Enrollment.objects.get(queue=queue, annotator=crowdworker)
    assert (enrollment.state, enrollment.gold_answered, enrollment.gold_correct) == (
        Enrollment.State.ACTIVE,
        2,
        1,
    )
    assert r.next.assignment.is_gold is True


def test_resume_lets_a_failed_annotator_work(crowdworker):
    queue = QueueFactory(qualification_count=1, qualification_min_accuracy=1.0)
    gold_task(queue)
    task = TaskFactory(queue=queue)
    r = answer(queue, crowdworker, {"answer": "No"})
    assert r.next.assignment is None
    enrollment = Enrollment.objects.get(queue=queue, annotator=crowdworker)
    assert enrollment.state == Enrollment.State.FAILED
    services.enrollment_resume(enrollment=enrollment)
    assert claim(queue, crowdworker).assignment.task_id == task.id


# =================================================================================================
# Aggregation and escalation
# =================================================================================================
def run_task(queue, responses) -> Task:
    """One task answered by len(responses) different people, in order."""
    task = TaskFactory(queue=queue)
    for person, response in zip(workers(len(responses)), responses, strict=True):
        answer(queue, person, response)
    return reload(task)


def escalating_task(rule: str, *, max_redundancy: int):
    """A task wanting two answers at first under `rule`, its queue recording outcomes, and
    enough people to escalate it to `max_redundancy`."""
    queue = QueueFactory(
        rule=rule, redundancy=2, max_redundancy=max_redundancy, outcome_handler="tests.record"
    )
    return queue, TaskFactory(queue=queue), workers(max_redundancy)


def test_unanimous_escalates_up_to_max_then_undecided():
    queue, task, p = escalating_task("unanimous", max_redundancy=4)
    answer(queue, p[0], {"answer": "Yes"})
    answer(queue, p[1], {"answer": "No"})
    task = reload(task)
    assert (task.state, task.required, task.escalations) == (Task.State.OPEN, 3, 1)
    assert task.agreement == 0.5
    assert task.outcome is None
    assert CALLS == []
    answer(queue, p[2], {"answer": "Yes"})
    task = reload(task)
    assert (task.state, task.required, task.escalations) == (Task.State.OPEN, 4, 2)
    assert task.agreement == pytest.approx(2 / 3)
    answer(queue, p[3], {"answer": "Yes"})
    task = reload(task)
    assert (task.state, task.required, task.escalations) == (Task.State.UNDECIDED, 4, 2)
    assert task.agreement == 0.75
    assert task.outcome == {"label": None, "counts": {"Yes": 3, "No": 1}, "n": 4}
    assert task.decided_at is not None
    assert (task.active_count, task.done_count) == (4, 4)
    assert CALLS == [(task.pk, False, None)]


def test_unanimous_decides_when_all_agree():
    queue = QueueFactory(rule="unanimous", redundancy=3, max_redundancy=5)
    task = run_task(queue, [{"answer": "No"}] * 3)
    assert (task.state, task.required, task.escalations) == (Task.State.DECIDED, 3, 0)
    assert task.outcome == {"label": "No", "counts": {"No": 3}, "n": 3}
    assert task.agreement == 1.0


def test_majority_escalates_and_decides():
    queue, task, p = escalating_task("majority", max_redundancy=3)
    answer(queue, p[0], {"answer": "Yes"})
    answer(queue, p[1], {"answer": "No"})
    assert (reload(task).required, reload(task).escalations) == (3, 1)
    assert CALLS == []
    answer(queue, p[2], {"answer": "No"})
    task = reload(task)
    assert (task.state, task.required, task.escalations) == (Task.State.DECIDED, 3, 1)
    assert task.outcome == {"label": "No", "counts": {"No": 2, "Yes": 1}, "n": 3}
    assert task.agreement == pytest.approx(2 / 3)
    assert CALLS == [(task.pk, True, "No")]


def test_majority_needs_more_than_half():
    # 2 of 4 is not a majority: with no room to escalate the task is undecided
    queue = QueueFactory(rule="majority", redundancy=4, max_redundancy=4)
    task = run_task(
        queue, [{"answer": "Yes"}, {"answer": "No"}, {"answer": "Yes"}, {"answer": "Unanswerable"}]
    )
    assert task.state == Task.State.UNDECIDED
    assert task.outcome == {
        "label": None,
        "counts": {"Yes": 2, "No": 1, "Unanswerable": 1},
        "n": 4,
    }
    assert task.agreement == 0.5


def test_plurality_escalates_on_a_tie_then_decides():
    queue = QueueFactory(rule="plurality", redundancy=3, max_redundancy=4)
    task = run_task(
        queue,
        [{"answer": "Yes"}, {"answer": "No"}, {"answer": "Unanswerable"}, {"answer": "No"}],
    )
    assert (task.state, task.required, task.escalations) == (Task.State.DECIDED, 4, 1)
    assert task.outcome == {
        "label": "No",
        "counts": {"No": 2, "Yes": 1, "Unanswerable": 1},
        "n": 4,
    }
    assert task.agreement == 0.5


def test_plurality_tie_at_max_is_undecided():
    queue = QueueFactory(rule="plurality", redundancy=2, max_redundancy=2)
    task = run_task(queue, [{"answer": "Yes"}, {"answer": "No"}])
    assert (task.state, task.escalations) == (Task.State.UNDECIDED, 0)
    assert task.outcome["label"] is None
    assert task.agreement == 0.5


def test_escalated_task_is_offered_first_to_a_new_person():
    queue = QueueFactory(rule="majority", redundancy=2, max_redundancy=3)
    task, fresh = TaskFactory(queue=queue), TaskFactory(queue=queue)
    p = workers(3)
    answer(queue, p[0], {"answer": "Yes"})  # task
    claim(queue, p[1])
    services.annotation_submit(task_id=task.id, annotator=p[1], response={"answer": "No"})
    assert reload(task).required == 3
    # The escalated task has 1 free slot, the fresh one 2: fullest first
    assert claim(queue, p[2]).assignment.task_id == task.id
    # p[0] and p[1] were each handed the fresh task by their submit
    assert reload(fresh).active_count == 2


TAXONOMY = {
    "taxonomy": [
        {
            "group": "Reasoning",
            "tags": [
                {"id": "count", "label": "Counting", "key": "c"},
                {"id": "spatial", "label": "Spatial relation", "key": "p"},
            ],
        },
        {"group": "Attributes", "tags": [{"id": "color", "label": "Color", "key": "o"}]},
    ]
}


def tags_queue(rule, n, max_n=None) -> TaskQueue:
    return QueueFactory(
        kind="skill_tags", config=TAXONOMY, rule=rule, redundancy=n, max_redundancy=max_n or n
    )


def tags_task(queue) -> Task:
    return TaskFactory(
        queue=queue, payload={"images": [{"url": "/img/1.png"}], "questions": ["How many?"]}
    )


def run_tags(queue, responses) -> Task:
    task = tags_task(queue)
    for person, tags in zip(workers(len(responses)), responses, strict=True):
        answer(queue, person, {"tags": tags})
    return reload(task)


def test_skill_tags_majority_keeps_tags_most_chose():
    task = run_tags(
        tags_queue("majority", 3), [["count", "spatial"], ["count"], ["count", "color"]]
    )
    assert task.state == Task.State.DECIDED
    assert task.outcome == {
        "label": ["count"],
        "counts": {"count": 3, "color": 1, "spatial": 1},
        "n": 3,
    }
    # mean Jaccard with {count}: (1/2 + 1 + 1/2) / 3
    assert task.agreement == pytest.approx(2 / 3)


def test_skill_tags_unanimous_without_common_tag_is_undecided():
    task = run_tags(tags_queue("unanimous", 2), [["count", "color"], ["spatial"]])
    assert task.state == Task.State.UNDECIDED
    assert task.outcome["label"] is None
    assert task.outcome["counts"] == {"color": 1, "count": 1, "spatial": 1}
    # basis is every tag chosen: Jaccard 2/3 and 1/3
    assert task.agreement == pytest.approx(0.5)


def test_skill_tags_plurality_keeps_all_top_tags():
    task = run_tags(tags_queue("plurality", 2), [["count", "color"], ["color", "count", "spatial"]])
    assert task.state == Task.State.DECIDED
    assert task.outcome["label"] == ["color", "count"]
    assert task.agreement == pytest.approx((1 + 2 / 3) / 2)


def test_skill_tags_rejects_unknown_and_duplicate_tags(crowdworker):
    queue = tags_queue("majority", 2)
    task = tags_task(queue)
    claim(queue, crowdworker)
    for bad in ({"tags": ["nope"]}, {"tags": []}, {"tags": ["count", "count"]}):
        with pytest.raises(Invalid):
            services.annotation_submit(task_id=task.id, annotator=crowdworker, response=bad)
    assert not Annotation.objects.exists()


FORCED = {
    "instruction": "Which caption describes the image better?",
    "candidates": [{"id": "model-a", "text": "A dog."}, {"id": "model-b", "text": "A cat."}],
}


def test_forced_choice_unswaps_the_winner_by_presentation():
    queue = QueueFactory(kind="forced_choice", rule="majority", redundancy=2, max_redundancy=2)
    task = TaskFactory(queue=queue, payload=FORCED)
    p1, p2 = workers(2)
    a1 = claim(queue, p1).assignment
    a2 = claim(queue, p2).assignment
    assert set(a1.presentation) == {"swapped"}
    assert isinstance(a1.presentation["swapped"], bool)
    # Pin the left/right order each person saw
    Assignment.objects.filter(pk=a1.pk).update(presentation={"swapped": True})
    Assignment.objects.filter(pk=a2.pk).update(presentation={"swapped": False})
    # p1 saw B on the left and chose left; p2 saw B on the right and chose right
    r1 = services.annotation_submit(task_id=task.id, annotator=p1, response={"choice": "left"})
    r2 = services.annotation_submit(task_id=task.id, annotator=p2, response={"choice": "right"})
    assert r1.annotation.response == {"choice": "left", "swapped": True, "winner": "model-b"}
    assert r2.annotation.response == {"choice": "right", "swapped": False, "winner": "model-b"}
    task = reload(task)
    assert task.state == Task.State.DECIDED
    assert task.outcome == {"label": "model-b", "counts": {"model-b": 2}, "n": 2}
    assert task.agreement == 1.0


def test_forced_choice_same_side_different_winners_is_undecided():
    queue = QueueFactory(kind="forced_choice", rule="majority", redundancy=2, max_redundancy=2)
    task = TaskFactory(queue=queue, payload=FORCED)
    p1, p2 = workers(2)
    for person, swapped in ((p1, False), (p2, True)):
        a = claim(queue, person).assignment
        Assignment.objects.filter(pk=a.pk).update(presentation={"swapped": swapped})
        services.annotation_submit(task_id=task.id, annotator=person, response={"choice": "left"})
    task = reload(task)
    assert task.state == Task.State.UNDECIDED
    assert task.outcome["counts"] == {"model-a": 1, "model-b": 1}


def test_forced_choice_presentation_is_randomised_per_assignment():
    queue = QueueFactory(kind="forced_choice", redundancy=1, max_redundancy=1)
    for _ in range(40):
        TaskFactory(queue=queue, payload=FORCED)
    person = UserFactory(role=roles.CROWDWORKER)
    seen = set()
    got = claim(queue, person)
    for _ in range(40):
        seen.add(got.assignment.presentation["swapped"])
        got = services.annotation_submit(
            task_id=got.assignment.task_id, annotator=person, response={"choice": "left"}
        ).next
        if got.assignment is None:
            break
    assert seen == {True, False}  # 2**-39 chance of a false failure


REVIEW = {
    "criteria": ["The image matches the text", "The text is fluent"],
    "reason_codes": [
        {"code": "blurry", "label": "Image is blurry"},
        {"code": "mismatch", "label": "Text does not match"},
    ],
}


def test_review_outcome_keeps_reasons_and_comments():
    queue = QueueFactory(
        kind="review", config=REVIEW, rule="majority", redundancy=3, max_redundancy=3
    )
    task = TaskFactory(queue=queue, payload={"title": "Triple 7", "text": "A red cube."})
    responses = [
        {"verdict": "reject", "checked": [0], "reason": "blurry", "comment": "  too dark "},
        {"verdict": "reject", "reason": "mismatch"},
        {"verdict": "accept", "checked": [0, 1], "reason": ""},
    ]
    stored = []
    for person, response in zip(workers(3), responses, strict=True):
        stored.append(answer(queue, person, response).annotation.response)
    assert stored[0] == {
        "verdict": "reject",
        "checked": [0],
        "reason": "blurry",
        "comment": "too dark",
    }
    assert stored[2] == {"verdict": "accept", "checked": [0, 1], "reason": None, "comment": ""}
    task = reload(task)
    assert task.state == Task.State.DECIDED
    assert task.outcome == {
        "label": "reject",
        "counts": {"reject": 2, "accept": 1},
        "n": 3,
        "reasons": ["blurry", "mismatch"],
        "comments": ["too dark"],
    }
    assert task.agreement == pytest.approx(2 / 3)


def test_review_rejects_bad_responses(crowdworker):
    queue = QueueFactory(kind="review", config=REVIEW)
    task = TaskFactory(queue=queue, payload={"title": "Triple 8"})
    claim(queue, crowdworker)
    for bad in (
        {"verdict": "accept", "reason": "blurry"},
        {"verdict": "reject", "reason": "unknown"},
        {"verdict": "reject", "checked": [2]},
        {"verdict": "maybe"},
    ):
        with pytest.raises(Invalid):
            services.annotation_submit(task_id=task.id, annotator=crowdworker, response=bad)
    assert not Annotation.objects.exists()


def test_write_text_keeps_every_text():
    queue = QueueFactory(
        kind="write_text",
        config={"min_length": 5, "max_length": 100},
        redundancy=2,
        max_redundancy=2,
        outcome_handler="tests.record",
    )
    task = TaskFactory(
        queue=queue, payload={"prompt": "Write an instruction", "draft": "Describe the dog."}
    )
    p1, p2 = workers(2)
    r1 = answer(queue, p1, {"text": "  Describe the dog. "})
    r2 = answer(queue, p2, {"text": "Describe the brown dog."})
    assert r1.annotation.response == {"text": "Describe the dog.", "edited_from_draft": False}
    assert r2.annotation.response == {
        "text": "Describe the brown dog.",
        "edited_from_draft": True,
    }
    task = reload(task)
    assert task.state == Task.State.DECIDED
    assert task.outcome == {"texts": ["Describe the dog.", "Describe the brown dog."], "n": 2}
    assert task.agreement is None
    assert CALLS == [(task.pk, True, None)]


def test_write_text_length_bounds(crowdworker):
    queue = QueueFactory(kind="write_text", config={"min_length": 5, "max_length": 10})
    task = TaskFactory(queue=queue, payload={"prompt": "Write"})
    claim(queue, crowdworker)
    for bad in ({"text": "   abc   "}, {"text": "x" * 11}, {"text": 5}, {}):
        with pytest.raises(Invalid):
            services.annotation_submit(task_id=task.id, annotator=crowdworker, response=bad)
    assert not Annotation.objects.exists()


# =================================================================================================
# Outcome handlers
# =================================================================================================
def test_outcome_handler_called_exactly_once_per_final_task():
    queue = QueueFactory(redundancy=2, max_redundancy=3, outcome_handler="tests.record")
    tasks = [TaskFactory(queue=queue) for _ in range(3)]
    people = workers(3)
    # Every person answers every task they are offered; p0 says Yes, p1 No, p2 Yes
    for person, label in zip(people, ["Yes", "No", "Yes"], strict=True):
        got = claim(queue, person)
        while got.assignment is not None:
            r = services.annotation_submit(
                task_id=got.assignment.task_id, annotator=person, response={"answer": label}
            )
            # a double click never calls the handler again
            services.annotation_submit(
                task_id=got.assignment.task_id, annotator=person, response={"answer": label}
            )
            got = r.next
    assert sorted(pk for pk, _d, _l in CALLS) == sorted(t.pk for t in tasks)
    assert len(CALLS) == 3
    assert {(d, label) for _pk, d, label in CALLS} == {(True, "Yes")}
    for task in tasks:
        task = reload(task)
        assert (task.state, task.required, task.escalations, task.done_count) == (
            Task.State.DECIDED,
            3,
            1,
            3,
        )


def test_queue_without_handler_still_stores_outcome(queue, crowdworker, other_worker):
    task = TaskFactory(queue=queue)
    for person in (crowdworker, other_worker):
        answer(queue, person, {"answer": "Yes"})
    assert reload(task).outcome == {"label": "Yes", "counts": {"Yes": 2}, "n": 2}
    assert CALLS == []


def test_unknown_outcome_handler_is_refused(project):
    with pytest.raises(Invalid) as err:
        services.queue_create(
            project=project, kind="vqa_choice", title="Q", outcome_handler="no.such"
        )
    assert err.value.message == "Unknown outcome handler no.such."
    queue = services.queue_create(
        project=project, kind="vqa_choice", title="Q", outcome_handler="tests.record"
    )
    assert queue.outcome_handler == "tests.record"


# =================================================================================================
# Queue maintenance and bulk import
# =================================================================================================
def test_queue_update_redundancy_follows_open_tasks(queue, crowdworker):
    t1, t2 = TaskFactory(queue=queue), TaskFactory(queue=queue)
    claim(queue, crowdworker)
    services.queue_update(queue=queue, redundancy=3, max_redundancy=3)
    assert (reload(t1).required, reload(t2).required) == (3, 3)
    services.queue_update(queue=queue, redundancy=1)
    assert (reload(t1).required, reload(t2).required) == (1, 1)


def test_tasks_bulk_create_is_all_or_nothing(queue):
    rows = services.parse_task_rows(
        '{"image": {"url": "/a.png"}, "question": "Q?", "choices": ["Yes", "No"]}\n'
        "\n"
        '{"payload": {"image": {"url": "/b.png"}, "question": "Q?", "choices": ["A", "B"]},'
        ' "gold": {"answer": "A"}, "id": "ext-2"}\n'
        '{"image": {"url": "/c.png"}, "question": "Q?", "choices": ["Only"]}\n'
    )
    assert [r.line for r in rows] == [1, 3, 4]
    with pytest.raises(Invalid) as err:
        services.tasks_bulk_create(queue=queue, rows=rows)
    assert [e["line"] for e in err.value.errors] == [4]
    assert not Task.objects.exists()
    assert services.tasks_bulk_create(queue=queue, rows=rows[:2]) == 2
    gold = Task.objects.get(external_id="ext-2")
    assert (gold.is_gold, gold.gold, gold.required) == (True, {"answer": "A"}, 2)


def test_parse_task_rows_reports_line_numbers():
    with pytest.raises(Invalid) as err:
        services.parse_task_rows(b'{"a": 1}\nnot json\n[1]\n{"payload": {}, "x": 1}\n')
    assert [e["line"] for e in err.value.errors] == [2, 3, 4]
    assert err.value.errors[0]["error"].startswith("not valid JSON: ")
    assert err.value.message == "3 line(s) could not be read."
    with pytest.raises(Invalid) as err:
        services.parse_task_rows('{"a": 1}\n[1]\n{"payload": {}, "x": 1}\n')
    assert err.value.errors == [
        {"line": 2, "error": "each line must be a JSON object"},
        {"line": 3, "error": "unexpected keys: x"},
    ]
    with pytest.raises(Invalid) as err:
        services.parse_task_rows("\n \n")
    assert err.value.message == "The upload holds no tasks."


def test_review_checklist_counts(crowdworker, other_worker):
    # Given a review queue with two criteria and reason codes
    queue = QueueFactory(kind="review", config=REVIEW, redundancy=2, max_redundancy=2)
    task = TaskFactory(queue=queue, payload={"title": "Triple 9"})
    claim(queue, crowdworker)
    # Then an accept with a criterion unticked, or a rejection without a reason, is refused
    for bad, why in (
        ({"verdict": "accept"}, "not ticked: 0"),
        ({"verdict": "accept", "checked": [0]}, "not ticked: 1"),
        ({"verdict": "reject"}, "needs a reason code"),
    ):
        with pytest.raises(Invalid, match=why):
            services.annotation_submit(task_id=task.id, annotator=crowdworker, response=bad)
    # and exactly what was ticked is stored
    ok = {"verdict": "accept", "checked": [1, 0]}
    stored = services.annotation_submit(task_id=task.id, annotator=crowdworker, response=ok)
    assert stored.annotation.response["checked"] == [1, 0]
    # Every criterion has a key; "?" lists them, the verdicts, the reasons and 0
    keys = [(k.key, str(k.label)) for k in get_kind("review").keys(queue.config)]
    assert [k for k, _label in keys] == ["q", "w", "a", "r", "1", "2", "0"]
    # An advisory checklist lets an unticked accept through
    advisory = QueueFactory(kind="review", config={**REVIEW, "criteria_advisory": True})
    other = TaskFactory(queue=advisory, payload={"title": "Triple 10"})
    claim(advisory, other_worker)
    services.annotation_submit(
        task_id=other.id, annotator=other_worker, response={"verdict": "accept"}
    )
