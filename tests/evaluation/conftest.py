"""Fixtures for the VisIT-Bench judgment tests: the real files (first instances) and a version
with three imported runs."""

from __future__ import annotations

import csv
import io

import pytest

from evaluation import services
from evaluation.families.visit import parse as visit_parse
from tests.evaluation.helpers import eval_version
from tests.evaluation.judgment_files import COLUMNS, first_instances, read


@pytest.fixture(scope="session")
def files():
    dataset = first_instances(read("single_image_full_dataset.csv"))
    keys = {(r["image"], r["instruction"]) for r in csv.DictReader(io.StringIO(dataset))}
    models = {column: first_instances(read(name), keys) for name, (_, column) in COLUMNS.items()}
    return dataset, models


@pytest.fixture
def visit_version(db, files):
    dataset, models = files
    version = eval_version(
        "visit", "VisIT-Bench", visit_parse.parse_items(dataset), label="single-image"
    )
    for name, (model, column) in COLUMNS.items():
        services.import_run(
            {
                "target": "predictions",
                "family": "visit",
                "version_id": version.pk,
                "model": model,
                "content": models[column],
                "filename": name,
                "compute": False,
            }
        )
    return version


@pytest.fixture
def eager(eager, settings, tmp_path):
    """Celery jobs run in-process (tests/conftest.py); uploads land in a temporary MEDIA_ROOT."""
    settings.MEDIA_ROOT = str(tmp_path)
    return eager
