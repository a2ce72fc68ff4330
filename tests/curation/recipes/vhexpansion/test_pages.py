"""The VHExpansion pages: list, import (good and bad uploads), the funnel with its job buttons,
exports, and the role matrix (crowdworkers and other projects' curators: 404, nothing changes)."""

from __future__ import annotations

import hashlib
import io
import json
import zipfile

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from annotator.platform.models import Job
from curation import assets
from curation.recipes.vhexpansion import case_import, export, negations, variants
from curation.recipes.vhexpansion.models import VHCaseSet, VHNegation, VHVariant
from evaluation import importers
from evaluation import services as evaluation_services
from evaluation.models import BenchmarkVersion
from tests.curation.recipes.common import assert_out_of_reach, login_out_of_reach, png_bytes
from tests.curation.recipes.vhexpansion import helpers
from tests.curation.recipes.vhexpansion.helpers import (
    archive_for,
    case_rows,
    draft_negations,
    jsonl,
    review,
    reviewers,
    zip_bytes,
)

pytestmark = [pytest.mark.django_db]
media = helpers.media
case_set = helpers.case_set


@pytest.fixture
def post_now(curator_client, eager, django_capture_on_commit_callbacks):
    """POST as the curator; the job the POST enqueues runs (on commit, eagerly)."""

    def post(url, data=None):
        with django_capture_on_commit_callbacks(execute=True):
            return curator_client.post(url, data or {})

    return post


def _accept_all(case_set):
    draft_negations(case_set, reviewers=1)
    review(case_set.review_queue, reviewers(1), {"c1": "accept", "c2": "accept", "c3": "accept"})


def test_good_upload_is_checked_then_imported_by_a_job(curator_client, project, media, post_now):
    rows = case_rows()
    response = post_now(
        reverse("curator-vhx-new", args=[project.pk]),
        {
            "name": "MMVP",
            "table": SimpleUploadedFile("cases.jsonl", jsonl(rows).encode()),
            "archive": SimpleUploadedFile("images.zip", zip_bytes(archive_for(rows))),
        },
    )
    job = Job.objects.get(kind=case_import.IMPORT_JOB)
    assert response.status_code == 302
    assert response.url == reverse("curator-vhx-new", args=[project.pk])
    job.refresh_from_db()
    assert job.status == "succeeded", job.error
    case_set = VHCaseSet.objects.get()
    assert job.result == {"case_set_id": case_set.pk, "cases": 3}
    assert (case_set.name, case_set.project_id, case_set.created_by.username) == (
        "MMVP",
        project.pk,
        "curator",
    )
    page = curator_client.get(response.url)
    assert reverse("curator-vhx-set", args=[case_set.pk]) in page.content.decode()


def test_bad_upload_lists_line_errors_and_creates_nothing(curator_client, project, media):
    content = jsonl([{"id": "a", "image": "a.png", "question": "Is it?", "answer": "perhaps"}])
    response = curator_client.post(
        reverse("curator-vhx-new", args=[project.pk]),
        {"name": "bad", "table": SimpleUploadedFile("cases.jsonl", content.encode())},
    )
    assert response.status_code == 400
    assert response.context["error"]["errors"] == [
        {"line": 1, "error": "'answer' must be yes or no, got 'perhaps'"}
    ]
    assert "&#x27;answer&#x27; must be yes or no" in response.content.decode()
    assert (VHCaseSet.objects.count(), Job.objects.count()) == (0, 0)


