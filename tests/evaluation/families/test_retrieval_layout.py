"""NaturalBench-Retrieval files as published (naturalbench.txt App. B; Baiqi-Li/NaturalBench
naturalbench_retrieval.py): metadata.json items and score files in the official
scores[i][image][caption] orientation, the other orientation only with an explicit option.

Fixtures are written from the published format description: metadata.json is one JSON array
whose item i has integer index i, image_0, image_1 (names under images/), caption_0, caption_1;
get_retrieval_scores reads c0_i0 = s[0][0], c0_i1 = s[1][0], c1_i0 = s[0][1], c1_i1 = s[1][1].
"""

import json

import pytest
from django.core.management.base import CommandError

from annotator.platform.errors import Invalid
from evaluation import importers, services
from evaluation.families.retrieval import parse
from evaluation.families.vhexpansion import demo as vh_demo
from evaluation.metrics import retrieval
from tests.evaluation.helpers import eval_version, evaluate

METADATA = [
    {
        "index": i,
        "image_0": f"{i}_0.jpg",
        "image_1": f"{i}_1.jpg",
        "caption_0": f"a dog on a sofa {i}",
        "caption_1": f"a sofa on a dog {i}",
    }
    for i in range(4)
]
# s(c, i) per pair, chosen so text and image scores differ: pairs 0-2 text-only right
# (s(c0,i0) > s(c1,i0), s(c1,i1) > s(c0,i1), but s(c0,i1) > s(c0,i0)), pair 3 all right.
S = [
    {"c0_i0": 0.50, "c1_i0": 0.40, "c0_i1": 0.55, "c1_i1": 0.60},
    {"c0_i0": 0.30, "c1_i0": 0.20, "c0_i1": 0.35, "c1_i1": 0.40},
    {"c0_i0": 0.31, "c1_i0": 0.21, "c0_i1": 0.36, "c1_i1": 0.41},
    {"c0_i0": 0.90, "c1_i0": 0.10, "c0_i1": 0.20, "c1_i1": 0.80},
]
# The official tensor: scores[i][image][caption]
TENSOR = [[[s["c0_i0"], s["c1_i0"]], [s["c0_i1"], s["c1_i1"]]] for s in S]


def official_acc(tensor):
    """get_retrieval_scores + get_retrieval_acc as published (independent of Blindspot)."""
    text = image = group = 0
    for s in tensor:
        r = {"c0_i0": s[0][0], "c0_i1": s[1][0], "c1_i0": s[0][1], "c1_i1": s[1][1]}
        t = r["c0_i0"] > r["c1_i0"] and r["c1_i1"] > r["c0_i1"]
        i = r["c0_i0"] > r["c0_i1"] and r["c1_i1"] > r["c1_i0"]
        text, image, group = text + t, image + i, group + (t and i)
    n = len(tensor)
    return {"text": text / n, "image": image / n, "group": group / n}


def test_metadata_json_imports_as_published():
    rows = parse.parse_items(json.dumps(METADATA, indent=2), "metadata.json")
    assert [r.item_id for r in rows] == ["0", "1", "2", "3"]
    assert rows[1].data == {
        k: METADATA[1][k] for k in ("image_0", "image_1", "caption_0", "caption_1")
    }


def test_metadata_json_missing_caption_names_the_entry():
    broken = [dict(METADATA[0]), {k: v for k, v in METADATA[1].items() if k != "caption_1"}]
    with pytest.raises(Invalid) as exc:
        parse.parse_items(json.dumps(broken), "metadata.json")
    assert exc.value.errors == [{"line": 2, "error": "missing field 'caption_1'"}]


def _scores(rows):
    return [retrieval.pair_correct(r.scores) for r in rows]


def test_official_tensor_is_read_image_then_caption():
    assert official_acc(TENSOR) == {"text": 1.0, "image": 0.25, "group": 0.25}
    rows = importers.parse_predictions("naturalbench_retrieval", json.dumps(TENSOR), "scores.json")
    assert [r.item_id for r in rows] == ["0", "1", "2", "3"]
    # stored [caption][image]: s(c0,i1) sits at [0][1]
    assert rows[0].scores == [[0.50, 0.55], [0.40, 0.60]]
    scores = retrieval.winoground_scores([r.scores for r in rows], with_intervals=False)
    assert (scores.text, scores.image, scores.group) == (1.0, 0.25, 0.25)


def test_the_other_orientation_needs_the_option_and_swaps_text_and_image():
    transposed = [[[m[0][0], m[1][0]], [m[0][1], m[1][1]]] for m in TENSOR]  # [caption][image]
    rows = importers.parse_predictions(
        "naturalbench_retrieval", json.dumps(transposed), "scores.json", option="caption-image"
    )
    scores = retrieval.winoground_scores([r.scores for r in rows], with_intervals=False)
    assert (scores.text, scores.image) == (1.0, 0.25)
    # read without the option, the same file gives text and image swapped: why it is explicit
    wrong = importers.parse_predictions("naturalbench_retrieval", json.dumps(transposed), "s.json")
    swapped = retrieval.winoground_scores([r.scores for r in wrong], with_intervals=False)
    assert (swapped.text, swapped.image) == (0.25, 1.0)


