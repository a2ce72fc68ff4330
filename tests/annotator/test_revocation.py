"""Revocation is immediate (issue 13 item 2).

A crowdworker removed from a project, or who lost the crowdworker role, stops at once: their
live leases end (the slots go back to the pool, as on expiry), and every submit, skip, report
and heartbeat from them answers 404 exactly like a missing task, with no next task handed out.
Curators remove people on the project's People page or through the API; an admin's edits of a
user's groups or a project's members in the Django admin have the same effect.
"""

import pytest
from django.contrib.auth.models import Group
from django.urls import reverse

from annotator import services
from annotator.models import Annotation, Assignment, Task
from annotator.platform import roles
from annotator.platform.errors import NotFound
from tests.annotator.helpers import token_api as api
from tests.factories import ProjectFactory, QueueFactory, TaskFactory, UserFactory, vqa_payload

HX = {"HTTP_HX_REQUEST": "true"}
BODIES = {
    "submit": {"response": {"answer": "Yes"}},
    "skip": None,
    "report": {"reason": "unclear"},
    "heartbeat": None,
}
FORMS = {"submit": {"answer": "Yes"}, "skip": {}, "report": {"reason": "unclear"}, "heartbeat": {}}


def post(client, path: str, task_id: int):
    body = BODIES[path]
    if body is None:
        return client.post(f"/api/tasks/{task_id}/{path}/")
    return client.post(f"/api/tasks/{task_id}/{path}/", body, format="json")


@pytest.fixture
def one_slot(queue):
    """A queue where every task takes one answer: a returned slot is visible at once."""
    queue.redundancy = queue.max_redundancy = 1
    queue.save()
    return [TaskFactory(queue=queue, payload=vqa_payload(i), required=1) for i in range(3)]


@pytest.fixture
def held(queue, one_slot, crowdworker):
    """The crowdworker holds the first task, through the API."""
    body = api(crowdworker).post(f"/api/queues/{queue.pk}/next/").json()
    assert body["task"]["id"] == one_slot[0].pk
    return one_slot[0]


def lease_of(task, person) -> Assignment:
    return Assignment.objects.get(task=task, annotator=person)


# --------------------------------------------------------------------------------------------
# The scenario
# --------------------------------------------------------------------------------------------
def test_removed_crowdworker_cannot_submit_and_gets_no_next_task(
    project, queue, held, crowdworker, other_worker, curator
):
    # Given a crowdworker holding a lease; when a curator removes them from the project
    removed = api(curator).delete(f"/api/projects/{project.pk}/members/{crowdworker.pk}/")
    assert removed.status_code == 200
    assert removed.json() == {"project": project.pk, "user": crowdworker.pk, "leases_ended": 1}
    # Then their lease has ended and the slot is back in the pool
    assert lease_of(held, crowdworker).state == Assignment.State.EXPIRED
    assert Task.objects.get(pk=held.pk).active_count == 0
    # And their submit on that lease is 404, exactly like a missing task, with no next task
    response = post(api(crowdworker), "submit", held.pk)
    missing = post(api(crowdworker), "submit", 10**9)
    assert response.status_code == 404
    assert response.json() == missing.json() == {"message": "No such task."}
    assert not Annotation.objects.exists()
    assert not Assignment.objects.filter(annotator=crowdworker, state="leased").exists()
    # And /next/ is 404 for them too
    assert api(crowdworker).post(f"/api/queues/{queue.pk}/next/").status_code == 404
    # And another worker can claim the returned task
    body = api(other_worker).post(f"/api/queues/{queue.pk}/next/").json()
    assert body["task"]["id"] == held.pk


@pytest.mark.parametrize("path", ["skip", "report", "heartbeat"])
def test_removed_crowdworker_cannot_skip_report_or_extend(project, held, crowdworker, path):
    services.project_member_remove(project=project, user=crowdworker)
    before = list(Assignment.objects.values_list("pk", "state", "expires_at", "report_reason"))
    response = post(api(crowdworker), path, held.pk)
    assert (response.status_code, response.json()) == (404, {"message": "No such task."})
    after = list(Assignment.objects.values_list("pk", "state", "expires_at", "report_reason"))
    assert after == before


