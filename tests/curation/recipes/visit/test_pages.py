"""The VisIT-Bench pages: empty states, the pipeline page's funnel, Table 2 and step buttons, the
family form, imports refused with line numbers, exports, remote images fetched or kept as links,
and the role matrix (crowdworkers, researchers and other projects' curators: 404, nothing
changes)."""

from __future__ import annotations

import csv
import hashlib
import io

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from annotator.models import Task
from annotator.platform import roles
from annotator.platform.models import Job
from curation.recipes.visit import categories, dataset, fetch, pipelines
from curation.recipes.visit.models import VisitCategory, VisitImage, VisitInstance, VisitPipeline
from tests.curation.recipes.common import assert_out_of_reach, login_out_of_reach, png_bytes
from tests.curation.recipes.visit.helpers import (
    DATASET,
    dataset_export,
    publish_version,
    read,
    seed_category,
)
from tests.factories import UserFactory
from tests.paths import VISIT_BENCH, needs

pytestmark = [
    pytest.mark.django_db,
]


def _head(n: int) -> str:
    """The published CSV's header and first ``n`` records (quoted fields span lines)."""
    rows = list(csv.reader(io.StringIO(read(DATASET))))
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows[: n + 1])
    return out.getvalue()


@pytest.fixture
def small(pipeline):
    dataset.dataset_import(pipeline=pipeline, content=_head(12), filename="head.csv")
    return pipeline


def test_new_pipeline_then_its_empty_page(curator_client, project, media):
    response = curator_client.post(
        reverse("curator-visit-new", args=[project.pk]), {"name": "VisIT 2025"}
    )
    pipeline = VisitPipeline.objects.get(name="VisIT 2025")
    assert response.status_code == 302
    assert response["Location"] == reverse("curator-visit-pipeline", args=[pipeline.pk])
    html = curator_client.get(response["Location"]).content.decode()
    assert "No family yet. Create one with its seed example" in html
    assert "Nothing to publish yet" in html
    assert "No instance yet: ask crowdworkers" in html


@needs(VISIT_BENCH)
def test_pipeline_page_shows_funnel_table_2_and_remote_images_as_links(
    curator_client, small, django_assert_max_num_queries
):
    # given the first 12 published rows (all rated correct)
    url = reverse("curator-visit-pipeline", args=[small.pk])
    # when the page is opened
    with django_assert_max_num_queries(60):
        response = curator_client.get(url)
    # then the funnel counts them, Table 2 shows the shares, images are links
    assert response.status_code == 200
    html = response.content.decode()
    verified = VisitInstance.objects.filter(pipeline=small, state="verified").count()
    assert 'data-testid="funnel-instances">12<' in html
    assert f'data-testid="funnel-verified">{verified}<' in html
    assert "Human rating metrics (Table 2)" in html
    assert f"{100 * verified / 12:.1f}" in html
    assert "Remote image, not stored here" in html
    assert "https://visit-instruction-tuning.s3.amazonaws.com/visit_images/" in html
    # and the htmx fragment is the funnel alone
    part = curator_client.get(url + "?part=funnel").content.decode()
    assert part.startswith('<section id="funnel"')


def test_family_form_creates_the_family_with_its_seed_example(curator_client, pipeline):
    response = curator_client.post(
        reverse("curator-visit-family-new", args=[pipeline.pk]),
        {
            "name": "Gardening tips",
            "description": "Advice about plants",
            "seed_instruction": "What is wrong with this plant and how do I fix it?",
            "seed_response": "The leaves are yellow from overwatering; water less often.",
            "images": SimpleUploadedFile("plant.png", png_bytes(4), content_type="image/png"),
            "licence": "CC BY 2.0",
            "source": "https://openverse.org/x",
        },
    )
    assert response.status_code == 302
    category = VisitCategory.objects.get(pipeline=pipeline, name="Gardening tips")
    seed = VisitInstance.objects.get(category=category)
    assert (seed.origin, seed.state) == ("seed", "seed")
    image = VisitImage.objects.get(instance=seed).image
    assert (image.licence, image.source) == ("CC BY 2.0", "https://openverse.org/x")
    assert seed.references.get().text.startswith("The leaves are yellow")


