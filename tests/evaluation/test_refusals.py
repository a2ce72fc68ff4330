"""Refusals that say why (issue 21, point 7): an empty file names what is missing and shows the
expected row; ``leaderboard --sort`` with an unknown metric lists the ones that sort."""

import pytest
from django.core.management.base import CommandError

from annotator.platform.errors import Invalid
from evaluation import importers
from evaluation.families.vhexpansion import demo as vh_demo
from tests.evaluation.helpers import eval_version, evaluate


@pytest.mark.parametrize(
    ("content", "filename", "why"),
    [
        ("", "p.jsonl", "the file is empty"),
        ("  \n\n", "p.jsonl", "the file is empty"),
        ("[]", "p.json", "the JSON array has no entries"),
        ("id,output\n", "p.csv", "the file has no data rows (only a header or blank lines)"),
    ],
)
def test_an_empty_predictions_file_says_why(content, filename, why):
    with pytest.raises(Invalid) as exc:
        importers.parse_predictions("vhexpansion", content, filename)
    assert exc.value.message == f"The file holds no predictions: {why}."
    [error] = exc.value.errors
    assert error["line"] == 0
    assert error["error"].startswith(why + "; expected one prediction per row, e.g. {")


def test_an_empty_items_file_says_why():
    with pytest.raises(Invalid, match="The file holds no items: the file is empty."):
        importers.parse_items("naturalbench", "\n", "nb.jsonl")


@pytest.mark.django_db
def test_leaderboard_sort_by_an_unknown_metric_is_refused_listing_the_keys():
    version = eval_version(
        "vhexpansion", "VH", importers.parse_items("vhexpansion", vh_demo.vh_items(2))
    )
    with pytest.raises(CommandError) as exc:
        evaluate("leaderboard", str(version.pk), "--sort", "nosuch")
    assert str(exc.value) == (
        "Unknown --sort 'nosuch': VH sorts by accuracy, symmetric_accuracy, new_successful"
    )
    assert "sorted by accuracy" in evaluate("leaderboard", str(version.pk), "--sort", "accuracy")
