"""Annotation quality per queue, per kind and per annotator.

This module only reads: it loads annotations with a bounded number of ``values_list`` queries
(independent of the number of tasks, annotators or queues), turns responses into labels with the
kind registry (``get_kind(queue.kind).vote``) and hands them to the pure functions in
:mod:`annotator.agreement`, where every figure is defined.

- Agreement (percent, Cohen, Fleiss, Krippendorff) uses non-gold annotations only; gold accuracy
  uses gold annotations only; speed figures use every annotation with a reported duration.
- Kinds without votes (``write_text``: collect-only) have no agreement: those figures are None.
- ``agreement_with_outcome``: among an annotator's non-gold answers on *decided* tasks, the share
  equal to the decided label (tasks still open or without a decision have no label to match).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field

from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.db.models import Count, Max, Q, QuerySet

from . import agreement
from .kinds import Kind, get_kind
from .models import Annotation, Enrollment, Task, TaskQueue

NO_LABEL = object()  # a response the kind cannot turn into a vote


def label_of(kind: Kind, response: object) -> Hashable:
    """The canonical category of one response, or NO_LABEL (collect-only kinds, odd data)."""
    if kind.collect_only:
        return NO_LABEL
    try:
        return agreement.canonical_label(kind.vote(response))  # type: ignore[arg-type]
    except (KeyError, TypeError, AttributeError):
        return NO_LABEL


def tags_of(kind: Kind, response: object) -> frozenset | None:
    """A multi-label kind's vote as a set of tags (None for other kinds and odd data)."""
    if not kind.multilabel:
        return None
    try:
        return frozenset(str(t) for t in kind.vote(response))  # type: ignore[arg-type]
    except (KeyError, TypeError, AttributeError):
        return None


def multilabel_figures(sets: dict) -> dict:
    """Set α, mean set similarity and per-tag figures, plus each rater's κ on tag decisions."""
    summary = agreement.set_agreement_summary(sets)
    summary["rater_kappa"] = agreement.rater_kappa(agreement.tag_decision_kappa_pairs(sets))
    return summary


def outcome_label(kind: Kind, label: object) -> Hashable:
    """The canonical category of a decided task's ``outcome["label"]`` (tag lists as sets)."""
    if kind.collect_only or label is None:
        return NO_LABEL
    if kind.multilabel and isinstance(label, list):
        label = frozenset(label)
    return agreement.canonical_label(label)


@dataclass
class _Person:
    """Running totals for one annotator (in one queue, one kind or overall)."""

    n: int = 0
    gold: list = field(default_factory=list)
    durations: list = field(default_factory=list)
    matched: int = 0
    compared: int = 0

    def add(self, *, label, duration_ms, is_gold, gold_correct, decided) -> None:
        self.n += 1
        self.durations.append(duration_ms)
        if is_gold:
            self.gold.append(gold_correct)
        elif decided is not NO_LABEL and label is not NO_LABEL:
            self.compared += 1
            self.matched += int(label == decided)

    def figures(self) -> dict:
        return {
            "n": self.n,
            "gold_answered": len(self.gold),
            "gold_accuracy": agreement.gold_accuracy(self.gold),
            "agreement_with_outcome": self.matched / self.compared if self.compared else None,
            "median_seconds": agreement.median_seconds(self.durations),
            "tasks_per_hour": agreement.tasks_per_hour(self.durations),
        }


