"""The VLind-Bench pages: list and creation, the funnel with its job buttons and empty states,
uploads through the page (refusals say why and store nothing), the role matrix (crowdworkers,
researchers and other projects' curators: 404, nothing changes) and the demo."""

from __future__ import annotations

import hashlib
import io
import zipfile

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from annotator.models import Task
from annotator.platform.models import Job
from curation.models import Image
from curation.recipes.framework.publish import published_versions
from curation.recipes.framework.registry import recipe_of
from curation.recipes.vlind import benches, demo, selectors
from curation.recipes.vlind.models import VLindBench, VLindConcept, VLindImage, VLindTriple
from evaluation.models import BenchmarkVersion
from tests.curation.recipes.common import assert_out_of_reach, login_out_of_reach
from tests.curation.recipes.vlind import helpers
from tests.curation.recipes.vlind.helpers import draft_offline, kept, png_bytes, review_triples

pytestmark = [
    pytest.mark.django_db,
]


def test_creating_a_bench_seeds_the_concepts_and_the_funnel_says_what_next(
    curator_client, project, media
):
    response = curator_client.post(
        reverse("curator-vlind-new", args=[project.pk]),
        {"name": "Mine", "triples_per_concept": 10, "images_per_style": 4},
    )
    bench = VLindBench.objects.get(name="Mine")
    assert response.status_code == 302
    assert response["Location"] == reverse("curator-vlind-bench", args=[bench.pk])
    assert bench.concepts.count() == 11
    html = curator_client.get(response["Location"]).content.decode()
    assert "None yet: press “Draft triples”." in html
    assert "No image endpoint is configured" in html
    assert "Nothing assembled yet: an instance needs a kept triple" in html
    assert "offline drafter" in html  # no LLM configured: the page says who drafts
    # the same name again is refused with the reason
    again = curator_client.post(
        reverse("curator-vlind-new", args=[project.pk]),
        {"name": "Mine", "triples_per_concept": 10, "images_per_style": 4},
    )
    assert again.status_code == 400
    assert "already has a VLind-Bench “Mine”" in again.content.decode()


def test_draft_button_runs_the_job_and_the_funnel_counts(
    curator_client, bench, eager, django_capture_on_commit_callbacks
):
    bench.concepts.exclude(name="color").update(active=False)
    with django_capture_on_commit_callbacks(execute=True):
        response = curator_client.post(
            reverse("curator-vlind-draft", args=[bench.pk]), {"count": 3}
        )
    job = Job.objects.get(kind="vlind.draft_triples")
    assert response["Location"].endswith(f"#job-{job.pk}")
    job.refresh_from_db()
    assert job.status == "succeeded" and job.result["drafted"] == 3
    page = curator_client.get(reverse("curator-vlind-bench", args=[bench.pk]))
    assert page.context["funnel"]["triples"] == 3
    assert page.context["funnel"]["stages"]["review"] == 3
    assert "3 triples wait for reviewers" in page.content.decode()


def test_funnel_fragment_and_pages_render_with_a_bounded_number_of_queries(
    curator_client, bench, django_assert_max_num_queries
):
    draft_offline(bench, names=("color", "diet"), count=4)
    review_triples(bench, helpers.reviewers(), {})
    for k, triple in enumerate(kept(bench)[:3]):
        helpers.assemble(bench, triple, seed=k + 1)
    with django_assert_max_num_queries(40):
        page = curator_client.get(reverse("curator-vlind-bench", args=[bench.pk]))
    assert page.status_code == 200
    html = page.content.decode()
    assert 'data-testid="table1"' in html and "The four tests of one instance" in html
    with django_assert_max_num_queries(15):
        fragment = curator_client.get(
            reverse("curator-vlind-bench", args=[bench.pk]) + "?part=funnel"
        )
    assert fragment.context["funnel"]["assembled"] == 3
    with django_assert_max_num_queries(20):
        listing = curator_client.get(reverse("curator-vlind-triples", args=[bench.pk]))
    assert len(listing.context["rows"]) == 8
    triple = kept(bench)[0]
    detail = curator_client.get(reverse("curator-vlind-triple", args=[bench.pk, triple.pk]))
    assert detail.status_code == 200
    assert "There is a banana in the given image." in detail.content.decode()
    concept = bench.concepts.get(name="color")
    edit = curator_client.get(reverse("curator-vlind-concept", args=[bench.pk, concept.pk]))
    assert "concept of &quot;color&quot;" in edit.content.decode()
    new = curator_client.get(reverse("curator-vlind-concept-new", args=[bench.pk]))
    assert new.status_code == 200 and "Example 3" in new.content.decode()
    listing = curator_client.get(reverse("curator-vlind-benches")).content.decode()
    assert "8 triples drafted · 8 kept" in listing


