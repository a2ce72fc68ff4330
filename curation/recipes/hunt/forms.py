"""The hunt's forms: shape only; ``rounds`` and ``candidates`` check the meaning."""

from __future__ import annotations

from django import forms
from django.utils.translation import gettext_lazy

from curation.gateway.selectors import providers_of
from curation.models import Corpus, Scorer
from curation.recipes.framework.forms import RecipeForm, count_field

from .models import HuntRound
from .rounds import DEFAULTS


class RoundForm(RecipeForm):
    name = forms.CharField(max_length=200, label=gettext_lazy("Name"))
    corpus = forms.ModelChoiceField(
        queryset=Corpus.objects.none(), label=gettext_lazy("Image pool (a corpus)")
    )
    targets = forms.ModelMultipleChoiceField(
        queryset=None,
        widget=forms.CheckboxSelectMultiple,
        label=gettext_lazy("Target models"),
        help_text=gettext_lazy(
            "Vision providers the hunt tries to fool; an offline provider plays a stand-in."
        ),
    )
    blind = forms.ModelChoiceField(
        queryset=None,
        required=False,
        label=gettext_lazy("Blind model"),
        empty_label=gettext_lazy("Offline blind baseline (question text only)"),
        help_text=gettext_lazy("Gets the question text only, never the image."),
    )
    scorer = forms.ModelChoiceField(
        queryset=Scorer.objects.all(),
        required=False,
        label=gettext_lazy("Scorer for partner images"),
        empty_label=gettext_lazy("None: propose random pool images"),
    )
    question_type = forms.ChoiceField(
        choices=HuntRound.QuestionType.choices, label=gettext_lazy("Question type")
    )
    max_items_per_worker = count_field(gettext_lazy("Questions per worker"))
    max_per_minute = count_field(gettext_lazy("Questions per worker per minute"), high=60)
    points_per_item = count_field(gettext_lazy("Points per validated item"), low=0, high=1000)
    verifiers = count_field(
        gettext_lazy("Verifiers per item"),
        gettext_lazy("Other people who must all give the intended answer (paper: two)."),
        high=5,
    )
    neighbours = count_field(gettext_lazy("Partner images proposed"), high=9)
    hide_targets = forms.BooleanField(
        required=False, label=gettext_lazy("Hide the targets' names from workers")
    )
    instructions = forms.CharField(
        required=False,
        label=gettext_lazy("Instructions for workers (Markdown)"),
        widget=forms.Textarea(attrs={"rows": 3}),
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["corpus"].queryset = Corpus.objects.filter(project=self.project).order_by(
            "name"
        )
        self.fields["targets"].queryset = providers_of(self.project)
        self.fields["blind"].queryset = providers_of(self.project)

    @classmethod
    def initial_new(cls, project) -> dict:
        return {**DEFAULTS, "name": f"Hunt {project.name}"}


class SettingsForm(RoundForm):
    state = forms.ChoiceField(choices=HuntRound.State.choices, label=gettext_lazy("State"))

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        del self.fields["name"], self.fields["corpus"]

    @classmethod
    def initial_for(cls, obj) -> dict:
        initial: dict = {}
        for name in cls.base_fields:
            if name == "targets":
                initial[name] = [t.provider_id for t in obj.targets.all()]
            elif name in ("blind", "scorer"):
                initial[name] = getattr(obj, f"{name}_id")
            elif hasattr(obj, name):
                initial[name] = getattr(obj, name)
        return initial
