"""The NaturalBench forms: shape only; ``pipelines.pipeline_create`` / ``pipeline_update`` check
the meaning."""

from __future__ import annotations

from django import forms
from django.utils.translation import gettext_lazy

from curation.gateway.selectors import providers_of
from curation.models import Corpus, LLMProvider, Scorer
from curation.recipes.framework.forms import RecipeForm, StageForm, count_field

from .models import NaturalBenchPipeline, QuestionType
from .pipelines import (
    DEFAULTS,
    MAX_PEOPLE,
    MAX_REGENERATIONS,
    MIN_CAPTION_CHARS,
    MINING_FIELDS,
)


class PipelineForm(RecipeForm):
    name = forms.CharField(max_length=200, label=gettext_lazy("Name"))
    corpus = forms.ModelChoiceField(queryset=Corpus.objects.none(), label=gettext_lazy("Corpus"))
    language = forms.CharField(
        max_length=35,
        label=gettext_lazy("Caption language"),
        help_text=gettext_lazy("Captions in this language (BCP 47: en, zh, hi) are paired."),
    )
    method = forms.ChoiceField(
        choices=NaturalBenchPipeline.Method.choices,
        label=gettext_lazy("Pairing"),
    )
    scorers = forms.ModelMultipleChoiceField(
        queryset=Scorer.objects.all(),
        required=False,
        widget=forms.CheckboxSelectMultiple,
        label=gettext_lazy("Scorers"),
        help_text=gettext_lazy("Eq. 1: keep the pairs every selected scorer mismatches."),
    )
    random_pairs = count_field(
        gettext_lazy("Random pairs"),
        gettext_lazy("Random baseline only: how many (empty: as many as possible)."),
        required=False,
    )
    caption_max_chars = count_field(
        gettext_lazy("Caption length limit"),
        gettext_lazy(
            "Longer captions are shortened by the LLM before scoring (App. A: 230 for DOCCI)."
        ),
        low=MIN_CAPTION_CHARS,
        required=False,
    )
    question_types = forms.MultipleChoiceField(
        choices=QuestionType.choices,
        widget=forms.CheckboxSelectMultiple,
        label=gettext_lazy("Question types"),
    )
    annotators_per_item = count_field(
        gettext_lazy("Annotators per item"),
        gettext_lazy("The paper used two; a question is kept only if all agree."),
        high=MAX_PEOPLE,
    )
    taggers_per_item = count_field(
        gettext_lazy("Taggers per question"),
        gettext_lazy("Each skill tag is kept when a majority chose it."),
        high=MAX_PEOPLE,
    )
    max_regenerations = count_field(
        gettext_lazy("Maximum regenerations"),
        gettext_lazy("A failed pair is drafted again up to this many times (paper: 3)."),
        low=0,
        high=MAX_REGENERATIONS,
    )
    seed = count_field(gettext_lazy("Seed"), low=0)
    provider = forms.ModelChoiceField(
        queryset=LLMProvider.objects.none(),
        required=False,
        label=gettext_lazy("LLM provider"),
        empty_label=gettext_lazy("The project's default"),
    )
    auto_regenerate = forms.BooleanField(
        required=False,
        label=gettext_lazy("Draft again as soon as an item fails"),
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.obj is not None and self.obj.pairs.exists():
            # Pairs exist: these settings decide them (the form keeps their saved values).
            for name in MINING_FIELDS:
                self.fields[name].disabled = True
        self.fields["corpus"].queryset = Corpus.objects.filter(project=self.project).order_by(
            "name"
        )
        self.fields["provider"].queryset = providers_of(self.project)

    @classmethod
    def initial_new(cls, project) -> dict:
        """The service's defaults (``pipelines.DEFAULTS``) and a name."""
        return {**DEFAULTS, "name": f"NaturalBench {project.name}"}


class ExportForm(StageForm):
    """The export button's optional version label (cut to 60 characters, as before)."""

    label = forms.CharField(required=False)

    def job_params(self) -> dict:
        label = self.cleaned_data.get("label", "").strip()
        return {"label": label[:60]} if label else {}