def test_upload_page_refuses_a_bad_file_and_stores_nothing(curator_client, bench):
    draft_offline(bench, names=("color",), count=1)
    review_triples(bench, helpers.reviewers(), {})
    triple = kept(bench)[0]
    url = reverse("curator-vlind-upload", args=[bench.pk, triple.pk])
    response = curator_client.post(
        url,
        {
            "style": "cartoon",
            "images": [
                SimpleUploadedFile("good.png", png_bytes(1)),
                SimpleUploadedFile("evil.svg", b"<svg></svg>"),
            ],
        },
    )
    assert response.status_code == 400
    html = response.content.decode()
    assert "Some files were refused; nothing was stored." in html
    assert "evil.svg: “.svg” files are not accepted" in html
    assert (Image.objects.count(), VLindImage.objects.count()) == (0, 0)
    ok = curator_client.post(
        url, {"style": "cartoon", "images": [SimpleUploadedFile("good.png", png_bytes(1))]}
    )
    assert ok.status_code == 302
    assert list(VLindImage.objects.values_list("slot", "style")) == [(8, "cartoon")]


def test_nouns_and_best_image_forms(curator_client, bench):
    draft_offline(bench, names=("color",), count=1)
    review_triples(bench, helpers.reviewers(), {})
    triple = kept(bench)[0]
    rows = helpers.assemble(bench, triple, seed=4, accepts=(2, 3, 0))
    url = reverse("curator-vlind-nouns", args=[bench.pk, triple.pk])
    response = curator_client.post(url, {"existent": "tree", "non_existent_other": "a kite"})
    assert response.status_code == 302
    triple.refresh_from_db()
    assert (triple.existent_noun, triple.non_existent_noun) == ("tree", "a kite")
    bad = curator_client.post(url, {"existent": "kite", "non_existent": "kite"})
    assert bad.status_code == 400 and "The two nouns must differ." in bad.content.decode()
    best = reverse("curator-vlind-best", args=[bench.pk, triple.pk])
    assert curator_client.post(best, {"image": rows[0].pk}).status_code == 302
    triple.refresh_from_db()
    assert triple.best_image_id == rows[0].pk
    refused = curator_client.post(best, {"image": rows[2].pk})
    assert refused.status_code == 400
    triple.refresh_from_db()
    assert triple.best_image_id == rows[0].pk


def _run_export(client, url, data, capture):
    with capture(execute=True):
        response = client.post(url, data)
    job = Job.objects.filter(kind=benches.EXPORT_JOB).order_by("-id").first()
    job.refresh_from_db()
    return response, job