@pytest.mark.parametrize("path", ["submit", "skip", "report", "heartbeat"])
def test_removed_member_with_a_live_lease_is_refused_even_before_it_ends(
    project, held, crowdworker, path
):
    # Given membership taken away without the service (e.g. a raw database edit): the lease
    # is still live, yet the request-time check refuses the person
    project.members.remove(crowdworker)
    response = post(api(crowdworker), path, held.pk)
    assert (response.status_code, response.json()) == (404, {"message": "No such task."})
    assert lease_of(held, crowdworker).state == Assignment.State.LEASED
    assert not Annotation.objects.exists()


@pytest.mark.parametrize("path", ["submit", "skip", "report", "heartbeat"])
def test_lost_role_is_refused_at_once(held, crowdworker, path):
    # Given the crowdworker role taken away (their token stays valid)
    crowdworker.groups.clear()
    ended = services.annotator_leases_revoke(annotator=crowdworker)
    assert ended == 1
    assert Task.objects.get(pk=held.pk).active_count == 0
    response = post(api(crowdworker), path, held.pk)
    assert response.status_code == 404
    assert not Annotation.objects.exists()


def test_the_services_refuse_a_person_without_the_role(queue, one_slot, crowdworker):
    services.assignment_claim(queue=queue, annotator=crowdworker)
    crowdworker.groups.clear()
    crowdworker.__dict__.pop("_blindspot_roles", None)  # roles as a new request reads them
    with pytest.raises(NotFound):
        services.annotation_submit(
            task_id=one_slot[0].pk, annotator=crowdworker, response={"answer": "Yes"}
        )
    with pytest.raises(NotFound):
        services.assignment_heartbeat(task_id=one_slot[0].pk, annotator=crowdworker)


def test_deactivated_person_loses_their_leases(held, crowdworker):
    type(crowdworker).objects.filter(pk=crowdworker.pk).update(is_active=False)
    assert services.annotator_leases_revoke(annotator=crowdworker) == 1
    assert lease_of(held, crowdworker).state == Assignment.State.EXPIRED


def test_removal_ends_only_that_projects_leases(project, queue, held, crowdworker):
    # Given a second project where the same person also holds a lease
    elsewhere = QueueFactory(project=ProjectFactory(members=[crowdworker]))
    other_task = TaskFactory(queue=elsewhere)
    services.assignment_claim(queue=elsewhere, annotator=crowdworker)
    # When they are removed from the first project
    assert services.project_member_remove(project=project, user=crowdworker) == 1
    # Then only the first project's lease ended
    assert lease_of(held, crowdworker).state == Assignment.State.EXPIRED
    assert lease_of(other_task, crowdworker).state == Assignment.State.LEASED
    assert post(api(crowdworker), "heartbeat", other_task.pk).status_code == 200


def test_admins_work_outside_their_projects(queue, one_slot):
    boss = UserFactory(username="boss", is_superuser=True)
    body = api(boss).post(f"/api/queues/{queue.pk}/next/").json()
    assert post(api(boss), "heartbeat", body["task"]["id"]).status_code == 200
    response = post(api(boss), "submit", body["task"]["id"])
    assert response.status_code == 201
    assert services.annotator_leases_revoke(annotator=boss) == 0


def test_a_removed_person_invited_back_can_work_again(project, queue, held, crowdworker):
    services.project_member_remove(project=project, user=crowdworker)
    project.members.add(crowdworker)
    body = api(crowdworker).post(f"/api/queues/{queue.pk}/next/").json()
    assert body["task"]["id"] == held.pk  # their own expired lease, revived
    assert post(api(crowdworker), "submit", held.pk).status_code == 201


# --------------------------------------------------------------------------------------------
# The HTML workspace
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("htmx", [False, True], ids=["plain", "htmx"])
@pytest.mark.parametrize("path", ["submit", "skip", "report", "heartbeat"])
def test_workspace_answers_404_after_removal(client, project, held, crowdworker, path, htmx):
    client.force_login(crowdworker)
    services.project_member_remove(project=project, user=crowdworker)
    headers = HX if htmx else {}
    response = client.post(reverse(f"work-{path}", args=[held.pk]), FORMS[path], **headers)
    assert response.status_code == 404
    assert not Annotation.objects.exists()
    assert client.get(reverse("work", args=[held.queue_id])).status_code == 404