def test_jsonl_rows_and_named_cells():
    jsonl = "".join(json.dumps({"id": i, "scores": m}) + "\n" for i, m in enumerate(TENSOR))
    named = json.dumps([{"id": i, **s} for i, s in enumerate(S)])
    for content in (jsonl, named):
        rows = importers.parse_predictions("naturalbench_retrieval", content, "p.json")
        assert [r.scores for r in rows] == [
            [[s["c0_i0"], s["c0_i1"]], [s["c1_i0"], s["c1_i1"]]] for s in S
        ]


def test_declared_orientation_without_the_option_is_refused_naming_it():
    line = json.dumps({"id": 0, "scores": TENSOR[0], "orientation": "caption-image"})
    with pytest.raises(Invalid) as exc:
        importers.parse_predictions("naturalbench_retrieval", line + "\n", "p.jsonl")
    assert exc.value.errors[0]["line"] == 1
    assert "--option caption-image" in exc.value.errors[0]["error"]
    with pytest.raises(Invalid, match="Unknown score orientation 'sideways'"):
        importers.parse_predictions("naturalbench_retrieval", line, "p.jsonl", option="sideways")
    with pytest.raises(Invalid) as exc:
        importers.parse_predictions("naturalbench_retrieval", '{"id": 0, "scores": [1, 2]}')
    assert "[image][caption] (the official orientation" in exc.value.errors[0]["error"]
    with pytest.raises(Invalid) as exc:
        importers.parse_predictions("naturalbench_retrieval", json.dumps([TENSOR[0], [[1]]]))
    assert exc.value.errors == [
        {"line": 2, "error": "entry 1 of the score tensor must be a 2 × 2 list of numbers"}
    ]


@pytest.mark.django_db
def test_metadata_and_official_scores_give_the_official_numbers():
    version = eval_version(
        "naturalbench_retrieval",
        "NB-R",
        importers.parse_items("naturalbench_retrieval", json.dumps(METADATA), "metadata.json"),
    )
    rows = importers.parse_predictions("naturalbench_retrieval", json.dumps(TENSOR), "s.json")
    run = services.run_import(version=version, model_name="clip", rows=rows)
    values = services.metrics_compute(run=run, rounds=20)
    assert values == official_acc(TENSOR)


def test_hostile_tensor_is_refused_with_a_line_not_a_500():
    deep = "[" * 200 + "]" * 200
    with pytest.raises(Invalid) as exc:
        importers.parse_predictions("naturalbench_retrieval", deep, "s.json")
    assert "nested too deeply" in exc.value.errors[0]["error"]
    with pytest.raises(Invalid) as exc:
        importers.parse_predictions("naturalbench_retrieval", "[[[NaN, 1], [1, 1]]]", "s.json")
    assert exc.value.errors[0]["line"] == 1


@pytest.mark.django_db
def test_score_export_is_the_official_tensor_and_imports_back(tmp_path):
    # given a run imported from get_retrieval_scores' named cells (orientation-free)
    version = eval_version(
        "naturalbench_retrieval",
        "NB-R",
        importers.parse_items("naturalbench_retrieval", json.dumps(METADATA), "metadata.json"),
    )
    named = json.dumps([{"id": i, **s} for i, s in enumerate(S)])
    rows = importers.parse_predictions("naturalbench_retrieval", named, "cells.json")
    run = services.run_import(version=version, model_name="clip", rows=rows)
    first = services.metrics_compute(run=run, rounds=20)
    # when it is exported
    out = tmp_path / "scores.json"
    printed = evaluate("export-predictions", str(run.pk), "--out", str(out))
    assert printed.startswith("scores.json: 4 predictions written")
    # then the file is the official tensor scores[i][image][caption], pair i = metadata index i
    assert json.loads(out.read_text()) == TENSOR
    assert official_acc(json.loads(out.read_text())) == first
    # and it imports back to the same scores
    again = importers.parse_predictions("naturalbench_retrieval", out.read_text(), "scores.json")
    back = services.run_import(version=version, model_name="clip again", rows=again)
    assert services.metrics_compute(run=back, rounds=20) == first
    # a run missing a pair cannot make a tensor, and says which pair
    partial = services.run_import(version=version, model_name="partial", rows=rows[:3])
    with pytest.raises(CommandError, match="no scores for 1 of 4 pairs \\(first: '3'\\)"):
        evaluate("export-predictions", str(partial.pk))


@pytest.mark.django_db
def test_a_family_without_a_published_predictions_layout_says_so():
    version = eval_version(
        "vhexpansion", "VH", importers.parse_items("vhexpansion", vh_demo.vh_items(1))
    )
    rows = importers.parse_predictions("vhexpansion", vh_demo.vh_predictions(1), "p.jsonl")
    run = services.run_import(version=version, model_name="m", rows=rows)
    with pytest.raises(CommandError, match="has no published predictions layout"):
        evaluate("export-predictions", str(run.pk))
