"""VisIT-Bench's published layouts pinned field for field, each with a round trip: the dataset CSV
the sandbox's make_pairs.py reads (its columns, their order, TRUE/FALSE flags), Blindspot's JSONL
of the same columns, and a judgment set as the head-to-head JSON of evaluate_all_queries.py that
elo_analysis.py reads. The small fixtures are written here from the published format."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.urls import reverse

from annotator.platform import roles
from curation.recipes.framework.exports import records_write
from evaluation import services
from evaluation.families.visit import exports
from evaluation.families.visit import judgments as visit_judgments
from evaluation.families.visit import parse as visit_parse
from evaluation.models import JudgmentSet
from tests.evaluation.helpers import eval_version, login
from tests.evaluation.judgment_files import human_file, import_llm, llm_file
from tests.paths import VISIT_BENCH, needs

# single_image_full_dataset.csv's header, in its order (METRICS.md Sec. 2).
HEADER = (
    "instruction_category,image,visual,instruction,gpt4_prediction,image_dense_captions,"
    "reference_output,human_ratings_gpt4_correct,human_ratings_problem_in_caption,"
    "human_ratings_problem_in_gpt4,public_images_metadata"
)
SMALL = (
    HEADER + "\n"
    'Counting,https://x.test/a.png,,How many cubes?,"Seven cubes: four red, three blue.",'
    "Four red cubes and three blue cubes on a table.,,TRUE,FALSE,FALSE,"
    '"{""source"": ""Open Images"", ""id"": ""4ca5""}"\n'
    "Art,https://x.test/b.png,,Name the style.,It is cubism.,A cubist painting.,cubism,"
    "FALSE,TRUE,FALSE,\n"
)


def _csv(items) -> str:
    buffer = io.BytesIO()
    records = [visit_parse.published_record(i.data) for i in items]
    records_write(buffer, records, columns=visit_parse.PUBLISHED_COLUMNS, fmt="csv")
    return buffer.getvalue().decode("utf-8")


def test_dataset_csv_layout_is_pinned_and_reads_back_byte_for_byte():
    # Given a small file in the published layout
    items = visit_parse.parse_items(SMALL)
    # Then the caption comes from image_dense_captions, the flags and metadata are kept
    assert items[0].data["caption"] == "Four red cubes and three blue cubes on a table."
    assert items[0].data["public_images_metadata"] == {"source": "Open Images", "id": "4ca5"}
    assert [i.kept for i in items] == [True, False]
    # And the export writes the published columns, in the published order, as published
    text = _csv(items)
    assert text.splitlines()[0] == HEADER
    assert ",".join(visit_parse.PUBLISHED_COLUMNS) == HEADER
    assert text == SMALL


def test_dataset_jsonl_reads_back_with_json_booleans():
    items = visit_parse.parse_items(SMALL)
    buffer = io.BytesIO()
    records = [visit_parse.published_record(i.data, fmt="jsonl") for i in items]
    records_write(buffer, records, columns=visit_parse.PUBLISHED_COLUMNS, fmt="jsonl")
    lines = buffer.getvalue().decode().splitlines()
    first = json.loads(lines[0])
    assert list(first) == list(visit_parse.PUBLISHED_COLUMNS)
    assert first["human_ratings_gpt4_correct"] is True
    assert first["public_images_metadata"] == {"source": "Open Images", "id": "4ca5"}
    again = visit_parse.parse_items("\n".join(lines))
    assert [(i.item_id, i.kept, i.data) for i in again] == [
        (i.item_id, i.kept, i.data) for i in items
    ]


@needs(VISIT_BENCH)
def test_the_published_dataset_round_trips_through_the_export():
    content = (VISIT_BENCH / "single_image_full_dataset.csv").read_text(encoding="utf-8-sig")
    items = visit_parse.parse_items(content)
    text = _csv(items)
    # what make_pairs.py reads is there under its names, for every row
    rows = list(csv.DictReader(io.StringIO(text)))
    original = list(csv.DictReader(io.StringIO(content)))
    assert len(rows) == 578
    for column in (
        "instruction_category",
        "image",
        "instruction",
        "gpt4_prediction",
        "image_dense_captions",
        "human_ratings_gpt4_correct",
        "human_ratings_problem_in_caption",
    ):
        assert [r[column] for r in rows] == [r[column] for r in original], column
    again = visit_parse.parse_items(text)
    assert [(i.item_id, i.kept, i.data) for i in again] == [
        (i.item_id, i.kept, i.data) for i in items
    ]


# The keys evaluate_all_queries.py writes per judged pair.
HEAD2HEAD_KEYS = [
    "A_model",
    "B_model",
    "A",
    "B",
    "auto_evaluation_result",
    "auto_evaluation_cot",
    "image_url",
    "instruction",
    "instruction_category",
    "engine",
    "reference",
    "evaluated_with_reference",
]


def test_head2head_record_layout_is_pinned():
    pair = {
        "model_a": "m1",
        "model_b": "human_verified_reference",
        "response_a": "a",
        "response_b": "b",
        "order_winners": ["m1", "tie"],
        "outputs": [
            {"shown_a": "m1", "shown_b": "human_verified_reference", "judge_output": "x"},
            {"shown_a": "human_verified_reference", "shown_b": "m1", "judge_output": "y"},
        ],
        "winner": "tie",
    }
    item = {
        "image": "https://x.test/a.png",
        "instruction": "Do.",
        "category": "C",
        "reference": "r",
    }
    record = exports.head2head_record(pair, item, engine="gpt-4", with_reference=False)
    assert list(record) == HEAD2HEAD_KEYS
    assert record["auto_evaluation_result"] == ["m1", "tie"]
    assert record["auto_evaluation_cot"][1] == {
        "A_model_in_cot": "human_verified_reference",
        "B_model_in_cot": "m1",
        "cot": "y",
    }
    # a crowd pair (no orders): its majority stands for both orders
    crowd = {**pair, "order_winners": [], "outputs": [], "winner": "m1"}
    assert exports.head2head_record(crowd, item, engine="crowd", with_reference=False)[
        "auto_evaluation_result"
    ] == ["m1", "m1"]


def _ratings(set_id):
    results = JudgmentSet.objects.get(pk=set_id).results
    keep = ("player", "online", "elo", "low", "high", "matches", "win_rate")
    return [{k: p[k] for k in keep} for p in results["players"]]


@needs(VISIT_BENCH)
@pytest.mark.django_db
def test_judge_set_exports_as_head2head_and_imports_back_with_the_same_ratings(
    visit_version, files
):
    # Given a judge's head-to-head file imported as a set
    original = json.loads(llm_file(files))
    first = import_llm(visit_version, json.dumps(original))
    judgment_set = JudgmentSet.objects.get(pk=first["judgment_set_id"])
    # When it is exported in the sandbox's layout
    name, text = exports.head2head_export(judgment_set)
    records = json.loads(text)
    # Then it is one JSON array with evaluate_all_queries.py's keys, the pairs in file order
    assert name == "Judge_head2head.json"
    assert all(list(r) == HEAD2HEAD_KEYS for r in records)
    assert [
        (r["A_model"], r["B_model"], r["image_url"], r["auto_evaluation_result"]) for r in records
    ] == [
        (r["A_model"], r["B_model"], r["image_url"], r["auto_evaluation_result"]) for r in original
    ]
    # And it imports back into Blindspot with the same ratings
    second = import_llm(visit_version, text, label="Judge again")
    assert _ratings(first["judgment_set_id"]) == _ratings(second["judgment_set_id"])


@needs(VISIT_BENCH)
@pytest.mark.django_db
def test_crowd_set_exports_as_head2head_with_each_pairs_majority(visit_version, files):
    result = services.import_run(
        {
            "target": "judgments",
            "version_id": visit_version.pk,
            "kind": "human",
            "label": "Crowd",
            "content": human_file(files),
            "filename": "visit_bench_human_preferences.csv",
            "rounds": 20,
            "text_metrics": False,
        }
    )
    crowd = JudgmentSet.objects.get(pk=result["judgment_set_id"])
    _name, text = exports.head2head_export(crowd)
    records = json.loads(text)
    pairs = list(crowd.judgments.order_by("position"))
    assert len(records) == len(pairs)
    for record, pair in zip(records, pairs, strict=True):
        assert record["auto_evaluation_result"] == [pair.winner, pair.winner]
        assert record["engine"] == "crowd"
    # read back by the judge-file parser: one battle per pair, the majority its winner
    parsed = visit_judgments.parse_llm_judgments(text)
    assert [r.winner for r in parsed.rows] == [p.winner for p in pairs]


@pytest.mark.django_db
@needs(VISIT_BENCH)
def test_export_view_serves_the_file_and_404s_elsewhere(client, visit_version, files):
    result = import_llm(visit_version, llm_file(files))
    login(client, roles.RESEARCHER)
    url = reverse("eval-judgments-export", args=[visit_version.pk, result["judgment_set_id"]])
    response = client.get(url)
    assert response.status_code == 200
    assert response["Content-Disposition"] == 'attachment; filename="Judge_head2head.json"'
    assert len(json.loads(response.content)) == JudgmentSet.objects.get().pair_count
    other = eval_version("visit", "Other", visit_parse.parse_items(SMALL))
    wrong = reverse("eval-judgments-export", args=[other.pk, result["judgment_set_id"]])
    assert client.get(wrong).status_code == 404