def test_family_form_without_an_example_image_is_refused(curator_client, pipeline):
    response = curator_client.post(
        reverse("curator-visit-family-new", args=[pipeline.pk]),
        {"name": "Gardening", "seed_instruction": "Why?", "seed_response": "Because."},
    )
    assert response.status_code == 400
    assert "Give the example&#x27;s image" in response.content.decode()
    assert not VisitCategory.objects.exists()


def test_asking_for_instructions_makes_tasks(curator_client, pipeline, curator):
    category = seed_category(pipeline, curator)
    response = curator_client.post(
        reverse("curator-visit-instructions", args=[pipeline.pk, category.pk]), {"count": "3"}
    )
    assert response.status_code == 302
    pipeline.refresh_from_db()
    assert Task.objects.filter(queue=pipeline.instruction_queue).count() == 3


def test_bad_dataset_upload_is_refused_with_line_numbers_and_nothing_stored(
    curator_client, pipeline
):
    content = (
        "instruction_category,image,instruction,gpt4_prediction,image_dense_captions,"
        "human_ratings_gpt4_correct,human_ratings_problem_in_caption\n"
        "A,https://x.org/a.png,Count them,Five.,Five apples,TRUE,FALSE\n"
        "A,https://x.org/b.png,,Five.,Five apples,TRUE,FALSE\n"
    )
    response = curator_client.post(
        reverse("curator-visit-import", args=[pipeline.pk]),
        {"file": SimpleUploadedFile("bad.csv", content.encode())},
    )
    assert response.status_code == 400
    html = response.content.decode()
    assert '<td class="num">3</td><td><code>empty instruction</code>' in html
    assert not VisitInstance.objects.exists()
    assert not Job.objects.filter(kind=pipelines.IMPORT_JOB).exists()


@needs(VISIT_BENCH)
def test_good_dataset_upload_is_checked_then_imported_by_a_job(
    curator_client, pipeline, settings, django_capture_on_commit_callbacks
):
    from celery import current_app

    settings.CELERY_TASK_ALWAYS_EAGER = True
    current_app.conf.task_always_eager = True
    try:
        with django_capture_on_commit_callbacks(execute=True):
            response = curator_client.post(
                reverse("curator-visit-import", args=[pipeline.pk]),
                {"file": SimpleUploadedFile("head.csv", _head(5).encode())},
            )
    finally:
        current_app.conf.task_always_eager = False
    assert response.status_code == 302
    job = Job.objects.get(kind=pipelines.IMPORT_JOB)
    assert (job.status, job.result["instances"]) == ("succeeded", 5)
    assert VisitInstance.objects.filter(pipeline=pipeline).count() == 5


def _export(client, pipeline, what, fmt, capture):
    with capture(execute=True):
        response = client.post(reverse("curator-visit-export", args=[pipeline.pk, what, fmt]))
    job = Job.objects.filter(kind=pipelines.EXPORT_JOB).order_by("-id").first()
    job.refresh_from_db()
    return response, job


@needs(VISIT_BENCH)
def test_export_jobs_write_the_published_layout(
    curator_client, small, curator, eager, django_capture_on_commit_callbacks
):
    # given a published version and no export yet
    publish_version(small, created_by=curator)
    url = reverse("curator-visit-export", args=[small.pk, "dataset", "csv"])
    response = curator_client.get(url, follow=True)
    assert "No finished Dataset (CSV) export yet: start an export" in response.content.decode()
    # when the dataset CSV export is started (the job runs eagerly)
    response, job = _export(
        curator_client, small, "dataset", "csv", django_capture_on_commit_callbacks
    )
    page = reverse("curator-visit-pipeline", args=[small.pk])
    assert response.url == page + f"#job-{job.pk}"
    # then the job stored the file with its size and hash, records counted
    assert job.status == "succeeded", job.error
    assert job.result["path"] == f"exports/visit/{small.pk}/{job.pk}/visit-{small.pk}-dataset.csv"
    assert (job.done, job.total, job.result["records"]) == (12, 12, 12)
    response = curator_client.get(url)
    assert response.status_code == 200
    assert response["Content-Disposition"] == f'attachment; filename="visit-{small.pk}-dataset.csv"'
    body = b"".join(response.streaming_content)
    assert (len(body), hashlib.sha256(body).hexdigest()) == (
        job.result["size"],
        job.result["sha256"],
    )
    assert (
        body.decode()
        .splitlines()[0]
        .startswith(
            "instruction_category,image,visual,instruction,gpt4_prediction,image_dense_captions"
        )
    )
    assert body.decode() == dataset_export(small, fmt="csv")
    file_url = reverse("curator-visit-export-file", args=[small.pk, job.pk])
    assert file_url in curator_client.get(page).content.decode()
    # the preferences CSV (no votes yet: the header alone) and the JSONL, by their own jobs
    _response, prefs = _export(
        curator_client, small, "preferences", "csv", django_capture_on_commit_callbacks
    )
    prefs_url = reverse("curator-visit-export-file", args=[small.pk, prefs.pk])
    text = b"".join(curator_client.get(prefs_url).streaming_content).decode()
    assert text.splitlines() == [
        "image_url,instruction,A,B,A_model,B_model,model_selection.A,model_selection.B"
    ]
    _response, lines = _export(
        curator_client, small, "dataset", "jsonl", django_capture_on_commit_callbacks
    )
    assert lines.result["records"] == 12 and lines.result["filename"].endswith(".jsonl")


