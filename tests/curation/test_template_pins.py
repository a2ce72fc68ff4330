"""Projects pin the version of a shared prompt template they render (issue 23): the first use
pins the current version, an admin's edit (a new version) changes nothing for a project that
already used the template, and only a curator of the project moves the pin, after reading the
diff. Every generation records the version it was rendered from."""

from __future__ import annotations

import importlib
import json

import pytest
from django.apps import apps as django_apps
from django.urls import reverse

from annotator.platform import roles
from annotator.platform.models import Job
from annotator.services.projects import project_member_remove
from curation import gateway
from curation.models import Generation, PromptTemplate, TemplatePin
from evaluation.runners.common import templates_pinned
from tests.factories import ProjectFactory, UserFactory

pytestmark = pytest.mark.django_db

NAME = "caption-shorten"
EDITED = "Make this caption at most {max_chars} characters long: {caption}"


def shorten(project) -> Generation:
    """One call of the built-in caption-shorten template by the offline drafter."""
    return gateway.generate(
        template=NAME,
        variables={"caption": "A red bus in front of a very old stone church.", "max_chars": 20},
        project=project,
        provider=gateway.provider_offline(),
        purpose="test.shorten",
    )


@pytest.fixture
def admin():
    return UserFactory(username="template-admin", role=roles.ADMIN)


@pytest.fixture
def other_project():
    other = UserFactory(username="curator-b", role=roles.CURATOR)
    return ProjectFactory(members=[other])


def edit(admin) -> PromptTemplate:
    return gateway.template_update(name=NAME, text=EDITED, created_by=admin)


def pin_url(project) -> str:
    return reverse("curator-llm-template-pin", kwargs={"name": NAME, "project_id": project.pk})


def pinned_version(project) -> int | None:
    pin = TemplatePin.objects.filter(project=project, name=NAME).select_related("template")
    return pin.first().template.version if pin.exists() else None


# ---------------------------------------------------------------------------------------------
# the gateway
# ---------------------------------------------------------------------------------------------
def test_an_edit_does_not_change_what_a_project_that_used_the_template_renders(
    project, other_project, admin
):
    # given a project whose pipeline already rendered v1
    first = shorten(project)
    assert (first.template_version, pinned_version(project)) == (1, 1)
    # when an admin saves a new text (v2)
    assert edit(admin).version == 2
    # then the project's next call still renders v1, word for word
    again = shorten(project)
    assert (again.template_version, again.template_sha256) == (1, first.template_sha256)
    assert EDITED.split(":")[0] not in json.dumps(again.messages)
    # while a project that never used it, and a call outside any project, render v2
    fresh = shorten(other_project)
    assert (fresh.template_version, pinned_version(other_project)) == (2, 2)
    assert "Make this caption at most 20 characters long" in json.dumps(fresh.messages)
    assert shorten(None).template_version == 2


def test_moving_the_pin_changes_the_next_call_and_keeps_the_earlier_pin(project, admin, curator):
    shorten(project)
    edit(admin)
    # when a curator of the project moves it to v2
    pin = gateway.template_pin(project=project, name=NAME, version=2, pinned_by=curator)
    # then the next call renders v2 and the pin remembers v1
    assert shorten(project).template_version == 2
    assert (pin.template.version, pin.pinned_by, [m["version"] for m in pin.moves]) == (
        2,
        curator,
        [1],
    )
    assert pin.moves[0]["pinned_by"] is None  # pinned at first use
    # and pinning the same version again changes nothing
    same = gateway.template_pin(project=project, name=NAME, version=2, pinned_by=admin)
    assert (same.pinned_by, len(same.moves)) == (curator, 1)


def test_pinning_a_version_that_does_not_exist_is_refused(project):
    gateway.ensure_default_templates()
    with pytest.raises(gateway.TemplateNotFound, match="No version 9"):
        gateway.template_pin(project=project, name=NAME, version=9)
    assert not TemplatePin.objects.exists()


def test_a_page_showing_the_prompt_does_not_pin_it(project, admin):
    gateway.ensure_default_templates()
    shown = gateway.template_for(NAME, project=project, pin=False)
    assert (shown.version, TemplatePin.objects.count()) == (1, 0)
    edit(admin)
    assert shorten(project).template_version == 2  # the first call pins the current one


