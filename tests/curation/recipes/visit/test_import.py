"""Importing the published VisIT-Bench CSVs: categories become families, rows instances with their
published human ratings (Table 2's single-image column comes back exactly), the 529-of-578 filter
holds in the published version, the real model output files match it through the evaluation
app's importer, and the exports read back unchanged. Bad files are refused with line numbers."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.db.models import Count

from annotator.platform.errors import Invalid
from curation.recipes.visit import dataset, selectors
from curation.recipes.visit.models import VisitCategory, VisitImage, VisitInstance, VisitReference
from evaluation.families.visit import living
from evaluation.families.visit import parse as visit_parse
from evaluation.models import ModelRun
from tests.curation.recipes.visit.helpers import (
    DATASET,
    MODEL_FILES,
    dataset_export,
    import_model,
    publish_version,
    read,
)
from tests.paths import VISIT_BENCH, needs

pytestmark = [pytest.mark.django_db, needs(VISIT_BENCH)]


@pytest.fixture
def imported(pipeline):
    result = dataset.dataset_import(pipeline=pipeline, content=read(DATASET), filename=DATASET.name)
    return pipeline, result


def test_real_csv_becomes_families_and_instances_with_table_2(imported):
    pipeline, result = imported
    # then 578 rows became 578 instances in 60 families, 529 of them verified
    assert result == {"instances": 578, "families": 60, "verified": 529}
    assert VisitCategory.objects.filter(pipeline=pipeline).count() == 60
    assert VisitCategory.objects.get(pipeline=pipeline, name="Who to call?").instances.count() == 12
    states = dict(
        VisitInstance.objects.filter(pipeline=pipeline).values_list("state").annotate(n=Count("id"))
    )
    assert states == {"verified": 529, "discarded": 49}
    # every image is kept as a remote reference, not fetched during the import
    assert VisitImage.objects.filter(instance__pipeline=pipeline, image__isnull=True).count() == 578
    # and the published ratings give Table 2's single-image column (91.5 / 3.6 / 3.8)
    table = selectors.verification_table(pipeline)
    single = table["single"]
    assert (single["n"], single["correct"], single["caption"], single["response"]) == (
        578,
        529,
        21,
        22,
    )
    assert round(100 * single["correct_share"], 1) == 91.5
    assert round(100 * single["caption_share"], 1) == 3.6
    assert round(100 * single["response_share"], 1) == 3.8
    assert table["multi"]["n"] == 0
    assert table["multi"]["correct_share"] is None


def test_published_version_keeps_529_of_578_and_matches_the_model_files(imported, curator):
    pipeline, _ = imported
    # when the pipeline is published
    version = publish_version(pipeline, created_by=curator)
    # then the evaluation app holds 578 items, 529 counting on leaderboards, with the ids its
    # own parser gives the published file
    assert (version.item_count, version.kept_count) == (578, 529)
    expected = [r.item_id for r in visit_parse.parse_items(read(DATASET))]
    assert list(version.items.order_by("position").values_list("item_id", flat=True)) == expected
    # and each real model output file imports against it through the evaluation app
    for name in MODEL_FILES:
        import_model(version, name)
    counts = dict(
        ModelRun.objects.filter(version=version).values_list("model__name", "prediction_count")
    )
    assert counts == {"LLaVA (13B)": 577, "InstructBLIP (13B)": 578, "PandaGPT (13B)": 578}
    # so every verified instance has the reference and up to three models to pair
    responses = living.responses_of(version)
    assert len(responses) == 529
    assert sum(len(r) for r in responses.values()) == 529 * 4 - 1


def test_dataset_export_reads_back_through_the_evaluation_parser(imported, curator):
    pipeline, _ = imported
    publish_version(pipeline, created_by=curator)
    # when the version is exported as CSV and JSONL
    text = dataset_export(pipeline, fmt="csv")
    lines = dataset_export(pipeline, fmt="jsonl").splitlines()
    # then the CSV has the published columns and the evaluation parser gets the same 529 of 578
    header = next(csv.reader(io.StringIO(text)))
    assert tuple(header) == visit_parse.PUBLISHED_COLUMNS
    again = visit_parse.parse_items(text)
    original = visit_parse.parse_items(read(DATASET))
    assert [(r.item_id, r.kept) for r in again] == [(r.item_id, r.kept) for r in original]
    assert sum(r.kept for r in again) == 529
    # and the JSONL holds the same records with JSON booleans
    first = json.loads(lines[0])
    assert len(lines) == 578
    assert first["instruction_category"] == "Catchy Titles"
    assert first["human_ratings_gpt4_correct"] is True
    assert first["public_images_metadata"]["source"].startswith("Open Images")
    # and the JSONL reads back too, through the same parser, with the same items
    jsonl = visit_parse.parse_items("\n".join(lines))
    assert [(r.item_id, r.kept, r.data) for r in jsonl] == [
        (r.item_id, r.kept, r.data) for r in again
    ]


def test_importing_the_same_file_twice_is_refused_with_line_numbers(imported):
    pipeline, _ = imported
    with pytest.raises(Invalid) as exc:
        dataset.dataset_import(pipeline=pipeline, content=read(DATASET), filename=DATASET.name)
    assert exc.value.errors[0]["line"] == 2
    assert "already in this pipeline" in exc.value.errors[0]["error"]
    assert VisitInstance.objects.filter(pipeline=pipeline).count() == 578


@pytest.mark.parametrize(
    ("content", "line", "error"),
    [
        ("instruction_category,image\nA,https://x/a.png\n", 1, "missing columns"),
        (
            "instruction_category,image,instruction,gpt4_prediction,image_dense_captions,"
            "human_ratings_gpt4_correct,human_ratings_problem_in_caption\n"
            "A,https://x/a.png,Count them,Five.,Five apples on a plate,TRUE,FALSE\n"
            "A,https://x/b.png,Count them,Five.,Five apples,MAYBE,FALSE\n",
            3,
            "human rating flags must be TRUE or FALSE",
        ),
        (
            "instruction_category,image,instruction,gpt4_prediction,image_dense_captions,"
            "human_ratings_gpt4_correct,human_ratings_problem_in_caption\n"
            "A,ftp://x/a.png,Count them,Five.,Five apples,TRUE,FALSE\n",
            2,
            "is not an http(s) URL",
        ),
    ],
)
def test_bad_dataset_rows_are_refused_with_their_line(pipeline, content, line, error):
    with pytest.raises(Invalid) as exc:
        dataset.dataset_import(pipeline=pipeline, content=content, filename="bad.csv")
    assert exc.value.errors[0]["line"] == line
    assert error in exc.value.errors[0]["error"]
    assert not VisitInstance.objects.exists()
    assert not VisitReference.objects.exists()
    assert not VisitCategory.objects.exists()
