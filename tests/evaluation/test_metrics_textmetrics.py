"""Reference-based text metrics (visit-bench.txt Sec. 4.3 baselines)."""

import shutil

import pytest

pytest.importorskip("pycocoevalcap")

from evaluation.metrics import textmetrics as tm  # noqa: E402


def test_tokenize_lowercases_and_splits_punctuation():
    assert tm.tokenize("A cat, sitting.") == "a cat , sitting ."


def test_rouge_l_by_hand():
    # "a b c d" vs "a c d e": LCS = a c d = 3, P = R = 3/4 -> F = 0.75
    # "a b" vs "a b c d": LCS = 2, P = 1, R = 0.5, β = 1.2: F = 2.44·0.5 / (0.5 + 1.44) = 0.628866
    result = tm.rouge_l({"1": "a b c d", "2": "a b"}, {"1": "a c d e", "2": "a b c d"})
    assert result.scores["1"] == pytest.approx(0.75)
    assert result.scores["2"] == pytest.approx(1.22 / 1.94)


def test_bleu4_identical_and_disjoint():
    result = tm.bleu4(
        {"1": "the cat sat on the mat", "2": "x y z w"},
        {"1": "the cat sat on the mat", "2": "a b c d"},
    )
    assert result.scores["1"] == pytest.approx(1.0, abs=1e-6)
    assert result.scores["2"] == pytest.approx(0.0, abs=1e-6)


def test_cider_by_hand():
    # Doc 1's n-grams occur only in doc 1's reference (idf = log 2 > 0) and the candidate is
    # identical, so every n-gram cosine is 1 and CIDEr-D = 10 · 1; doc 2 shares nothing: 0.
    result = tm.cider({"1": "a b c d", "2": "x y z w"}, {"1": "a b c d", "2": "e f g h"})
    assert result.scores["1"] == pytest.approx(10.0)
    assert result.scores["2"] == pytest.approx(0.0)


@pytest.mark.skipif(shutil.which("java") is None, reason="METEOR 1.5 needs java")
def test_meteor_runs_offline():
    result = tm.meteor(
        {"1": "a cat sits on the mat", "2": "zebra quantum"},
        {"1": "a cat sits on the mat", "2": "the dog runs in the park"},
    )
    assert result.available
    assert result.scores["2"] == 0.0
    assert 0.5 < result.scores["1"] <= 1.0


def test_mismatched_ids_are_rejected():
    with pytest.raises(ValueError):
        tm.rouge_l({"1": "a"}, {"2": "a"})


def test_bertscore_without_local_weights_is_unavailable(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    result = tm.bertscore({"1": "a"}, {"1": "a"})
    assert not result.available
    assert result.scores == {}
    assert (
        "not installed" in result.reason or "not in the local Hugging Face cache" in result.reason
    )
    assert not tm.bertscore_weights_present()