def test_a_batch_renders_the_projects_version(
    project, admin, eager, django_capture_on_commit_callbacks
):
    shorten(project)
    edit(admin)
    with django_capture_on_commit_callbacks(execute=True):
        job = gateway.generation_batch_enqueue(
            items=[
                {"key": "a", "template": NAME, "variables": {"caption": "x y z", "max_chars": 5}}
            ],
            project=project,
            provider=gateway.provider_offline(),
        )
    job.refresh_from_db()
    made = Generation.objects.get(job=job)
    assert (job.status, made.template_version) == (Job.Status.SUCCEEDED, 1)


def test_a_resumed_evaluation_run_keeps_the_versions_it_started_with(project, admin):
    gateway.ensure_default_templates()
    started = {NAME: {"version": 1, "sha256": "…"}}
    edit(admin)
    gateway.template_pin(project=project, name=NAME, version=2)
    # given a run that recorded v1 when it started, and a project now pinned to v2
    resumed = templates_pinned([NAME], project=project, recorded=started)
    fresh = templates_pinned([NAME], project=project)
    assert (resumed[NAME].version, fresh[NAME].version) == (1, 2)


# ---------------------------------------------------------------------------------------------
# the pages
# ---------------------------------------------------------------------------------------------
def test_the_pin_page_shows_the_diff_and_a_curator_moves_the_pin(client, project, curator, admin):
    shorten(project)
    edit(admin)
    client.force_login(curator)
    # when the curator opens the project's version of the template
    page = client.get(pin_url(project))
    # then it shows v1 pinned, v2 newer, the diff and a button to move
    html = page.content.decode()
    assert page.status_code == 200
    assert "v2 is newer" in html and "Move from v1 to v2" in html
    assert "<ins>Make</ins>" in html or "<ins>" in html
    # when they move it
    moved = client.post(pin_url(project), {"version": 2})
    assert moved.status_code == 302 and pinned_version(project) == 2
    follow = client.get(moved["Location"]).content.decode()
    assert "already renders v2" in follow and "Earlier pins" in follow


@pytest.mark.parametrize("bad", ["9", "abc", str(2**80), "-1", ""])
def test_a_bad_version_is_refused_with_400_and_changes_nothing(client, project, curator, bad):
    shorten(project)
    client.force_login(curator)
    response = client.post(pin_url(project), {"version": bad})
    assert response.status_code == 400
    assert pinned_version(project) == 1


def test_outsiders_cannot_see_or_move_a_projects_pin(
    client, project, other_project, curator, researcher, admin
):
    shorten(project)
    edit(admin)
    removed = UserFactory(username="removed-curator", role=roles.CURATOR)
    project.members.add(removed)
    project_member_remove(project=project, user=removed)
    outsiders = [other_project.members.get(), removed, researcher]
    for user in outsiders:
        client.force_login(user)
        # a curator of another project, a removed curator, a researcher: 404, nothing changes
        assert client.get(pin_url(project)).status_code == 404
        assert client.post(pin_url(project), {"version": 2}).status_code == 404
    assert pinned_version(project) == 1
    client.logout()
    assert client.post(pin_url(project), {"version": 2}).status_code == 302  # to the login
    assert pinned_version(project) == 1


def test_the_template_page_lists_the_projects_versions(client, project, researcher, admin):
    shorten(project)
    edit(admin)
    client.force_login(researcher)
    html = client.get(reverse("curator-llm-template", kwargs={"name": NAME})).content.decode()
    assert "Your projects' versions" in html and "older than current" in html
    assert pin_url(project) not in html  # researchers read, curators move


def test_the_templates_list_names_projects_behind_the_current_version(
    client, project, curator, admin
):
    shorten(project)
    edit(admin)
    client.force_login(curator)
    html = client.get(reverse("curator-llm-templates")).content.decode()
    assert "Newer versions your projects do not use yet" in html
    assert f"{NAME}</code> v1" in html and pin_url(project) in html


def test_the_migration_pins_the_newest_version_each_project_already_used(project, admin):
    # given a project that rendered v1 and v2 before pins existed, and one that rendered nothing
    shorten(project)
    edit(admin)
    gateway.template_pin(project=project, name=NAME, version=2)
    shorten(project)
    TemplatePin.objects.all().delete()
    # when the migration's data step runs
    migration = importlib.import_module("curation.migrations.0009_template_pins")
    migration.pin_what_projects_used(django_apps, None)
    # then the project keeps the newest version it used, and nothing else is pinned
    assert [(p.project_id, p.name, p.template.version) for p in TemplatePin.objects.all()] == [
        (project.pk, NAME, 2)
    ]
