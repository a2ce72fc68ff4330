"""The VHExpansion demo: a case set from the NaturalBench demo's yes/no samples, negated by the
offline drafter (labelled as such) and waiting in the review queue."""

from __future__ import annotations

from annotator.platform.models import Project
from curation.recipes.framework.demo import demo_once
from evaluation.models import BenchmarkVersion

from .case_sources import NATURALBENCH, case_set_from_naturalbench
from .models import VHCaseSet
from .negations import negations_draft

NAME = "VHExpansion demo (from NaturalBench demo)"


@demo_once(VHCaseSet, NAME)
def vhexpansion_demo(*, project: Project, curator) -> VHCaseSet | None:
    """Made once; later calls return it. Needs a NaturalBench version published in the project
    (the NaturalBench demo's, which runs first); read from the evaluation app, as any set made
    from NaturalBench is."""
    version = (
        BenchmarkVersion.objects.filter(
            benchmark__project=project, benchmark__family=NATURALBENCH, published_at__isnull=False
        )
        .order_by("-id")
        .first()
    )
    if version is None:
        return None
    case_set = case_set_from_naturalbench(
        project=project, name=NAME, version=version, created_by=curator
    )
    negations_draft(case_set=case_set, created_by=curator)
    return case_set
