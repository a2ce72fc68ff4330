"""NaturalBench metric rows: a sample the run has no prediction for is wrong everywhere and
counted once as missing, never as four unparseable answers (issue 21, point 7)."""

import pytest

from evaluation.compute import ItemData, PredictionData
from evaluation.families.naturalbench import metric_rows as nb_rows
from evaluation.metrics.naturalbench import A0, A1

ITEMS = [
    ItemData(str(k), {"question_type": "yes_no", "source": "S", "language": "en"}) for k in range(3)
]


def test_missing_sample_is_missing_not_unparseable():
    predictions = {
        "0": PredictionData({}, [A0, A1, A1, A0]),  # all right
        "1": PredictionData({}, [A0, None, A1, A0]),  # one answer with neither word
    }  # "2": no prediction
    out = {r.metric: r for r in nb_rows.rows(ITEMS, predictions, seed=0, rounds=10)}
    assert out["unparseable"].value == 1.0
    assert out["unparseable"].n == 8  # the answers the run gave
    assert out["unparseable"].details["missing_predictions"] == 1
    assert out["acc"].details["missing_predictions"] == 1
    # and the missing sample still counts as wrong: (4 + 3 + 0) / 12
    assert out["acc"].value == pytest.approx(7 / 12)
    assert out["g_acc"].value == pytest.approx(1 / 3)
