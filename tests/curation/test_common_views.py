"""The edge helpers the recipe and evaluation pages share (annotator/platform/views.py): a button
that runs a service or starts a job, a form page, publishing a version, the project-grouped
lists, the job cards and the funnel flag. Each is driven with a real request, real Job rows and
real service errors; the pages that use them are covered by their own tests."""

import pytest
from django import forms
from django.contrib import messages
from django.contrib.messages import get_messages
from django.contrib.messages.storage.cookie import CookieStorage
from django.test import RequestFactory
from django.urls import reverse

from annotator.platform import views
from annotator.platform.errors import Invalid, NotFound
from annotator.platform.models import Job
from annotator.platform.views import (
    any_running,
    error_context,
    first_error,
    form_page,
    funnel_context,
    grouped_by_project,
    job_cards,
    perform,
    start_job,
    state_chips,
)
from curation.recipes.framework.publish import publish_version
from curation.recipes.visit import pipelines as visit_pipelines
from curation.recipes.visit.models import VisitPipeline
from tests.factories import ProjectFactory

PAGE = "/curate/somewhere/"


def _request(user, data=None):
    factory = RequestFactory()
    request = factory.post(PAGE, data or {}) if data is not None else factory.get(PAGE)
    request.user = user
    request._messages = CookieStorage(request)
    return request


def _said(request) -> list[tuple[str, str]]:
    return [(m.level_tag, str(m)) for m in get_messages(request)]


def _refused():
    raise Invalid("Nothing to draft yet.", [{"line": 3, "error": "empty row"}])


# --- start_job / perform ----------------------------------------------------------------------


def test_a_started_job_leads_to_its_card_with_the_default_message(curator, project):
    request = _request(curator, {})

    response = start_job(
        request,
        lambda: Job.objects.create(kind="test.kind", project=project),
        page=PAGE,
        what="Drafting things",
    )

    job = Job.objects.get()
    assert (response.status_code, response["Location"]) == (302, f"{PAGE}#job-{job.pk}")
    assert _said(request) == [("success", "Drafting things started.")]


def test_a_started_job_can_lead_to_the_job_page_with_a_message_made_from_the_job(curator):
    request = _request(curator, {})

    response = start_job(
        request,
        lambda: Job.objects.create(kind="test.kind"),
        page=PAGE,
        what="Drafting",
        started=lambda job: f"job #{job.pk} runs",
        job_page=True,
    )

    job = Job.objects.get()
    assert response["Location"] == reverse("curator-job", args=[job.pk])
    assert _said(request) == [("success", f"job #{job.pk} runs")]


@pytest.mark.parametrize(
    ("status", "error", "said"),
    [
        ("running", "", ("success", "Drafting things started.")),
        ("succeeded", "", ("success", "Drafting things finished.")),
        (
            "failed",
            "Invalid: no drafter\nline 2: x",
            ("error", "Drafting things failed: Invalid: no drafter"),
        ),
    ],
)
def test_the_message_says_what_became_of_the_job_by_the_time_the_page_answers(
    curator, project, status, error, said
):
    # Given a job that, by the time the button's request answers, still runs, has finished (as
    # where jobs run inside the request) or has failed
    def start():
        job = Job.objects.create(kind="test.kind", project=project)
        Job.objects.filter(pk=job.pk).update(status=status, error=error)
        return job

    request = _request(curator, {})
    start_job(request, start, page=PAGE, what="Drafting things")

    assert _said(request) == [said]


def test_a_finished_job_can_be_announced_in_the_pages_own_words(curator, project):
    def start():
        job = Job.objects.create(kind="test.kind", project=project)
        Job.objects.filter(pk=job.pk).update(status=Job.Status.SUCCEEDED)
        return job

    request = _request(curator, {})
    start_job(request, start, page=PAGE, what="Export", finished="Export finished: download it.")

    assert _said(request) == [("success", "Export finished: download it.")]


def test_a_refused_start_goes_back_with_the_reason_and_starts_nothing(curator):
    request = _request(curator, {})

    response = start_job(request, _refused, page=PAGE, what="Drafting", refused_at="ratings")

    assert (response.status_code, response["Location"]) == (302, f"{PAGE}#ratings")
    assert _said(request) == [("error", "Nothing to draft yet.")]
    assert Job.objects.count() == 0


def test_a_refusal_can_be_worded_by_the_page(curator):
    request = _request(curator, {})

    def with_detail(request, exc):
        views.refuse(request, exc)
        messages.error(request, exc.errors[0]["error"])

    start_job(request, _refused, page=PAGE, what="Drafting", refuse=with_detail)

    assert _said(request) == [("error", "Nothing to draft yet."), ("error", "empty row")]


