"""The forms of the evaluation pages: imports, model and scorer runs, the pairwise judge.

A family adds its own run options to the run form (``runner.options``); the benchmark family
choice is the registry's."""

from __future__ import annotations

from django import forms
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from annotator.platform.forms import INT_MAX, FileOrTextForm, model_bounds
from annotator.platform.models import Project
from curation.gateway.providers import provider_offline
from curation.models import LLMProvider, Scorer

from .. import selectors
from ..models import BenchmarkVersion, JudgmentSet, ModelRun
from ..registry import PairJudge, PredictionOption, choices, family_of
from ..runners import provider_is_blind, provider_label

MAX_UPLOAD = 50 * 1024 * 1024


class ImportForm(FileOrTextForm):
    """A benchmark file uploaded or pasted (the platform's labels and message), up to 50 MB of
    UTF-8 text."""

    def clean(self):
        data = super().clean()
        upload = data.get("file")
        if upload and upload.size > MAX_UPLOAD:
            raise forms.ValidationError(_("The file is larger than 50 MB."))
        return data

    def content(self) -> tuple[str, str]:
        upload = self.cleaned_data.get("file")
        if upload:
            raw = upload.read()
            try:
                return raw.decode("utf-8-sig"), upload.name
            except UnicodeDecodeError as exc:
                raise forms.ValidationError(_("The file is not UTF-8 text.")) from exc
        return self.cleaned_data["text"], ""


class VersionImportForm(ImportForm):
    project = forms.ModelChoiceField(
        label=gettext_lazy("Project"),
        queryset=Project.objects.none(),
        error_messages={"invalid_choice": gettext_lazy("Choose one of the projects you curate.")},
    )
    family = forms.ChoiceField(label=gettext_lazy("Benchmark family"), choices=choices)
    benchmark = forms.CharField(
        label=gettext_lazy("Benchmark name"),
        max_length=200,
        help_text=gettext_lazy("An existing benchmark of this family gets a new version."),
    )
    label = forms.CharField(label=gettext_lazy("Version label"), max_length=60, initial="v1")
    publish = forms.BooleanField(
        label=gettext_lazy("Publish now (freeze the items)"), required=False, initial=True
    )
    field_order = ["project", "family", "benchmark", "label", "file", "text", "publish"]

    def __init__(self, *args, user, **kwargs):
        super().__init__(*args, **kwargs)
        projects = selectors.curated_projects(user)
        self.fields["project"].queryset = projects
        self.fields["benchmark"].help_text = gettext_lazy(
            "An existing benchmark of this family in the project gets a new version."
        )
        if len(projects) == 1:
            self.fields["project"].initial = projects[0].pk


