"""Aggregation rules for a task's responses. Pure: no Django import."""

from collections import Counter
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

UNANIMOUS = "unanimous"
MAJORITY = "majority"
PLURALITY = "plurality"
RULES = (UNANIMOUS, MAJORITY, PLURALITY)


@dataclass(frozen=True)
class Decision:
    """The outcome of one task: ``decided`` False means the rule found no decision."""

    decided: bool
    label: Hashable | None
    agreement: float | None
    counts: dict


def decide(labels: Sequence[Hashable], rule: str) -> Decision:
    """Apply ``rule`` to one task's labels.

    unanimous: every label equal; majority: one label has more than half the votes;
    plurality: one label has strictly more votes than any other. Agreement is the share of
    votes for the most frequent label (1.0 when unanimous), also reported with no decision.
    """
    if rule not in RULES:
        raise ValueError(f"unknown aggregation rule {rule!r}")
    if not labels:
        return Decision(False, None, None, {})
    counts = Counter(labels)
    ranked = counts.most_common()
    top_label, top = ranked[0]
    runner_up = ranked[1][1] if len(ranked) > 1 else 0
    n = len(labels)
    agreement = top / n
    if rule == UNANIMOUS:
        ok = top == n
    elif rule == MAJORITY:
        ok = top * 2 > n
    else:
        ok = top > runner_up
    return Decision(ok, top_label if ok else None, agreement, {str(k): v for k, v in ranked})


def decide_multilabel(label_sets: Sequence[frozenset], rule: str) -> Decision:
    """Multi-label kinds (skill tags): each tag is kept or dropped by ``rule`` on its own.

    unanimous keeps tags everyone chose; majority keeps tags more than half chose; plurality
    keeps the tags with the highest count. An empty kept set is no decision. Agreement is the
    mean Jaccard similarity between each response and the kept set.
    """
    if rule not in RULES:
        raise ValueError(f"unknown aggregation rule {rule!r}")
    n = len(label_sets)
    if not n:
        return Decision(False, None, None, {})
    counts = Counter(tag for s in label_sets for tag in s)
    if rule == UNANIMOUS:
        kept = {t for t, c in counts.items() if c == n}
    elif rule == MAJORITY:
        kept = {t for t, c in counts.items() if c * 2 > n}
    else:
        best = max(counts.values(), default=0)
        kept = {t for t, c in counts.items() if c == best}
    basis = kept or set(counts)
    jaccard = [len(s & basis) / len(s | basis) if (s | basis) else 1.0 for s in label_sets]
    agreement = sum(jaccard) / n
    counts_out = {str(k): v for k, v in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))}
    label = frozenset(kept) if kept else None
    return Decision(bool(kept), label, agreement, counts_out)
