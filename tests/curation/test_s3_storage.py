"""Media on a real S3-compatible server (issue 25): moto's S3 server runs as its own process on a
free 127.0.0.1 port (tests/s3_server.py), and Blindspot's storage switch — the STORAGES that
blindspot/settings.py builds from AWS_STORAGE_BUCKET_NAME, AWS_S3_ENDPOINT_URL … in a fresh
interpreter — points at it. A corpus upload, its images and thumbnails, an export and the images
an embedding job reads all go through HTTP to that server; signed URLs are followed over HTTP.
Chunked mining's work files (the input prepared once, each chunk's answer) go to the bucket and
are read back from it, and are deleted from it when the job ends. With
BLINDSPOT_EMBEDDINGS_SHARED, embedding chunk files are uploaded to the bucket and downloaded by a
machine that lacks them (curation.embedding_storage)."""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import urllib.error
import urllib.request
import uuid
import zipfile
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import urlsplit

import numpy as np
import pytest
from django.core.files.storage import default_storage
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from django.utils import timezone
from PIL import Image as PILImage

from annotator.platform.chunks import job_work_delete, job_work_dir
from annotator.platform.files import media_url
from annotator.platform.jobs import job_enqueue
from annotator.platform.models import Job
from curation import corpora as ci
from curation import mining, mining_chunks
from curation.assets import image_ingest
from curation.assets.thumbnails import thumb_url
from curation.embeddings import (
    EmbeddingsMissing,
    EmbedPart,
    embed_corpus,
    embed_finish,
    embed_todo,
    embeddings_get,
    embeddings_put,
)
from curation.export_files import export_store
from curation.models import Corpus, Image, Sample
from curation.recipes.vlind import benches as vlind_benches
from curation.scorers import encode_images, scorer_load, scorer_tiny
from curation.scorers.cache import cache_folder, embeddings_clear
from tests.curation import scale_jobs
from tests.curation.fixtures_assets import png, zip_bytes
from tests.s3_server import S3Server
from tests.test_settings import settings_in_fresh_process

pytestmark = pytest.mark.django_db

RED, GREEN = png(colour=(255, 0, 0)), png(colour=(0, 255, 0))


@pytest.fixture(scope="session")
def s3_server():
    server = S3Server()
    yield server
    server.close()


@pytest.fixture(scope="session")
def s3_switch(s3_server):
    """STORAGES["default"] exactly as blindspot/settings.py builds it for this server."""
    built = settings_in_fresh_process(**s3_server.environment("blindspot-media"))["default"]
    assert built["BACKEND"] == "storages.backends.s3.S3Storage"
    assert built["OPTIONS"]["endpoint_url"] == s3_server.endpoint
    return built


@pytest.fixture
def s3(settings, tmp_path, s3_server, s3_switch):
    """A fresh bucket on the server, Django's default storage on it; the bucket's keys and
    bytes read with boto3 straight from the server."""
    bucket = f"blindspot-{uuid.uuid4().hex[:12]}"
    client = s3_server.client()
    client.create_bucket(Bucket=bucket)
    storage = json.loads(json.dumps(s3_switch))
    storage["OPTIONS"]["bucket_name"] = bucket
    settings.STORAGES = {**settings.STORAGES, "default": storage}
    settings.MEDIA_ROOT = str(tmp_path / "no-local-media")
    settings.BLINDSPOT_EMBEDDINGS_DIR = str(tmp_path / "embeddings")
    settings.BLINDSPOT_PROTECTED_MEDIA_REDIRECT = ""
    settings.BLINDSPOT_SIGNED_URL_EXPIRE_S = 120
    assert default_storage.__class__.__name__ == "S3Storage"

    def keys(prefix: str = "") -> list[str]:
        listed = client.list_objects_v2(Bucket=bucket, Prefix=prefix).get("Contents", [])
        return sorted(o["Key"] for o in listed)

    def read(key: str) -> bytes:
        return client.get_object(Bucket=bucket, Key=key)["Body"].read()

    yield SimpleNamespace(bucket=bucket, endpoint=s3_server.endpoint, keys=keys, read=read)
    assert not (tmp_path / "no-local-media").exists()  # nothing fell back to local disk


