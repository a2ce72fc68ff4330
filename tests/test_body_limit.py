"""The request body limit holds for the API and file uploads too (issue 13, item 6): over
BLINDSPOT_MAX_REQUEST_BYTES a request answers 413 with a message and writes nothing; archive
uploads named in BLINDSPOT_LARGE_UPLOADS may be larger, up to their own limits."""

from __future__ import annotations

import json
import random

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from rest_framework.test import APIClient

from annotator.models import Task
from annotator.platform.models import Job
from curation.models import Corpus
from tests.curation.fixtures_assets import png, zip_bytes
from tests.factories import vqa_payload

MB = 1024**2


@pytest.fixture
def api(curator) -> APIClient:
    client = APIClient()
    client.force_login(curator)
    return client


def jsonl_of_size(size: int) -> bytes:
    """Valid task lines, padded with spaces to exactly ``size`` bytes."""
    line = json.dumps(vqa_payload(1)).encode() + b"\n"
    body = line * (size // len(line))
    return body + b" " * (size - len(body))


def test_a_51_mb_jsonl_body_to_the_api_is_413_and_creates_no_task(api, queue):
    # The limit is checked on Content-Length before anything reads the body.
    body = jsonl_of_size(51 * MB)

    response = api.post(f"/api/queues/{queue.pk}/tasks/", body, content_type="application/x-ndjson")

    assert response.status_code == 413
    assert response.json() == {
        "message": "The request is larger than 50 MB, the limit for this address; nothing was "
        "stored. Split the upload into smaller files."
    }
    assert Task.objects.count() == 0


def test_a_51_mb_multipart_upload_to_the_api_is_413(api, queue):
    upload = SimpleUploadedFile("tasks.jsonl", jsonl_of_size(51 * MB))

    response = api.post(f"/api/queues/{queue.pk}/tasks/", {"file": upload}, format="multipart")

    assert response.status_code == 413
    assert Task.objects.count() == 0


def test_a_body_just_under_the_limit_passes(api, queue, settings):
    settings.BLINDSPOT_MAX_REQUEST_BYTES = 4000
    body = jsonl_of_size(3999)
    lines = body.count(b"\n")

    response = api.post(f"/api/queues/{queue.pk}/tasks/", body, content_type="application/x-ndjson")

    assert response.status_code == 201, response.content
    assert Task.objects.count() == lines > 0


def test_a_body_just_over_the_limit_is_413(api, queue, settings):
    settings.BLINDSPOT_MAX_REQUEST_BYTES = 4000

    response = api.post(
        f"/api/queues/{queue.pk}/tasks/", jsonl_of_size(4001), content_type="application/x-ndjson"
    )

    assert response.status_code == 413
    assert response.json()["message"].startswith(
        "The request is larger than 3.9 KB, the limit for this address"
    )
    assert Task.objects.count() == 0


def test_an_html_upload_over_the_limit_is_a_413_page(client, curator, queue, settings):
    settings.BLINDSPOT_MAX_REQUEST_BYTES = 4000
    client.force_login(curator)

    response = client.post(
        reverse("curator-queue-upload", args=[queue.pk]),
        {"file": SimpleUploadedFile("tasks.jsonl", jsonl_of_size(5000))},
    )

    assert response.status_code == 413
    assert response.templates[0].name == "edge_error.html"
    html = response.content.decode()
    assert "Upload too large" in html
    assert "The request is larger than 3.9 KB, the limit for this address" in html
    assert (Task.objects.count(), Job.objects.count()) == (0, 0)


@pytest.fixture
def small_corpus_limits(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.BLINDSPOT_MAX_REQUEST_BYTES = 2000
    settings.BLINDSPOT_MAX_CORPUS_UPLOAD_BYTES = 6000
    settings.BLINDSPOT_MAX_MANIFEST_BYTES = 1000  # the page takes 2000 + 6000 + 1000 bytes


def corpus_post(client, project, archive: bytes):
    return client.post(
        reverse("curator-project-corpora", args=[project.pk]),
        {
            "name": "Big",
            "format": "auto",
            "language": "en",
            "archive": SimpleUploadedFile("images.zip", archive),
        },
    )


def padded_archive(size: int) -> bytes:
    """A zip of one image and its manifest, padded by an unread member to about ``size``."""
    files = {"a.png": png(), "manifest.jsonl": b'{"file": "a.png", "caption": "red"}'}
    base = len(zip_bytes(files))
    padding = random.Random(0).randbytes(size - base - 150)  # noise: it does not compress
    return zip_bytes({**files, "padding.bin": padding})


def test_the_corpus_upload_may_be_larger_than_the_general_limit(
    client, curator, project, small_corpus_limits
):
    client.force_login(curator)
    archive = padded_archive(5000)
    assert 2000 < len(archive) < 6000

    response = corpus_post(client, project, archive)

    assert response.status_code == 302, response.content.decode()[:2000]
    assert Job.objects.filter(project=project).count() == 1


def test_the_corpus_upload_is_stopped_at_its_own_limit(
    client, curator, project, small_corpus_limits
):
    client.force_login(curator)

    response = corpus_post(client, project, padded_archive(9500))

    assert response.status_code == 413
    assert "The request is larger than 8.8 KB, the limit for this address" in (
        response.content.decode()
    )
    assert (Corpus.objects.count(), Job.objects.count()) == (0, 0)


def test_other_pages_keep_the_general_limit(client, curator, project, small_corpus_limits):
    client.force_login(curator)

    response = client.post(
        reverse("curator-vhx-sets"), {"padding": "x" * 2500}, HTTP_ACCEPT="text/html"
    )

    assert response.status_code == 413