def test_a_set_from_a_naturalbench_version_on_the_new_page(curator_client, project, curator, media):
    # given a NaturalBench version with one yes/no sample whose images are stored
    a, _ = assets.image_ingest(data=png_bytes(10), name="nb_a.png", created_by=curator)
    b, _ = assets.image_ingest(data=png_bytes(11), name="nb_b.png", created_by=curator)
    sample = {"Index": "7", "Image_0": f"sha256:{a.sha256}", "Image_1": f"sha256:{b.sha256}"}
    sample |= {"Question_0": "Is it open?", "Image_0_Question_0": "Yes", "Image_1_Question_0": "No"}
    sample |= {"Question_1": "Is it shut?", "Image_0_Question_1": "No", "Image_1_Question_1": "Yes"}
    rows = importers.parse_items("naturalbench", jsonl([{**sample, "Question_Type": "yes_no"}]))
    benchmark = evaluation_services.benchmark_get_or_create(
        family="naturalbench", name="NB", project=project
    )
    version = evaluation_services.version_create(benchmark=benchmark, label="v1", rows=rows)
    url = reverse("curator-vhx-from-naturalbench", args=[project.pk])
    new_page = curator_client.get(reverse("curator-vhx-new", args=[project.pk]))
    assert list(new_page.context["nb_form"].fields["version"].queryset) == [version]
    # when the curator makes a set from it, then it holds four cases and its page says so
    response = curator_client.post(url, {"name": "From NB", "version": version.pk}, follow=True)
    case_set = VHCaseSet.objects.get(project=project, name="From NB")
    assert response.redirect_chain == [(reverse("curator-vhx-set", args=[case_set.pk]), 302)]
    assert "Test cases created from NaturalBench." in response.content.decode()
    assert case_set.cases.count() == 4
    # and the same name again is refused on the new page, the form kept, nothing made
    response = curator_client.post(url, {"name": "From NB", "version": version.pk})
    assert response.status_code == 400
    assert "already has a test-case set “From NB”" in response.content.decode()
    assert response.context["nb_form"].data["name"] == "From NB"
    assert VHCaseSet.objects.count() == 1


def test_funnel_page_shows_counts_buttons_and_samples(
    curator_client,
    case_set,
    django_assert_max_num_queries,
):
    # given two negations accepted, one in review, and brightness variants
    draft_negations(case_set, reviewers=1)
    review(case_set.review_queue, reviewers(1), {"c1": "accept", "c2": "reject", "c3": "accept"})
    variants.variants_perturb(case_set=case_set, perturbations=["brightness"])
    url = reverse("curator-vhx-set", args=[case_set.pk])
    with django_assert_max_num_queries(25):
        response = curator_client.get(url)
    assert response.status_code == 200
    funnel = response.context["funnel"]
    assert (funnel["cases"], funnel["drafted"], funnel["accepted"]) == (3, 3, 2)
    assert funnel["pairs"] == 4  # two accepted cases × (original + brightness)
    brightness = next(p for p in funnel["perturbations"] if p["name"] == "brightness")
    assert (brightness["cases"], brightness["paired"]) == (3, 2)
    html = response.content.decode()
    assert 'data-testid="acceptance-rate">67%' in html
    assert reverse("curator-vhx-export", args=[case_set.pk, "jsonl"]) in html
    assert "No scorer yet: the attack needs a vision encoder." in html
    assert html.count('class="card vh-sample"') == 3
    with django_assert_max_num_queries(10):
        fragment = curator_client.get(url + "?part=funnel")
    assert fragment.status_code == 200
    assert fragment.content.decode().lstrip().startswith('<section id="funnel"')


def test_buttons_start_jobs(curator_client, case_set, post_now):
    url = reverse("curator-vhx-perturb", args=[case_set.pk])
    response = post_now(url, {"perturbations": ["jpeg_compression"], "seed": "0"})
    job = Job.objects.get(kind=variants.PERTURB_JOB)
    assert response.status_code == 302
    assert response.url == reverse("curator-vhx-set", args=[case_set.pk]) + f"#job-{job.pk}"
    job.refresh_from_db()
    assert job.status == "succeeded"
    assert VHVariant.objects.filter(perturbation="jpeg_compression").count() == 3
    post_now(reverse("curator-vhx-negate", args=[case_set.pk]))
    assert VHNegation.objects.filter(status="review").count() == 3
    page = curator_client.get(reverse("curator-vhx-set", args=[case_set.pk]))
    assert [label for label, _job in page.context["jobs"]] == ["Negations", "Common perturbations"]


def test_adversarial_button_with_the_tiny_scorer(case_set, post_now):
    from curation.scorers import scorer_tiny

    scorer = scorer_tiny()
    response = post_now(
        reverse("curator-vhx-adversarial", args=[case_set.pk]),
        {"scorer": scorer.pk, "method": "pgd", "branch": "all", "steps": "3", "seed": "1"},
    )
    assert response.status_code == 302
    job = Job.objects.get(kind=variants.ADVERSARIAL_JOB)
    assert job.status == "succeeded", job.error
    assert set(VHVariant.objects.values_list("perturbation", "triggers_vh")) == {("pgd", True)}


