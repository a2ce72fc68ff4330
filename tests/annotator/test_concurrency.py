"""Many people claiming and submitting on one queue at once (PostgreSQL only).

Each thread is one annotator with its own database connection (Django connections are per
thread); the threads race through the same queue the way browsers would, using the next task
that each submit hands back. Afterwards the database must show: no task above N, no duplicate
annotation, every task decided, and counters equal to the real assignment counts.
"""

from __future__ import annotations

import threading
import time
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import connection, connections, transaction
from django.db.models import Count, Q

from annotator import services
from annotator.models import Annotation, Assignment, Task
from annotator.platform import roles
from annotator.platform.errors import Conflict
from tests.annotator.helpers import committing_later
from tests.factories import ProjectFactory, QueueFactory, vqa_payload

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

THREADS = 32
LIVE_OR_DONE = Q(state__in=[Assignment.State.LEASED, Assignment.State.SUBMITTED])

# Tasks whose live + submitted regular assignments exceed what they require, right now.
OVER_N_SQL = """
SELECT count(*) FROM annotator_task t
WHERE t.queue_id = %s AND (
    SELECT count(*) FROM annotator_assignment a
    WHERE a.task_id = t.id AND NOT a.is_gold AND a.state IN ('leased', 'submitted')
) > t.required
"""


@pytest.fixture(autouse=True)
def _postgres_only():
    if connection.vendor != "postgresql":
        pytest.skip(
            "concurrency test needs PostgreSQL (SELECT … FOR UPDATE SKIP LOCKED); SQLite "
            "serialises writers, so there is no race to test. Set DATABASE_URL=postgres://…"
        )


def make_queue(n_tasks: int, **fields):
    queue = QueueFactory(project=ProjectFactory(), redundancy=2, max_redundancy=2, **fields)
    rows = [services.TaskRow(payload=vqa_payload(i), line=i + 1) for i in range(n_tasks)]
    assert services.tasks_bulk_create(queue=queue, rows=rows) == n_tasks
    return queue


def make_people(prefix: str, n: int, queue) -> list:
    """Crowdworkers who are members of the queue's project (people work in their projects)."""
    User = get_user_model()
    User.objects.bulk_create([User(username=f"{prefix}{i}") for i in range(n)])
    people = list(User.objects.filter(username__startswith=prefix).order_by("id"))
    Group.objects.get_or_create(name=roles.CROWDWORKER)[0].user_set.add(*people)
    queue.project.members.add(*people)
    return people


class Race:
    """Shared bookkeeping for the threads of one run."""

    def __init__(self, deadline_s: float):
        self.start = threading.Barrier(0)  # replaced in run()
        self.deadline = time.monotonic() + deadline_s
        self.errors: list[str] = []
        self.conflicts = 0
        self.submits = 0
        self.over_n_seen = 0
        self.lock = threading.Lock()
        self.stop_monitor = threading.Event()

    def fail(self, who, exc: BaseException) -> None:
        with self.lock:
            self.errors.append(f"{who}: {type(exc).__name__}: {exc}")


def worker(race: Race, queue, person, answer: str = "Yes") -> None:
    """Claim → submit until the engine truthfully says there is nothing more for this person."""
    try:
        race.start.wait()
        got = services.assignment_claim(queue=queue, annotator=person)
        while time.monotonic() < race.deadline:
            if got.assignment is None:
                if got.retry_after is None:
                    return  # "no more tasks": must be the truth, the final checks will tell
                time.sleep(0.05)  # others hold leases that may come back
                got = services.assignment_claim(queue=queue, annotator=person)
                continue
            try:
                result = services.annotation_submit(
                    task_id=got.assignment.task_id, annotator=person, response={"answer": answer}
                )
            except Conflict:
                # Only possible when a lease ran out under load (short-TTL scenario).
                with race.lock:
                    race.conflicts += 1
                got = services.assignment_claim(queue=queue, annotator=person)
                continue
            with race.lock:
                race.submits += int(result.created)
            got = result.next
        race.fail(person.username, TimeoutError("deadline reached"))
    except BaseException as exc:  # noqa: BLE001 - reported to the main thread
        race.fail(person.username, exc)
    finally:
        connections.close_all()


