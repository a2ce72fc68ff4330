"""Imports: good files store everything; bad files store nothing and name the line."""

import importlib
import json

import pytest
from django.apps import apps as django_apps

from annotator.platform.errors import Conflict, Invalid
from evaluation import compute, importers, selectors, services
from evaluation.families.naturalbench import demo as nb_demo
from evaluation.families.naturalbench import parse as nb_parse
from evaluation.families.retrieval import demo as retrieval_demo
from evaluation.families.vhexpansion import demo as vh_demo
from evaluation.families.vlind import demo as vlind_demo
from evaluation.models import BenchmarkItem, BenchmarkVersion, MetricResult, ModelRun, Prediction
from evaluation.parsed import ItemRow
from tests.evaluation.helpers import eval_version


def make_version(
    family: str, content: str, label: str = "v1", filename: str = "file.jsonl"
) -> BenchmarkVersion:
    return eval_version(
        family, f"{family} bench", importers.parse_items(family, content, filename), label=label
    )


def import_run(version, content, model="M", option=""):
    rows = importers.parse_predictions(version.benchmark.family, content, "p.jsonl", option=option)
    return services.run_import(version=version, model_name=model, rows=rows)


@pytest.mark.django_db
def test_naturalbench_records_and_predictions_import_and_score():
    version = make_version("naturalbench", nb_demo.naturalbench_items(12))
    assert (version.item_count, version.kept_count, version.frozen) == (12, 12, True)
    run = import_run(version, nb_demo.naturalbench_predictions(12, accuracy=1.0, seed=4))
    assert Prediction.objects.filter(run=run).count() == 12
    first = Prediction.objects.filter(run=run).order_by("item__position").first()
    assert len(first.parsed_answer) == 4
    values = services.metrics_compute(run=run, rounds=50)
    # Every parsed answer is right except the ~5% "I cannot tell." outputs (unparseable)
    unparseable = MetricResult.objects.get(run=run, metric="unparseable").value
    assert values["acc"] == pytest.approx(1 - unparseable / 48)
    assert MetricResult.objects.filter(run=run, metric="g_acc_global_tau").exists()
    skills = MetricResult.objects.get(run=run, metric="q_acc").breakdown["skill"]
    assert "Counting" in skills and skills["Counting"]["n"] > 0


@pytest.mark.django_db
def test_nb_upgrade_recomputes_the_global_tau_found_by_the_first_maximum():
    # given a run whose global-optimal τ details were stored by the old tie rule
    version = make_version("naturalbench", nb_demo.naturalbench_items(12))
    run = import_run(version, nb_demo.naturalbench_predictions(12, accuracy=0.7, seed=4))
    services.metrics_compute(run=run, rounds=20)
    fresh = MetricResult.objects.get(run=run, metric="g_acc_global_tau")
    MetricResult.objects.filter(pk=fresh.pk).update(
        details={**fresh.details, "tau": 0.0, "acc": 0.5, "tau_rule": "closest to 0"}
    )
    # when the data migration runs
    migration = importlib.import_module(
        "evaluation.migrations.0007_naturalbench_global_tau_first_maximum"
    )
    migration.recompute(django_apps, None)
    # then the details are those this release computes, the value and interval untouched
    stored = MetricResult.objects.get(pk=fresh.pk)
    assert stored.details == fresh.details
    assert "first maximum" in stored.details["tau_rule"]
    assert (stored.value, stored.interval_low) == (fresh.value, fresh.interval_low)


@pytest.mark.django_db
def test_naturalbench_question_type_with_a_space_is_accepted():
    line = json.loads(nb_demo.naturalbench_items(1).splitlines()[0])
    line["Question Type"] = line.pop("Question_Type")
    rows = nb_parse.parse_items(json.dumps(line))
    assert rows[0].data["question_type"] == "yes_no"


@pytest.mark.django_db
def test_bad_naturalbench_file_names_lines_and_stores_nothing():
    good = nb_demo.naturalbench_items(3).splitlines()
    bad_truth = json.loads(good[1])
    bad_truth["Image_0_Question_0"] = "No"
    content = "\n".join([good[0], json.dumps(bad_truth), "{not json", good[0]])
    with pytest.raises(Invalid) as exc:
        make_version("naturalbench", content)
    errors = {e["line"]: e["error"] for e in exc.value.errors}
    assert "ground truth does not follow" in errors[2]
    assert errors[3].startswith("not valid JSON")
    assert errors[4].startswith("duplicate Index '0'")
    assert BenchmarkVersion.objects.count() == 0 and BenchmarkItem.objects.count() == 0


