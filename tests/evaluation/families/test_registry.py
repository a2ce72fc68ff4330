"""The family registry: the five published families in their order, and what generic code asks."""

import pytest

from annotator.platform.errors import Invalid
from evaluation import importers, registry
from evaluation.registry import LLMRunner, ScorerRunner


def test_the_five_families_keep_their_keys_labels_and_order():
    assert registry.choices() == [
        ("naturalbench", "NaturalBench"),
        ("naturalbench_retrieval", "NaturalBench-Retrieval"),
        ("vhexpansion", "VHExpansion"),
        ("vlind", "VLind-Bench"),
        ("visit", "VisIT-Bench"),
    ]
    assert registry.label_of("vlind") == "VLind-Bench"
    assert registry.label_of("gone") == "gone"


def test_each_family_declares_its_metrics_and_runner():
    primary = {f.key: f.primary for f in registry.families()}
    assert primary == {
        "naturalbench": "g_acc",
        "naturalbench_retrieval": "group",
        "vhexpansion": "symmetric_accuracy",
        "vlind": "s_lp",
        "visit": "elo_length",
    }
    for family in registry.families():
        assert family.primary in family.spec_map()
        assert set(family.formats) == {"items", "predictions"}
    runners = {f.key: type(f.runner) for f in registry.families()}
    assert runners["naturalbench_retrieval"] is ScorerRunner
    assert {runners[k] for k in ("naturalbench", "vhexpansion", "vlind", "visit")} == {LLMRunner}
    assert [f.key for f in registry.families() if f.pairwise] == ["visit"]


def test_unknown_families_and_missing_pairwise_are_refused():
    with pytest.raises(Invalid, match="Unknown benchmark family 'nope'"):
        importers.parse_items("nope", "{}")
    with pytest.raises(Invalid, match="Pairwise judgments belong to VisIT-Bench versions."):
        registry.pairwise_of("vlind")


def test_a_family_registers_once():
    family = registry.family_of("vlind")
    with pytest.raises(ValueError, match="already registered"):
        registry.register(family)
