"""The annotators' hot path: how many statements each call costs, and what it answers.

``next``, ``submit`` and ``heartbeat`` run every few seconds per annotator; benchmarks/
claim_latency.py measures them. These tests pin the number of database round trips so a
change that adds one (an ORM lookup, a lazy related object, a savepoint) shows up here.
"""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotator import services
from annotator.api.work import _claim_data
from annotator.kinds import get_kind
from annotator.models import Assignment
from annotator.platform import roles
from annotator.platform.auth import TokenAuthentication
from annotator.serializers import ClaimOut
from annotator.services import claiming
from tests.factories import QueueFactory, TaskFactory, UserFactory

pytestmark = pytest.mark.django_db(transaction=True)


def token_client(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    return client


def run(call):
    with CaptureQueriesContext(connection) as ctx:
        response = call()
    return response, [q["sql"] for q in ctx.captured_queries]


def statements(sqls: list[str]) -> list[str]:
    """The first word of each statement, savepoints and transaction control included."""
    return [sql.split(None, 1)[0].upper() for sql in sqls]


@pytest.fixture
def two_tasks(queue):
    return TaskFactory(queue=queue), TaskFactory(queue=queue)


def test_next_returning_the_held_lease_is_four_statements(queue, crowdworker, two_tasks):
    # Given a crowdworker holding a lease
    client = token_client(crowdworker)
    first = client.post(f"/api/queues/{queue.id}/next/").json()
    # When they ask for the next task again
    response, sqls = run(lambda: client.post(f"/api/queues/{queue.id}/next/"))
    # Then: token with roles, the queue within reach, the person's leases in other queues (ended
    # there: one queue at a time), standing with the lease and its task
    assert response.status_code == 200
    assert response.json() == first
    assert len(sqls) == 4, sqls


def test_next_claiming_a_task_is_five_statements(queue, crowdworker, two_tasks):
    # Given a crowdworker already enrolled (their first claim created the enrollment)
    client = token_client(crowdworker)
    held = client.post(f"/api/queues/{queue.id}/next/").json()["task"]["id"]
    client.post(f"/api/tasks/{held}/skip/")
    # When they claim again
    response, sqls = run(lambda: client.post(f"/api/queues/{queue.id}/next/"))
    # Then: token, queue, leases in other queues, standing, and on PostgreSQL the claim as one
    # statement, atomic by itself (no BEGIN / COMMIT round trips)
    assert response.json()["task"]["id"] != held
    if connection.vendor == "postgresql":
        assert statements(sqls) == ["SELECT", "SELECT", "SELECT", "SELECT", "WITH"], sqls


def test_submit_counts_its_statements(queue, crowdworker, two_tasks):
    # Given a held lease on a queue with N = 2 (this answer does not decide the task)
    client = token_client(crowdworker)
    held = client.post(f"/api/queues/{queue.id}/next/").json()["task"]["id"]
    # When the answer is submitted
    response, sqls = run(
        lambda: client.post(
            f"/api/tasks/{held}/submit/", {"response": {"answer": "Yes"}}, format="json"
        )
    )
    # Then the statements are: token, lock task (with its queue), lock assignment, store the
    # answer (closing the lease and counting it), standing, claim the next task
    assert response.status_code == 201
    assert response.json()["next"]["task"]["id"] != held
    if connection.vendor == "postgresql":
        assert statements(sqls) == [
            "SELECT",  # token, user and roles
            "BEGIN",
            "SELECT",  # task and queue, FOR UPDATE OF the task
            "SELECT",  # the assignment, FOR UPDATE
            "WITH",  # store the answer, close the lease, count the answer
            "SELECT",  # standing: enrollment and live lease
            "WITH",  # the claim of the next task, without a savepoint
            "COMMIT",
        ], sqls


def test_heartbeat_is_two_statements(queue, crowdworker, two_tasks):
    client = token_client(crowdworker)
    held = client.post(f"/api/queues/{queue.id}/next/").json()["task"]["id"]
    response, sqls = run(lambda: client.post(f"/api/tasks/{held}/heartbeat/"))
    assert response.status_code == 200
    if connection.vendor == "postgresql":
        assert statements(sqls) == ["SELECT", "UPDATE"], sqls  # token; extend the lease


def test_claim_body_matches_its_serializer(queue, crowdworker, two_tasks):
    # Given a claim with a task and one without
    got = services.assignment_claim(queue=queue, annotator=crowdworker)
    empty = services.ClaimResult(None, "No more tasks", retry_after=3)
    # Then the hand-built body is exactly what the documented serializer would give
    for result in (got, empty):
        assert (
            _claim_data(result)
            == ClaimOut(
                {
                    "task": None
                    if result.assignment is None
                    else {
                        "id": result.assignment.task_id,
                        "queue": queue.id,
                        "kind": queue.kind,
                        "payload": result.assignment.task.payload,
                        "presentation": result.assignment.presentation,
                        "keys": [
                            {"key": k.key, "label": k.label}
                            for k in get_kind(queue.kind).keys(
                                queue.config, result.assignment.task.payload
                            )
                        ],
                        "expires_at": result.assignment.expires_at,
                    },
                    "message": result.message,
                    "retry_after": result.retry_after,
                }
            ).data
        )
    assert Assignment.objects.count() == 1


# --------------------------------------------------------------------------------------------
# Token authentication with roles in one query (annotator.platform.auth.TokenAuthentication)
# --------------------------------------------------------------------------------------------
def test_token_auth_reads_user_and_roles_in_one_query(crowdworker, curator):
    # Given a person with two roles
    roles.grant_role(crowdworker, roles.CURATOR)
    key = Token.objects.create(user=crowdworker).key
    # When the token is checked
    with CaptureQueriesContext(connection) as ctx:
        user, token = TokenAuthentication().authenticate_credentials(key)
        found = roles.user_roles(user)
    # Then one query gave the user and both roles, and the role check needs no other
    assert len(ctx.captured_queries) == 1
    assert (user.pk, user.username, token.key) == (crowdworker.pk, "worker", key)
    assert found == frozenset({roles.CROWDWORKER, roles.CURATOR})


def test_token_auth_user_fields_match_the_orm(crowdworker):
    key = Token.objects.create(user=crowdworker).key
    user, _token = TokenAuthentication().authenticate_credentials(key)
    fresh = type(crowdworker).objects.get(pk=crowdworker.pk)
    fields = [f.attname for f in fresh._meta.concrete_fields]
    assert [getattr(user, f) for f in fields] == [getattr(fresh, f) for f in fields]
    assert user._state.adding is False


def test_token_auth_roles_of_a_person_without_groups_and_of_a_superuser(db):
    plain = UserFactory(username="plain")
    boss = UserFactory(username="boss", is_superuser=True)
    auth = TokenAuthentication()
    for person, expected in ((plain, frozenset()), (boss, frozenset({roles.ADMIN}))):
        user, _token = auth.authenticate_credentials(Token.objects.create(user=person).key)
        assert roles.user_roles(user) == expected


def test_token_auth_refuses_unknown_tokens_and_inactive_people(crowdworker):
    # Given a token of a person who was deactivated
    key = Token.objects.create(user=crowdworker).key
    crowdworker.is_active = False
    crowdworker.save(update_fields=["is_active"])
    client = APIClient()
    # Then the API answers 401 with DRF's messages, for that token and for a made-up one
    for token, message in ((key, "User inactive or deleted."), ("nope" * 10, "Invalid token.")):
        client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
        response = client.get("/api/queues/")
        assert response.status_code == 401
        assert response.json() == {"message": message}


def test_a_role_taken_away_counts_from_the_next_request(queue, crowdworker, two_tasks):
    # Given a crowdworker who could claim
    client = token_client(crowdworker)
    assert client.post(f"/api/queues/{queue.id}/next/").status_code == 200
    # When their role is removed
    crowdworker.groups.clear()
    # Then the very next request is refused (roles are read with the token, never cached)
    response = client.post(f"/api/queues/{queue.id}/next/")
    assert response.status_code == 404
    assert response.json() == {"message": "Not found."}


@pytest.mark.parametrize("queue_id", [10**30, 2**63])
def test_next_on_an_id_beyond_bigint_is_not_found(project, crowdworker, queue_id):
    response = token_client(crowdworker).post(f"/api/queues/{queue_id}/next/")
    assert response.status_code == 404
    assert response.json() == {"message": "Not found."}


# --------------------------------------------------------------------------------------------
# Plans that do not depend on fresh statistics (PostgreSQL)
# --------------------------------------------------------------------------------------------
def explain(sql: str, params) -> str:
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN " + sql, params)
        return "\n".join(row[0] for row in cursor.fetchall())


def bulk_rows(queue, tasks: int, person, leased: int = 0) -> None:
    """``tasks`` tasks in ``queue``, each answered by ``person``; ``leased`` of them are
    still leased instead (live for ten minutes)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO annotator_task (queue_id, payload, is_gold, external_id, state,"
            " required, active_count, done_count, escalations, created_at)"
            " SELECT %s, '{}'::jsonb, false, '', 'open', 2, 0, 0, 0, now()"
            " FROM generate_series(1, %s)",
            [queue.pk, tasks],
        )
        cursor.execute(
            "INSERT INTO annotator_assignment (task_id, queue_id, annotator_id, state, is_gold,"
            " leased_at, expires_at, presentation, report_reason)"
            " SELECT id, queue_id, %s,"
            " CASE WHEN row_number() OVER (ORDER BY id) <= %s THEN 'leased' ELSE 'submitted' END,"
            " false, now(), now() + interval '10 minutes', '{}'::jsonb, ''"
            " FROM annotator_task WHERE queue_id = %s",
            [person.pk, leased, queue.pk],
        )


def test_claim_and_standing_plans_hold_while_a_new_queue_is_unknown_to_statistics(
    project, crowdworker
):
    if connection.vendor != "postgresql":
        pytest.skip("query plans are PostgreSQL's")
    # Given statistics taken when only an older queue had tasks and assignments
    bulk_rows(QueueFactory(project=project), 2_000, crowdworker, leased=50)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE annotator_task")
        cursor.execute("ANALYZE annotator_assignment")
    # When a new queue gets 20,000 tasks and answers before the next ANALYZE
    new = QueueFactory(project=project)
    bulk_rows(new, 20_000, crowdworker)
    now = timezone.now()
    claim = explain(
        claiming._PG_CLAIM,
        {
            "queue": new.pk,
            "person": crowdworker.pk,
            "now": now,
            "expires": now,
            "presentation": "{}",
        },
    )
    standing = explain(
        claiming._STANDING_SQL, [new.pk, crowdworker.pk, crowdworker.pk, new.pk, now]
    )
    # Then the claim still walks task_claim_idx in order (no sort of the whole queue), and the
    # standing check looks the lease up by queue and person together
    assert "task_claim_idx" in claim and "Sort" not in claim, claim
    lookup = standing.split("InitPlan 2")[1]
    conds = [line for line in lookup.splitlines() if "Index Cond:" in line]
    assert "annotator_id = " in conds[0] and "queue_id = " in conds[0], standing