def test_export_jobs_and_publish_from_the_page(
    curator_client, bench, eager, django_capture_on_commit_callbacks
):
    # given one assembled instance and no export yet
    draft_offline(bench, names=("color",), count=1)
    review_triples(bench, helpers.reviewers(), {})
    helpers.assemble(bench, kept(bench)[0], seed=5)
    url = reverse("curator-vlind-export", args=[bench.pk])
    page = reverse("curator-vlind-bench", args=[bench.pk])
    response = curator_client.get(url, follow=True)
    assert "No finished export yet: start an export" in response.content.decode()
    # when the export button is pressed with App. B (the job runs eagerly)
    response, job = _run_export(
        curator_client, url, {"appendix_b": "1"}, django_capture_on_commit_callbacks
    )
    assert response.url == page + f"#job-{job.pk}"
    # then the job stored the archive with its hash; images counted (App. B's five included)
    assert job.status == "succeeded", job.error
    name = f"vlind-bench-{bench.pk}-appendix-b.zip"
    assert job.result["path"] == f"exports/vlind/{bench.pk}/{job.pk}/{name}"
    assert job.done == job.total == job.result["images"] > 5
    file_url = reverse("curator-vlind-export-file", args=[bench.pk, job.pk])
    data = b"".join(curator_client.get(file_url).streaming_content)
    assert (len(data), hashlib.sha256(data).hexdigest()) == (
        job.result["size"],
        job.result["sha256"],
    )
    names = zipfile.ZipFile(io.BytesIO(data)).namelist()
    assert {"data.json", "tests.jsonl", "appendix_b/blank.png"} <= set(names)
    assert file_url in curator_client.get(page).content.decode()
    # the old address serves the newest finished export of the same kind only
    with_b = curator_client.get(url + "?appendix_b=1")
    assert with_b["Content-Type"] == "application/zip"
    assert b"".join(with_b.streaming_content) == data
    assert curator_client.get(url).status_code == 302  # none without App. B yet
    # a frozen version exports by its own job
    assert (
        curator_client.post(
            reverse("curator-vlind-publish", args=[bench.pk]), {"label": "v1"}
        ).status_code
        == 302
    )
    bench.refresh_from_db()  # the first publish points the bench at its benchmark
    version = published_versions(recipe_of("vlind"), bench).get()
    assert (version.label, version.item_count, version.benchmark.family) == ("v1", 1, "vlind")
    again = curator_client.post(reverse("curator-vlind-publish", args=[bench.pk]), {"label": "v1"})
    assert again.status_code == 302 and published_versions(recipe_of("vlind"), bench).count() == 1
    version_url = reverse("curator-vlind-version-export", args=[bench.pk, version.pk])
    _response, frozen = _run_export(
        curator_client, version_url, {}, django_capture_on_commit_callbacks
    )
    assert frozen.status == "succeeded", frozen.error
    assert frozen.result["filename"] == f"vlind-bench-{bench.pk}-v1.zip"
    zipped = curator_client.get(version_url)
    assert zipped.status_code == 200
    frozen_names = zipfile.ZipFile(io.BytesIO(b"".join(zipped.streaming_content))).namelist()
    assert "appendix_b/blank.png" not in frozen_names and "data.json" in frozen_names


def test_export_refusals_and_a_job_of_another_bench_say_why(curator_client, bench, curator):
    # nothing assembled: the button is refused, no job
    response = curator_client.post(reverse("curator-vlind-export", args=[bench.pk]), follow=True)
    assert "Nothing to export yet: no instance is assembled." in response.content.decode()
    assert not Job.objects.exists()
    # another bench's export job is not served here, nor an unfinished one
    other = VLindBench.objects.create(project=bench.project, name="Other")
    job = Job.objects.create(
        kind=benches.EXPORT_JOB, params={"bench_id": other.pk}, project=bench.project
    )
    response = curator_client.get(reverse("curator-vlind-export-file", args=[bench.pk, job.pk]))
    assert response.status_code == 404
    assert "There is no such export here." in response.content.decode()
    response = curator_client.get(reverse("curator-vlind-export-file", args=[other.pk, job.pk]))
    assert response.status_code == 404
    assert "This export is not finished yet" in response.content.decode()


def _urls(bench, triple, concept):
    b, t = bench.pk, triple.pk
    png = png_bytes(9)
    return [
        ("get", reverse("curator-vlind-benches"), {}),
        ("get", reverse("curator-vlind-new", args=[bench.project_id]), {}),
        (
            "post",
            reverse("curator-vlind-new", args=[bench.project_id]),
            {"name": "x", "triples_per_concept": 1, "images_per_style": 1},
        ),
        ("get", reverse("curator-vlind-bench", args=[b]), {}),
        ("get", reverse("curator-vlind-bench", args=[b]) + "?part=funnel", {}),
        (
            "post",
            reverse("curator-vlind-settings", args=[b]),
            {"triples_per_concept": 2, "images_per_style": 1, "image_size": "512x512"},
        ),
        ("get", reverse("curator-vlind-concept", args=[b, concept.pk]), {}),
        ("post", reverse("curator-vlind-concept", args=[b, concept.pk]), {"image_hint": "x"}),
        ("get", reverse("curator-vlind-concept-new", args=[b]), {}),
        ("post", reverse("curator-vlind-draft", args=[b]), {"count": 5}),
        ("post", reverse("curator-vlind-generate", args=[b]), {}),
        ("post", reverse("curator-vlind-nouns-draft", args=[b]), {}),
        ("get", reverse("curator-vlind-triples", args=[b]), {}),
        ("get", reverse("curator-vlind-triple", args=[b, t]), {}),
        (
            "post",
            reverse("curator-vlind-upload", args=[b, t]),
            {"style": "cartoon", "images": [SimpleUploadedFile("a.png", png)]},
        ),
        ("post", reverse("curator-vlind-factual", args=[b, t]), {"factual_context": "changed"}),
        (
            "post",
            reverse("curator-vlind-nouns", args=[b, t]),
            {"existent": "x", "non_existent": "y"},
        ),
        ("post", reverse("curator-vlind-best", args=[b, t]), {"image": ""}),
        ("post", reverse("curator-vlind-publish", args=[b]), {"label": "v9"}),
        ("get", reverse("curator-vlind-export", args=[b]), {}),
        ("post", reverse("curator-vlind-export", args=[b]), {}),
        ("get", reverse("curator-vlind-export-file", args=[b, 1]), {}),
    ]


