"""Reads for the VHExpansion pages (the sets themselves are scoped by the framework's
``objects_for``: curators and admins see the sets of their projects)."""

from __future__ import annotations

from collections import Counter

from django.db.models import Count, Prefetch, Q, QuerySet

from curation.recipes.framework.selectors import count_by, in_state

from .export import perturbation_label, perturbation_sort_key
from .models import VHCase, VHCaseSet, VHNegation, VHVariant
from .variants import ADVERSARIAL_METHODS, common_perturbations


def case_states(case_set: VHCaseSet) -> tuple[Counter, int]:
    """Cases per negation state, and all of them (one query)."""
    states = count_by(case_set.cases, "negation_state")
    return states, states.total()


def funnel(case_set: VHCaseSet) -> dict:
    """Counts of the expansion funnel: cases → negations drafted → accepted → variants per
    perturbation → adversarial done. Five aggregate queries whatever the set's size."""
    states, cases = case_states(case_set)
    yes = case_set.cases.filter(answer=VHCase.Answer.YES).count()
    drafted = VHNegation.objects.filter(case__case_set=case_set)
    negations = count_by(drafted, "status")
    drafted_cases = drafted.values("case_id").distinct().count()
    per_perturbation = {
        name: {"cases": total, "paired": paired}
        for name, paired, total in (
            VHVariant.objects.filter(case__case_set=case_set)
            .values_list("perturbation")
            .annotate(
                accepted=Count("id", filter=Q(case__negation_state=VHCase.NegationState.ACCEPTED)),
                total=Count("id"),
            )
            .order_by()
        )
    }
    decided = negations[VHNegation.Status.ACCEPTED] + negations[VHNegation.Status.REJECTED]
    accepted = states[VHCase.NegationState.ACCEPTED]
    names = [*common_perturbations(), *ADVERSARIAL_METHODS]
    names += sorted(set(per_perturbation) - set(names))
    rows = [
        {
            "name": name,
            "label": perturbation_label(name),
            "kind": "adversarial" if name in ADVERSARIAL_METHODS else "common",
            **per_perturbation.get(name, {"cases": 0, "paired": 0}),
        }
        for name in names
    ]
    return {
        "cases": cases,
        "yes": yes,
        "yes_share": yes / cases if cases else None,
        "states": {s: states[s] for s in VHCase.NegationState.values},
        "drafted": drafted_cases,
        "negations": {s: negations[s] for s in VHNegation.Status.values},
        "accepted": accepted,
        "reviewed": decided,
        "acceptance_rate": negations[VHNegation.Status.ACCEPTED] / decided if decided else None,
        "perturbations": rows,
        "pairs": accepted + sum(r["paired"] for r in rows),
    }


def sample_cases(case_set: VHCaseSet, *, limit: int = 6) -> list[VHCase]:
    """Cases to show side by side with their variants: ones with variants first. Three queries."""
    with_variants = case_set.cases.filter(variants__isnull=False).distinct()
    ids = list(with_variants.order_by("position").values_list("pk", flat=True)[:limit])
    if len(ids) < limit:
        ids += list(
            case_set.cases.exclude(pk__in=ids)
            .order_by("position")
            .values_list("pk", flat=True)[: limit - len(ids)]
        )
    cases = list(
        VHCase.objects.filter(pk__in=ids)
        .select_related("image")
        .prefetch_related(
            Prefetch("variants", queryset=VHVariant.objects.select_related("image")),
            Prefetch(
                "negations",
                queryset=VHNegation.objects.exclude(status=VHNegation.Status.DISCARDED).order_by(
                    "-attempt"
                ),
            ),
        )
        .order_by("position")
    )
    for case in cases:
        case.sorted_variants = sorted(
            case.variants.all(), key=lambda v: perturbation_sort_key(v.perturbation)
        )
        for variant in case.sorted_variants:
            variant.label = perturbation_label(variant.perturbation)
            variant.linf_255 = variant.linf * 255 if variant.linf is not None else None
        negations = list(case.negations.all())
        case.latest_negation = negations[0] if negations else None
    return cases


def cases_page(case_set: VHCaseSet, state: str = "") -> QuerySet[VHCase]:
    qs = case_set.cases.select_related("image").prefetch_related(
        Prefetch("negations", queryset=VHNegation.objects.order_by("attempt"))
    )
    return in_state(qs, "negation_state", state).order_by("position")
