"""Assembly and export (vlind-bench.txt Sec. 3–4, App. B–C; METRICS.md §4): the published
data.json layout field by field, image folders, the official prompts, Table 1, VP statements,
the frozen version and the round trip through the evaluation importer and metrics."""

from __future__ import annotations

import io
import json
import zipfile

import pytest
from PIL import Image as PILImage

from annotator.platform.errors import Invalid
from curation import gateway
from curation.recipes.framework.publish import publish_object
from curation.recipes.vlind import archive, export, nouns
from curation.recipes.vlind.recipe import RECIPE
from evaluation import importers
from evaluation import services as evaluation_services
from evaluation.families.vlind import layout
from evaluation.families.vlind.parse import DATA_FIELDS
from tests.curation.recipes.vlind import helpers
from tests.curation.recipes.vlind.helpers import draft_offline, kept, review_triples, reviewers

pytestmark = pytest.mark.django_db


@pytest.fixture
def built(bench):
    """Two instances (color/1, color/2) and a triple with no good image (color/3)."""
    draft_offline(bench, names=("color",), count=3)
    review_triples(bench, reviewers(), {})
    people = reviewers()
    first, second, third = kept(bench)
    helpers.assemble(bench, first, seed=1, accepts=(3, 1, 2), people=people)
    helpers.assemble(bench, second, seed=2, accepts=(2, 3, 0), people=people)
    helpers.assemble(bench, third, seed=3, accepts=(0, 1, 0), people=people)
    nouns.nouns_pick(triple=second, existent="a fire truck", non_existent="a giraffe")
    return bench


def _zip(archive) -> zipfile.ZipFile:
    return zipfile.ZipFile(io.BytesIO(archive.read()))


def test_vp_statements_follow_the_template(built):
    row = export.rows_of(built)[1].data
    b1 = next(t for t in archive.test_inputs(row) if t["key"] == "b1")
    assert b1["prompt"] == layout.vp_prompt("There is a fire truck in the given image.")


def test_nouns_are_picked_by_a_person_with_checks(built):
    triple = kept(built)[0]
    with pytest.raises(Invalid, match="must differ"):
        nouns.nouns_pick(triple=triple, existent="Zebra", non_existent="zebra")
    with pytest.raises(Invalid, match="but the context mentions station, truck"):
        nouns.nouns_pick(triple=triple, existent="tree", non_existent="a truck station")
    with pytest.raises(Invalid, match="Pick \\(or type\\) both nouns"):
        nouns.nouns_pick(triple=triple, existent=" ", non_existent="kite")


def test_the_offline_noun_drafter_gives_two_of_each(bench):
    draft_offline(bench, names=("weight",), count=1)
    review_triples(bench, reviewers(), {})
    # (the first of the weight bank: "A balloon sinks to the floor and dents the wooden boards.")
    result = nouns.nouns_draft(bench=bench, provider=gateway.provider_offline())
    triple = bench.triples.get()
    assert result == {"drafted": 1, "failed": 0, "errors": []}
    assert triple.noun_candidates["nouns"] == ["balloon", "floor"]
    absent = triple.noun_candidates["non-existent_nouns"]
    assert len(absent) == 2 and not set(absent) & {"balloon", "floor", "board"}
    assert triple.noun_generation.template_name == "vlind-vp-nouns"


def test_data_json_matches_the_published_layout_field_by_field(built):
    first, second, _third = kept(built)
    archive = _zip(helpers.export_zip(built))
    data = json.loads(archive.read("data.json"))
    # two instances: color/3 has no good image and leaves the set
    assert [list(row) for row in data] == [list(DATA_FIELDS)] * 2
    assert data[0] == {
        "concept": "color",
        "context_id": 1,
        "context": first.context,
        "factual_context": first.false_statement,
        "true_statement": first.true_statement,
        "false_statement": first.false_statement,
        "existent_noun": "a banana",
        "non-existent_noun": "a kite",
        "aggregated_human_label_good_images": {"0": 3, "4": 1, "8": 2},
        "best_img_id": "0",
    }
    assert data[1]["aggregated_human_label_good_images"] == {"0": 2, "4": 3, "8": 0}
    assert data[1]["best_img_id"] == "4"
    assert (data[1]["existent_noun"], data[1]["non-existent_noun"]) == ("a fire truck", "a giraffe")
    # the folders follow the official runner's paths; every reviewed image is a real JPEG
    cf = f"counterfactual/color/1_{first.context}"
    names = set(archive.namelist())
    assert {f"{cf}/0.jpg", f"{cf}/4.jpg", f"{cf}/8.jpg"} <= names
    assert f"factual/color/1_{first.false_statement}/0.jpg" in names
    assert not any(n.startswith("counterfactual/color/3_") for n in names)
    with PILImage.open(io.BytesIO(archive.read(f"{cf}/4.jpg"))) as img:
        assert img.format == "JPEG" and img.size == (24, 24)
    assert not any(n.startswith("appendix_b/") for n in names)


