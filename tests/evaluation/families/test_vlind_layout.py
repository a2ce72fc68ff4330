"""VLind-Bench's per-model answers as published (klee972/VLind-Bench eval/gpt4o_eval.py writes
them, eval/score_pipeline.py reads them): the data.json rows, each instance with a good image
carrying '{mid}_pred_a1_image', '_a2_image', '_b1', '_b2', '_c1_image', '_c2_image' as
{response, answer} and '{mid}_pred_d1', '_d2' as {good image id: {response, answer}}.

The fixture is written from that description; ``pipeline`` below scores a file the way
score_pipeline.py's formulas read (vlind-bench.txt Sec. 5.1, Eq. 5), independently of Blindspot.
"""

import json

import numpy as np
import pytest
from django.core.management.base import CommandError

from evaluation import importers, services
from evaluation.families.vlind import parse
from evaluation.metrics import vlind
from tests.evaluation.helpers import eval_version, evaluate

VOTES = [
    {"0": 3, "1": 2, "4": 1, "8": 2},  # good: 0, 1, 8
    {"0": 1, "4": 3},  # good: 4
    {"0": 0, "4": 1},  # no good image: the official runner skips it
    {"2": 2, "5": 3, "9": 3},  # good: 2, 5, 9
]


def _entry(answer: str) -> dict:
    return {"response": f"{answer}." if answer != "NA" else "Hard to say", "answer": answer}


def data_json(mid: str = "gpt4o") -> list[dict]:
    """Four instances in the published field order; answers for every instance with a good
    image, chosen so that every stage of the pipeline drops someone."""
    answers = [  # a1 a2 b1 b2 c1 c2, then d1/d2 per good image
        ("True False True False True False", {"0": ("True", "False"), "1": ("True", "True")}),
        ("True False True False True False", {"4": ("True", "False")}),
        None,
        ("True False False False True False", {"2": ("NA", "False"), "5": ("True", "False")}),
    ]
    rows = []
    for k, votes in enumerate(VOTES):
        row = {
            "concept": ("climate", "diet")[k % 2],
            "context_id": k,
            "context": f"In this world, lakes in region {k} are made of juice.",
            "factual_context": f"Lakes in region {k} are made of water.",
            "true_statement": f"Lakes in region {k} are made of juice.",
            "false_statement": f"Lakes in region {k} are made of water.",
            "existent_noun": "a lake",
            "non-existent_noun": "a penguin",
            "aggregated_human_label_good_images": votes,
            "best_img_id": min(votes, key=lambda i: -votes[i]),
        }
        if answers[k] is not None:
            singles, per_image = answers[k]
            for key, answer in zip(parse.SINGLE_KEYS, singles.split(), strict=True):
                row[f"{mid}_pred_{key}"] = _entry(answer)
            good = [i for i, v in votes.items() if v >= 2]
            d = {i: per_image.get(i, ("False", "True")) for i in good}
            row[f"{mid}_pred_d1"] = {i: _entry(d[i][0]) for i in good}
            row[f"{mid}_pred_d2"] = {i: _entry(d[i][1]) for i in good}
        rows.append(row)
    return rows


def pipeline(rows: list[dict], mid: str) -> dict:
    """score_pipeline.py's totals: a, b pass ratios over instances with a good image; c over
    those passing a; d (macro) over those passing a, b and c; plain c and d over all of them."""
    p = f"{mid}_pred_"
    n = a = b = ac = abc = c = d_all = d_abc = 0
    for row in rows:
        good = [i for i, v in row["aggregated_human_label_good_images"].items() if v >= 2]
        if not good:
            continue
        n += 1

        def ok(one: str, two: str, row: dict = row) -> bool:
            return row[p + one]["answer"] == "True" and row[p + two]["answer"] == "False"

        pa, pb, pc = ok("a1_image", "a2_image"), ok("b1", "b2"), ok("c1_image", "c2_image")
        d = [
            row[p + "d1"][i]["answer"] == "True" and row[p + "d2"][i]["answer"] == "False"
            for i in good
        ]
        a, b, c, ac = a + pa, b + pb, c + pc, ac + (pa and pc)
        abc += pa and pb and pc
        d_all += sum(d) / len(good)
        d_abc += (sum(d) / len(good)) if (pa and pb and pc) else 0
    return {
        "s_ck": a / n,
        "s_vp": b / n,
        "s_cb": ac / a if a else None,
        "s_lp": d_abc / abc if abc else None,
        "cb": c / n,
        "lp": d_all / n,
    }


def _version():
    text = json.dumps([{k: v for k, v in r.items() if "_pred_" not in k} for r in data_json()])
    return eval_version("vlind", "VLind", importers.parse_items("vlind", text, "data.json"))


