"""Forms of the VLind-Bench pages: shape only; the services check the meaning."""

from __future__ import annotations

from django import forms
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from curation.gateway.selectors import providers_of
from curation.models import LLMProvider
from curation.recipes.framework.forms import NameForm, RecipeForm, StageForm, count_field

from . import benches, prompts

# The three texts of each example, with their labels.
EXAMPLE_LABELS = {
    "context": gettext_lazy("Context"),
    "true_statement": gettext_lazy("True statement"),
    "false_statement": gettext_lazy("False statement"),
}
EXAMPLE_KEYS = tuple(EXAMPLE_LABELS)


class BenchForm(NameForm):
    triples_per_concept = count_field(
        gettext_lazy("Triples per concept"),
        gettext_lazy("The paper drafted 50 per concept (550 in all)."),
        high=benches.MAX_TRIPLES_PER_CONCEPT,
        initial=50,
    )
    images_per_style = count_field(
        gettext_lazy("Images per style"),
        gettext_lazy("Four photorealistic, four illustration, four cartoon (Sec. 4)."),
        high=prompts.PER_STYLE,
        initial=prompts.PER_STYLE,
    )

    @classmethod
    def initial_new(cls, project) -> dict:
        return {"name": "VLind-Bench"}


class SettingsForm(RecipeForm):
    triples_per_concept = BenchForm.base_fields["triples_per_concept"]
    images_per_style = BenchForm.base_fields["images_per_style"]
    image_provider = forms.ModelChoiceField(
        queryset=LLMProvider.objects.none(),
        required=False,
        label=gettext_lazy("Image endpoint (OpenAI-compatible provider)"),
        empty_label=gettext_lazy("None: upload images"),
    )
    image_model = forms.CharField(
        max_length=200, required=False, label=gettext_lazy("Image model"), initial="dall-e-3"
    )
    image_size = forms.CharField(max_length=20, label=gettext_lazy("Image size"))

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # The OpenAI-compatible providers a bench of the project may generate images with.
        openai = providers_of(self.project).filter(kind=LLMProvider.Kind.OPENAI)
        self.fields["image_provider"].queryset = openai


class ConceptForm(forms.Form):
    description = forms.CharField(max_length=300, required=False, label=gettext_lazy("About"))
    image_hint = forms.CharField(
        max_length=300,
        label=gettext_lazy("How example 1 is depicted"),
        help_text=gettext_lazy("Fills “… and describe it with {…}” in the prompt."),
    )
    active = forms.BooleanField(required=False, initial=True, label=gettext_lazy("Active"))

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for k in range(1, 4):
            for key in EXAMPLE_KEYS:
                self.fields[f"ex{k}_{key}"] = forms.CharField(
                    max_length=prompts.MAX_TEXT,
                    label=EXAMPLE_LABELS[key],
                    widget=forms.Textarea(attrs={"rows": 2}) if key == "context" else None,
                )

    def examples(self) -> list[dict]:
        d = self.cleaned_data
        return [{key: d[f"ex{k}_{key}"] for key in EXAMPLE_KEYS} for k in range(1, 4)]

    def example_rows(self):
        return [[self[f"ex{k}_{key}"] for key in EXAMPLE_KEYS] for k in range(1, 4)]

    @staticmethod
    def initial_for(concept) -> dict:
        initial = {
            "description": concept.description,
            "image_hint": concept.image_hint,
            "active": concept.active,
        }
        for k, ex in enumerate(concept.examples[:3], start=1):
            for key in EXAMPLE_KEYS:
                initial[f"ex{k}_{key}"] = ex.get(key, "")
        return initial


class NewConceptForm(ConceptForm):
    name = forms.CharField(max_length=40, label=gettext_lazy("Concept name"))
    field_order = ["name"]


class DraftForm(StageForm):
    count = count_field(
        gettext_lazy("Triples per concept"), high=benches.MAX_TRIPLES_PER_CONCEPT, required=False
    )

    @classmethod
    def initial_for(cls, obj) -> dict:
        return {"count": obj.triples_per_concept}

    def invalid_message(self) -> str:
        return _("Triples per concept must be a whole number from 1 to %(n)d.") % {
            "n": benches.MAX_TRIPLES_PER_CONCEPT
        }
