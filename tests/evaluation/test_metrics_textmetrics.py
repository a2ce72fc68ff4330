"""Reference-based text metrics (visit-bench.txt Sec. 4.3 baselines)."""

import shutil
import time

import bert_score
import pytest
import torch
from transformers import BertConfig, BertModel, BertTokenizer

from evaluation.metrics import textmetrics as tm

needs_java = pytest.mark.skipif(shutil.which("java") is None, reason="the PTB tokenizer needs java")


@needs_java
def test_ptb_tokenizer_as_the_coco_toolkit_runs_it():
    # Stanford's PTB tokenizer, lower-cased, punctuation dropped (pycocoevalcap's evaluation):
    # clitics split ("is n't", "'s"), brackets as -lrb- / -rrb- (lower-cased, so kept)
    assert tm.tokenize("A cat, sitting.") == "a cat sitting"
    assert (
        tm.tokenize("The cat's mat (red) isn't it?") == "the cat 's mat -lrb- red -rrb- is n't it"
    )
    # A line separator inside a text does not shift the texts after it onto other ids
    out = tm.tokenize_many({"a": "one\u2028two", "b": "Three!", "c": "x\ry"})
    assert out == {"a": "one two", "b": "three", "c": "x y"}


def test_a_tokenizer_that_cannot_run_is_a_reason_not_a_crash(monkeypatch):
    def read_only(self, captions):
        raise PermissionError(13, "Permission denied", "/site-packages/pycocoevalcap/tokenizer")

    monkeypatch.setattr(tm.shutil, "which", lambda name: "/usr/bin/java")
    monkeypatch.setattr(tm.PTBTokenizer, "tokenize", read_only)
    result = tm.rouge_l({"1": "a b"}, {"1": "a b"})
    assert not result.available and "Permission denied" in result.reason


def test_without_java_the_coco_metrics_say_why(monkeypatch):
    monkeypatch.setattr(tm.shutil, "which", lambda name: None)
    for metric in (tm.bleu4, tm.rouge_l, tm.cider, tm.meteor):
        result = metric({"1": "a b"}, {"1": "a b"})
        assert not result.available and "Java runtime" in result.reason
        assert result.scores == {}


@needs_java
def test_rouge_l_by_hand():
    # "a b c d" vs "a c d e": LCS = a c d = 3, P = R = 3/4 -> F = 0.75
    # "a b" vs "a b c d": LCS = 2, P = 1, R = 0.5, β = 1.2: F = 2.44·0.5 / (0.5 + 1.44) = 0.628866
    result = tm.rouge_l({"1": "a b c d", "2": "a b"}, {"1": "a c d e", "2": "a b c d"})
    assert result.scores["1"] == pytest.approx(0.75)
    assert result.scores["2"] == pytest.approx(1.22 / 1.94)


@needs_java
def test_bleu4_identical_and_disjoint():
    result = tm.bleu4(
        {"1": "the cat sat on the mat", "2": "x y z w"},
        {"1": "the cat sat on the mat", "2": "a b c d"},
    )
    assert result.scores["1"] == pytest.approx(1.0, abs=1e-6)
    assert result.scores["2"] == pytest.approx(0.0, abs=1e-6)


@needs_java
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


@pytest.mark.skipif(shutil.which("java") is None, reason="METEOR 1.5 needs java")
def test_meteor_calls_share_one_process_with_the_scores_of_a_fresh_one(monkeypatch):
    candidates = {"1": "a dog sits on a red couch", "2": "two cats on a mat"}
    references = {"1": "a brown dog lies on the couch", "2": "a cat sleeps on a mat"}
    tm.METEOR_PROCESS.stop()
    fresh = tm.meteor(candidates, references).scores  # a process started for this call
    started = tm.METEOR_PROCESS.started
    again = [tm.meteor(candidates, references).scores for _ in range(3)]
    assert tm.METEOR_PROCESS.started == started  # no new process for the later calls
    assert again == [fresh] * 3 and all(0 < s < 1 for s in fresh.values())
    # unused for METEOR_IDLE_S, the process stops; the next call starts another
    monkeypatch.setattr(tm, "METEOR_IDLE_S", 0.2)
    tm.meteor(candidates, references)
    deadline = time.monotonic() + 10
    while tm.METEOR_PROCESS.running and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not tm.METEOR_PROCESS.running
    assert tm.meteor(candidates, references).scores == fresh
    assert tm.METEOR_PROCESS.started == started + 1


@pytest.mark.skipif(shutil.which("java") is None, reason="METEOR 1.5 needs java")
def test_a_meteor_process_that_died_is_replaced():
    tm.meteor({"1": "a cat"}, {"1": "a cat"})
    tm.METEOR_PROCESS._scorer.meteor_p.kill()
    tm.METEOR_PROCESS._scorer.meteor_p.wait()
    result = tm.meteor({"1": "a cat sits on the mat"}, {"1": "a cat sits on the mat"})
    assert result.available and 0.5 < result.scores["1"] <= 1.0


def test_mismatched_ids_are_rejected():
    with pytest.raises(ValueError):
        tm.rouge_l({"1": "a"}, {"2": "a"})


def test_bertscore_without_a_local_model_is_unavailable(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    monkeypatch.delenv(tm.BERTSCORE_ENV, raising=False)
    result = tm.bertscore({"1": "a"}, {"1": "a"})
    assert not result.available
    assert result.scores == {}
    assert tm.BERTSCORE_ENV in result.reason and "roberta-large" in result.reason
    assert not tm.bertscore_weights_present()
    monkeypatch.setenv(tm.BERTSCORE_ENV, str(tmp_path))
    assert "no config.json" in tm.bertscore({"1": "a"}, {"1": "a"}).reason


WORDS = "a the cat dog sat on mat red blue cube cubes there are four three seven is it of".split()


def tiny_bert(folder) -> str:
    """A 2-layer BERT with random weights, built from a config, saved as a model folder."""
    torch.manual_seed(0)
    vocab = folder / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]) + "\n")
    BertTokenizer(str(vocab), model_max_length=64).save_pretrained(folder)
    config = BertConfig(
        vocab_size=5 + len(WORDS),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
    )
    BertModel(config).save_pretrained(folder)
    return str(folder)


@pytest.mark.slow
def test_bertscore_end_to_end_with_a_local_model_folder(tmp_path, monkeypatch):
    # Given a local model folder configured (a tiny random BERT: no weights can be downloaded)
    monkeypatch.setenv(tm.BERTSCORE_ENV, tiny_bert(tmp_path))
    # When bert_score computes F1 through the metric
    result = tm.bertscore(
        {"same": "the cat sat on the mat", "other": "four red cubes"},
        {"same": "the cat sat on the mat", "other": "seven blue cubes there"},
    )
    # Then an identical pair scores 1 (greedy matching of identical embeddings) and another less
    assert result.available
    assert result.scores["same"] == pytest.approx(1.0, abs=1e-5)
    assert 0.0 < result.scores["other"] < 0.999
    # And the number is bert_score's own for that model and layer
    _, _, f1 = bert_score.score(
        ["four red cubes"], ["seven blue cubes there"], model_type=str(tmp_path), num_layers=2
    )
    assert result.scores["other"] == pytest.approx(float(f1[0]), abs=1e-6)