@pytest.mark.django_db
def test_unknown_ids_duplicates_and_wrong_types_refuse_the_whole_run():
    version = make_version("naturalbench", nb_demo.naturalbench_items(4))
    lines = nb_demo.naturalbench_predictions(4).splitlines()
    unknown = json.loads(lines[0]) | {"Index": 99}
    wrong = json.loads(lines[2]) | {"outputs": ["Yes", 1, "No", "Yes"]}
    # Wrong answer types fail at parse time, with the line
    with pytest.raises(Invalid) as exc:
        importers.parse_predictions("naturalbench", "\n".join([lines[0], json.dumps(wrong)]))
    assert exc.value.errors == [{"line": 2, "error": "every answer in 'outputs' must be a string"}]
    # Duplicates are caught by the parser
    with pytest.raises(Invalid) as exc:
        importers.parse_predictions("naturalbench", "\n".join([lines[0], lines[1], lines[0]]))
    assert exc.value.errors[0]["line"] == 3 and "duplicate" in exc.value.errors[0]["error"]
    # Unknown ids are caught against the version
    with pytest.raises(Invalid) as exc:
        import_run(version, "\n".join([lines[0], json.dumps(unknown)]))
    assert exc.value.errors == [{"line": 2, "error": "unknown item id '99'"}]
    assert ModelRun.objects.count() == 0 and Prediction.objects.count() == 0


@pytest.mark.django_db
def test_vh_cases_import_pairs_and_score():
    version = make_version("vhexpansion", vh_demo.vh_items(10))
    assert version.item_count == 20
    run = import_run(version, vh_demo.vh_predictions(10, accuracy=1.0))
    values = services.metrics_compute(run=run, rounds=50)
    assert values == {
        "accuracy": 1.0,
        "symmetric_accuracy": 1.0,
        "accuracy_all_cases": 1.0,
        "new_successful": 0.0,
    }
    breakdown = MetricResult.objects.get(run=run, metric="symmetric_accuracy").breakdown
    assert set(breakdown) == {"perturbation", "source"}
    assert breakdown["perturbation"]["original"]["n"] == 2


@pytest.mark.django_db
def test_vh_pair_without_negation_is_refused():
    lines = vh_demo.vh_items(2).splitlines()
    with pytest.raises(Invalid) as exc:
        importers.parse_items("vhexpansion", "\n".join(lines[:3]))
    assert exc.value.errors == [
        {"line": 3, "error": "pair '1' needs exactly one original and one negated case"}
    ]


@pytest.mark.django_db
def test_vh_csv_import():
    csv_text = (
        "id,pair_id,image,question,answer,negated,perturbation,source\n"
        "1a,1,x.jpg,Is there a cat?,yes,false,original,POPE\n"
        "1b,1,x.jpg,Is there no cat?,no,true,original,POPE\n"
    )
    version = make_version("vhexpansion", csv_text, filename="cases.csv")
    rows = importers.parse_predictions("vhexpansion", "id,output\n1a,Yes\n1b,Yes\n", "p.csv")
    run = services.run_import(version=version, model_name="yes-man", rows=rows)
    # The minimal case: one pair, truths yes / no, "Yes" to both. Definition 2 counts the
    # case as given only (1.0); over both cases it is 0.5, shown under its own name.
    assert services.metrics_compute(run=run, rounds=20) == {
        "accuracy": 1.0,
        "symmetric_accuracy": 0.0,
        "accuracy_all_cases": 0.5,
        "new_successful": 1.0,
    }


@pytest.mark.django_db
def test_vh_leaderboard_chance_rows_follow_the_version_labels():
    # 3 of 4 cases as given are "yes" (q = 0.75): an always-"yes" guesser scores q (Theorem 1)
    lines = ["id,pair_id,question,answer,negated"]
    for k, answer in enumerate(("yes", "yes", "yes", "no")):
        flipped = "no" if answer == "yes" else "yes"
        lines += [f"{k}a,{k},Q{k}?,{answer},false", f"{k}b,{k},Not Q{k}?,{flipped},true"]
    version = make_version("vhexpansion", "\n".join(lines) + "\n", filename="cases.csv")
    board = selectors.leaderboard(version)
    refs = {
        ref["label"]: {spec.key: cell["value"] for spec, cell in ref["cells"] if cell}
        for ref in board["references"]
    }
    assert refs["Random guess, P(yes) = 0.5"] == {
        "accuracy": 0.5,
        "symmetric_accuracy": 0.25,
    }
    assert refs["Always “yes”, P(yes) = 1"] == {"accuracy": 0.75, "symmetric_accuracy": 0.0}
    assert refs["Always “no”, P(yes) = 0"]["accuracy"] == pytest.approx(0.25)
    # and an always-"yes" run lands exactly on its chance row
    outputs = "id,output\n" + "".join(f"{k}{s},Yes\n" for k in range(4) for s in "ab")
    rows = importers.parse_predictions("vhexpansion", outputs, "p.csv")
    run = services.run_import(version=version, model_name="yes-man", rows=rows)
    values = services.metrics_compute(run=run, rounds=20)
    assert (values["accuracy"], values["symmetric_accuracy"]) == (0.75, 0.0)
    assert MetricResult.objects.get(run=run, metric="accuracy").details["yes_share"] == 0.75