@dataclass
class _Pool:
    """Annotations of one queue or one kind, accumulated row by row."""

    collect_only: bool = False
    multilabel: bool = False
    ratings: dict = field(default_factory=lambda: defaultdict(dict))
    sets: dict = field(default_factory=lambda: defaultdict(dict))
    everyone: _Person = field(default_factory=_Person)
    people: dict = field(default_factory=lambda: defaultdict(_Person))
    decided_tasks: int = 0

    def add(
        self, *, task_id, annotator_id, label, duration_ms, is_gold, gold_correct, decided, tags
    ):
        row = {
            "label": label,
            "duration_ms": duration_ms,
            "is_gold": is_gold,
            "gold_correct": gold_correct,
            "decided": decided,
        }
        self.everyone.add(**row)
        self.people[annotator_id].add(**row)
        if not is_gold and label is not NO_LABEL:
            self.ratings[task_id][annotator_id] = label
        if not is_gold and tags is not None:
            self.sets[task_id][annotator_id] = tags

    def figures(self) -> dict:
        everyone = self.everyone.figures()
        out = {
            "percent_agreement": None,
            "cohen_kappa": None,
            "cohen_kappa_pairs": [],
            "fleiss_kappa": None,
            "fleiss_raters": None,
            "krippendorff_alpha": None,
            "n_items_compared": 0,
        }
        if not self.collect_only:
            summary = agreement.agreement_summary(self.ratings)
            out.update(
                {
                    "percent_agreement": summary["percent_agreement"],
                    "cohen_kappa": summary["cohen_kappa"],
                    "cohen_kappa_pairs": [
                        {
                            "annotator_a": p.rater_a,
                            "annotator_b": p.rater_b,
                            "n_shared": p.n_shared,
                            "kappa": p.kappa,
                        }
                        for p in summary["cohen_kappa_pairs"]
                    ],
                    "fleiss_kappa": summary["fleiss_kappa"],
                    "fleiss_raters": summary["fleiss_raters"],
                    "krippendorff_alpha": summary["krippendorff_alpha"],
                    "n_items_compared": summary["n_items"],
                }
            )
        out["multilabel"] = self.multilabel
        if self.multilabel:
            out.update(multilabel_figures(self.sets))
        out.update(
            {
                "gold_accuracy": everyone["gold_accuracy"],
                "gold_answered": everyone["gold_answered"],
                "median_seconds": everyone["median_seconds"],
                "tasks_per_hour": everyone["tasks_per_hour"],
                "n_annotations": everyone["n"],
                "n_annotators": len(self.people),
                "n_tasks_decided": self.decided_tasks,
            }
        )
        return out


def _mean_pair_kappa(pairs: list[dict], annotator_id: int) -> float | None:
    values = [
        p["kappa"]
        for p in pairs
        if p["kappa"] is not None and annotator_id in (p["annotator_a"], p["annotator_b"])
    ]
    return sum(values) / len(values) if values else None


_ROW = ("task_id", "annotator_id", "response", "duration_ms", "is_gold", "gold_correct")


def _decided_labels(queue_kinds: dict[int, Kind]) -> tuple[dict[int, Hashable], dict[int, int]]:
    """task id -> decided label, and queue id -> number of decided tasks (one query)."""
    labels: dict[int, Hashable] = {}
    per_queue: dict[int, int] = defaultdict(int)
    rows = Task.objects.filter(
        queue_id__in=list(queue_kinds), state=Task.State.DECIDED, is_gold=False
    ).values_list("id", "queue_id", "outcome__label")
    for task_id, queue_id, label in rows.iterator(chunk_size=5000):
        labels[task_id] = outcome_label(queue_kinds[queue_id], label)
        per_queue[queue_id] += 1
    return labels, per_queue


def _add_row(
    pool, kind, decided, task_id, annotator_id, response, duration_ms, is_gold, gold_correct
):
    """Add one annotation (a ``_ROW`` of values) to ``pool``."""
    pool.add(
        task_id=task_id,
        annotator_id=annotator_id,
        label=label_of(kind, response),
        duration_ms=duration_ms,
        is_gold=is_gold,
        gold_correct=gold_correct,
        decided=decided.get(task_id, NO_LABEL),
        tags=tags_of(kind, response) if not is_gold else None,
    )


