"""The real VisIT-Bench CSVs import through the family's parser; the 529-instance filter holds."""

import pytest
from django.urls import reverse

from annotator.platform import roles
from annotator.platform.errors import Invalid
from evaluation import importers, services
from evaluation.families.visit import parse as visit_parse
from evaluation.models import BenchmarkItem, MetricResult, Prediction
from tests.evaluation.helpers import eval_version, evaluate, login
from tests.paths import VISIT_BENCH, needs

FIXTURES = VISIT_BENCH
MODELS = {
    "llava13b_output.csv": ("LLaVA-13B", 577),
    "PandaGPT_13b_out.csv": ("PandaGPT-13B", 578),
    "instruct_blip_13b_out.csv": ("InstructBLIP-13B", 578),
}
pytestmark = needs(FIXTURES)


def _read(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def test_dataset_csv_parses_into_578_items_with_529_kept():
    rows = visit_parse.parse_items(_read("single_image_full_dataset.csv"))
    assert len(rows) == 578
    assert sum(r.kept for r in rows) == 529
    assert len({r.item_id for r in rows}) == 578  # the repeated instance gets a "~2" id
    assert sum(1 for r in rows if r.item_id.endswith("~2")) == 1


@pytest.fixture
def visit_version(db):
    return eval_version(
        "visit",
        "VisIT-Bench",
        visit_parse.parse_items(_read("single_image_full_dataset.csv")),
        label="single-image",
    )


def test_real_csvs_import_as_a_version_and_three_runs(visit_version):
    assert (visit_version.item_count, visit_version.kept_count, visit_version.frozen) == (
        578,
        529,
        True,
    )
    assert BenchmarkItem.objects.filter(version=visit_version, kept=True).count() == 529
    runs = []
    for filename, (model, expected) in MODELS.items():
        rows = importers.parse_predictions("visit", _read(filename), filename)
        run = services.run_import(version=visit_version, model_name=model, rows=rows)
        assert Prediction.objects.filter(run=run).count() == expected
        runs.append(run)
    # When metrics are computed (text metrics off: METEOR's jar takes minutes)
    values = services.metrics_compute(run=runs[0], rounds=100, text_metrics=False)
    # Then the per-run numbers use the kept instances the run answered
    mean_length = MetricResult.objects.get(run=runs[0], metric="mean_length")
    assert mean_length.n == 528  # LLaVA's file has the repeated instance once
    assert values["mean_length"] == pytest.approx(95.30, abs=0.01)
    assert mean_length.interval_low < mean_length.value < mean_length.interval_high
    # And every run of the version gets a length-baseline Elo with an interval
    elo = {
        m.run.model.name: m
        for m in MetricResult.objects.filter(metric="elo_length").select_related("run__model")
    }
    assert set(elo) == {"LLaVA-13B", "PandaGPT-13B", "InstructBLIP-13B"}
    # ranked by online Elo (the sandbox's one pass, seed 1), the bootstrap median beside it
    assert elo["LLaVA-13B"].value > elo["PandaGPT-13B"].value > elo["InstructBLIP-13B"].value
    boot = {
        m.run.model.name: m
        for m in MetricResult.objects.filter(metric="elo_length_bootstrap").select_related(
            "run__model"
        )
    }
    assert all(m.interval_low <= m.value <= m.interval_high for m in boot.values())
    details = elo["LLaVA-13B"].details
    # players are model names and the reference says where it came from (the published file)
    assert details["players"] == sorted([*elo, "GPT-4 reference (published, human-verified)"])
    assert details["online_seed"] == 1 and details["seed_rule"] == "sha256(battles)[:4]"


def _length_board(version) -> dict:
    """Every run's length-baseline ratings on ``version``, by model name."""
    runs = []
    for filename, (model, _n) in MODELS.items():
        rows = importers.parse_predictions("visit", _read(filename), filename)
        runs.append(services.run_import(version=version, model_name=model, rows=rows))
    services.metrics_compute(run=runs[0], rounds=50, text_metrics=False)
    return {
        (m.run.model.name, m.metric): (m.value, m.interval_low, m.interval_high, m.details)
        for m in MetricResult.objects.filter(
            run__version=version, metric__in=["elo_length", "elo_length_bootstrap"]
        ).select_related("run__model")
    }


def test_same_data_gives_the_same_elo_whatever_the_database_ids(visit_version):
    # Given the same files imported twice, the second time after other rows took ids (as in a
    # second database whose ids differ)
    first = _length_board(visit_version)
    items = visit_parse.parse_items(_read("single_image_full_dataset.csv"))
    for k in range(3):
        eval_version("visit", f"Other {k}", items[:5], label="x")
    again = eval_version("visit", "VisIT-Bench again", items, label="single-image")
    assert again.pk != visit_version.pk
    second = _length_board(again)
    # Then online Elo, bootstrap median, interval and the recorded seed are identical
    assert first == second
    assert len(first) == 6


def test_model_csv_rows_not_in_the_version_are_refused(visit_version):
    content = _read("llava13b_output.csv").replace(
        "What should a person visiting this location wear on their head?",
        "What should a visitor wear?",
        1,
    )
    rows = importers.parse_predictions("visit", content, "llava13b_output.csv")
    with pytest.raises(Invalid) as exc:
        services.run_import(version=visit_version, model_name="LLaVA-13B", rows=rows)
    assert exc.value.errors[0]["error"].startswith("unknown item id")
    assert exc.value.errors[0]["line"] > 1
    assert Prediction.objects.count() == 0


def test_version_page_shows_table_2_for_an_imported_version(client, visit_version):
    # Given the published dataset imported as a version (no pipeline behind it)
    login(client, roles.CURATOR)
    # When its page is read
    response = client.get(reverse("eval-version", args=[visit_version.pk]))
    body = response.content.decode()
    # Then Table 2's shares come from its human_ratings_* flags: of 578 rated references,
    # 529 correct (91.5%), 21 with a problem in the caption (3.6%), 22 in the GPT-4 output
    # (3.8%): the paper's single-image column (Sec. 2.2, Table 2)
    assert response.status_code == 200
    assert "Reference verification (Table 2)" in body
    assert "GPT-4 reference (published, human-verified)" in body
    table = body[body.index("eval-table2") :]
    for share in ("91.5", "3.6", "3.8", "578"):
        assert f'<td class="num">{share}</td>' in table


# The six Lynx rows whose instruction was mangled in transit (the sandbox matches 572 of 578).
LYNX_SKIPPED = [23, 69, 347, 412, 502, 915]
# Every published model file (the sandbox's full_model_predictions/ copies): its output column by
# the sandbox's rule, the rows imported and those skipped as matching no instance.
PUBLISHED = {
    "llava13b_output.csv": ("llava13b_output", 577, []),
    "PandaGPT_13b_out.csv": ("panda_gpt_13b_output", 578, []),
    "instruct_blip_13b_out.csv": ("instruct_blip_output", 578, []),
    "openflamingo_single_fixed.csv": ("openflamingo", 578, []),
    "lynx_predictions.csv": ("Lynx(8B) predictions", 572, LYNX_SKIPPED),
}


@pytest.mark.parametrize("filename", sorted(PUBLISHED))
def test_every_published_model_file_imports_by_the_sandbox_rule(visit_version, filename):
    column, imported, skipped = PUBLISHED[filename]
    content = _read(filename)
    # The output column is the one outside the sandbox's known non-output columns
    assert visit_parse.prediction_column(content) == column
    rows = importers.parse_predictions("visit", content, filename)
    # With tolerant matching, rows that match no instance are skipped, counted, by line
    run = services.run_import(
        version=visit_version, model_name=column, rows=rows, skip_unmatched=True
    )
    assert run.prediction_count == imported == Prediction.objects.filter(run=run).count()
    assert run.prompt_settings["unmatched"] == {
        "skipped_count": len(skipped),
        "skipped_lines": skipped,
    }


def test_lynx_is_refused_whole_without_tolerant_matching(visit_version):
    rows = importers.parse_predictions("visit", _read("lynx_predictions.csv"), "lynx.csv")
    with pytest.raises(Invalid) as exc:
        services.run_import(version=visit_version, model_name="Lynx", rows=rows)
    # all or nothing by default: every unmatched line named, the way out said, nothing stored
    assert [e["line"] for e in exc.value.errors] == LYNX_SKIPPED
    assert "tolerant matching" in str(exc.value)
    assert Prediction.objects.count() == 0


def test_a_file_with_two_unknown_columns_names_them():
    content = "image,instruction,human_ratings_x,Unnamed: 3,out_a,out_b\nu,Do it.,1,2,x,y\n"
    with pytest.raises(Invalid) as exc:
        importers.parse_predictions("visit", content, "panda.csv")
    error = exc.value.errors[0]
    assert error["line"] == 1
    assert "outside the known dataset columns are out_a, out_b" in error["error"]


def test_tolerant_matching_is_a_choice_on_the_import_page_and_in_the_cli(
    client, visit_version, tmp_path
):
    # The import page offers it, off by default (all or nothing)
    login(client, roles.CURATOR)
    url = reverse("eval-run-import", args=[visit_version.pk])
    body = client.get(url).content.decode()
    assert 'name="skip_unmatched"' in body and "Tolerant matching" in body
    # Submitted without it, Lynx is refused with its line numbers and nothing is stored
    text = _read("lynx_predictions.csv")
    response = client.post(url, {"model": "Lynx", "text": text, "seed": 0})
    assert response.status_code == 400
    assert "unknown item id" in response.content.decode()
    assert "choose tolerant matching" in response.content.decode()
    assert Prediction.objects.count() == 0
    # The CLI's --skip-unmatched imports 572 rows and reports the 6 it skipped, by line
    path = tmp_path / "lynx_predictions.csv"
    path.write_text(text, encoding="utf-8")
    out = evaluate(
        "import-run",
        str(visit_version.pk),
        str(path),
        "--model",
        "Lynx",
        "--skip-unmatched",
        "--no-compute",
    )
    assert "572 predictions" in out
    assert "skipped 6 rows that match no item (lines: 23, 69, 347, 412, 502, 915)" in out