def fetch(url: str) -> tuple[int, dict, bytes]:
    """GET ``url`` over HTTP: status, headers (lower-case names) and body."""
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return (
                response.status,
                {k.lower(): v for k, v in response.headers.items()},
                (response.read()),
            )
    except urllib.error.HTTPError as exc:
        return exc.code, {k.lower(): v for k, v in exc.headers.items()}, exc.read()


def signed_target(response, s3) -> str:
    """The signed bucket URL a 302 of the app points to."""
    assert response.status_code == 302
    url = response["Location"]
    parts = urlsplit(url)
    assert f"{parts.scheme}://{parts.netloc}" == s3.endpoint
    assert parts.path.startswith(f"/{s3.bucket}/")
    assert "X-Amz-Signature=" in parts.query
    return url


def test_an_uploaded_corpus_is_imported_and_thumbnailed_through_s3(
    client, project, curator, s3, eager, django_capture_on_commit_callbacks
):
    archive = zip_bytes({"a.png": RED, "b.png": GREEN})
    manifest = b'{"file": "a.png", "caption": "red"}\n{"file": "b.png", "caption": "green"}\n'
    # Given a corpus upload (archive and manifest) stored by the import form's start function
    with django_capture_on_commit_callbacks(execute=False) as pending:
        job, n = ci.corpus_import_start(
            project=project,
            name="Squares",
            archive=SimpleUploadedFile("sq.zip", archive),
            manifest=SimpleUploadedFile("m.jsonl", manifest),
            created_by=curator,
        )
    # Then the uploads are objects in the bucket, byte for byte
    assert n == 2
    assert s3.read(job.params["archive"]) == archive
    assert s3.read(job.params["manifest"]) == manifest
    assert s3.keys("curation/uploads/") == sorted([job.params["archive"], job.params["manifest"]])

    # When the import job runs (it reads the archive back from the server), then the thumbnails'
    with django_capture_on_commit_callbacks(execute=True):
        for callback in pending:
            callback()

    job.refresh_from_db()
    assert (job.status, job.error) == ("succeeded", "")
    thumbs = Job.objects.get(kind="curation.make_thumbnails")
    assert (thumbs.status, thumbs.result["made"]) == ("succeeded", 2)
    # Then the uploads are gone from the bucket, and each image and thumbnail is in it
    assert s3.keys("curation/uploads/") == []
    corpus = Corpus.objects.get()
    images = {
        s.source_id: s.image for s in Sample.objects.filter(corpus=corpus).select_related("image")
    }
    assert sorted(images) == ["a.png", "b.png"]
    for source_id, data in (("a.png", RED), ("b.png", GREEN)):
        image = images[source_id]
        assert image.file.name.startswith("images/") and image.thumbnail.name
        assert s3.read(image.file.name) == data
        with default_storage.open(image.file.name, "rb") as fh:
            assert fh.read() == data
        thumb = PILImage.open(io.BytesIO(s3.read(image.thumbnail.name)))
        assert thumb.format == "WEBP" and max(thumb.size) <= 256
        red, green, _blue = thumb.convert("RGB").getpixel((2, 2))
        expected = (True, False) if source_id == "a.png" else (False, True)
        assert (red > 200, green > 200) == expected

        # and a signed-in person's /media/ address redirects to a signed URL that serves the bytes
        client.force_login(curator)
        status, headers, body = fetch(signed_target(client.get(media_url(image.file.name)), s3))
        assert (status, body) == (200, data)
        assert headers["content-disposition"].startswith("inline;")
        # the thumbnail's URL on pages is a signed bucket URL too
        status, _headers, body = fetch(thumb_url(image))
        assert (status, body) == (200, s3.read(image.thumbnail.name))


def _export(bench, curator) -> Job:
    """An export stored the way every export job stores its file (curation/export_files.py)."""
    job = Job.objects.create(
        kind=vlind_benches.EXPORT_JOB,
        params={"bench_id": bench.pk, "version_id": None, "appendix_b": False},
        project=bench.project,
        created_by=curator,
    )

    def write(fh) -> None:
        with zipfile.ZipFile(fh, "w") as archive:
            archive.writestr("data.json", '[{"concept": "color"}]')

    result = export_store(
        job_id=job.pk,
        recipe="vlind",
        object_id=bench.pk,
        filename="vlind-bench-1.zip",
        write=write,
        content_type="application/zip",
    )
    Job.objects.filter(pk=job.pk).update(
        status=Job.Status.SUCCEEDED, result=result, finished_at=timezone.now()
    )
    job.refresh_from_db()
    return job


