"""The fully annotated example layout (visit_fully_annotated_example.csv: image_url,
image_dense_caption, instruction_category, instruction, output_human_annotated) imports into a
pipeline: each row a verified instance whose reference is the human-written response, labelled
so on the published version (not "GPT-4 reference") and left out of Table 2, which only counts
rated GPT-4 responses."""

from __future__ import annotations

import csv
import io

import pytest

from curation.recipes.visit import dataset, selectors
from curation.recipes.visit.models import VisitInstance, VisitReference
from evaluation.families.visit import board
from evaluation.families.visit import parse as visit_parse
from tests.curation.recipes.visit.helpers import publish_version, read
from tests.paths import VISIT_BENCH, needs

pytestmark = [pytest.mark.django_db, needs(VISIT_BENCH)]
ANNOTATED = VISIT_BENCH / "visit_fully_annotated_example.csv"


def test_the_fully_annotated_example_imports_with_human_references(pipeline, curator):
    content = read(ANNOTATED)
    published = list(csv.DictReader(io.StringIO(content)))
    # when the file is imported into a pipeline
    result = dataset.dataset_import(pipeline=pipeline, content=content, filename=ANNOTATED.name)
    # then every row is a verified instance with its image, caption and human-written reference
    assert result == {"instances": 10, "families": 10, "verified": 10}
    instances = list(pipeline.instances.order_by("position"))
    assert {i.state for i in instances} == {VisitInstance.State.VERIFIED}
    first = instances[0]
    assert first.instruction == published[0]["instruction"]
    assert first.caption == published[0]["image_dense_caption"]
    assert [img.url for img in first.images.all()] == [published[0]["image_url"]]
    reference = first.references.get()
    assert reference.text == published[0]["output_human_annotated"]
    assert reference.source == VisitReference.Source.HUMAN
    assert reference.verdict == VisitReference.Verdict.CORRECT
    # and the published version names its reference by where it came from, without Table 2
    version = publish_version(pipeline, created_by=curator)
    assert version.items.filter(kept=True).count() == 10
    assert board.reference_label(version.pk).startswith("Human-written reference")
    context = board.version_context(version)
    assert context["table2"]["single"]["n"] == 0


def test_the_evaluation_parser_reads_the_annotated_layout_as_kept_items():
    items = visit_parse.parse_items(read(ANNOTATED), ANNOTATED.name)
    assert len(items) == 10 and all(i.kept for i in items)
    data = items[0].data
    assert data["reference_source"] == "human"
    assert data["caption"] and data["reference"] and data["image"].startswith("https://")


def test_the_pipeline_table_2_leaves_the_human_references_out(pipeline):
    dataset.dataset_import(pipeline=pipeline, content=read(ANNOTATED), filename=ANNOTATED.name)
    assert selectors.verification_table(pipeline)["overall"]["n"] == 0