class RunImportForm(ImportForm):
    model = forms.CharField(label=gettext_lazy("Model name"), max_length=200)
    label = forms.CharField(
        label=gettext_lazy("Run label"),
        max_length=120,
        required=False,
        help_text=gettext_lazy("Tells two runs of the same model apart (prompt, settings)."),
    )
    option = forms.CharField(
        label=gettext_lazy("Output column / model identifier"),
        max_length=200,
        required=False,
    )
    seed = forms.IntegerField(
        label=gettext_lazy("Bootstrap seed"), initial=0, **model_bounds(ModelRun, "seed", low=0)
    )

    skip_unmatched = forms.BooleanField(
        label=gettext_lazy("Tolerant matching: skip rows that match no item"),
        required=False,
        help_text=gettext_lazy(
            "Off: the file imports all or nothing. On: rows that match no item of the version "
            "are skipped, and their count and line numbers are reported (as a paper's own "
            "code skips rows whose text was mangled in transit)."
        ),
    )
    field_order = ["model", "label", "file", "text", "option", "seed", "skip_unmatched"]

    def __init__(self, *args, option: PredictionOption | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        # The family names what its files need (a response column, a model identifier).
        if option is not None:
            self.fields["option"].help_text = f"{option.label}: {option.help}"


class JudgmentImportForm(ImportForm):
    kind = forms.ChoiceField(
        label=gettext_lazy("Judgments"),
        choices=[
            ("llm", gettext_lazy("LLM judge battles (head-to-head JSON / JSONL)")),
            ("human", gettext_lazy("Crowd votes (human preferences CSV)")),
        ],
    )
    label = forms.CharField(
        label=gettext_lazy("Label"),
        max_length=120,
        help_text=gettext_lazy("e.g. “GPT-4 judge, reference-free” or “Crowd, 5 votes per pair”."),
    )
    judge = forms.CharField(
        label=gettext_lazy("Judge"),
        max_length=200,
        required=False,
        help_text=gettext_lazy("The engine (read from the file when it names one) or “crowd”."),
    )
    with_reference = forms.BooleanField(
        label=gettext_lazy("Reference-backed judge prompt (when the file does not say)"),
        required=False,
    )
    reference_player = forms.CharField(
        label=gettext_lazy("Name of the reference in the file"),
        max_length=200,
        required=False,
        initial="human_verified_reference",
        help_text=gettext_lazy(
            "Win-rates are computed against this player (blank: human_verified_reference)."
        ),
    )
    aliases = forms.CharField(
        label=gettext_lazy("Rename players (optional)"),
        required=False,
        widget=forms.Textarea(attrs={"rows": 3, "class": "mono", "spellcheck": "false"}),
        help_text=gettext_lazy(
            "One per line: name in the file = name to show. A player named like a run's model "
            "or its output column is linked to that run."
        ),
    )
    field_order = [
        "kind",
        "label",
        "file",
        "text",
        "judge",
        "reference_player",
        "aliases",
        "with_reference",
    ]


OFFLINE_CHOICE = "offline"


class ProviderChoice(forms.ChoiceField):
    """The LLM providers the user may use, listed from one query, plus the offline provider
    named for what it is here (created on first use, so a GET never writes)."""

    def __init__(self, *args, judge: bool = False, **kwargs):
        self.judge = judge
        self.user = self.project = None
        super().__init__(*args, **kwargs)

    def setup(self, user, project) -> None:
        self.user, self.project = user, project
        providers = [
            p
            for p in selectors.providers_for(user, project).order_by("name", "id")
            if not provider_is_blind(p)
        ]
        offline = provider_label(LLMProvider(kind=LLMProvider.Kind.OFFLINE), judge=self.judge)
        self.choices = [(str(p.pk), provider_label(p, judge=self.judge)) for p in providers]
        self.choices += [(OFFLINE_CHOICE, offline)]
        defaults = [
            p for p in providers if p.is_default and p.project_id == getattr(project, "pk", None)
        ]
        defaults += [p for p in providers if p.is_default and p.project_id is None]
        self.initial = str(defaults[0].pk) if defaults else OFFLINE_CHOICE

    def clean(self, value):
        value = super().clean(value)
        if value == OFFLINE_CHOICE:
            return provider_offline()
        found = selectors.providers_for(self.user, self.project).filter(pk=int(value)).first()
        if found is None:
            raise forms.ValidationError(_("Choose one of the providers listed."))
        return found


class RunModelForm(forms.Form):
    provider = ProviderChoice(
        label=gettext_lazy("Model (LLM provider)"),
        help_text=gettext_lazy(
            "A vision endpoint answers every item with the benchmark's official prompt. The "
            "offline blind baseline never sees the images: it answers from the question text "
            "alone, so it shows what a benchmark gives away without looking."
        ),
    )
    model_name = forms.CharField(
        label=gettext_lazy("Name on the leaderboard"),
        max_length=200,
        required=False,
        help_text=gettext_lazy("Blank: the provider's model name."),
    )
    label = forms.CharField(
        label=gettext_lazy("Run label"),
        max_length=120,
        required=False,
        help_text=gettext_lazy(
            "The same model and label again resumes the run: only missing or failed answers "
            "are asked again."
        ),
    )
    limit = forms.IntegerField(
        label=gettext_lazy("Only the first N items"),
        min_value=1,
        max_value=INT_MAX,
        required=False,
        help_text=gettext_lazy("For a quick check; unanswered items count as missing."),
    )
    seed = forms.IntegerField(
        label=gettext_lazy("Seed (calls and bootstrap)"),
        initial=0,
        **model_bounds(ModelRun, "seed", low=0),
    )

    def __init__(self, *args, user, version: BenchmarkVersion, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["provider"].setup(user, version.benchmark.project)
        # The family's own yes/no options, after the common fields.
        options = family_of(version.benchmark.family).runner.options
        self.option_names = options.names
        for option in options.fields:
            self.fields[option.name] = forms.BooleanField(label=option.label, required=False)

    def options(self) -> dict:
        return {k: self.cleaned_data[k] for k in self.option_names if k in self.cleaned_data}


class ScorerRunForm(forms.Form):
    scorer = forms.ModelChoiceField(
        queryset=Scorer.objects.order_by("-is_default", "label"),
        label=gettext_lazy("Scorer"),
        empty_label=None,
        help_text=gettext_lazy(
            "A CLIP-style scorer rates every image with both captions (Winoground scores)."
        ),
    )
    model_name = forms.CharField(
        label=gettext_lazy("Name on the leaderboard"),
        max_length=200,
        required=False,
        help_text=gettext_lazy("Blank: the scorer's label and architecture."),
    )
    label = RunModelForm.base_fields["label"]
    limit = RunModelForm.base_fields["limit"]


class JudgeForm(forms.Form):
    provider = ProviderChoice(
        judge=True,
        label=gettext_lazy("Judge (LLM provider)"),
        help_text=gettext_lazy(
            "The judge reads the instruction-conditioned caption, the instruction and two "
            "responses, in both orders (App. F). The offline judge prefers the longer response: "
            "a demo without a key, not a judgment."
        ),
    )
    model = forms.ChoiceField(label=gettext_lazy("Model to judge"))
    label = forms.CharField(
        label=gettext_lazy("Label of the judgment set"),
        max_length=120,
        help_text=gettext_lazy("The same label again fills the pairs still missing."),
    )
    instances = forms.IntegerField(
        label=gettext_lazy("Instances"),
        min_value=1,
        max_value=5000,
        help_text=gettext_lazy("Drawn with the seed among the instances the model answered."),
    )
    seed = forms.IntegerField(
        label=gettext_lazy("Seed"), initial=0, **model_bounds(JudgmentSet, "seed", low=0)
    )
    opponents = forms.BooleanField(
        label=gettext_lazy("Also against one random other model per instance"),
        required=False,
        initial=True,
    )
    with_reference = forms.BooleanField(
        label=gettext_lazy("Reference-backed prompt (App. F, Fig. 17)"), required=False
    )

    def __init__(self, *args, user, project, judge: PairJudge, players: list[str], **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["provider"].setup(user, project)
        self.fields["model"].choices = [(p, p) for p in players]
        self.fields["instances"].initial = judge.default_instances