def test_export_refusals_say_why_and_start_nothing(curator_client, pipeline):
    # no published version: refused, no job
    url = reverse("curator-visit-export", args=[pipeline.pk, "dataset", "csv"])
    response = curator_client.post(url, follow=True)
    assert "Publish the verified instances as a version first." in response.content.decode()
    bad = reverse("curator-visit-export", args=[pipeline.pk, "preferences", "jsonl"])
    assert "Unknown export" in curator_client.post(bad, follow=True).content.decode()
    assert curator_client.get(bad).status_code == 302
    assert not Job.objects.exists()
    # a job that is not this pipeline's export: 404 saying so
    other = Job.objects.create(kind=pipelines.IMPORT_JOB, params={"pipeline_id": pipeline.pk})
    response = curator_client.get(
        reverse("curator-visit-export-file", args=[pipeline.pk, other.pk])
    )
    assert response.status_code == 404
    assert "There is no such export here." in response.content.decode()


@needs(VISIT_BENCH)
def test_remote_images_stay_links_when_the_network_is_down(small, monkeypatch):
    # given a host that cannot be reached (no network here) for every image
    calls = []

    def unreachable(url, **kwargs):
        calls.append(url)
        raise fetch.FetchFailed("not reachable (Name or service not known)", unreachable=True)

    monkeypatch.setattr(fetch, "fetch_remote", unreachable)
    # when the fetch job runs
    result = fetch.images_fetch(pipeline=small)
    # then it gives up after five in a row, and those keep their links and the reason
    assert len(calls) == fetch.FETCH_GIVE_UP_AFTER
    assert result["fetched"] == 0
    assert result["stopped"].startswith("Stopped after 5 unreachable images in a row")
    assert VisitImage.objects.filter(instance__pipeline=small, image__isnull=True).count() == 12
    errors = VisitImage.objects.exclude(fetch_error="").values_list("fetch_error", flat=True)
    assert list(errors) == ["not reachable (Name or service not known)"] * 5


@needs(VISIT_BENCH)
def test_reachable_remote_image_is_stored_with_its_licence(small, monkeypatch):
    # given every host answers (a different picture per URL)
    seeds = iter(range(100, 200))
    monkeypatch.setattr(fetch, "fetch_remote", lambda url, **kw: png_bytes(next(seeds)))
    # when the fetch job runs
    result = fetch.images_fetch(pipeline=small)
    # then all are stored, each with its URL as the source and the published licence and author
    assert result == {"fetched": 12, "failed": 0, "stopped": ""}
    images = VisitImage.objects.filter(instance__pipeline=small).order_by("instance__position")
    first = images.first()
    assert first.image.source == first.url
    assert first.image.licence == "https://creativecommons.org/licenses/by/2.0/"
    assert first.image.attribution == "scott feldstein"
    assert images.filter(image__isnull=True).count() == 0


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("file:///etc/passwd", "not an http(s) URL"),
        ("http://127.0.0.1:8000/admin/", "refused: the host is on a private or local network"),
        ("http://10.1.2.3/x.png", "refused: the host is on a private or local network"),
    ],
)
def test_fetch_refuses_local_addresses_without_a_request(url, reason):
    with pytest.raises(fetch.FetchFailed) as exc:
        fetch.fetch_remote(url)
    assert exc.value.reason == reason


