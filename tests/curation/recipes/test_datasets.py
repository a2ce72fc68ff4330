"""Researchers reach their data (issue 27, item 5): the datasets pages list every recipe object of
the person's projects with its published versions — a dataset card each (counts, layout, the
official code that reads it, hashes, when and from what) and a download button per file — and
the object's other exports; the home page links there. Read-only, for the projects' researchers
and curators; everyone else gets 404, like a missing object."""

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
from evaluation.models import Benchmark, BenchmarkVersion
from tests.curation.recipes.naturalbench.helpers import make_corpus, make_pipeline
from tests.factories import ProjectFactory, UserFactory

pytestmark = pytest.mark.django_db


def _zip(fh) -> None:
    with zipfile.ZipFile(fh, "w") as archive:
        archive.writestr("data.json", '[{"concept": "color"}]')


def _published(project, curator, family: str, label: str = "v1") -> BenchmarkVersion:
    benchmark = Benchmark.objects.create(
        family=family, name=f"{family} bench", project=project, created_by=curator
    )
    return BenchmarkVersion.objects.create(
        benchmark=benchmark,
        label=label,
        frozen=True,
        published_at=timezone.now(),
        item_count=5,
        kept_count=4,
        source="vlind bench: the test bench",
        created_by=curator,
    )


def _export(bench, curator, version_id) -> Job:
    job = Job.objects.create(
        kind=vlind_benches.EXPORT_JOB,
        params={"bench_id": bench.pk, "version_id": version_id, "appendix_b": False},
        project=bench.project,
        created_by=curator,
    )
    result = export_store(
        job_id=job.pk,
        recipe="vlind",
        object_id=bench.pk,
        filename=f"vlind-{version_id or 'current'}.zip",
        write=_zip,
        content_type="application/zip",
    )
    Job.objects.filter(pk=job.pk).update(
        status=Job.Status.SUCCEEDED, result=result, finished_at=timezone.now()
    )
    job.refresh_from_db()
    return job


@pytest.fixture
def world(project, curator, media):
    """A VLind bench with one published version, an export of that version and one of the
    current assembly; a draft version that must not show."""
    bench = vlind_benches.bench_create(project=project, name="VLind shelf", created_by=curator)
    version = _published(project, curator, "vlind")
    BenchmarkVersion.objects.create(benchmark=version.benchmark, label="draft", frozen=False)
    type(bench).objects.filter(pk=bench.pk).update(benchmark=version.benchmark)
    tied = _export(bench, curator, version.pk)
    current = _export(bench, curator, None)
    return {"bench": bench, "version": version, "tied": tied, "current": current}


def _body(response) -> bytes:
    return b"".join(response.streaming_content) if response.streaming else response.content


def test_a_researcher_sees_the_versions_and_files_of_their_projects(client, researcher, world):
    # given a researcher of the project
    client.force_login(researcher)
    # when they open the datasets page
    page = client.get(reverse("datasets")).content.decode()
    # then the bench, its published version (not the draft) and both files are there
    bench, version, tied = world["bench"], world["version"], world["tied"]
    object_url = reverse("datasets-vlind", args=[bench.pk])
    assert "VLind shelf" in page
    assert f'href="{object_url}#version-{version.pk}"' in page
    assert ">draft<" not in page
    tied_url = reverse("curator-vlind-export-file", args=[bench.pk, tied.pk])
    current_url = reverse("curator-vlind-export-file", args=[bench.pk, world["current"].pk])
    assert f'href="{tied_url}"' in page and f'href="{current_url}"' in page
    assert "Exports of the current data" in page


def test_the_object_page_is_a_dataset_card_with_layout_reader_hash_and_source(
    client, researcher, world
):
    client.force_login(researcher)
    bench, version, tied = world["bench"], world["version"], world["tied"]
    response = client.get(reverse("datasets-vlind", args=[bench.pk]))
    assert response.status_code == 200
    page = response.content.decode()
    card = page[page.index(f'id="version-{version.pk}"') : page.index("current-h")]
    # counts, when and from what
    assert "vlind bench: the test bench" in card
    assert version.published_at.strftime("%Y-%m-%d") in card
    assert ">5<" in card and ">4<" in card  # items, on the leaderboard
    # the version's own file with its layout, reader and full hash
    assert reverse("curator-vlind-export-file", args=[bench.pk, tied.pk]) in card
    assert tied.result["sha256"] in card
    assert "data.json" in card and "klee972/VLind-Bench" in card
    assert reverse("eval-leaderboard", args=[version.pk]) in card
    # a researcher gets no curator's link
    assert f'href="{reverse("curator-vlind-bench", args=[bench.pk])}"' not in page


def test_the_researcher_downloads_the_exact_bytes_from_the_link(client, researcher, world):
    client.force_login(researcher)
    tied = world["tied"]
    page = client.get(reverse("datasets-vlind", args=[world["bench"].pk])).content.decode()
    url = reverse("curator-vlind-export-file", args=[world["bench"].pk, tied.pk])
    assert f'href="{url}" download' in page
    body = _body(client.get(url))
    assert hashlib.sha256(body).hexdigest() == tied.result["sha256"]


def test_a_replaced_export_is_not_offered(client, researcher, world):
    # given the current export's file was removed by retention
    current = world["current"]
    Job.objects.filter(pk=current.pk).update(
        result={**current.result, "deleted_at": timezone.now().isoformat(), "replaced_by": 1}
    )
    client.force_login(researcher)
    page = client.get(reverse("datasets")).content.decode()
    assert reverse("curator-vlind-export-file", args=[world["bench"].pk, current.pk]) not in page


