"""The real VisIT-Bench CSVs import through the family's parser; the 529-instance filter holds."""

import pytest
from django.urls import reverse

from annotator.platform import roles
from annotator.platform.errors import Invalid
from evaluation import importers, services
from evaluation.families.visit import parse as visit_parse
from evaluation.models import BenchmarkItem, MetricResult, Prediction
from tests.evaluation.helpers import eval_version, login
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