@pytest.mark.parametrize("who", ["crowdworker", "researcher", "stranger"])
def test_people_out_of_reach_get_404_and_change_nothing(
    client, bench, crowdworker, researcher, who
):
    # given a bench with a kept triple, and a member crowdworker, a member researcher, and a
    # curator of another project
    draft_offline(bench, names=("color",), count=1)
    review_triples(bench, helpers.reviewers(), {})
    triple = kept(bench)[0]
    concept = bench.concepts.get(name="color")
    login_out_of_reach(client, who, crowdworker=crowdworker, researcher=researcher)
    state = lambda: (  # noqa: E731
        Job.objects.count(),
        VLindBench.objects.count(),
        VLindTriple.objects.values_list("factual_context", "existent_noun").get(pk=triple.pk),
        VLindImage.objects.count(),
        Image.objects.count(),
        BenchmarkVersion.objects.count(),
        list(VLindConcept.objects.values_list("image_hint", flat=True).order_by("pk")),
        VLindBench.objects.values_list("triples_per_concept", flat=True).get(pk=bench.pk),
        Task.objects.count(),
    )
    before = state()
    pages = _urls(bench, triple, concept)
    list_url = reverse("curator-vlind-benches")
    assert_out_of_reach(client, who, pages, list_url=list_url, hidden=bench.name)
    assert state() == before


def test_demo_leaves_triples_at_every_stage_with_reviews_waiting(project, curator, media):
    # when the demo is built
    bench = demo.vlind_demo(project=project, curator=curator)
    # then the funnel has something at each step, and review tasks wait for people
    funnel = selectors.funnel(bench)
    stages = funnel["stages"]
    assert funnel["concepts"] == 11 and funnel["triples"] == 18
    assert stages["review"] == 6 and stages["rejected"] == 3
    assert stages["needs_images"] == 1 and stages["images_review"] == 2
    assert stages["no_good_image"] == 1 and stages["needs_factual"] == 2
    assert stages["assembled"] == 3 and funnel["exported"] == 3
    assert funnel["image_status"]["review"] == 6
    assert funnel["origins"]["placeholder"] == 24
    open_tasks = Task.objects.filter(state=Task.State.OPEN)
    assert open_tasks.filter(queue=bench.triple_queue).count() == 6
    assert open_tasks.filter(queue=bench.image_queue).count() == 6
    # everything drafted says it came from the offline drafter; images say placeholder
    assert {t.generation.provider_kind for t in bench.triples.all()} == {"offline"}
    assert set(
        Image.objects.filter(pk__in=VLindImage.objects.values("image")).values_list(
            "source", flat=True
        )
    ) == {"placeholder (VLind-Bench demo, drawn with Pillow)"}
    # and a second call changes nothing
    assert demo.vlind_demo(project=project, curator=curator) == bench
    assert VLindTriple.objects.count() == 18


def test_deleting_the_project_removes_the_demo_bench(project, curator, media):
    # the demo command's --reset deletes the demo project: nothing of the recipe may block it
    demo.vlind_demo(project=project, curator=curator)
    project.delete()
    assert (VLindBench.objects.count(), VLindTriple.objects.count()) == (0, 0)
    assert VLindImage.objects.count() == 0