@pytest.fixture
def elsewhere(db):
    other_curator = UserFactory(username="elsewhere-curator", role=roles.CURATOR)
    other_researcher = UserFactory(username="elsewhere-researcher", role=roles.RESEARCHER)
    ProjectFactory(members=[other_curator, other_researcher])
    return {"curator": other_curator, "researcher": other_researcher}


@pytest.mark.parametrize("who", ["curator", "researcher"])
def test_another_projects_people_see_nothing_and_get_404(client, world, elsewhere, who):
    client.force_login(elsewhere[who])
    index = client.get(reverse("datasets"))
    assert index.status_code == 200
    assert "VLind shelf" not in index.content.decode()
    assert "No dataset in this project yet" in index.content.decode()
    response = client.get(reverse("datasets-vlind", args=[world["bench"].pk]))
    assert response.status_code == 404
    assert "VLind shelf" not in response.content.decode()


def test_a_crowdworker_gets_404_and_anonymous_the_login_page(client, crowdworker, world):
    url = reverse("datasets-vlind", args=[world["bench"].pk])
    for address in (reverse("datasets"), url):
        anonymous = client.get(address)
        assert anonymous.status_code == 302
        assert anonymous["Location"] == f"/login/?next={address}"
    client.force_login(crowdworker)
    assert client.get(reverse("datasets")).status_code == 404
    assert client.get(url).status_code == 404


def test_a_missing_object_is_404(client, researcher, world):
    client.force_login(researcher)
    assert client.get(reverse("datasets-vlind", args=[world["bench"].pk + 999])).status_code == 404


def test_the_home_page_shows_a_researcher_their_newest_versions(client, researcher, world):
    client.force_login(researcher)
    page = client.get(reverse("home")).content.decode()
    assert 'data-testid="home-datasets"' in page
    version = world["version"]
    assert f"{reverse('datasets-vlind', args=[world['bench'].pk])}#version-{version.pk}" in page
    assert f'href="{reverse("datasets")}"' in page


def test_the_home_card_says_what_to_do_when_nothing_is_published(client, researcher, project):
    client.force_login(researcher)
    page = client.get(reverse("home")).content.decode()
    assert "No dataset in your projects yet" in page
    assert "ask a curator of your project" in page


def test_a_crowdworker_gets_no_datasets_card(client, crowdworker, world):
    client.force_login(crowdworker)
    page = client.get(reverse("home")).content.decode()
    assert 'data-testid="home-datasets"' not in page


def test_a_curator_sees_an_empty_object_with_what_to_do_next(client, curator, project, media):
    bench = vlind_benches.bench_create(project=project, name="Unpublished", created_by=curator)
    client.force_login(curator)
    page = client.get(reverse("datasets-vlind", args=[bench.pk])).content.decode()
    assert "Nothing published from this yet." in page
    assert reverse("curator-vlind-bench", args=[bench.pk]) in page


@pytest.fixture
def nb_version(project, curator, media):
    """A NaturalBench version with its archive, made from a published evaluation version."""
    pipeline = make_pipeline(project, make_corpus(project, n=2))
    published = _published(project, curator, "naturalbench")
    type(pipeline).objects.filter(pk=pipeline.pk).update(benchmark=published.benchmark)
    data = b"PK\x05\x06" + bytes(18)  # an empty zip
    name = default_storage.save(f"exports/naturalbench/{pipeline.pk}/v1.zip", ContentFile(data))
    return NaturalBenchVersion.objects.create(
        pipeline=pipeline,
        label="v1",
        sha256="ab" * 32,
        sample_count=0,
        archive=name,
        archive_sha256=hashlib.sha256(data).hexdigest(),
        benchmark_version=published,
    )


def test_naturalbench_versions_carry_their_archive_hash_and_card(client, researcher, nb_version):
    client.force_login(researcher)
    pipeline_id = nb_version.pipeline_id
    page = client.get(reverse("datasets-naturalbench", args=[pipeline_id])).content.decode()
    download = reverse("curator-nb-download", args=[pipeline_id, nb_version.pk, "zip"])
    card = reverse("curator-nb-version", args=[pipeline_id, nb_version.pk])
    assert f'href="{download}" download' in page
    assert nb_version.archive_sha256 in page
    assert "sha256 " + "ab" * 32 in page
    assert "Baiqi-Li/NaturalBench" in page
    assert f'href="{card}"' in page
    # the full card is readable by the researcher, its crumbs lead back to the datasets page
    full = client.get(card)
    assert full.status_code == 200
    assert reverse("datasets-naturalbench", args=[pipeline_id]) in full.content.decode()
    curators_page = reverse("curator-nb-pipeline", args=[pipeline_id])
    assert f'href="{curators_page}"' not in full.content.decode()


def test_the_naturalbench_card_is_404_outside_the_project(client, nb_version, elsewhere):
    client.force_login(elsewhere["researcher"])
    url = reverse("curator-nb-version", args=[nb_version.pipeline_id, nb_version.pk])
    assert client.get(url).status_code == 404


def test_the_index_reads_a_bounded_number_of_queries(
    client, researcher, world, django_assert_max_num_queries
):
    client.force_login(researcher)
    with django_assert_max_num_queries(40):
        assert client.get(reverse("datasets")).status_code == 200
