"""A curator settles tasks (services/settling.py): one task, a filtered selection (inline and as
a job), from the pages and the API; the outcome handler runs once per settlement; exports and
quality figures show the settlement."""

import csv
import io
from collections import Counter

import pytest
from django.urls import reverse
from django.utils import timezone

from annotator import selectors, services
from annotator.jobs import settle_selection
from annotator.models import Assignment, Task
from annotator.outcomes import outcome_handler
from annotator.platform.errors import Invalid
from annotator.platform.models import Job
from annotator.quality import queue_quality
from annotator.services import settling
from tests.annotator.helpers import session_api
from tests.annotator.test_task_browser import _answer
from tests.factories import QueueFactory, TaskFactory

CALLS: Counter = Counter()


@outcome_handler("tests.settle_counter")
def _count(task, decision):
    CALLS[(task.pk, str(decision.label))] += 1


@pytest.fixture(autouse=True)
def _calls():
    CALLS.clear()


@pytest.fixture
def split(project, crowdworker, other_worker):
    """A vqa_choice queue (N = 2, max 3): ``tie`` answered Yes / No (open, escalated), ``two``
    answered Yes / Yes by hand (open: its decision not run), a gold task, a cancelled one."""
    queue = QueueFactory(
        project=project, redundancy=2, max_redundancy=3, outcome_handler="tests.settle_counter"
    )
    tie, two, gold, gone = (TaskFactory(queue=queue) for _ in range(4))
    _answer(tie, crowdworker, {"answer": "Yes"})
    _answer(tie, other_worker, {"answer": "No"})
    _answer(two, crowdworker, {"answer": "Yes"})
    _answer(two, other_worker, {"answer": "Yes"})
    Task.objects.filter(pk__in=[tie.pk, two.pk]).update(done_count=2, active_count=2)
    Task.objects.filter(pk=tie.pk).update(required=3, escalations=1, agreement=0.5)
    Task.objects.filter(pk=gold.pk).update(is_gold=True, gold={"answer": "Yes"})
    Task.objects.filter(pk=gone.pk).update(state="cancelled")
    return queue, {"tie": tie.pk, "two": two.pk, "gold": gold.pk, "gone": gone.pk}


def test_settle_by_choice_decides_records_and_runs_the_handler_once(split, curator, monkeypatch):
    queue, t = split
    events = []
    monkeypatch.setattr(settling, "task_event_emit", lambda **kw: events.append(kw["event"]))
    task = services.task_curator_settle(
        task_id=t["tie"],
        queue=queue,
        by=curator,
        method="choice",
        response={"answer": "No"},
        reason="the cube is blue",
    )
    task.refresh_from_db()
    assert (task.state, task.outcome["label"], task.settled_by, task.settle_reason) == (
        "decided",
        "No",
        curator,
        "the cube is blue",
    )
    assert task.outcome["settled"]["by"] == "curator"
    assert task.outcome["settled"]["method"] == "choice"
    assert task.outcome["counts"] == {"Yes": 1, "No": 1}
    assert task.agreement == 0.5  # the annotators' agreement is kept
    assert CALLS == {(t["tie"], "No"): 1}
    assert events == ["task.settled"]


def test_settle_ends_live_leases(split, curator, crowdworker):
    queue, t = split
    now = timezone.now()
    third = Assignment.objects.create(
        task_id=t["tie"], queue=queue, annotator=curator, expires_at=now + timezone.timedelta(1)
    )
    Task.objects.filter(pk=t["tie"]).update(active_count=3)
    services.task_curator_settle(
        task_id=t["tie"],
        queue=queue,
        by=curator,
        method="choice",
        response={"answer": "Yes"},
        reason="r",
    )
    third.refresh_from_db()
    task = Task.objects.get(pk=t["tie"])
    assert third.state == "expired" and task.active_count == task.done_count == 2


@pytest.mark.parametrize(
    ("key", "method", "response", "reason", "message"),
    [
        ("tie", "majority", None, "r", "The answers tie"),
        ("tie", "choice", {"answer": "Maybe"}, "r", "does not fit"),
        ("tie", "choice", {"answer": "Yes"}, "  ", "Say why"),
        ("gold", "choice", {"answer": "Yes"}, "r", "Gold and cancelled"),
        ("gone", "choice", {"answer": "Yes"}, "r", "Gold and cancelled"),
    ],
)
def test_refusals_say_why_and_change_nothing(
    split, curator, key, method, response, reason, message
):
    queue, t = split
    before = Task.objects.get(pk=t[key])
    with pytest.raises(Invalid, match=message):
        services.task_curator_settle(
            task_id=t[key],
            queue=queue,
            by=curator,
            method=method,
            response=response,
            reason=reason,
        )
    after = Task.objects.get(pk=t[key])
    assert (after.state, after.outcome, after.settled_at) == (
        before.state,
        before.outcome,
        None,
    )
    assert not CALLS


def test_settle_by_majority_and_again_overrides(split, curator):
    queue, t = split
    services.task_curator_settle(
        task_id=t["two"], queue=queue, by=curator, method="majority", reason="both said yes"
    )
    services.task_curator_settle(
        task_id=t["two"],
        queue=queue,
        by=curator,
        method="choice",
        response={"answer": "No"},
        reason="both were wrong",
    )
    task = Task.objects.get(pk=t["two"])
    assert task.outcome["label"] == "No" and task.settle_reason == "both were wrong"
    assert CALLS == {(t["two"], "Yes"): 1, (t["two"], "No"): 1}