def test_perform_says_what_the_call_returned_and_goes_on(curator):
    request = _request(curator, {})

    response = perform(
        request, lambda: 7, back=PAGE, done=lambda n: f"{n} tuples", then=PAGE + "#ratings"
    )
    assert (response["Location"], _said(request)) == (PAGE + "#ratings", [("success", "7 tuples")])

    request = _request(curator, {})
    response = perform(request, lambda: None, back=PAGE, done="Saved.")
    assert (response["Location"], _said(request)) == (PAGE, [("success", "Saved.")])


def test_perform_answers_every_service_error_as_a_refusal(curator):
    request = _request(curator, {})

    def missing():
        raise NotFound("No such run.")

    response = perform(request, missing, back=PAGE, done="never")

    assert (response["Location"], _said(request)) == (PAGE, [("error", "No such run.")])


# --- publish_version ----------------------------------------------------------------------------


def test_publish_version_checks_the_label_before_publishing(curator):
    calls = []
    request = _request(curator, {"label": "x" * 61})

    response = publish_version(
        request, lambda **kw: calls.append(kw), back=PAGE, done=lambda v: "never"
    )

    assert response["Location"] == PAGE
    assert _said(request) == [("error", "Give the version a label (at most 60 characters).")]
    assert calls == []


def test_publish_version_passes_the_label_and_the_person(curator):
    calls = []
    request = _request(curator, {"label": "v2"})

    response = publish_version(
        request,
        lambda **kw: calls.append(kw) or "version v2",
        back=PAGE,
        done=lambda version: f"Published {version}.",
        then=PAGE + "#responses",
    )

    assert calls == [{"label": "v2", "created_by": curator}]
    assert (response["Location"], _said(request)) == (
        PAGE + "#responses",
        [("success", "Published version v2.")],
    )


# --- form_page ----------------------------------------------------------------------------------


class NameForm(forms.Form):
    name = forms.CharField(max_length=10)


@pytest.fixture
def tiny_template(settings):
    settings.TEMPLATES = [
        {
            "BACKEND": "django.template.backends.django.DjangoTemplates",
            "OPTIONS": {
                "loaders": [
                    (
                        "django.template.loaders.locmem.Loader",
                        {
                            "form.html": "{{ where }}|{{ error.message }}|"
                            "{% for e in error.errors %}{{ e.line }}:{{ e.error }}{% endfor %}|"
                            "{{ form.errors.name.0 }}{{ form.non_field_errors.0 }}"
                        },
                    )
                ]
            },
        }
    ]


def _form_page(request, save):
    return form_page(
        request,
        NameForm(request.POST or None),
        save,
        "form.html",
        {"where": "here"},
        done=lambda name: f"{name} created.",
        then=lambda name: f"/made/{name}/",
    )


def test_form_page_shows_the_form_on_get(curator, tiny_template):
    response = _form_page(_request(curator), lambda data: pytest.fail("saved on GET"))
    assert (response.status_code, response.content.decode()) == (200, "here|||")


def test_form_page_saves_a_valid_form_and_goes_on(curator, tiny_template):
    request = _request(curator, {"name": "mine"})

    response = _form_page(request, lambda data: data["name"])

    assert (response.status_code, response["Location"]) == (302, "/made/mine/")
    assert _said(request) == [("success", "mine created.")]


def test_form_page_shows_an_invalid_form_again_with_400(curator, tiny_template):
    request = _request(curator, {"name": "far too long a name"})

    response = _form_page(request, lambda data: pytest.fail("saved an invalid form"))

    assert response.status_code == 400
    assert response.content.decode().startswith("here|||Ensure this value has at most 10")


def test_form_page_shows_a_refusal_with_its_line_numbered_errors(curator, tiny_template):
    def refuse(data):
        raise Invalid("The file has errors.", [{"line": 3, "error": "no image"}])

    response = _form_page(_request(curator, {"name": "mine"}), refuse)

    assert (response.status_code, response.content.decode()) == (
        400,
        "here|The file has errors.|3:no image|",
    )


def test_form_page_shows_a_content_problem_as_a_form_error(curator, tiny_template):
    def unreadable(data):
        raise forms.ValidationError("The file is not UTF-8 text.")

    response = _form_page(_request(curator, {"name": "mine"}), unreadable)

    assert (response.status_code, response.content.decode()) == (
        400,
        "here|||The file is not UTF-8 text.",
    )


# --- small helpers ------------------------------------------------------------------------------


def test_error_context_of_a_refusal_with_and_without_line_errors():
    assert error_context(Invalid("Bad.", [{"line": 1, "error": "x"}])) == {
        "message": "Bad.",
        "errors": [{"line": 1, "error": "x"}],
    }
    assert error_context(NotFound("Gone.")) == {"message": "Gone.", "errors": []}