def queue_quality(queue: TaskQueue) -> dict:
    """Every quality figure of one queue, with a row per annotator (5 queries)."""
    kind = get_kind(queue.kind)
    decided, per_queue = _decided_labels({queue.pk: kind})
    pool = _Pool(
        collect_only=kind.collect_only,
        multilabel=kind.multilabel,
        decided_tasks=per_queue.get(queue.pk, 0),
    )
    rows = Annotation.objects.filter(queue=queue).order_by().values_list(*_ROW)
    for row in rows.iterator(chunk_size=5000):
        _add_row(pool, kind, decided, *row)
    out = pool.figures()

    enrollments = {
        annotator_id: (pk, state, reason)
        for pk, annotator_id, state, reason in Enrollment.objects.filter(queue=queue).values_list(
            "id", "annotator_id", "state", "reason"
        )
    }
    ids = set(pool.people) | set(enrollments)
    names = dict(get_user_model().objects.filter(pk__in=ids).values_list("pk", "username"))
    per_annotator = []
    for annotator_id in ids:
        enrollment_id, state, reason = enrollments.get(annotator_id, (None, None, ""))
        person = pool.people[annotator_id] if annotator_id in pool.people else _Person()
        per_annotator.append(
            {
                "annotator_id": annotator_id,
                "username": names.get(annotator_id, ""),
                **person.figures(),
                "cohen_kappa": (
                    out["rater_kappa"].get(annotator_id)
                    if kind.multilabel
                    else _mean_pair_kappa(out["cohen_kappa_pairs"], annotator_id)
                ),
                "enrollment_state": state,
                "enrollment_id": enrollment_id,
                "enrollment_reason": reason,
            }
        )
    per_annotator.sort(key=lambda r: (r["username"], r["annotator_id"]))
    out["per_annotator"] = per_annotator
    out.pop("rater_kappa", None)
    # Settled tasks' outcomes are a curator's; agreement above counts the annotators' answers.
    out["n_tasks_settled"] = Task.objects.filter(queue=queue, settled_at__isnull=False).count()
    return out


def cached_queue_quality(queue: TaskQueue) -> dict:
    """``queue_quality``, cached until the queue gets a new annotation or enrollment change.

    It reads every annotation of the queue (seconds on 100k); the key changes with the newest
    annotation, the annotation count, the newest enrollment change and the newest curator
    settlement, so a cached value is never stale.
    """
    latest = Annotation.objects.filter(queue=queue).aggregate(n=Count("id"), last=Max("id"))
    enrolled = Enrollment.objects.filter(queue=queue).aggregate(last=Max("updated_at"))
    settled = Task.objects.filter(queue=queue, settled_at__isnull=False).aggregate(
        last=Max("settled_at")
    )
    changed = enrolled["last"].timestamp() if enrolled["last"] else 0
    changed += settled["last"].timestamp() if settled["last"] else 0
    key = (
        f"queue-quality:{queue.pk}:{queue.created_at.timestamp()}:"
        f"{latest['n']}:{latest['last']}:{changed}"
    )
    return cache.get_or_set(key, lambda: queue_quality(queue), timeout=3600)


def kind_quality(queues: QuerySet[TaskQueue] | Iterable[TaskQueue]) -> dict[str, dict]:
    """Quality per kind, pooling every annotation of the given queues of that kind (3 queries).

    Items are tasks (unique across queues) and raters are people, so a person who works in two
    queues of one kind is one rater.
    """
    if isinstance(queues, QuerySet):
        pairs = list(queues.order_by().values_list("id", "kind"))
    else:
        pairs = [(q.pk, q.kind) for q in queues]
    queue_kinds = {qid: get_kind(name) for qid, name in pairs}
    if not queue_kinds:
        return {}
    decided, per_queue = _decided_labels(queue_kinds)
    pools: dict[str, _Pool] = {}
    queue_counts: dict[str, int] = defaultdict(int)
    for qid, kind in queue_kinds.items():
        if kind.name not in pools:
            pools[kind.name] = _Pool(collect_only=kind.collect_only, multilabel=kind.multilabel)
        pools[kind.name].decided_tasks += per_queue.get(qid, 0)
        queue_counts[kind.name] += 1
    rows = (
        Annotation.objects.filter(queue_id__in=list(queue_kinds))
        .order_by()
        .values_list("queue_id", *_ROW)
    )
    for queue_id, *row in rows.iterator(chunk_size=5000):
        kind = queue_kinds[queue_id]
        _add_row(pools[kind.name], kind, decided, *row)
    out = {
        name: {"kind": name, "n_queues": queue_counts[name], **pool.figures()}
        for name, pool in sorted(pools.items())
    }
    for figures in out.values():
        figures.pop("rater_kappa", None)
    return out


