"""The VHExpansion forms: shape only; the services check the meaning."""

from __future__ import annotations

from django import forms
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from annotator.platform.views import first_error
from curation.models import Scorer
from curation.recipes.framework.forms import NameForm, RecipeForm, StageForm, count_field

from . import variants
from .export import perturbation_label
from .negations import DEFAULT_REVIEWERS, MAX_ATTEMPTS, MAX_REVIEWERS
from .variants import BRANCH_ALL, BRANCH_CASE, BRANCH_NONE, BRANCH_RUN, common_perturbations


def _default_scorer() -> int | None:
    return Scorer.objects.filter(is_default=True).values_list("pk", flat=True).first()


class ImportForm(NameForm):
    field_order = ["name", "table", "archive", "description"]
    name = forms.CharField(max_length=200, label=gettext_lazy("Name of the set"))
    table = forms.FileField(
        label=gettext_lazy("Test cases (JSONL or CSV)"),
        help_text=gettext_lazy(
            "One case per line: id, image, question, answer (yes/no), optional source, category "
            "and triggers_vh. image is a file of the archive, or sha256:<hex> of a stored image "
            "(or give image_id)."
        ),
        widget=forms.ClearableFileInput(attrs={"accept": ".jsonl,.ndjson,.json,.csv"}),
    )
    archive = forms.FileField(
        required=False,
        label=gettext_lazy("Images (zip or tar archive, optional)"),
        help_text=gettext_lazy("Not needed when every row names a stored image."),
        widget=forms.ClearableFileInput(attrs={"accept": ".zip,.tar,.gz,.tgz,.bz2,.xz"}),
    )


class NaturalBenchForm(forms.Form):
    name = forms.CharField(max_length=200, label=gettext_lazy("Name of the set"))
    version = forms.ModelChoiceField(
        queryset=None, label=gettext_lazy("NaturalBench version"), empty_label=None
    )


class SettingsForm(RecipeForm):
    reviewers = count_field(
        gettext_lazy("Reviewers per negation (N)"),
        gettext_lazy("The paper used four annotators; an even N breaks ties with one more."),
        high=MAX_REVIEWERS,
    )
    max_attempts = count_field(
        gettext_lazy("Drafts per case"),
        gettext_lazy("A rejected negation is drafted again until this many, then dropped."),
        high=MAX_ATTEMPTS,
    )

    @classmethod
    def initial_for(cls, obj) -> dict:
        queue = obj.review_queue
        return {
            "reviewers": queue.redundancy if queue else DEFAULT_REVIEWERS,
            "max_attempts": obj.max_attempts,
        }

    def invalid_message(self) -> str:
        return _("Reviewers and drafts must be whole numbers from 1 to 10.")


class PerturbForm(StageForm):
    perturbations = forms.MultipleChoiceField(
        choices=lambda: [(name, perturbation_label(name)) for name in common_perturbations()],
        initial=common_perturbations,
        widget=forms.CheckboxSelectMultiple,
        label=gettext_lazy("Perturbations"),
    )
    seed = count_field(gettext_lazy("Seed (noise)"), low=0, initial=0)

    def job_params(self) -> dict:
        return {**super().job_params(), "params": {}}

    def invalid_message(self) -> str:
        return _("Choose at least one perturbation.")


class AdversarialForm(StageForm):
    scorer = forms.ModelChoiceField(
        queryset=Scorer.objects.all(),
        label=gettext_lazy("Vision encoder (scorer)"),
        empty_label=None,
        initial=_default_scorer,  # a callable: read only when the form is shown
    )
    method = forms.ChoiceField(
        choices=[("ifgsm", "I-FGSM"), ("pgd", "PGD")], label=gettext_lazy("Method")
    )
    branch = forms.ChoiceField(
        choices=[
            (BRANCH_CASE, gettext_lazy("Per case (import column)")),
            (BRANCH_RUN, gettext_lazy("From a model run")),
            (BRANCH_NONE, gettext_lazy("No case triggers VH")),
            (BRANCH_ALL, gettext_lazy("Every case triggers VH")),
        ],
        label=gettext_lazy("Which branch of Eq. 1"),
        help_text=gettext_lazy(
            "A case that triggers VH is pulled close (100 steps); one that does not is pushed "
            "away (500 steps). Per case: the import's triggers_vh column, unknown counts as no."
        ),
    )
    run = forms.ModelChoiceField(
        queryset=None, required=False, label=gettext_lazy("Model run"), empty_label="—"
    )
    steps = count_field(
        gettext_lazy("Steps (empty: the paper's 500 / 100)"), high=5000, required=False
    )
    seed = count_field(gettext_lazy("Seed"), low=0, initial=0)

    def __init__(self, *args, obj=None, **kwargs):
        super().__init__(*args, obj=obj, **kwargs)
        self.fields["run"].queryset = variants.runs_for(obj)  # the framework passes the set

    def invalid_message(self) -> str:
        return _("The attack settings are not valid: %(e)s") % {"e": first_error(self)}