def test_an_export_on_s3_is_downloaded_through_a_signed_url(
    client, settings, project, curator, researcher, s3
):
    bench = vlind_benches.bench_create(project=project, name="VLind on S3", created_by=curator)
    job = _export(bench, curator)
    path = f"exports/vlind/{bench.pk}/{job.pk}/vlind-bench-1.zip"
    # the export file is an object in the bucket, its recorded hash that of the bytes there
    assert job.result["path"] == path and s3.keys("exports/") == [path]
    stored = s3.read(path)
    assert hashlib.sha256(stored).hexdigest() == job.result["sha256"]
    with zipfile.ZipFile(io.BytesIO(stored)) as archive:
        assert archive.read("data.json") == b'[{"concept": "color"}]'

    # A researcher of the project follows the checked download view to the bucket
    client.force_login(researcher)
    url = reverse("curator-vlind-export-file", args=[bench.pk, job.pk])
    status, headers, body = fetch(signed_target(client.get(url), s3))
    assert status == 200
    assert hashlib.sha256(body).hexdigest() == job.result["sha256"]
    assert headers["content-disposition"] == 'attachment; filename="vlind-bench-1.zip"'
    assert headers["content-type"] == "application/zip"

    # signed for the configured time (moto does not enforce expiry; AWS and MinIO do)
    settings.BLINDSPOT_SIGNED_URL_EXPIRE_S = 60
    assert "X-Amz-Expires=60" in signed_target(client.get(url), s3)


def test_an_embedding_job_reads_its_images_from_s3(project, s3):
    scorer = scorer_tiny()
    corpus = Corpus.objects.create(project=project, name="Squares", slug="squares")
    datas = [png(colour=c) for c in ((255, 0, 0), (0, 0, 255), (250, 250, 0))]
    for k, data in enumerate(datas):
        image, _ = image_ingest(data=data, name=f"{k}.png")
        Sample.objects.create(corpus=corpus, image=image, source_id=f"s{k}", position=k)
    corpus.sample_count = 3
    corpus.save()
    assert len(s3.keys("images/")) == 3

    result = embed_corpus(scorer=scorer, corpus=corpus)

    assert result["images"]["embedded"] == 3
    ids = list(Sample.objects.order_by("position").values_list("image_id", flat=True))
    cached = embeddings_get(scorer=scorer, modality="image", ids=ids).astype(np.float32)
    # equal (to float16) to encoding the original bytes here
    fresh = encode_images(scorer_load(scorer), [PILImage.open(io.BytesIO(d)) for d in datas])
    assert np.abs(cached - fresh).max() < 2e-3
    assert Image.objects.count() == 3


def test_chunked_mining_reads_and_writes_its_work_files_on_s3(
    project, curator, s3, eager, settings, django_capture_on_commit_callbacks
):
    # Given 300 samples' embeddings in the cache, 64-row blocks, 3 chunk jobs
    settings.BLINDSPOT_MINING_BLOCK = 64
    settings.BLINDSPOT_MINING_CHUNKS = 3
    scorer = scorer_tiny()
    rng = np.random.default_rng(8)
    ids = np.arange(1, 301)
    embeddings_put(scorer=scorer, modality="image", ids=ids, vectors=rng.standard_normal((300, 8)))
    embeddings_put(scorer=scorer, modality="text", ids=ids, vectors=rng.standard_normal((300, 8)))
    mining_chunks._COPIES.clear()
    # When a job mines them in chunk jobs, the storage being the S3 server
    with django_capture_on_commit_callbacks(execute=True):
        job = job_enqueue(
            kind=scale_jobs.MINE_SYNTHETIC,
            params={"scorer_id": scorer.pk, "n": 300, "seed": 4},
            project=project,
            created_by=curator,
        )
    job.refresh_from_db()
    # Then the result is the one-process miner's
    arrays = [
        (
            embeddings_get(scorer=scorer, modality="image", ids=ids),
            embeddings_get(scorer=scorer, modality="text", ids=ids),
        )
    ]
    reference = mining.mine_mismatches(arrays, seed=4, groups=ids, normalise=True, block=64)
    assert job.status == "succeeded", job.error
    assert job.result["digest"] == reference.digest()
    # and the chunks read the prepared input from the bucket (downloaded once by this process)
    chunks = list(Job.objects.filter(parent=job).order_by("part"))
    prepared = chunks[0].params["prepared"]
    assert prepared.startswith(f"work/jobs/{job.pk}/mining-")
    assert list(mining_chunks._COPIES) == [prepared]
    copy = Path(mining_chunks._COPIES[prepared].name)
    assert sorted(p.name for p in copy.iterdir()) == [
        "diag.npy",
        "images-0.npy",
        "order.npy",
        "texts-0.npy",
    ]
    # each chunk wrote its answer there, and the job's work files are gone from the bucket
    assert all(c.result["file"].startswith(prepared.rsplit("/", 1)[0]) for c in chunks)
    assert s3.keys("work/") == []