def annotator_quality(user, queues: QuerySet[TaskQueue] | None = None) -> dict:
    """One annotator's figures overall and per queue (3 queries).

    ``queues`` scopes the answer (e.g. to the queues a curator manages); default: all.
    """
    annotations = Annotation.objects.filter(annotator=user).order_by()
    enrollments = Enrollment.objects.filter(annotator=user)
    if queues is not None:
        annotations = annotations.filter(queue__in=queues)
        enrollments = enrollments.filter(queue__in=queues)
    info = {
        pk: (title, kind, project_id)
        for pk, title, kind, project_id in TaskQueue.objects.filter(
            Q(pk__in=annotations.values("queue_id")) | Q(pk__in=enrollments.values("queue_id"))
        ).values_list("id", "title", "kind", "project_id")
    }
    rows = annotations.values_list(
        "queue_id",
        "response",
        "duration_ms",
        "is_gold",
        "gold_correct",
        "task__state",
        "task__outcome__label",
    )
    standing = {
        queue_id: (pk, state, reason)
        for pk, queue_id, state, reason in enrollments.values_list(
            "id", "queue_id", "state", "reason"
        )
    }
    overall = _Person()
    per_queue: dict[int, _Person] = defaultdict(_Person)
    for queue_id, response, duration_ms, is_gold, gold_correct, state, outcome in rows.iterator(
        chunk_size=5000
    ):
        kind = get_kind(info[queue_id][1])
        decided = outcome_label(kind, outcome) if state == Task.State.DECIDED else NO_LABEL
        row = {
            "label": label_of(kind, response),
            "duration_ms": duration_ms,
            "is_gold": is_gold,
            "gold_correct": gold_correct,
            "decided": decided,
        }
        overall.add(**row)
        per_queue[queue_id].add(**row)
    queues_out = []
    for queue_id, (title, kind_name, project_id) in info.items():
        enrollment_id, state, reason = standing.get(queue_id, (None, None, ""))
        person = per_queue[queue_id] if queue_id in per_queue else _Person()
        queues_out.append(
            {
                "queue_id": queue_id,
                "queue_title": title,
                "kind": kind_name,
                "project_id": project_id,
                **person.figures(),
                "enrollment_state": state,
                "enrollment_id": enrollment_id,
                "enrollment_reason": reason,
            }
        )
    queues_out.sort(key=lambda r: r["queue_id"])
    return {
        "annotator_id": user.pk,
        "username": user.get_username(),
        **overall.figures(),
        "per_queue": queues_out,
    }


def queue_agreement(queue: TaskQueue | None, task_ids: Iterable[int] | None = None) -> dict | None:
    """Agreement of the people on one queue (non-gold answers; only ``task_ids`` when given) as
    ``agreement.agreement_summary`` gives it, without the pairwise kappas, plus ``answers``: how
    many answers it counted; multi-label kinds add the set figures (``multilabel_figures``) and
    each person's κ against the others, people numbered A1, A2, … (the card is published).
    None without a queue. One query."""
    if queue is None:
        return None
    kind = get_kind(queue.kind)
    ratings: dict[int, dict[int, Hashable]] = defaultdict(dict)
    answers = Annotation.objects.filter(queue=queue, is_gold=False)
    if task_ids is not None:
        answers = answers.filter(task_id__in=task_ids)
    sets: dict[int, dict[int, frozenset]] = defaultdict(dict)
    rows = answers.values_list("task_id", "annotator_id", "response")
    for task_id, annotator_id, response in rows.iterator(chunk_size=2000):
        ratings[task_id][annotator_id] = agreement.canonical_label(label_of(kind, response))
        tags = tags_of(kind, response)
        if tags is not None:
            sets[task_id][annotator_id] = tags
    summary = agreement.agreement_summary(ratings)
    summary.pop("cohen_kappa_pairs", None)
    summary["answers"] = sum(len(r) for r in ratings.values())
    summary["multilabel"] = kind.multilabel
    if kind.multilabel:
        summary.update(multilabel_figures(sets))
        # The card is published with the dataset: people are numbered, never named.
        kappas = summary.pop("rater_kappa")
        summary["per_annotator"] = [
            {"annotator": f"A{n}", "cohen_kappa": kappas[pk]}
            for n, pk in enumerate(sorted(kappas), start=1)
        ]
    return summary
