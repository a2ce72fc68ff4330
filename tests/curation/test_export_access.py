"""Exports behind permissions (issue 13, item 8): an export's storage path under /media/ answers
nobody, not even its curator; its checked download view serves the exact bytes to the
curators and researchers of the recipe's project and a 404 to everyone else; with nginx's
X-Accel-Redirect (or X-Sendfile) the view hands the file to the web server instead of streaming.
Run on a VLind-Bench export stored the way its job stores it, and a NaturalBench version."""

from __future__ import annotations

import hashlib
import zipfile

import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.urls import reverse
from django.utils import timezone

from annotator.platform import roles
from annotator.platform.models import Job
from curation.export_files import export_store
from curation.recipes.naturalbench.models import NaturalBenchVersion
from curation.recipes.vlind import benches as vlind_benches
from tests.curation.recipes.naturalbench.helpers import make_corpus, make_pipeline
from tests.factories import ProjectFactory, UserFactory

pytestmark = pytest.mark.django_db

FILENAME = "vlind-bench-1.zip"


@pytest.fixture
def bench(project, curator, media):
    return vlind_benches.bench_create(project=project, name="VLind test", created_by=curator)


def _zip(fh) -> None:
    with zipfile.ZipFile(fh, "w") as archive:
        archive.writestr("data.json", '[{"concept": "color"}]')


@pytest.fixture
def export_job(bench, curator):
    """A finished export of the bench, stored at exports/vlind/<bench>/<job>/vlind-bench-1.zip."""
    job = Job.objects.create(
        kind=vlind_benches.EXPORT_JOB,
        params={"bench_id": bench.pk, "version_id": None, "appendix_b": False},
        project=bench.project,
        created_by=curator,
    )
    result = export_store(
        job_id=job.pk,
        recipe="vlind",
        object_id=bench.pk,
        filename=FILENAME,
        write=_zip,
        content_type="application/zip",
    )
    Job.objects.filter(pk=job.pk).update(
        status=Job.Status.SUCCEEDED, result=result, finished_at=timezone.now()
    )
    job.refresh_from_db()
    return job


@pytest.fixture
def elsewhere(db):
    """A curator and a researcher of another project."""
    other_curator = UserFactory(username="elsewhere-curator", role=roles.CURATOR)
    other_researcher = UserFactory(username="elsewhere-researcher", role=roles.RESEARCHER)
    ProjectFactory(members=[other_curator, other_researcher])
    return {"curator": other_curator, "researcher": other_researcher}


@pytest.fixture
def admin(db):
    return UserFactory(username="root", is_superuser=True, is_staff=True)


def _file_url(bench, job) -> str:
    return reverse("curator-vlind-export-file", args=[bench.pk, job.pk])


def _body(response) -> bytes:
    return b"".join(response.streaming_content) if response.streaming else response.content


def test_the_export_job_stores_its_file_at_the_guessable_path_of_the_issue(bench, export_job):
    path = f"exports/vlind/{bench.pk}/{export_job.pk}/{FILENAME}"
    assert export_job.result["path"] == path
    assert default_storage.exists(path)


def test_an_exports_storage_path_is_not_reachable_through_media(
    client, bench, export_job, curator, researcher, admin, elsewhere
):
    # given the export's path under MEDIA_URL
    url = "/media/" + export_job.result["path"]
    # when an anonymous visitor asks: the login page
    response = client.get(url)
    assert response.status_code == 302
    assert response["Location"] == f"/login/?next={url}"
    # when anyone signed in asks, the owning curator and an admin included: 404, no bytes
    for user in (elsewhere["curator"], elsewhere["researcher"], curator, researcher, admin):
        client.force_login(user)
        response = client.get(url)
        assert response.status_code == 404, user.username
        assert b"data.json" not in response.content


def test_the_checked_view_serves_the_exact_bytes_to_the_projects_curator_and_researcher(
    client, bench, export_job, curator, researcher, admin
):
    with default_storage.open(export_job.result["path"], "rb") as stored:
        expected = stored.read()
    for user in (curator, researcher, admin):
        client.force_login(user)
        response = client.get(_file_url(bench, export_job))
        assert response.status_code == 200, user.username
        body = _body(response)
        assert hashlib.sha256(body).hexdigest() == export_job.result["sha256"]
        assert body == expected
        assert response["Content-Type"] == "application/zip"
        assert response["Content-Disposition"] == f'attachment; filename="{FILENAME}"'
        assert response["Content-Length"] == str(len(expected))
        assert "private" in response["Cache-Control"]


def test_the_old_export_address_serves_the_newest_file_to_the_researcher_too(
    client, bench, export_job, researcher
):
    client.force_login(researcher)
    response = client.get(reverse("curator-vlind-export", args=[bench.pk]))
    assert response.status_code == 200
    assert hashlib.sha256(_body(response)).hexdigest() == export_job.result["sha256"]