def ghost(race: Race, queue, person, rounds: int, hold_s: float) -> None:
    """A closed tab: claims, goes away for longer than the TTL, then tries to answer late."""
    try:
        race.start.wait()
        for _ in range(rounds):
            got = services.assignment_claim(queue=queue, annotator=person)
            if got.assignment is None:
                if got.retry_after is None:
                    return
                time.sleep(0.05)
                continue
            time.sleep(hold_s)
            try:
                services.annotation_submit(
                    task_id=got.assignment.task_id, annotator=person, response={"answer": "No"}
                )
            except Conflict:
                with race.lock:
                    race.conflicts += 1
            else:
                race.fail(person.username, AssertionError("a late answer was accepted"))
    except BaseException as exc:  # noqa: BLE001
        race.fail(person.username, exc)
    finally:
        connections.close_all()


def monitor(race: Race, queue) -> None:
    """Watch the invariant while the race runs, not only at the end."""
    try:
        with connection.cursor() as cursor:
            while not race.stop_monitor.wait(0.25):
                cursor.execute(OVER_N_SQL, [queue.pk])
                race.over_n_seen += cursor.fetchone()[0]
    except BaseException as exc:  # noqa: BLE001
        race.fail("monitor", exc)
    finally:
        connections.close_all()


def run(race: Race, targets: list[tuple]) -> float:
    threads = [threading.Thread(target=fn, args=args, daemon=True) for fn, *args in targets]
    race.start = threading.Barrier(len(threads))
    watch = threading.Thread(target=monitor, args=(race, targets[0][2]), daemon=True)
    began = time.monotonic()
    watch.start()
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=max(race.deadline - time.monotonic(), 0) + 30)
    race.stop_monitor.set()
    watch.join(timeout=10)
    assert not any(t.is_alive() for t in threads), "threads still running after the deadline"
    return time.monotonic() - began


def assert_invariants(queue, n_tasks: int, people: list) -> None:
    tasks = Task.objects.filter(queue=queue)
    # every task decided, each by exactly N = 2 answers
    assert tasks.count() == n_tasks
    assert tasks.filter(state=Task.State.DECIDED).count() == n_tasks
    assert not tasks.exclude(outcome={"label": "Yes", "counts": {"Yes": 2}, "n": 2}).exists()
    # no task has more than N annotations or more than N live + done assignments, and the
    # counters equal the real assignment counts
    counters = {t.pk: (t.required, t.active_count, t.done_count) for t in tasks}
    answers = per_task(Annotation.objects.filter(queue=queue))
    live_or_done = per_task(Assignment.objects.filter(LIVE_OR_DONE, queue=queue))
    submitted = per_task(Assignment.objects.filter(queue=queue, state="submitted"))
    assert {pk for pk, n in answers.items() if n != 2} == set()
    assert set(answers) == set(counters)
    assert {pk for pk, n in live_or_done.items() if n > 2} == set()
    assert {pk: (c[1], c[2]) for pk, c in counters.items()} == {
        pk: (live_or_done.get(pk, 0), submitted.get(pk, 0)) for pk in counters
    }
    # no duplicate annotation per (task, annotator)
    dupes = (
        Annotation.objects.filter(queue=queue)
        .values("task_id", "annotator_id")
        .annotate(n=Count("id"))
        .filter(n__gt=1)
    )
    assert list(dupes) == []
    assert Annotation.objects.filter(queue=queue).count() == 2 * n_tasks
    # nothing is left leased
    assert not Assignment.objects.filter(queue=queue, state=Assignment.State.LEASED).exists()
    # the work was shared: nobody answered the same task twice, many people took part
    workers_used = Annotation.objects.filter(queue=queue).values("annotator").distinct().count()
    assert workers_used >= min(len(people), 16)


