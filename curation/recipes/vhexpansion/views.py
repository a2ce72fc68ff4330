"""What VHExpansion adds to the generic recipe pages: the form of the new page's second way in
(a set from the yes/no items of a NaturalBench version, ``Recipe.creates``; its first, a file
import checked now and imported by a job, is the generic new page) and what the funnel page shows
(``detail_context``)."""

from __future__ import annotations

from django.db.models import Q
from django.http import HttpRequest
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from annotator.platform.models import Job
from annotator.platform.scoping import projects_for
from curation import gateway
from curation.models import Scorer
from evaluation.models import BenchmarkVersion

from . import case_sources, selectors
from .forms import NaturalBenchForm
from .negations import REVIEW_QUESTION, negation_template

FORMAT_LABELS = {
    "jsonl": gettext_lazy("JSONL + images (.zip)"),
    "llava": gettext_lazy("LLaVA conversations (.zip)"),
}
# The datasets pages: what each export holds and what reads it (export.py's docstring).
FORMAT_LAYOUTS = {
    "jsonl": gettext_lazy(
        "vhexpansion.jsonl: one line per (case, negated case) and perturbation — id, pair_id, "
        "image, question, answer, negated, perturbation, source, with case_id, negation_of, "
        "variant_of and image_sha256 — and images/<sha256>."
    ),
    "llava": gettext_lazy(
        "llava.json: LLaVA-style conversations (id, image, conversations of human / gpt turns) "
        "for fine-tuning (Sec. 5.4), and images/."
    ),
}
FORMAT_READERS = {
    "jsonl": gettext_lazy(
        "Blindspot's VHExpansion importer (accuracy and symmetric accuracy per perturbation, "
        "Tables 3–5); any JSON-lines reader."
    ),
    "llava": gettext_lazy("LLaVA's training scripts (its conversation format)."),
}


def detail_context(request: HttpRequest, case_set, base: dict) -> dict:
    """The funnel page's own names: samples, the question reviewers are asked, the prompt and
    the drafter."""
    return {
        "review_question": REVIEW_QUESTION,
        "samples": selectors.sample_cases(case_set),
        "has_scorers": Scorer.objects.exists(),
        "template": negation_template(case_set.project),
        "provider": gateway.provider_for(case_set.project),
    }


def naturalbench_form(request: HttpRequest, data=None) -> NaturalBenchForm:
    """The new page's second way in: a set from a NaturalBench version the curator reaches."""
    form = NaturalBenchForm(data)
    mine = Q(benchmark__project__in=projects_for(request.user)) | Q(benchmark__project__isnull=True)
    form.fields["version"].queryset = (
        BenchmarkVersion.objects.filter(mine, benchmark__family=case_sources.NATURALBENCH)
        .select_related("benchmark")
        .order_by("benchmark__name", "-created_at")
    )
    return form


def imported(job: Job) -> str:
    """The message after an upload was checked (the job's total: the cases + one step)."""
    return _("%(n)d test cases checked; job #%(job)d is importing them.") % {
        "n": job.total - 1,
        "job": job.pk,
    }