def test_a_researcher_cannot_start_an_export(client, bench, export_job, researcher):
    client.force_login(researcher)
    before = Job.objects.count()
    response = client.post(reverse("curator-vlind-export", args=[bench.pk]))
    assert response.status_code == 404
    assert Job.objects.count() == before


@pytest.mark.parametrize("who", ["curator", "researcher"])
def test_the_checked_view_is_404_for_another_projects_people(
    client, bench, export_job, elsewhere, who
):
    client.force_login(elsewhere[who])
    for url in (_file_url(bench, export_job), reverse("curator-vlind-export", args=[bench.pk])):
        response = client.get(url)
        assert response.status_code == 404, url
        assert b"data.json" not in response.content


def test_the_checked_view_is_404_for_a_crowdworker_of_the_project_and_login_for_nobody(
    client, bench, export_job, crowdworker
):
    url = _file_url(bench, export_job)
    anonymous = client.get(url)
    assert anonymous.status_code == 302 and anonymous["Location"] == f"/login/?next={url}"
    client.force_login(crowdworker)
    assert client.get(url).status_code == 404


def test_a_removed_researcher_gets_404(client, bench, export_job, researcher):
    bench.project.members.remove(researcher)
    client.force_login(researcher)
    assert client.get(_file_url(bench, export_job)).status_code == 404


def test_x_accel_redirect_hands_the_file_to_nginx_with_an_empty_body(
    client, settings, bench, export_job, researcher
):
    # given nginx's internal location
    settings.BLINDSPOT_PROTECTED_MEDIA_REDIRECT = "x-accel"
    client.force_login(researcher)
    # when the researcher downloads
    response = client.get(_file_url(bench, export_job))
    # then the app sends headers only: nginx reads the file from its internal location
    assert response.status_code == 200
    assert response.content == b""
    assert response["X-Accel-Redirect"] == "/_protected/" + export_job.result["path"]
    assert response["Content-Type"] == "application/zip"
    assert response["Content-Disposition"] == f'attachment; filename="{FILENAME}"'
    assert "X-Sendfile" not in response


def test_x_sendfile_names_the_absolute_path(client, settings, media, bench, export_job, curator):
    settings.BLINDSPOT_PROTECTED_MEDIA_REDIRECT = "x-sendfile"
    client.force_login(curator)
    response = client.get(_file_url(bench, export_job))
    assert response.status_code == 200 and response.content == b""
    assert response["X-Sendfile"] == str(media / export_job.result["path"])
    assert "X-Accel-Redirect" not in response


def test_x_accel_redirect_is_never_sent_for_someone_without_access(
    client, settings, bench, export_job, elsewhere
):
    settings.BLINDSPOT_PROTECTED_MEDIA_REDIRECT = "x-accel"
    client.force_login(elsewhere["curator"])
    response = client.get(_file_url(bench, export_job))
    assert response.status_code == 404
    assert "X-Accel-Redirect" not in response


def test_a_file_gone_from_storage_is_a_404_saying_so(client, bench, export_job, curator):
    default_storage.delete(export_job.result["path"])
    client.force_login(curator)
    response = client.get(_file_url(bench, export_job))
    assert response.status_code == 404
    assert "The file of this export is no longer stored" in response.content.decode()


@pytest.fixture
def nb_version(project, media):
    pipeline = make_pipeline(project, make_corpus(project, n=2))
    data = b"PK\x05\x06" + bytes(18)  # an empty zip
    name = default_storage.save(f"exports/naturalbench/{pipeline.pk}/v1.zip", ContentFile(data))
    return NaturalBenchVersion.objects.create(
        pipeline=pipeline,
        label="v1",
        sha256="0" * 64,
        sample_count=0,
        archive=name,
        archive_sha256=hashlib.sha256(data).hexdigest(),
    )


def test_a_naturalbench_version_downloads_for_the_project_and_404_elsewhere(
    client, nb_version, researcher, elsewhere
):
    url = reverse("curator-nb-download", args=[nb_version.pipeline_id, nb_version.pk, "zip"])
    client.force_login(researcher)
    response = client.get(url)
    assert response.status_code == 200
    assert hashlib.sha256(_body(response)).hexdigest() == nb_version.archive_sha256
    assert response["Content-Disposition"] == (
        f'attachment; filename="naturalbench-{nb_version.pipeline_id}-v1.zip"'
    )
    media_url = "/media/" + nb_version.archive.name
    assert client.get(media_url).status_code == 404
    client.force_login(elsewhere["researcher"])
    assert client.get(url).status_code == 404