# --------------------------------------------------------------------------------------------
# The People page and the API
# --------------------------------------------------------------------------------------------
def test_people_page_lists_members_with_roles_and_leases(client, project, held, curator):
    client.force_login(curator)
    html = client.get(reverse("curator-project-people", args=[project.pk])).content.decode()
    for name in ("worker", "worker2", "curator", "researcher"):
        assert f'<td dir="auto">{name}</td>' in html
    remove = reverse("curator-project-member-remove", args=[project.pk, held_by(held).pk])
    assert f'href="{remove}"' in html and f'hx-post="{remove}"' in html
    assert "hx-confirm=" in html
    # The curator's own row has no remove button
    own = reverse("curator-project-member-remove", args=[project.pk, curator.pk])
    assert own not in html


def held_by(task):
    return Assignment.objects.get(task=task, state="leased").annotator


def test_people_page_removes_after_a_confirmation(client, project, held, crowdworker, curator):
    client.force_login(curator)
    url = reverse("curator-project-member-remove", args=[project.pk, crowdworker.pk])
    # GET is the confirmation page and changes nothing
    page = client.get(url)
    assert page.status_code == 200
    assert "Remove worker from" in page.content.decode()
    assert "They hold 1 task in this project right now" in page.content.decode()
    assert project.members.filter(pk=crowdworker.pk).exists()
    # POST removes and goes back to the list with a message
    response = client.post(url, follow=True)
    assert response.redirect_chain == [(reverse("curator-project-people", args=[project.pk]), 302)]
    assert (
        "worker was removed from " + project.name + "; 1 task they held went back to the pool."
    ) in response.content.decode()
    assert not project.members.filter(pk=crowdworker.pk).exists()
    assert lease_of(held, crowdworker).state == Assignment.State.EXPIRED


def test_people_page_htmx_removal_answers_with_the_row(client, project, crowdworker, curator):
    client.force_login(curator)
    url = reverse("curator-project-member-remove", args=[project.pk, crowdworker.pk])
    response = client.post(url, **HX)
    assert response.status_code == 200
    assert response.content.decode().strip() == (
        '<tr class="person-removed"><td colspan="4" role="status" dir="auto">'
        f"worker was removed from {project.name}; 0 tasks they held went back to the pool."
        "</td></tr>"
    )


def test_a_curator_cannot_remove_themselves(client, project, curator):
    client.force_login(curator)
    url = reverse("curator-project-member-remove", args=[project.pk, curator.pk])
    response = client.post(url, follow=True)
    assert "You cannot remove yourself from a project" in response.content.decode()
    assert project.members.filter(pk=curator.pk).exists()


@pytest.mark.parametrize("who", ["researcher", "crowdworker", "outsider"])
def test_only_the_projects_curators_remove_people(client, project, held, crowdworker, who):
    person = (
        UserFactory(username="elsewhere", role=roles.CURATOR)
        if who == "outsider"
        else project.members.get(username="researcher" if who == "researcher" else "worker2")
    )
    client.force_login(person)
    url = reverse("curator-project-member-remove", args=[project.pk, crowdworker.pk])
    assert client.get(url).status_code == 404
    assert client.post(url).status_code == 404
    assert client.get(reverse("curator-project-people", args=[project.pk])).status_code == 404
    assert (
        api(person).delete(f"/api/projects/{project.pk}/members/{crowdworker.pk}/").status_code
        == 404
    )
    assert project.members.filter(pk=crowdworker.pk).exists()
    assert lease_of(held, crowdworker).state == Assignment.State.LEASED


def test_removing_a_non_member_is_404(project, curator):
    stranger = UserFactory(role=roles.CROWDWORKER)
    response = api(curator).delete(f"/api/projects/{project.pk}/members/{stranger.pk}/")
    assert (response.status_code, response.json()) == (404, {"message": "Not found."})


def test_members_api_lists_roles_and_live_leases(project, held, curator):
    body = api(curator).get(f"/api/projects/{project.pk}/members/").json()
    assert [(m["username"], m["roles"], m["live_leases"]) for m in body] == [
        ("curator", ["curator"], 0),
        ("researcher", ["researcher"], 0),
        ("worker", ["crowdworker"], 1),
        ("worker2", ["crowdworker"], 0),
    ]


# --------------------------------------------------------------------------------------------
# The Django admin
# --------------------------------------------------------------------------------------------
@pytest.fixture
def root_client(db, client):
    client.force_login(UserFactory(username="root", is_superuser=True, is_staff=True))
    return client