def test_a_refused_action_says_why_and_starts_nothing(curator_client, case_set):
    response = curator_client.post(
        reverse("curator-vhx-adversarial", args=[case_set.pk]),
        {"method": "ifgsm", "branch": "case", "seed": "0"},
        follow=True,
    )
    assert "The attack settings are not valid" in response.content.decode()
    response = curator_client.post(
        reverse("curator-vhx-publish", args=[case_set.pk]), {"label": "v1"}, follow=True
    )
    assert "Nothing to publish yet" in response.content.decode()
    assert (Job.objects.count(), BenchmarkVersion.objects.count()) == (0, 0)


def test_export_job_writes_the_zip_and_its_card_links_it(curator_client, case_set, post_now):
    # given a set with three accepted negations and no export yet
    _accept_all(case_set)
    url = reverse("curator-vhx-export", args=[case_set.pk, "llava"])
    page = reverse("curator-vhx-set", args=[case_set.pk])
    # a GET before any export says to start one
    response = curator_client.get(url, follow=True)
    assert "No finished LLAVA export yet: start an export" in response.content.decode()
    # when the export button is pressed (the job runs eagerly)
    response = post_now(url)
    job = Job.objects.get(kind=export.EXPORT_JOB)
    assert response.status_code == 302
    assert response.url == page + f"#job-{job.pk}"
    job.refresh_from_db()
    # then the job stored the zip with its size and hash, images counted
    assert job.status == "succeeded", job.error
    path = f"exports/vhexpansion/{case_set.pk}/{job.pk}/vhexpansion-{case_set.pk}-llava.zip"
    assert job.result["path"] == path
    assert (job.done, job.total, job.result["images"], job.result["rows"]) == (3, 3, 3, 6)
    file_url = reverse("curator-vhx-export-file", args=[case_set.pk, job.pk])
    data = b"".join(curator_client.get(file_url).streaming_content)
    assert job.result["size"] == len(data)
    assert job.result["sha256"] == hashlib.sha256(data).hexdigest()
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        assert len(json.loads(zf.read("llava.json"))) == 6
        assert len([n for n in zf.namelist() if n.startswith("images/")]) == 3
    # the card on the page links the file; its polled fragment too
    html = curator_client.get(page).content.decode()
    assert file_url in html and "Export: LLaVA conversations (.zip)" in html
    card = curator_client.get(file_url + "?part=card", HTTP_HX_REQUEST="true")
    assert card.content.decode().startswith(f'<div id="job-{job.pk}" data-testid="export-job">')
    # and the old address now serves the newest finished export of that format
    response = curator_client.get(url)
    assert response.status_code == 200
    assert response["Content-Type"] == "application/zip"
    assert b"".join(response.streaming_content) == data
    # publishing still reads the same rows
    response = curator_client.post(
        reverse("curator-vhx-publish", args=[case_set.pk]), {"label": "v1"}
    )
    assert response.status_code == 302
    version = BenchmarkVersion.objects.get()
    assert (version.label, version.item_count) == ("v1", 6)