def test_tests_jsonl_holds_the_official_prompts(built):
    first = kept(built)[0]
    archive = _zip(helpers.export_zip(built))
    lines = [json.loads(x) for x in archive.read("tests.jsonl").decode().splitlines()]
    mine = [x for x in lines if x["id"] == "color/1"]
    cf = f"counterfactual/color/1_{first.context}"
    factual = f"factual/color/1_{first.false_statement}/0.jpg"
    assert [(x["key"], x["test"], x["image"], x["expected"]) for x in mine] == [
        ("a1_image", "CK", factual, "True"),
        ("a2_image", "CK", factual, "False"),
        ("b1", "VP", f"{cf}/0.jpg", "True"),
        ("b2", "VP", f"{cf}/0.jpg", "False"),
        ("c1_image", "CB", f"{cf}/0.jpg", "True"),
        ("c2_image", "CB", f"{cf}/0.jpg", "False"),
        ("d1/0", "LP", f"{cf}/0.jpg", "True"),
        ("d2/0", "LP", f"{cf}/0.jpg", "False"),
        ("d1/8", "LP", f"{cf}/8.jpg", "True"),
        ("d2/8", "LP", f"{cf}/8.jpg", "False"),
    ]
    assert mine[0]["prompt"] == (
        f"Statement: {first.false_statement}\nBased on the common sense, is the given statement "
        "true or false? Only respond in True or False."
    )
    assert mine[2]["prompt"] == (
        "Statement: There is a banana in the given image.\nBased on the image, is the given "
        "statement true or false? Only respond in True or False."
    )
    assert mine[4]["prompt"] == layout.cb_prompt(first.context, first.true_statement)
    assert mine[6]["prompt"] == layout.lp_prompt(first.true_statement)


def test_appendix_b_option_adds_the_white_image_and_rendered_prompts(built):
    archive = _zip(helpers.export_zip(built, appendix_b=True))
    names = set(archive.namelist())
    assert "appendix_b/blank.png" in names
    assert {f"appendix_b/rendered/color/1/{k}.png" for k in ("a1", "a2", "c1", "c2")} <= names
    with PILImage.open(io.BytesIO(archive.read("appendix_b/blank.png"))) as img:
        assert img.size == (1024, 1024) and img.getextrema() == ((255, 255),) * 3
    with PILImage.open(io.BytesIO(archive.read("appendix_b/rendered/color/1/c1.png"))) as img:
        assert img.size == (1024, 1024) and img.convert("L").getextrema()[0] < 100


def test_table1_counts_triples_and_images_per_concept(built):
    table = export.table1(built)
    color = next(c for c in table["columns"] if c["concept"] == "color")
    # two instances: 2 + 2 good counterfactual images and one factual image each
    assert color == {"concept": "color", "triples": 2, "cf": 4, "images": 6}
    assert table["total"] == {"triples": 2, "cf": 4, "images": 6}
    assert len(table["columns"]) == 11


def test_round_trip_through_the_evaluation_importer_and_metrics(built):
    # given the exported data.json
    content = _zip(helpers.export_zip(built)).read("data.json").decode()
    # when the evaluation app parses it
    items = importers.parse_items("vlind", content, "data.json")
    # then the items carry the same fields and the good images by the ≥ 2 votes rule
    assert [(i.item_id, i.kept, sorted(i.data["good_images"])) for i in items] == [
        ("color/1", True, ["0", "8"]),
        ("color/2", True, ["0", "4"]),
    ]
    rows = json.loads(content)
    for item, row in zip(items, rows, strict=True):
        for key in DATA_FIELDS:
            if key != "aggregated_human_label_good_images":
                assert item.data[key] == row[key], key
    # when frozen as a version and a model's answers (the official runner's keys) are imported
    version = publish_object(RECIPE, built, label="v1")
    assert (version.item_count, version.kept_count, version.frozen) == (2, 2, True)
    for row in rows:
        good = [k for k, v in row["aggregated_human_label_good_images"].items() if v >= 2]
        ok = {"response": "True", "answer": "True"}
        no = {"response": "False", "answer": "False"}
        wrong_cb = row["context_id"] == 2  # the second instance fails CB
        row.update(
            {
                "m_pred_a1_image": ok,
                "m_pred_a2_image": no,
                "m_pred_b1": ok,
                "m_pred_b2": no,
                "m_pred_c1_image": no if wrong_cb else ok,
                "m_pred_c2_image": no,
                "m_pred_d1": {g: ok for g in good},
                "m_pred_d2": {g: (ok if g == "8" else no) for g in good},
            }
        )
    predictions = importers.parse_predictions("vlind", json.dumps(rows), option="m")
    run = evaluation_services.run_import(version=version, model_name="m", rows=predictions)
    scores = evaluation_services.metrics_compute(run=run, rounds=20)
    # then S_CK = S_VP = 1, S_CB = 1/2, S_LP = mean d of instance 1 = 1/2 (image 8 fails LP)
    assert (scores["s_ck"], scores["s_vp"], scores["s_cb"], scores["s_lp"]) == (1, 1, 0.5, 0.5)
    assert (scores["cb"], scores["lp"]) == (0.5, 0.75)


def test_a_frozen_versions_archive_is_rebuilt_from_its_items(built):
    version = publish_object(RECIPE, built, label="v1")
    before = _zip(helpers.export_zip(built)).read("data.json")
    # when the bench changes after freezing
    second = kept(built)[1]
    nouns.nouns_pick(triple=second, existent="a truck", non_existent="a kite")
    # then the version's archive still holds what was frozen
    frozen = _zip(helpers.export_zip(version=version))
    assert frozen.read("data.json") == before
    current = json.loads(_zip(helpers.export_zip(built)).read("data.json"))
    assert current[1]["existent_noun"] == "a truck"
    assert sorted(frozen.namelist()) == sorted(_zip(helpers.export_zip(version=version)).namelist())


def test_nothing_assembled_is_refused_with_what_to_do(bench):
    with pytest.raises(Invalid) as exc:
        helpers.export_zip(bench)
    assert exc.value.message.startswith("Nothing to export yet: no instance is assembled.")
    with pytest.raises(Invalid, match="Nothing to freeze yet"):
        publish_object(RECIPE, bench, label="v1")
