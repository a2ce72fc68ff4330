"""Export retention (curation/export_files.py): after an export job stores its file, only the
newest BLINDSPOT_EXPORTS_KEEP exports of the same recipe + object + variant keep their file; the
older ones answer 404 saying which job replaced them, and a storage error never fails the new
export. Run through the VHExpansion pages, the way a curator starts exports."""

from __future__ import annotations

import logging

import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.urls import reverse

from annotator.platform.models import Job
from curation.export_files import exports_prune
from curation.recipes.vhexpansion import export
from tests.curation.recipes.vhexpansion import helpers
from tests.curation.recipes.vhexpansion.helpers import draft_negations, review, reviewers

pytestmark = [pytest.mark.django_db]
media = helpers.media
case_set = helpers.case_set


@pytest.fixture
def keep_two(settings):
    settings.BLINDSPOT_EXPORTS_KEEP = 2


@pytest.fixture
def other_set(project, curator, media):
    return helpers.import_cases(project, curator, "MMVP sample, again")


def _accept_all(case_set):
    draft_negations(case_set, reviewers=1)
    review(case_set.review_queue, reviewers(1), {"c1": "accept", "c2": "accept", "c3": "accept"})


def _export(client, capture, case_set, fmt) -> Job:
    with capture(execute=True):
        response = client.post(reverse("curator-vhx-export", args=[case_set.pk, fmt]))
    assert response.status_code == 302
    job = Job.objects.filter(kind=export.EXPORT_JOB).order_by("-id").first()
    assert job.status == Job.Status.SUCCEEDED, job.error
    return job


def _file_url(case_set, job) -> str:
    return reverse("curator-vhx-export-file", args=[case_set.pk, job.pk])


def test_only_the_newest_exports_of_a_variant_keep_their_file(
    curator_client,
    case_set,
    other_set,
    eager,
    keep_two,
    django_capture_on_commit_callbacks,
):
    # given two sets with accepted negations
    _accept_all(case_set)
    _accept_all(other_set)
    run = django_capture_on_commit_callbacks
    # when the LLaVA export runs three times, JSONL once, and the other set's LLaVA once
    first, second = (_export(curator_client, run, case_set, "llava") for _ in range(2))
    jsonl_job = _export(curator_client, run, case_set, "jsonl")
    other = _export(curator_client, run, other_set, "llava")
    first_path = first.result["path"]
    assert default_storage.exists(first_path)
    third = _export(curator_client, run, case_set, "llava")
    # then only the oldest LLaVA export of the first set lost its file, marked as replaced
    for job in (first, second, jsonl_job, other, third):
        job.refresh_from_db()
    assert not default_storage.exists(first_path)
    assert first.result["replaced_by"] == third.pk
    assert first.result["deleted_at"]
    assert first.status == Job.Status.SUCCEEDED
    assert (first.result["path"], first.result["filename"]) == (
        first_path,
        f"vhexpansion-{case_set.pk}-llava.zip",
    )
    for job in (second, jsonl_job, other, third):
        assert default_storage.exists(job.result["path"])
        assert "deleted_at" not in job.result and "replaced_by" not in job.result
    # its download page says why (404), the others still download
    response = curator_client.get(_file_url(case_set, first))
    assert response.status_code == 404
    assert (
        f"This export was replaced by a newer one (job {third.pk}) and its file removed; "
        "download the newer one."
    ) in response.content.decode()
    for owner, job in ((case_set, second), (case_set, jsonl_job), (other_set, other)):
        response = curator_client.get(_file_url(owner, job))
        assert response.status_code == 200
        assert len(b"".join(response.streaming_content)) == job.result["size"]
    # its card has no download link and says which job replaced it
    card = curator_client.get(_file_url(case_set, first) + "?part=card", HTTP_HX_REQUEST="true")
    html = card.content.decode()
    assert 'data-testid="export-replaced"' in html
    assert f"Replaced by a newer export (job {third.pk}); its file was removed." in html
    assert "download>" not in html and f'href="{_file_url(case_set, first)}"' not in html
    card = curator_client.get(_file_url(case_set, second) + "?part=card", HTTP_HX_REQUEST="true")
    assert f'href="{_file_url(case_set, second)}" download>' in card.content.decode()
    # and pruning again (a re-run of the job) changes nothing
    assert exports_prune(job_id=third.pk, recipe="vhexpansion", object_id=case_set.pk) == []
    marked = first.result
    first.refresh_from_db()
    assert first.result == marked
    assert sum(bool(j.result.get("deleted_at")) for j in Job.objects.all()) == 1


def test_a_storage_error_on_delete_keeps_the_old_file_and_the_new_export(
    curator_client, case_set, eager, keep_two, django_capture_on_commit_callbacks, caplog
):
    # given two LLaVA exports, the older one's file replaced by a directory storage cannot delete
    _accept_all(case_set)
    run = django_capture_on_commit_callbacks
    first, second = (_export(curator_client, run, case_set, "llava") for _ in range(2))
    path = default_storage.path(first.result["path"])
    default_storage.delete(first.result["path"])
    default_storage.save(first.result["path"] + "/keep.txt", ContentFile(b"not deletable"))
    # when a third export runs (its log read where it is written)
    logger = logging.getLogger("curation.export_files")
    logger.addHandler(caplog.handler)
    try:
        third = _export(curator_client, run, case_set, "llava")
    finally:
        logger.removeHandler(caplog.handler)
    # then it succeeded with its file, and the older export is kept unmarked
    third.refresh_from_db()
    first.refresh_from_db()
    assert third.status == Job.Status.SUCCEEDED
    assert default_storage.exists(third.result["path"])
    assert default_storage.exists(first.result["path"])
    assert "deleted_at" not in first.result
    assert f"could not delete export file {first.result['path']} of job {first.pk}" in caplog.text
    assert default_storage.path(first.result["path"]) == path
    response = curator_client.get(_file_url(case_set, third))
    assert response.status_code == 200
    assert len(b"".join(response.streaming_content)) == third.result["size"]