@pytest.mark.django_db
def test_the_answers_export_is_what_score_pipeline_reads_and_imports_back(tmp_path):
    # given a run imported from the official answers file (gpt4o_eval.py's output)
    version = _version()
    published = data_json("gpt4o")
    rows = importers.parse_predictions(
        "vlind", json.dumps(published), "data_gpt4o.json", option="gpt4o"
    )
    run = services.run_import(version=version, model_name="gpt-4o", rows=rows)
    first = services.metrics_compute(run=run, rounds=20)
    assert {k: first[k] for k in pipeline(published, "gpt4o")} == pipeline(published, "gpt4o")
    assert first["s_lp"] == pytest.approx((1 / 3 + 1) / 2)  # a quick look that it is not trivial
    # when it is exported
    out = tmp_path / "answers.json"
    printed = evaluate("export-predictions", str(run.pk), "--out", str(out))
    assert printed.startswith("data_blindspot.json: 3 predictions written")
    exported = json.loads(out.read_text())
    # then it is the published file with the model identifier "blindspot": the same rows, fields
    # and order, the same answers, the instance without a good image left without answers
    renamed = [
        {k.replace("gpt4o_pred_", "blindspot_pred_"): v for k, v in r.items()} for r in published
    ]
    assert [list(r) for r in exported] == [list(r) for r in renamed]
    assert [
        {k: (v if "_pred_" not in k else _answers_of(v)) for k, v in r.items()} for r in exported
    ] == [{k: (v if "_pred_" not in k else _answers_of(v)) for k, v in r.items()} for r in renamed]
    assert exported[0]["blindspot_pred_a1_image"] == {"response": "True.", "answer": "True"}
    assert pipeline(exported, "blindspot") == pipeline(published, "gpt4o")
    # and it imports back (the identifier found in the file) to the same scores
    again = importers.parse_predictions("vlind", out.read_text(), "data_blindspot.json")
    back = services.run_import(version=version, model_name="again", rows=again)
    assert services.metrics_compute(run=back, rounds=20) == first


def _answers_of(value: dict) -> dict:
    if "answer" in value:
        return {"answer": value["answer"]}
    return {i: {"answer": e["answer"]} for i, e in value.items()}


@pytest.mark.django_db
def test_a_run_missing_an_instance_cannot_be_exported_and_says_which():
    version = _version()
    rows = importers.parse_predictions("vlind", json.dumps(data_json()), "d.json", option="gpt4o")
    partial = services.run_import(version=version, model_name="partial", rows=rows[:2])
    with pytest.raises(CommandError, match="no answers for 1 of 3 instances \\(first: 'diet/3'\\)"):
        evaluate("export-predictions", str(partial.pk))


def test_items_keep_the_votes_they_were_read_with():
    rows = parse.parse_items(json.dumps(data_json()), "data.json")
    assert [r.data["aggregated_human_label_good_images"] for r in rows] == VOTES
    assert [r.data["good_images"] for r in rows] == [["0", "1", "8"], ["4"], [], ["2", "5", "9"]]
    assert [r.kept for r in rows] == [True, True, False, True]


def test_scores_equal_score_pipeline_to_the_last_bit_at_the_published_size():
    # 302 instances (the published test set's size), per-image LP outcomes of 1-12 good images:
    # score_pipeline.py adds the per-instance LP means one after the other
    rng = np.random.default_rng(5)
    rows = []
    for k in range(302):
        good = [str(i) for i in sorted(rng.choice(12, size=rng.integers(1, 13), replace=False))]
        row = {"concept": "c", "aggregated_human_label_good_images": dict.fromkeys(good, 2)}
        for key in parse.SINGLE_KEYS:
            truth = key in ("a1_image", "b1", "c1_image")
            right = rng.random() < 0.85
            row[f"m_pred_{key}"] = {"answer": "True" if truth == right else "False"}
        row["m_pred_d1"] = {i: {"answer": rng.choice(["True", "False"])} for i in good}
        row["m_pred_d2"] = {i: {"answer": rng.choice(["True", "False"])} for i in good}
        row["id"] = k
        rows.append(row)
    official = pipeline(rows, "m")
    instances = []
    for row in rows:
        parsed = {
            key: {"True": True, "False": False}[row[f"m_pred_{key}"]["answer"]]
            for key in parse.SINGLE_KEYS
        }
        for key in ("d1", "d2"):
            parsed[key] = {i: e["answer"] == "True" for i, e in row[f"m_pred_{key}"].items()}
        instances.append(
            vlind.VLindInstance(
                ck=parsed["a1_image"] and not parsed["a2_image"],
                vp=parsed["b1"] and not parsed["b2"],
                cb=parsed["c1_image"] and not parsed["c2_image"],
                lp=tuple(parsed["d1"][i] and not parsed["d2"][i] for i in parsed["d1"]),
            )
        )
    ours = vlind.vlind_scores(instances, with_intervals=False)
    assert {k: getattr(ours, k) for k in official} == official  # ==, not approx
