"""Fixtures of the VLind-Bench tests: a media root and a bench with the paper's concepts."""

from __future__ import annotations

import pytest

from curation.recipes.vlind import benches
from tests.curation.recipes.common import media  # noqa: F401  (a fixture)


@pytest.fixture
def bench(project, curator, media):  # noqa: F811
    return benches.bench_create(project=project, name="VLind test", created_by=curator)