# --- roles ----------------------------------------------------------------------------------
def _curator_pages(pipeline, category):
    return [
        ("get", reverse("curator-visit-pipelines"), {}),
        ("get", reverse("curator-visit-pipeline", args=[pipeline.pk]), {}),
        ("get", reverse("curator-visit-instances", args=[pipeline.pk]), {}),
        ("get", reverse("curator-visit-family-new", args=[pipeline.pk]), {}),
        (
            "post",
            reverse("curator-visit-instructions", args=[pipeline.pk, category.pk]),
            {"count": 2},
        ),
        (
            "post",
            reverse("curator-visit-settings", args=[pipeline.pk]),
            {"caption_min_length": 5, "max_caption_rounds": 1, "reviewers": 1, "votes_per_pair": 3},
        ),
        (
            "post",
            reverse("curator-visit-pairs", args=[pipeline.pk]),
            {"n": 1, "votes": 1, "seed": 0},
        ),
        ("post", reverse("curator-visit-publish", args=[pipeline.pk]), {"label": "v9"}),
        ("get", reverse("curator-visit-export", args=[pipeline.pk, "dataset", "csv"]), {}),
        ("post", reverse("curator-visit-export", args=[pipeline.pk, "dataset", "csv"]), {}),
        ("get", reverse("curator-visit-export-file", args=[pipeline.pk, 1]), {}),
    ]


@pytest.mark.parametrize("who", ["crowdworker", "researcher", "stranger"])
def test_pipeline_pages_answer_404_outside_a_curators_reach_and_change_nothing(
    client, pipeline, curator, crowdworker, researcher, who
):
    category = seed_category(pipeline, curator)
    login_out_of_reach(client, who, crowdworker=crowdworker, researcher=researcher)
    before = (Task.objects.count(), VisitPipeline.objects.get(pk=pipeline.pk).votes_per_pair)
    pages = _curator_pages(pipeline, category)
    assert_out_of_reach(client, who, pages, list_url=reverse("curator-visit-pipelines"))
    assert (
        Task.objects.count(),
        VisitPipeline.objects.get(pk=pipeline.pk).votes_per_pair,
    ) == before


def test_leaderboard_page_is_for_the_projects_researchers_and_curators(
    client, pipeline, researcher, crowdworker
):
    url = reverse("curator-visit-leaderboard", args=[pipeline.pk])
    assert client.get(url).status_code == 302  # anonymous: to the login page
    client.force_login(crowdworker)
    assert client.get(url).status_code == 404
    client.force_login(researcher)
    response = client.get(url)
    assert response.status_code == 200
    assert "The pipeline has no published version yet" in response.content.decode()
    outsider = UserFactory(username="other-researcher", role=roles.RESEARCHER)
    client.force_login(outsider)
    assert client.get(url).status_code == 404


def test_crowdworker_writes_an_instruction_in_the_workspace_with_an_upload(
    client, pipeline, curator, crowdworker
):
    # given an instruction task, opened in the workspace (which shows the family's example)
    category = seed_category(pipeline, curator)
    categories.instruction_tasks_create(category=category, count=1, created_by=curator)
    pipeline.refresh_from_db()
    client.force_login(crowdworker)
    page = client.get(reverse("work", args=[pipeline.instruction_queue.pk]))
    html = page.content.decode()
    assert "Example instruction: How many apples are on the plate?" in html
    task = Task.objects.get(queue=pipeline.instruction_queue)
    # when the crowdworker submits the form with an image file and a missing licence
    form = {
        "text": "Instruction: How many cubes are red?\nImage source: https://x.org/p\n",
        "image": SimpleUploadedFile("cubes.png", png_bytes(8), content_type="image/png"),
    }
    refused = client.post(reverse("work-submit", args=[task.pk]), form)
    # then nothing is kept and the message says what is missing
    assert refused.status_code == 302
    assert not VisitInstance.objects.filter(origin="crowd").exists()
    messages = [str(m) for m in refused.wsgi_request._messages]
    assert messages == [
        "Fill in the line Image licence: every new instruction needs its image's source and "
        "licence."
    ]
    # when the licence is added, the instance exists with the stored image
    form["text"] += "Image licence: CC0\n"
    form["image"] = SimpleUploadedFile("cubes.png", png_bytes(8), content_type="image/png")
    assert client.post(reverse("work-submit", args=[task.pk]), form).status_code == 302
    instance = VisitInstance.objects.get(origin="crowd")
    assert instance.instruction == "How many cubes are red?"
    assert VisitImage.objects.get(instance=instance).image.licence == "CC0"