def test_selection_inline_counts_what_it_could_not_settle(split, curator):
    queue, t = split
    result = services.tasks_curator_settle_selection(
        queue=queue,
        task_filter=selectors.TaskFilter(),
        by=curator,
        method="majority",
        reason="clean up",
    )
    assert result.job is None and result.selected == 4
    assert (result.result.settled, result.result.no_majority, result.result.skipped) == (1, 1, 2)
    assert "1 task(s) settled." in result.message
    assert CALLS == {(t["two"], "Yes"): 1}


def test_selection_of_many_runs_as_a_job_and_settles_each_task_once(
    project,
    curator,
    crowdworker,
    other_worker,
    eager,
    monkeypatch,
    django_capture_on_commit_callbacks,
):
    # given 5 tasks answered Yes / Yes and a selection larger than the inline limit
    monkeypatch.setattr(settling, "INLINE_MAX", 2)
    queue = QueueFactory(project=project, outcome_handler="tests.settle_counter")
    tasks = TaskFactory.create_batch(5, queue=queue)
    for task in tasks:
        _answer(task, crowdworker, {"answer": "Yes"})
        _answer(task, other_worker, {"answer": "Yes"})
    with django_capture_on_commit_callbacks(execute=True):
        result = services.tasks_curator_settle_selection(
            queue=queue,
            task_filter=selectors.TaskFilter(state="open"),
            by=curator,
            method="majority",
            reason="batch",
        )
    job = Job.objects.get(pk=result.job.pk)
    assert (job.status, job.error) == ("succeeded", "")
    assert job.result["settled"] == 5
    assert sorted(CALLS.values()) == [1] * 5
    # a re-run of the job settles nothing twice
    settle_selection.apply(args=[job.pk])
    assert sorted(CALLS.values()) == [1] * 5


def test_pages_settle_one_task_and_a_selection(split, client, curator):
    queue, t = split
    client.force_login(curator)
    page = client.get(reverse("curator-task", args=[t["tie"]])).content.decode()
    assert 'value="{&quot;answer&quot;: &quot;No&quot;}"' in page  # an answer given, to pick
    response = client.post(
        reverse("curator-task-settle", args=[t["tie"]]),
        {"pick": '{"answer": "No"}', "reason": "blue cube"},
        follow=True,
    )
    assert f"Task {t['tie']} settled." in response.content.decode()
    assert "curator-settled" in response.content.decode()
    refused = client.post(
        reverse("curator-task-settle", args=[t["two"]]), {"pick": "own", "reason": ""}, follow=True
    )
    assert "Say why you settle" in refused.content.decode()
    assert Task.objects.get(pk=t["two"]).settled_at is None
    bulk = client.post(
        reverse("curator-queue-tasks-settle", args=[queue.pk]),
        {"state": "open", "pick": "majority", "reason": "sweep"},
    )
    assert bulk.status_code == 302 and bulk.url.endswith("?state=open")
    assert Task.objects.get(pk=t["two"]).settled_at is not None
    browser = client.get(reverse("curator-queue-tasks", args=[queue.pk]), {"flag": "settled"})
    assert "2 tasks match" in browser.content.decode()


def test_api_settles_and_exports_show_it(split, curator, researcher):
    queue, t = split
    api = session_api(curator)
    body = api.post(
        reverse("api-task-settle", args=[t["tie"]]),
        {"method": "choice", "response": {"answer": "Yes"}, "reason": "zoomed in"},
        format="json",
    ).json()
    assert body["state"] == "decided" and body["settle_reason"] == "zoomed in"
    refused = api.post(
        reverse("api-task-settle", args=[t["two"]]),
        {"method": "choice", "reason": "x"},
        format="json",
    )
    assert refused.status_code == 400
    many = api.post(
        reverse("api-queue-tasks-settle", args=[queue.pk]),
        {"method": "majority", "reason": "sweep", "filter": {"state": "open"}},
        format="json",
    ).json()
    assert (many["selected"], many["settled"], many["job"]) == (2, 1, None)
    bad = api.post(
        reverse("api-queue-tasks-settle", args=[queue.pk]),
        {"method": "majority", "reason": "x", "filter": {"state": "boiling"}},
        format="json",
    )
    assert bad.status_code == 400
    assert (
        session_api(researcher)
        .post(
            reverse("api-task-settle", args=[t["two"]]),
            {"method": "majority", "reason": "x"},
            format="json",
        )
        .status_code
        == 404
    )
    export = session_api(researcher).get(
        reverse("api-queue-outcomes", args=[queue.pk]), {"format": "csv"}
    )
    text = b"".join(export.streaming_content).decode()
    rows = {int(r["task_id"]): r for r in csv.DictReader(io.StringIO(text))}
    assert rows[t["tie"]]["settled_by"] == "curator"
    assert rows[t["tie"]]["settle_reason"] == "zoomed in"
    assert rows[t["gold"]]["settled_by"] == ""
    assert queue_quality(queue)["n_tasks_settled"] == 2
