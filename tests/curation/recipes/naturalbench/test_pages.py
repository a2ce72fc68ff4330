"""NaturalBench pages: the funnel with its counts, links and stage buttons (bounded queries),
the lists behind the counts, the settings form, and the roles × pages matrix (404, nothing
changed)."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from annotator.platform import roles
from annotator.platform.models import Job
from curation.recipes.naturalbench import export, mining
from curation.recipes.naturalbench.models import NaturalBenchPipeline
from curation.scorers import scorer_tiny
from tests.curation.recipes.naturalbench.helpers import (  # noqa: F401 - fixtures
    built_pipeline,
    make_corpus,
    make_pipeline,
    media,
)
from tests.factories import ProjectFactory, UserFactory

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.usefixtures("media"),
]


@pytest.fixture
def built(project):
    pipeline = built_pipeline(project)
    export.version_export(pipeline=pipeline)
    return pipeline


def login(client, user):
    client.force_login(user)  # django-axes needs a request: client.login has none
    return client


def step(html: str, name: str) -> str:
    """The text of one funnel step, tags removed and spaces collapsed."""
    found = re.search(rf'data-step="{name}">(.*?)</li>', html, re.DOTALL)
    assert found, name
    return " ".join(re.sub(r"<[^>]+>", " ", found.group(1)).split())


def test_the_funnel_shows_every_stage_with_counts_links_and_buttons(client, curator, built):
    login(client, curator)
    response = client.get(reverse("curator-nb-pipeline", args=[built.pk]))
    assert response.status_code == 200
    html = response.content.decode()
    assert step(html, "samples").startswith("1 Samples 6 images with a caption in English")
    assert step(html, "pairs").startswith("2 Mismatched pairs 2 random pairs (baseline)")
    assert step(html, "verified").startswith(
        "3 Verified pairs 2 / 2 0 in verification · "
        "0 discarded (one caption fits both) · 0 not sent"
    )
    assert step(html, "drafted").startswith("4 Drafted questions 4 question pairs 4 LLM drafts")
    assert step(html, "kept").startswith("5 Answered and kept 4 / 4 items: 16 as intended")
    assert step(html, "assembled").startswith("6 Assembled samples 4 2 yes/no · 2 multiple-choice")
    assert step(html, "tagged").startswith("7 Tagged 4 / 4 4 sent to tagging")
    assert step(html, "exported").startswith("8 Exported 4 v1")
    for name in ("curator-nb-pairs", "curator-nb-questions", "curator-nb-samples"):
        assert reverse(name, args=[built.pk]) in html
    for queue in (built.pair_queue_id, built.answer_queue_id, built.tag_queue_id):
        assert reverse("curator-queue", args=[queue]) in html
    # every stage has its button; those with nothing to do say why and are disabled
    assert 'data-stage="export"' in html and "No mined pair waits for verification." in html
    assert "Questions come from the offline rule-based drafter, not an LLM" in html


def test_the_random_weights_scorer_is_labelled(client, curator, project):
    pipeline = make_pipeline(project, make_corpus(project), method="eq1", scorers=[scorer_tiny()])
    login(client, curator)
    html = client.get(reverse("curator-nb-pipeline", args=[pipeline.pk])).content.decode()
    assert "Scorer “tiny (random weights)” has random weights: its pairs are arbitrary" in html
    assert "No job has run yet. Start with “Mine pairs”" in html


def test_the_funnel_page_runs_a_bounded_number_of_queries(
    client, curator, built, django_assert_max_num_queries
):
    login(client, curator)
    url = reverse("curator-nb-pipeline", args=[built.pk])
    with django_assert_max_num_queries(16):
        assert client.get(url).status_code == 200
    with django_assert_max_num_queries(14):
        assert client.get(url + "?part=funnel", HTTP_HX_REQUEST="true").status_code == 200


def test_the_htmx_fragment_is_the_funnel_alone(client, curator, built):
    login(client, curator)
    html = client.get(reverse("curator-nb-pipeline", args=[built.pk]) + "?part=funnel").content
    assert html.decode().startswith('<section id="funnel"')


def test_a_stage_button_starts_a_job_once(client, curator, project):
    pipeline = make_pipeline(project, make_corpus(project), random_pairs=2)
    mining.pairs_mine(pipeline=pipeline)
    login(client, curator)
    url = reverse("curator-nb-stage", args=[pipeline.pk, "verify"])
    response = client.post(url)
    job = Job.objects.get()
    assert response.status_code == 302
    assert response["Location"].endswith(f"/naturalbench/{pipeline.pk}/#job-{job.pk}")
    assert (job.kind, job.params, job.project_id) == (
        "naturalbench.verify",
        {"pipeline_id": pipeline.pk},
        project.pk,
    )
    again = client.post(url, follow=True)
    assert f"This stage already has a job (#{job.pk}) queued or running." in again.content.decode()
    assert Job.objects.count() == 1


def test_a_stage_with_nothing_to_do_is_refused_and_starts_nothing(client, curator, project):
    pipeline = make_pipeline(project, make_corpus(project))
    login(client, curator)
    response = client.post(reverse("curator-nb-stage", args=[pipeline.pk, "assemble"]), follow=True)
    assert "No kept question pair to assemble." in response.content.decode()
    assert Job.objects.count() == 0


def test_new_pipeline_form_refuses_bad_settings_then_creates(client, curator, project):
    corpus = make_corpus(project)
    login(client, curator)
    url = reverse("curator-nb-new", args=[project.pk])
    assert client.get(url).status_code == 200
    data = {
        "name": "Flickr NB",
        "corpus": corpus.pk,
        "language": "en",
        "method": "eq1",
        "question_types": ["yes_no"],
        "annotators_per_item": 2,
        "taggers_per_item": 3,
        "max_regenerations": 3,
        "seed": 0,
    }
    refused = client.post(url, data)
    assert refused.status_code == 400
    assert "Eq. 1 mining needs at least one scorer" in refused.content.decode()
    assert NaturalBenchPipeline.objects.count() == 0
    created = client.post(url, {**data, "method": "random"})
    pipeline = NaturalBenchPipeline.objects.get()
    assert created["Location"] == reverse("curator-nb-pipeline", args=[pipeline.pk])
    assert (pipeline.created_by, pipeline.method, pipeline.question_types) == (
        curator,
        "random",
        ["yes_no"],
    )


def test_the_lists_behind_the_counts(client, curator, built):
    login(client, curator)
    pairs = client.get(reverse("curator-nb-pairs", args=[built.pk]) + "?state=verified")
    assert pairs.status_code == 200 and "Verified (2)" in pairs.content.decode()
    questions = client.get(reverse("curator-nb-questions", args=[built.pk]))
    html = questions.content.decode()
    assert "Which description fits the image?" in html and "1 of 4 drafts" in html
    samples = client.get(reverse("curator-nb-samples", args=[built.pk]))
    assert samples.content.decode().count('class="card s-card"') == 4
    version = built.versions.get()
    card = client.get(reverse("curator-nb-version", args=[built.pk, version.pk]))
    assert "Yes-or-No, Multiple-Choice" in card.content.decode()
    # the skill-tagging stage shows its tag-set figures (three taggers agree on every tag)
    tagging = version.card["agreement"]["skill_tagging"]
    assert tagging["multilabel"] is True
    assert {t["percent_agreement"] for t in tagging["per_tag"]} == {1.0}
    assert "Set α (MASI)" in card.content.decode()
    assert f"<code>{tagging['per_tag'][0]['tag']}</code>" in card.content.decode()
    download = client.get(reverse("curator-nb-download", args=[built.pk, version.pk, "zip"]))
    assert download["Content-Type"] == "application/zip"
    assert b"".join(download.streaming_content)[:2] == b"PK"


@pytest.fixture
def outsiders(project):
    other_curator = UserFactory(username="elsewhere", role=roles.CURATOR)
    ProjectFactory(members=[other_curator])
    return {"member crowdworker": "worker", "other project's curator": "elsewhere"}


def urls(pipeline):
    version = pipeline.versions.get()
    return [
        ("get", reverse("curator-nb-pipeline", args=[pipeline.pk])),
        ("get", reverse("curator-nb-settings", args=[pipeline.pk])),
        ("get", reverse("curator-nb-pairs", args=[pipeline.pk])),
        ("get", reverse("curator-nb-questions", args=[pipeline.pk])),
        ("get", reverse("curator-nb-samples", args=[pipeline.pk])),
        ("get", reverse("curator-nb-version", args=[pipeline.pk, version.pk])),
        ("get", reverse("curator-nb-download", args=[pipeline.pk, version.pk, "zip"])),
        ("get", reverse("curator-nb-new", args=[pipeline.project_id])),
        ("post", reverse("curator-nb-stage", args=[pipeline.pk, "export"])),
        ("post", reverse("curator-nb-settings", args=[pipeline.pk])),
    ]


@pytest.mark.parametrize("who", ["member crowdworker", "other project's curator"])
def test_people_without_access_get_404_and_change_nothing(client, built, outsiders, who):
    from django.contrib.auth import get_user_model

    login(client, get_user_model().objects.get(username=outsiders[who]))
    before = (Job.objects.count(), built.name, built.versions.count())
    for method, url in urls(built):
        response = getattr(client, method)(url, {"name": "changed"} if method == "post" else None)
        assert response.status_code == 404, (who, url)
    built.refresh_from_db()
    assert (Job.objects.count(), built.name, built.versions.count()) == before


def test_anonymous_visitors_are_sent_to_log_in(client, built):
    response = client.get(reverse("curator-nb-pipeline", args=[built.pk]))
    assert response.status_code == 302 and "login" in response["Location"]


def test_settings_after_mining_keep_the_fields_that_decide_the_pairs(client, curator, project):
    pipeline = make_pipeline(project, make_corpus(project), random_pairs=2)
    mining.pairs_mine(pipeline=pipeline)
    login(client, curator)
    url = reverse("curator-nb-settings", args=[pipeline.pk])
    page = client.get(url).content.decode()
    assert 'name="seed" value="0" min="0" max="2147483647" required disabled' in page
    response = client.post(
        url,
        {
            "name": "Renamed",
            "seed": 99,  # disabled: ignored
            "question_types": ["yes_no", "multiple_choice"],
            "annotators_per_item": 3,
            "taggers_per_item": 3,
            "max_regenerations": 2,
        },
    )
    assert response.status_code == 302
    pipeline.refresh_from_db()
    assert (pipeline.name, pipeline.seed, pipeline.annotators_per_item) == ("Renamed", 0, 3)
    assert pipeline.question_types == ["yes_no", "multiple_choice"]
    assert (pipeline.random_pairs, pipeline.max_regenerations) == (2, 2)
