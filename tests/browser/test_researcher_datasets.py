"""Researchers reach their data, in Debian's chromium (issue 27, item 5): from the home page to a
published version's dataset card, then a file downloaded and checked against the SHA-256 the
page shows. The datasets pages are screenshot as a researcher and as a curator.

Screenshots land in ``$BLINDSPOT_SCREENSHOTS`` (default: pytest's tmp dir) to be looked at.
"""

import hashlib
import zipfile

import pytest
from django.urls import reverse
from django.utils import timezone

from annotator.platform import roles
from annotator.platform.models import Job
from curation.export_files import export_store
from curation.recipes.vlind import benches as vlind_benches
from evaluation.models import Benchmark, BenchmarkVersion
from tests.browser.test_curator_desk import log_in, shots
from tests.factories import ProjectFactory, UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def _zip(fh) -> None:
    with zipfile.ZipFile(fh, "w") as archive:
        archive.writestr("data.json", '[{"concept": "color", "context_id": 0}]')


def _published_bench(project, curator):
    """A VLind bench with a published version and a finished export of that version."""
    bench = vlind_benches.bench_create(project=project, name="Colour shelf", created_by=curator)
    benchmark = Benchmark.objects.create(
        family="vlind", name="VLind-Bench · colours", project=project, created_by=curator
    )
    version = BenchmarkVersion.objects.create(
        benchmark=benchmark,
        label="v1",
        frozen=True,
        published_at=timezone.now(),
        item_count=12,
        kept_count=11,
        source=f"vlind bench {bench.pk}: Colour shelf",
        created_by=curator,
    )
    type(bench).objects.filter(pk=bench.pk).update(benchmark=benchmark)
    job = Job.objects.create(
        kind=vlind_benches.EXPORT_JOB,
        params={"bench_id": bench.pk, "version_id": version.pk, "appendix_b": False},
        project=project,
        created_by=curator,
    )
    result = export_store(
        job_id=job.pk,
        recipe="vlind",
        object_id=bench.pk,
        filename="vlind-bench-v1.zip",
        write=_zip,
        content_type="application/zip",
    )
    Job.objects.filter(pk=job.pk).update(
        status=Job.Status.SUCCEEDED, result=result, finished_at=timezone.now()
    )
    return bench, version, result


def test_researcher_goes_from_home_to_a_version_and_downloads_its_file(
    live_server, transactional_db, chromium, tmp_path, settings
):
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.BLINDSPOT_PROTECTED_MEDIA_REDIRECT = ""
    curator = UserFactory(username="shelf-curator", role=roles.CURATOR)
    researcher = UserFactory(username="shelf-researcher", role=roles.RESEARCHER)
    project = ProjectFactory(name="Blind spots lab", members=[curator, researcher])
    bench, version, result = _published_bench(project, curator)
    vlind_benches.bench_create(project=project, name="Next bench", created_by=curator)
    empty = ProjectFactory(name="A project with nothing yet", members=[curator, researcher])
    assert empty.pk
    folder = shots(tmp_path)

    # the researcher's home page lists the newest version
    page = chromium.new_context(viewport={"width": 1280, "height": 800}, accept_downloads=True)
    tab = page.new_page()
    errors: list[str] = []
    tab.on("pageerror", lambda exc: errors.append(str(exc)))
    tab.set_default_timeout(15000)
    log_in(tab, live_server, "shelf-researcher")
    home = tab.locator("[data-testid=home-datasets]")
    assert "Colour shelf" in home.inner_text()
    tab.screenshot(path=str(folder / "datasets-home-researcher.png"), full_page=True)

    # home -> the datasets index -> the version's dataset card
    with tab.expect_navigation():
        home.get_by_role("link", name="All datasets and files").click()
    assert tab.url.endswith(reverse("datasets"))
    assert "No dataset in this project yet." in tab.content()
    tab.screenshot(path=str(folder / "datasets-index-researcher.png"), full_page=True)
    with tab.expect_navigation():
        tab.get_by_role("link", name="v1").click()
    card = tab.locator(f"#version-{version.pk}")
    assert card.is_visible()
    text = card.inner_text()
    assert result["sha256"] in text and "klee972/VLind-Bench" in text and "11" in text
    tab.screenshot(path=str(folder / "datasets-object-researcher.png"), full_page=True)

    # the download is the exact file the card's hash names
    with tab.expect_download() as caught:
        card.locator("[data-testid=download]").first.click()
    download = caught.value
    path = download.path()
    assert download.suggested_filename == "vlind-bench-v1.zip"
    with open(path, "rb") as fh:
        assert hashlib.sha256(fh.read()).hexdigest() == result["sha256"]
    assert errors == []
    page.close()

    # the curator sees the same pages, with the way back to the recipe page
    context = chromium.new_context(viewport={"width": 1280, "height": 800})
    tab = context.new_page()
    tab.set_default_timeout(15000)
    log_in(tab, live_server, "shelf-curator")
    tab.goto(live_server.url + reverse("datasets"))
    tab.screenshot(path=str(folder / "datasets-index-curator.png"), full_page=True)
    tab.goto(live_server.url + reverse("datasets-vlind", args=[bench.pk]))
    assert tab.get_by_role("link", name="Open the recipe page").count() == 1
    tab.screenshot(path=str(folder / "datasets-object-curator.png"), full_page=True)
    context.close()