def test_export_refusals_and_unfinished_jobs_say_why(
    curator_client, case_set, django_capture_on_commit_callbacks
):
    # nothing accepted yet: the button is refused and no job starts
    response = curator_client.post(
        reverse("curator-vhx-export", args=[case_set.pk, "jsonl"]), follow=True
    )
    assert "Nothing to export yet" in response.content.decode()
    assert not Job.objects.exists()
    # an unknown format: refused, nothing started, and a GET goes back with the reason
    _accept_all(case_set)
    response = curator_client.post(
        reverse("curator-vhx-export", args=[case_set.pk, "xml"]), follow=True
    )
    assert "Unknown export format" in response.content.decode()
    assert not Job.objects.exists()
    bad = curator_client.get(reverse("curator-vhx-export", args=[case_set.pk, "xml"]))
    assert bad.status_code == 302
    # a queued (not run) job: its file answers 404 with the reason
    response = curator_client.post(reverse("curator-vhx-export", args=[case_set.pk, "jsonl"]))
    job = Job.objects.get(kind=export.EXPORT_JOB)
    assert job.status == "queued"
    file_url = reverse("curator-vhx-export-file", args=[case_set.pk, job.pk])
    response = curator_client.get(file_url)
    assert response.status_code == 404
    assert "This export is not finished yet" in response.content.decode()
    # its card on the page polls its own fragment (the inner card does not) and has no link yet
    html = curator_client.get(reverse("curator-vhx-set", args=[case_set.pk])).content.decode()
    assert f'hx-get="{file_url}?part=card" hx-trigger="every 1s"' in html
    assert f'href="{file_url}"' not in html
    assert "<div hx-disable>" in html
    # a failed one says it failed
    Job.objects.filter(pk=job.pk).update(status="failed", error="Invalid: disk full\nmore")
    response = curator_client.get(file_url)
    assert response.status_code == 404
    assert "This export failed: Invalid: disk full" in response.content.decode()
    # another job (another set's export, or another kind) is not this set's
    other = Job.objects.create(kind=variants.PERTURB_JOB, params={"case_set_id": case_set.pk})
    for pk in (other.pk, job.pk + 1000):
        response = curator_client.get(reverse("curator-vhx-export-file", args=[case_set.pk, pk]))
        assert response.status_code == 404
        assert "There is no such export here." in response.content.decode()


def test_cases_page_filters_by_state(curator_client, case_set):
    negations.negations_draft(case_set=case_set)
    url = reverse("curator-vhx-cases", args=[case_set.pk])
    assert len(curator_client.get(url).context["page"].object_list) == 3
    assert len(curator_client.get(url + "?state=accepted").context["page"].object_list) == 0
    assert "No case in this state" in curator_client.get(url + "?state=dropped").content.decode()


def _urls(case_set):
    pk, project = case_set.pk, case_set.project_id
    return [
        ("get", reverse("curator-vhx-sets"), {}),
        ("get", reverse("curator-vhx-new", args=[project]), {}),
        ("post", reverse("curator-vhx-from-naturalbench", args=[project]), {"name": "x"}),
        ("get", reverse("curator-vhx-set", args=[pk]), {}),
        ("get", reverse("curator-vhx-cases", args=[pk]), {}),
        ("post", reverse("curator-vhx-settings", args=[pk]), {"reviewers": 2, "max_attempts": 2}),
        ("post", reverse("curator-vhx-negate", args=[pk]), {}),
        ("post", reverse("curator-vhx-perturb", args=[pk]), {"perturbations": ["brightness"]}),
        ("post", reverse("curator-vhx-adversarial", args=[pk]), {"method": "ifgsm"}),
        ("post", reverse("curator-vhx-publish", args=[pk]), {"label": "v9"}),
        ("get", reverse("curator-vhx-export", args=[pk, "jsonl"]), {}),
        ("post", reverse("curator-vhx-export", args=[pk, "jsonl"]), {}),
        ("get", reverse("curator-vhx-export-file", args=[pk, 1]), {}),
    ]


@pytest.mark.parametrize("who", ["crowdworker", "researcher", "stranger"])
def test_people_out_of_reach_get_404_and_change_nothing(
    client, case_set, crowdworker, researcher, who
):
    # given a member crowdworker, a member researcher, and a curator of another project
    login_out_of_reach(client, who, crowdworker=crowdworker, researcher=researcher)
    _accept_all(case_set)
    before = (Job.objects.count(), VHNegation.objects.count(), BenchmarkVersion.objects.count())
    list_url = reverse("curator-vhx-sets")
    assert_out_of_reach(client, who, _urls(case_set), list_url=list_url, hidden=case_set.name)
    assert (
        Job.objects.count(),
        VHNegation.objects.count(),
        BenchmarkVersion.objects.count(),
    ) == before
    case_set.review_queue.refresh_from_db()
    assert case_set.review_queue.redundancy == 1


def test_anonymous_is_sent_to_log_in(client, case_set):
    response = client.get(reverse("curator-vhx-set", args=[case_set.pk]))
    assert response.status_code == 302 and "login" in response.url