def user_change_form(user, **changes) -> dict:
    data = {
        "username": user.username,
        "first_name": "",
        "last_name": "",
        "email": "",
        "is_active": "on",
        "groups": [g.pk for g in user.groups.all()],
        "user_permissions": [],
        "date_joined_0": user.date_joined.strftime("%Y-%m-%d"),
        "date_joined_1": user.date_joined.strftime("%H:%M:%S"),
        "initial-date_joined_0": user.date_joined.strftime("%Y-%m-%d"),
        "initial-date_joined_1": user.date_joined.strftime("%H:%M:%S"),
        "last_login_0": "",
        "last_login_1": "",
    }
    data.update(changes)
    return {k: v for k, v in data.items() if v is not None}


def test_admin_removing_the_crowdworker_group_ends_leases(root_client, held, crowdworker):
    url = reverse("admin:auth_user_change", args=[crowdworker.pk])
    response = root_client.post(url, user_change_form(crowdworker, groups=[]))
    assert response.status_code == 302, response.content.decode()[:2000]
    assert not crowdworker.groups.exists()
    assert lease_of(held, crowdworker).state == Assignment.State.EXPIRED
    assert Task.objects.get(pk=held.pk).active_count == 0
    assert post(api(crowdworker), "submit", held.pk).status_code == 404


def test_admin_deactivating_a_user_ends_leases(root_client, held, crowdworker):
    url = reverse("admin:auth_user_change", args=[crowdworker.pk])
    response = root_client.post(url, user_change_form(crowdworker, is_active=None))
    assert response.status_code == 302
    assert lease_of(held, crowdworker).state == Assignment.State.EXPIRED


def test_admin_saving_a_user_unchanged_keeps_leases(root_client, held, crowdworker):
    url = reverse("admin:auth_user_change", args=[crowdworker.pk])
    assert root_client.post(url, user_change_form(crowdworker)).status_code == 302
    assert Group.objects.get(name=roles.CROWDWORKER).user_set.filter(pk=crowdworker.pk).exists()
    assert lease_of(held, crowdworker).state == Assignment.State.LEASED


def test_admin_editing_project_members_ends_the_removed_ones_leases(
    root_client, project, held, crowdworker
):
    keep = [m.pk for m in project.members.exclude(pk=crowdworker.pk)]
    url = reverse("admin:annotator_project_change", args=[project.pk])
    data = {"name": project.name, "slug": project.slug, "description": "", "members": keep}
    response = root_client.post(url, data)
    assert response.status_code == 302, response.content.decode()[:2000]
    assert not project.members.filter(pk=crowdworker.pk).exists()
    assert lease_of(held, crowdworker).state == Assignment.State.EXPIRED
    assert Task.objects.get(pk=held.pk).active_count == 0


def test_admin_deleting_a_user_returns_their_slots_first(root_client, held, crowdworker):
    url = reverse("admin:auth_user_delete", args=[crowdworker.pk])
    response = root_client.post(url, {"post": "yes"})
    assert response.status_code == 302
    assert not type(crowdworker).objects.filter(pk=crowdworker.pk).exists()
    assert Task.objects.get(pk=held.pk).active_count == 0


def test_admin_bulk_deleting_users_returns_their_slots_first(
    root_client, held, crowdworker, other_worker
):
    changelist = reverse("admin:auth_user_changelist")
    data = {
        "action": "delete_selected",
        "_selected_action": [crowdworker.pk, other_worker.pk],
        "post": "yes",
    }
    assert root_client.post(changelist, data).status_code == 302
    assert not type(crowdworker).objects.filter(pk=crowdworker.pk).exists()
    assert Task.objects.get(pk=held.pk).active_count == 0


def test_people_page_queries_do_not_grow_with_members(
    client, project, curator, django_assert_num_queries
):
    client.force_login(curator)
    url = reverse("curator-project-people", args=[project.pk])
    client.get(url)
    # Session, user with their groups, projects, members with held counts, their groups, held
    # leases, and the acceptance rate's two counts (answers, sent back) — a constant, whatever
    # the members.
    with django_assert_num_queries(8):
        few = client.get(url)
    project.members.add(*(UserFactory(role=roles.CROWDWORKER) for _ in range(20)))
    with django_assert_num_queries(8):
        many = client.get(url)
    assert many.content.decode().count("<tr id=") == few.content.decode().count("<tr id=") + 20
