"""The VHExpansion demo: a case set from the NaturalBench demo's yes/no samples, negated by the
offline drafter (labelled as such) and waiting in the review queue; perturbed variants made."""

from __future__ import annotations

from annotator.platform.models import Project
from curation.models import VHCaseSet
from curation.models.naturalbench import NaturalBenchVersion

from . import services

NAME = "VHExpansion demo (from NaturalBench demo)"


def vhexpansion_demo(*, project: Project, curator) -> VHCaseSet | None:
    """Made once; later calls return it. Needs the NaturalBench demo's published version."""
    existing = VHCaseSet.objects.filter(project=project, name=NAME).first()
    if existing is not None:
        return existing
    published = (
        NaturalBenchVersion.objects.filter(
            pipeline__project=project, benchmark_version_id__isnull=False
        )
        .order_by("-id")
        .first()
    )
    if published is None:
        return None
    from evaluation.models import BenchmarkVersion

    version = BenchmarkVersion.objects.get(pk=published.benchmark_version_id)
    case_set = services.case_set_from_naturalbench(
        project=project, name=NAME, version=version, created_by=curator
    )
    services.negations_draft(case_set=case_set, created_by=curator)
    return case_set