@pytest.mark.django_db
def test_vh_upgrade_recomputes_runs_stored_before_definition_2():
    # given a run whose results were stored by the old code: "accuracy" over both cases
    version = make_version("vhexpansion", vh_demo.vh_items(10))
    run = import_run(version, vh_demo.vh_predictions(10, accuracy=0.6, p_yes=0.9, seed=5))
    fresh = services.metrics_compute(run=run, rounds=30)
    assert fresh["accuracy"] != fresh["accuracy_all_cases"]
    MetricResult.objects.filter(run=run, metric="accuracy").update(
        value=fresh["accuracy_all_cases"], code_version="old", details={"rounds": 30}
    )
    MetricResult.objects.filter(run=run, metric="accuracy_all_cases").delete()
    # when the data migration runs
    migration = importlib.import_module(
        "evaluation.migrations.0006_vhexpansion_accuracy_definition_2"
    )
    migration.recompute(django_apps, None)
    # then the run reads Definition 2 again, the old number under its own name
    stored = {m.metric: m for m in MetricResult.objects.filter(run=run)}
    assert stored["accuracy"].value == fresh["accuracy"]
    assert stored["accuracy"].code_version == compute.CODE_VERSION
    assert stored["accuracy_all_cases"].value == fresh["accuracy_all_cases"]
    assert stored["accuracy"].details["rounds"] == 30


@pytest.mark.django_db
def test_vlind_data_json_with_predictions_for_two_models():
    data = vlind_demo.vlind_data(14, models={"alpha": 0.9, "beta": 0.6})
    version = make_version("vlind", data)
    assert version.item_count == 14 and version.kept_count == 12  # two have no good image
    with pytest.raises(Invalid):  # two models in the file: the identifier must be named
        importers.parse_predictions("vlind", data)
    run = import_run(version, data, model="alpha", option="alpha")
    assert run.prediction_count == 12
    values = services.metrics_compute(run=run, rounds=30)
    assert set(values) == {"s_ck", "s_vp", "s_cb", "s_lp", "cb", "lp"}


@pytest.mark.django_db
def test_vlind_wrong_answer_type_is_refused():
    data = json.loads(vlind_demo.vlind_data(3, models={"m": 1.0}))
    data[0]["m_pred_b1"] = {"response": "yes", "answer": "Yes"}
    with pytest.raises(Invalid) as exc:
        importers.parse_predictions("vlind", json.dumps(data), option="m")
    assert exc.value.errors[0]["line"] == 1 and "m_pred_b1" in exc.value.errors[0]["error"]


@pytest.mark.django_db
def test_retrieval_scores_import():
    version = make_version("naturalbench_retrieval", retrieval_demo.retrieval_items(5))
    run = import_run(
        version,
        "\n".join(json.dumps({"id": f"p{k}", "scores": [[1, 0], [0, 1]]}) for k in range(5)),
    )
    assert services.metrics_compute(run=run, rounds=20) == {"text": 1.0, "image": 1.0, "group": 1.0}
    with pytest.raises(Invalid) as exc:
        importers.parse_predictions("naturalbench_retrieval", '{"id": "p0", "scores": [1, 2]}')
    assert exc.value.errors[0]["line"] == 1


@pytest.mark.django_db
def test_published_version_is_frozen_and_drafts_are_not():
    version = make_version("vhexpansion", vh_demo.vh_items(2))
    extra = [ItemRow("z", {"pair_id": "z", "negated": False}, 1)]
    with pytest.raises(Conflict):
        services.version_items_add(version=version, rows=extra)
    with pytest.raises(Conflict):
        services.item_delete(item=version.items.first())
    assert BenchmarkVersion.objects.get(pk=version.pk).item_count == 4
    benchmark = version.benchmark
    draft = services.version_create(
        benchmark=benchmark,
        label="draft",
        rows=importers.parse_items("vhexpansion", vh_demo.vh_items(1)),
        publish=False,
    )
    services.version_items_add(version=draft, rows=extra)
    draft.refresh_from_db()
    assert (draft.item_count, draft.frozen) == (3, False)
    with pytest.raises(Conflict):  # labels are unique per benchmark
        services.version_create(benchmark=benchmark, label="draft", rows=extra)