def per_task(qs) -> dict[int, int]:
    return dict(qs.values("task_id").annotate(n=Count("id")).values_list("task_id", "n"))


def test_32_threads_claim_and_submit_without_overlap():
    n_tasks = 2000
    queue = make_queue(n_tasks)
    people = make_people("racer", THREADS, queue)
    race = Race(deadline_s=420)  # ~1-2 min on an idle 2-core machine; slack for a busy one
    elapsed = run(race, [(worker, race, queue, p) for p in people])
    assert race.errors == []
    assert race.over_n_seen == 0
    assert race.conflicts == 0
    assert race.submits == 2 * n_tasks
    assert_invariants(queue, n_tasks, people)
    print(f"\n{THREADS} threads, {n_tasks} tasks × 2: {elapsed:.1f} s")


def test_leases_expiring_mid_run_go_back_to_the_pool():
    # Given a short TTL and closed tabs that hold tasks past it, next to 32 diligent workers
    n_tasks = 400
    queue = make_queue(n_tasks, lease_ttl=timedelta(seconds=2))
    people = make_people("steady", THREADS, queue)
    ghosts = make_people("ghost", 6, queue)
    race = Race(deadline_s=120)
    targets = [(worker, race, queue, p) for p in people]
    targets += [(ghost, race, queue, g, 3, 2.5) for g in ghosts]
    run(race, targets)
    # Then every late answer was refused and every task still got its two answers
    assert race.errors == []
    assert race.over_n_seen == 0
    assert not Annotation.objects.filter(annotator__in=ghosts).exists()
    assert Assignment.objects.filter(annotator__in=ghosts, state="expired").exists()
    assert race.conflicts >= len(ghosts)
    assert_invariants(queue, n_tasks, people)


def test_a_slot_locked_for_an_instant_is_not_no_more_tasks():
    # Given the only task, locked right now by someone else's claim or submit
    queue = make_queue(1)
    task = Task.objects.get(queue=queue)
    person = make_people("patient", 1, queue)[0]
    locked, release = threading.Event(), threading.Event()

    def hold_lock():
        try:
            with transaction.atomic():
                Task.objects.select_for_update().get(pk=task.pk)
                locked.set()
                release.wait(30)
        finally:
            connections.close_all()

    holder = threading.Thread(target=hold_lock, daemon=True)
    holder.start()
    assert locked.wait(10)
    try:
        # When the person asks for work, SKIP LOCKED passes over the task
        got = services.assignment_claim(queue=queue, annotator=person)
        # Then they are told to look again in a second, not that there is no more work
        assert got.assignment is None
        assert got.message == "Tasks are being handed out right now; checking again shortly."
        assert got.retry_after == 1
    finally:
        release.set()
        holder.join(10)
    assert services.assignment_claim(queue=queue, annotator=person).assignment.task_id == task.pk


def test_lowering_redundancy_while_a_claim_commits_keeps_the_counts_valid():
    # Given a task with one live lease of its two slots, and a second claim on it that holds
    # the task's row lock and has not committed yet
    queue = make_queue(1)
    first, second = make_people("lowering", 2, queue)
    services.assignment_claim(queue=queue, annotator=first)

    def claim() -> None:
        assert services.assignment_claim(queue=queue, annotator=second).assignment is not None

    # When a curator lowers the redundancy to 1 meanwhile (the claim commits half a second
    # later, while the update waits for the row)
    with committing_later(claim) as problems:
        updated = services.queue_update(queue=queue, redundancy=1)
    # Then the update counted the committed claim: both leases stand and no IntegrityError
    assert problems == []
    assert updated.redundancy == 1
    task = Task.objects.get(queue=queue)
    assert (task.active_count, task.required) == (2, 2)
    assert Assignment.objects.filter(task=task, state=Assignment.State.LEASED).count() == 2