def test_mining_work_files_round_trip_through_s3(project, curator, s3):
    # The prepared input is uploaded as .npy objects and read back equal
    rng = np.random.default_rng(2)
    images, texts = rng.standard_normal((50, 6)), rng.standard_normal((50, 6))
    job = Job.objects.create(kind="x", status="running", project=project, created_by=curator)
    folder = f"{job_work_dir(job.pk)}/prepared"
    mining_chunks._prepare(folder, [(images, texts)])
    assert s3.keys(folder) == [
        f"{folder}/{name}.npy" for name in ("diag", "images-0", "order", "texts-0")
    ]
    here = mining.mining_prepare([(images, texts)], normalise=True)
    there = mining_chunks._prepared(folder, 1)
    assert np.array_equal(here.order, there.order)
    assert np.array_equal(here.diag, there.diag)
    assert np.array_equal(here.rows[0][0], there.rows[0][0])
    assert np.array_equal(here.rows[0][1], there.rows[0][1])
    # and deleting the job's work folder empties it on the server
    assert job_work_delete(job_id=job.pk) == 4
    assert s3.keys("work/") == []


def test_embedding_chunks_written_by_one_machine_are_read_back_by_another_through_s3(
    project, s3, settings
):
    settings.BLINDSPOT_EMBEDDINGS_SHARED = True
    scorer = scorer_tiny()
    corpus = Corpus.objects.create(project=project, name="Squares", slug="squares")
    for k, colour in enumerate(((255, 0, 0), (0, 0, 255), (250, 250, 0))):
        image, _ = image_ingest(data=png(colour=colour), name=f"{k}.png")
        Sample.objects.create(corpus=corpus, image=image, source_id=f"s{k}", position=k)
    ids = list(Sample.objects.order_by("image_id").values_list("image_id", flat=True))
    # Given a chunk job's part embedded on "machine A": its chunk files are uploaded
    result = embed_corpus(scorer=scorer, corpus=corpus, part=EmbedPart("image", ids[0], ids[-1]))
    assert result["images"]["embedded"] == 3
    stored = s3.keys("embeddings/")
    folder = cache_folder(scorer, "image")
    prefix = f"embeddings/{folder.parent.name}/image/"
    assert len(stored) == 2 and all(k.startswith(prefix + "chunk-") for k in stored)
    assert sorted(k.endswith(".ids.npy") for k in stored) == [False, True]
    written = embeddings_get(scorer=scorer, modality="image", ids=ids).copy()
    # When "machine B", whose disk has none of it, ends the embedding job
    shutil.rmtree(folder.parent)
    with pytest.raises(EmbeddingsMissing):
        embeddings_get(scorer=scorer, modality="image", ids=ids)
    image_cache, _text_cache = embed_finish(scorer=scorer)
    # Then it downloaded the chunk and reads the same vectors, bit for bit
    assert image_cache.count == 3
    assert np.array_equal(embeddings_get(scorer=scorer, modality="image", ids=ids), written)
    assert embed_todo(scorer=scorer, corpus=corpus)[0] == []
    # and clearing the scorer's cache deletes the stored chunks too
    embeddings_clear(scorer=scorer)
    assert s3.keys("embeddings/") == []