def test_first_error_of_a_form():
    form = NameForm({"name": ""})
    assert not form.is_valid()
    assert first_error(form) == "This field is required."
    assert first_error(NameForm({"name": "ok"})) == ""


def test_grouped_by_project_lists_the_reachable_projects_by_name(curator):
    # given two projects of the curator (made in reverse name order) and one of someone else
    b_project = ProjectFactory(name="B project", members=[curator])
    a_project = ProjectFactory(name="A project", members=[curator])
    other = ProjectFactory(name="Other")
    for project, name in [(b_project, "z"), (b_project, "k"), (other, "hidden")]:
        visit_pipelines.pipeline_create(project=project, name=name)

    groups = grouped_by_project(curator, VisitPipeline.objects.all(), "pipelines")

    assert [(g["project"], [p.name for p in g["pipelines"]]) for g in groups] == [
        (a_project, []),
        (b_project, ["k", "z"]),
    ]


def test_job_cards_follow_the_labels_order_and_skip_kinds_never_run(db):
    draft = Job.objects.create(kind="r.draft", status=Job.Status.SUCCEEDED)
    fetch = Job.objects.create(kind="r.fetch", status=Job.Status.RUNNING)
    latest = {"r.fetch": fetch, "r.draft": draft}
    labels = {"r.import": "Import", "r.draft": "Drafts", "r.fetch": "Fetch"}

    assert job_cards(latest, labels) == [("Drafts", draft), ("Fetch", fetch)]
    assert any_running(latest.values()) is True
    assert any_running([draft]) is False


def test_funnel_context_scales_the_bars_only_when_asked(db):
    funnel = {"cases": 0, "drafted": 0}
    done = {"x": Job(kind="x", status=Job.Status.FAILED)}

    assert funnel_context(funnel, done, "cases") == {
        "funnel": funnel,
        "running": False,
        "max_bar": 1,
    }
    assert funnel_context({"cases": 12}, {}, "cases")["max_bar"] == 12
    assert funnel_context(funnel, {}) == {"funnel": funnel, "running": False}


def test_state_chips_count_zero_for_a_state_with_no_row():
    chips = state_chips({"open": 3}, [("open", "Open"), ("done", "Done")])
    assert chips == [
        {"value": "open", "label": "Open", "n": 3},
        {"value": "done", "label": "Done", "n": 0},
    ]


# --- the shared job grid on the recipe pages ----------------------------------------------------


def test_the_job_grid_shows_each_kinds_newest_job_with_the_pages_own_section(
    client, curator, project
):
    # given a VisIT-Bench pipeline and a VLind-Bench bench with jobs of two kinds
    from curation.recipes.vlind import benches as vlind_benches

    client.force_login(curator)
    pipeline = visit_pipelines.pipeline_create(project=project, name="Mine")
    bench = vlind_benches.bench_create(project=project, name="Bench")
    old = Job.objects.create(kind=visit_pipelines.DRAFT_JOB, params={"pipeline_id": pipeline.pk})
    draft = Job.objects.create(
        kind=visit_pipelines.DRAFT_JOB,
        params={"pipeline_id": pipeline.pk},
        status=Job.Status.RUNNING,
        done=1,
        total=4,
    )
    fetch = Job.objects.create(
        kind=visit_pipelines.FETCH_JOB,
        params={"pipeline_id": pipeline.pk},
        status=Job.Status.SUCCEEDED,
    )
    nouns = Job.objects.create(kind=vlind_benches.NOUNS_JOB, params={"bench_id": bench.pk})

    # when the pages are shown
    visit_page = client.get(reverse("curator-visit-pipeline", args=[pipeline.pk]))
    vlind_page = client.get(reverse("curator-vlind-bench", args=[bench.pk]))

    # then each lists its newest job per kind, in its own order, inside its own section style
    assert [(str(label), job) for label, job in visit_page.context["jobs"]] == [
        ("Image fetch", fetch),
        ("Reference drafts", draft),
    ]
    assert visit_page.context["running"] is True
    html = visit_page.content.decode()
    assert '<section class="vis-section" aria-labelledby="jobs-title">' in html
    assert f'<div id="job-{draft.pk}"><h3>Reference drafts</h3>' in html
    assert f"{reverse('curator-job', args=[draft.pk])}?part=card" in html  # it polls
    assert f'id="job-{old.pk}"' not in html
    assert f"{reverse('curator-job', args=[fetch.pk])}?part=card" not in html  # finished
    html = vlind_page.content.decode()
    assert '<section class="vl-jobs" aria-labelledby="jobs-title">' in html
    assert f'<div id="job-{nouns.pk}"><h3>VP nouns</h3>' in html
