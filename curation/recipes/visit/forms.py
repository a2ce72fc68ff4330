"""Forms of the VisIT-Bench pages: shape only; the services check the meaning."""

from __future__ import annotations

from django import forms
from django.utils.translation import gettext_lazy as _

from annotator.platform.forms import upload_field
from curation.models import LLMProvider
from curation.recipes.framework.forms import RecipeForm, count_field
from curation.recipes.framework.publish import PublishForm as LabelForm
from curation.recipes.framework.settings import settings_of
from evaluation import runners

from . import pipelines


def _area(rows: int) -> forms.Textarea:
    return forms.Textarea(attrs={"rows": rows})


class SettingsForm(RecipeForm):
    caption_min_length = count_field(_("Shortest caption (characters)"), high=2000)
    max_caption_rounds = count_field(_("Caption rewrites after a caption problem"), low=0, high=5)
    reviewers = count_field(_("Reviewers per reference"), high=pipelines.MAX_REVIEWERS)
    votes_per_pair = count_field(_("Votes per tuple"), high=pipelines.MAX_VOTES)

    @classmethod
    def initial_for(cls, obj) -> dict:
        reviewers = obj.review_queue.redundancy if obj.review_queue else 1
        return {**settings_of(obj, cls.base_fields.keys() - {"reviewers"}), "reviewers": reviewers}


class PublishForm(LabelForm):
    benchmark = forms.CharField(
        max_length=200,
        required=False,
        label=_("Benchmark name"),
        help_text=_("Empty: the pipeline's name."),
    )


class ImportForm(forms.Form):
    file = upload_field(
        accept=".csv",
        label=_("Published dataset CSV"),
        help_text=_(
            "single_image_full_dataset.csv layout: instruction_category, image, instruction, "
            "image_dense_captions (or instruction_conditioned_caption), gpt4_prediction, "
            "human_ratings_*, public_images_metadata."
        ),
    )


class CategoryForm(forms.Form):
    name = forms.CharField(max_length=200, label=_("Family name"))
    description = forms.CharField(
        required=False,
        label=_("Description"),
        widget=_area(2),
        help_text=_("The skill it tests, e.g. “Count objects and reason about them”."),
    )
    multi_image = forms.BooleanField(
        required=False, label=_("Multi-image (instances have several images)")
    )
    seed_instruction = forms.CharField(label=_("Example instruction"), widget=_area(2))
    seed_response = forms.CharField(label=_("Example response"), widget=_area(3))
    images = upload_field(accept="image/*", label=_("Example image(s)"), required=False)
    image_urls = forms.CharField(
        required=False, label=_("…or image URLs, one per line"), widget=_area(2)
    )
    licence = forms.CharField(
        required=False, max_length=200, label=_("Licence of the uploaded image(s)")
    )
    source = forms.CharField(
        required=False, max_length=500, label=_("Source of the uploaded image(s)")
    )


class InstructionsForm(forms.Form):
    count = count_field(_("N"), high=pipelines.MAX_INSTRUCTION_TASKS, initial=10)


class ProviderChoice(forms.ModelChoiceField):
    def label_from_instance(self, obj: LLMProvider) -> str:
        return runners.provider_label(obj)


class GenerateForm(forms.Form):
    provider = ProviderChoice(queryset=LLMProvider.objects.none(), label=_("Model"))
    limit = count_field(_("Instances (empty: all verified)"), required=False)

    def __init__(self, *args, providers=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["provider"].queryset = providers


class PairsForm(forms.Form):
    n = count_field(_("Tuples"), high=pipelines.MAX_PAIRS_PER_CALL, initial=20)
    votes = count_field(_("Votes each"), high=pipelines.MAX_VOTES, initial=5)
    seed = count_field(_("Seed"), low=0, initial=0)


class JudgeForm(forms.Form):
    reference_pairs = count_field(_("Instances per model"), high=10000, initial=150)
    seed = count_field(_("Seed"), low=0, initial=0)


class SubmissionForm(forms.Form):
    model = forms.CharField(max_length=200, label=_("Model name"))
    file = upload_field(accept=".csv,.jsonl,.ndjson,.json", label=_("Responses (CSV or JSONL)"))
    reference_pairs = count_field(
        _("Instances judged against the reference"), high=10000, initial=150
    )
    seed = count_field(_("Seed (pairing)"), low=0, initial=0)
