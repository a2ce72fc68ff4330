"""The admin names a benchmark's family by its label and offers only registered families."""

import pytest

from annotator.platform.models import Project
from evaluation.models import Benchmark

pytestmark = pytest.mark.django_db


def test_admin_lists_and_edits_benchmarks_by_family_label(admin_client):
    project = Project.objects.create(name="P", slug="p")
    benchmark = Benchmark.objects.create(family="naturalbench", name="B", project=project)
    listing = admin_client.get("/admin/evaluation/benchmark/")
    assert listing.status_code == 200
    assert "NaturalBench" in listing.content.decode()
    page = admin_client.get(f"/admin/evaluation/benchmark/{benchmark.pk}/change/")
    assert '<option value="vlind"' in page.content.decode()
    refused = admin_client.post(
        f"/admin/evaluation/benchmark/{benchmark.pk}/change/",
        {"family": "nope", "name": "B", "project": project.pk},
    )
    assert refused.status_code == 200  # the form again, with the error; nothing saved
    assert "nope is not one of the available choices" in refused.content.decode()
    benchmark.refresh_from_db()
    assert benchmark.family == "naturalbench"
