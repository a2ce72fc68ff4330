"""Evaluation pages: benchmarks, versions, leaderboards with plots, imports and metric jobs.

Everything is reached through the person's projects (``evaluation.selectors``): researchers and
curators read and evaluate (run models and judges, import runs and judgments, compute metrics,
download); curators alone import benchmarks and publish versions. Anything out of reach answers
404, like a missing object; pages offer only the actions the person may take.
"""

from __future__ import annotations

import csv
import io
import json
from functools import partial

from django import forms
from django.contrib import messages
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import path, reverse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_POST

from annotator.platform import roles
from annotator.platform.errors import ServiceError
from annotator.platform.models import Project
from annotator.platform.views import error_context, form_page, start_job
from curation.gateway.providers import provider_offline
from curation.models import LLMProvider, Scorer

from . import compute, pairwise, plots, runners, selectors, services
from .metrics import visit
from .models import BenchmarkVersion, Family, JudgmentSet, ModelRun

READ, EVALUATE, CURATE = selectors.READ, selectors.EVALUATE, selectors.CURATE
MAX_UPLOAD = 50 * 1024 * 1024


class ImportForm(forms.Form):
    file = forms.FileField(label=gettext_lazy("File"), required=False)
    text = forms.CharField(
        label=gettext_lazy("…or paste the content"),
        required=False,
        widget=forms.Textarea(attrs={"rows": 6, "class": "mono", "spellcheck": "false"}),
    )

    def clean(self):
        data = super().clean()
        if not data.get("file") and not (data.get("text") or "").strip():
            raise forms.ValidationError(_("Choose a file or paste its content."))
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
    family = forms.ChoiceField(label=gettext_lazy("Benchmark family"), choices=Family.choices)
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
        help_text=gettext_lazy(
            "VisIT-Bench: the CSV column with the response (detected when there is one extra "
            "column). VLind-Bench: the model identifier of the '<id>_pred_*' keys."
        ),
    )
    seed = forms.IntegerField(label=gettext_lazy("Bootstrap seed"), initial=0)
    field_order = ["model", "label", "file", "text", "option", "seed"]


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
            if not runners.provider_is_blind(p)
        ]
        offline = runners.provider_label(
            LLMProvider(kind=LLMProvider.Kind.OFFLINE), judge=self.judge
        )
        self.choices = [(str(p.pk), runners.provider_label(p, judge=self.judge)) for p in providers]
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
        required=False,
        help_text=gettext_lazy("For a quick check; unanswered items count as missing."),
    )
    seed = forms.IntegerField(label=gettext_lazy("Seed (calls and bootstrap)"), initial=0)
    space_before_suffix = forms.BooleanField(
        label=gettext_lazy("Space between question and answer suffix (official code: none)"),
        required=False,
    )
    logprobs = forms.BooleanField(
        label=gettext_lazy("Ask for log-probabilities (debiased metrics)"), required=False
    )
    post_hoc = forms.BooleanField(
        label=gettext_lazy("Also ask each question without its image (post-hoc debiasing)"),
        required=False,
    )

    NB_ONLY = ("space_before_suffix", "logprobs", "post_hoc")

    def __init__(self, *args, user, version: BenchmarkVersion, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["provider"].setup(user, version.benchmark.project)
        if version.benchmark.family != Family.NATURALBENCH:
            for name in self.NB_ONLY:
                del self.fields[name]

    def options(self) -> dict:
        return {k: self.cleaned_data[k] for k in self.NB_ONLY if k in self.cleaned_data}


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
        initial=runners.DEFAULT_JUDGE_INSTANCES,
        help_text=gettext_lazy("Drawn with the seed among the instances the model answered."),
    )
    seed = forms.IntegerField(label=gettext_lazy("Seed"), initial=0)
    opponents = forms.BooleanField(
        label=gettext_lazy("Also against one random other model per instance"),
        required=False,
        initial=True,
    )
    with_reference = forms.BooleanField(
        label=gettext_lazy("Reference-backed prompt (App. F, Fig. 17)"), required=False
    )

    def __init__(self, *args, user, project, players: list[str], **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["provider"].setup(user, project)
        self.fields["model"].choices = [(p, p) for p in players]


FORMATS = {
    Family.NATURALBENCH: {
        "items": '{"Index": 1, "Image_0": "img/1a.jpg", "Image_1": "img/1b.jpg", '
        '"Question_0": "Is the dog asleep?", "Image_0_Question_0": "Yes", '
        '"Image_1_Question_0": "No", "Question_1": "Is the dog awake?", '
        '"Image_0_Question_1": "No", "Image_1_Question_1": "Yes", "Question_Type": "yes_no", '
        '"Source": "DOCCI", "Skills": [["State"], ["State"]]}',
        "predictions": '{"Index": 1, "outputs": ["Yes", "No.", "no", "Yes, it is."], '
        '"scores": {"p_a0": [0.9, 0.2, 0.3, 0.8], "p_a1": [0.1, 0.8, 0.7, 0.2]}}',
    },
    Family.NATURALBENCH_RETRIEVAL: {
        "items": '{"id": "p1", "image_0": "a.jpg", "image_1": "b.jpg", '
        '"caption_0": "a dog on a sofa", "caption_1": "a sofa on a dog"}',
        "predictions": '{"id": "p1", "scores": [[0.31, 0.22], [0.25, 0.29]]}',
    },
    Family.VHEXPANSION: {
        "items": '{"id": "c1", "pair_id": "p1", "image": "x.jpg", "question": "Is there a cat?", '
        '"answer": "yes", "negated": false, "perturbation": "original", "source": "POPE"}',
        "predictions": '{"id": "c1", "output": "Yes, there is a cat."}',
    },
    Family.VLIND: {
        "items": "data.json (official layout: concept, context_id, context, true_statement, "
        "false_statement, existent_noun, non-existent_noun, best_img_id, "
        "aggregated_human_label_good_images)",
        "predictions": "data.json with '<model>_pred_a1_image' … '<model>_pred_d2' keys, "
        "each {response, answer}",
    },
    Family.VISIT: {
        "items": "single_image_full_dataset.csv (instruction_category, image, instruction, "
        "gpt4_prediction, human_ratings_gpt4_correct, human_ratings_problem_in_caption, …)",
        "predictions": "the model output CSV: the dataset columns plus one column with the "
        "response (e.g. llava13b_output)",
    },
}


JUDGMENT_FORMATS = {
    "LLM judge": '[{"A_model": "llava13b_output", "B_model": "human_verified_reference", '
    '"A": "…", "B": "…", "image_url": "https://…/visit_images/….png", "instruction": "…", '
    '"auto_evaluation_result": ["human_verified_reference", "tie"], '
    '"auto_evaluation_cot": [{"A_model_in_cot": "…", "B_model_in_cot": "…", "cot": "…"}, …], '
    '"engine": "gpt-4", "evaluated_with_reference": false}, …]  — the sandbox’s '
    "gpt-4_head2head.json (or one object per line)",
    "Crowd votes": "image_url,instruction,A,B,A_model,B_model,model_selection.A,"
    "model_selection.B — visit_bench_human_preferences.csv, one row per vote (forced choice)",
}


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value * 100:.1f}"


def _abilities(request: HttpRequest) -> dict:
    """What the page may offer: the server checks again on every action."""
    return {
        "can_evaluate": selectors.can(request.user, EVALUATE),
        "can_curate": selectors.can(request.user, CURATE),
    }


@roles.roles_required(*READ)
def benchmarks(request: HttpRequest) -> HttpResponse:
    items = list(selectors.benchmarks_visible(request.user))
    return render(
        request, "evaluation/benchmarks.html", {"benchmarks": items, **_abilities(request)}
    )


def _run_form(request: HttpRequest, version: BenchmarkVersion, data=None):
    if not selectors.can(request.user, EVALUATE):
        return None
    family = version.benchmark.family
    if family == Family.NATURALBENCH_RETRIEVAL:
        return ScorerRunForm(data)
    if family not in runners.RUNNER_FAMILIES:
        return None
    return RunModelForm(data, user=request.user, version=version)


def _version_page(
    request: HttpRequest, version: BenchmarkVersion, *, form=None, error=None, status=200
) -> HttpResponse:
    page = Paginator(selectors.version_items(version), 50).get_page(request.GET.get("page"))
    runs = list(selectors.runs_list(version).order_by("id"))
    active = [
        r
        for r in runs
        if r.source == ModelRun.Source.RUNNER and r.job is not None and not r.job.is_finished
    ]
    return render(
        request,
        "evaluation/version.html",
        {
            "version": version,
            "page": page,
            "runs": runs,
            "family": version.benchmark.family,
            "run_form": form if form is not None else _run_form(request, version),
            "run_error": error,
            "active_runs": active,
            "blind_label": runners.prompts.BLIND_BASELINE_LABEL,
            **_abilities(request),
        },
        status=status,
    )


@roles.roles_required(*READ)
def version_detail(request: HttpRequest, version_id: int) -> HttpResponse:
    return _version_page(request, selectors.version_for_user_or_404(request.user, version_id))


@require_POST
@roles.roles_required(*EVALUATE)
def run_model(request: HttpRequest, version_id: int) -> HttpResponse:
    """Start (or resume) a model run on the version; the page shows its progress card."""
    version = selectors.version_for_user_or_404(request.user, version_id, allowed=EVALUATE)
    form = _run_form(request, version, request.POST)
    if form is None:
        raise Http404("No runner for this benchmark family.")
    error = None
    if form.is_valid():
        data = form.cleaned_data
        try:
            if isinstance(form, ScorerRunForm):
                runners.score_model_start(
                    version=version,
                    scorer=data["scorer"],
                    created_by=request.user,
                    limit=data["limit"],
                    label=data["label"],
                    model_name=data["model_name"],
                )
            else:
                runners.run_model_start(
                    version=version,
                    provider=data["provider"],
                    created_by=request.user,
                    limit=data["limit"],
                    label=data["label"],
                    model_name=data["model_name"],
                    seed=data["seed"],
                    options=form.options(),
                )
        except ServiceError as exc:
            error = error_context(exc)
        else:
            messages.success(
                request, _("The run has started; its progress is shown below the runs.")
            )
            return redirect(reverse("eval-version", args=[version.pk]) + "#active-runs")
    return _version_page(request, version, form=form, error=error, status=400)


def _series_for(board: dict, metric: str, dimension: str) -> tuple[list[str], list[plots.Series]]:
    groups: list[str] = []
    for row in board["rows"]:
        result = row["results"].get(metric)
        for group in (result.breakdown or {}).get(dimension, {}) if result else {}:
            if group not in groups:
                groups.append(group)
    groups.sort()
    series = []
    for row in board["rows"]:
        result = row["results"].get(metric)
        cells = (result.breakdown or {}).get(dimension, {}) if result else {}
        if not cells:
            continue
        series.append(
            plots.Series(
                str(row["run"].model.name),
                [cells.get(g, {}).get("value") for g in groups],
                [cells.get(g, {}).get("low") for g in groups],
                [cells.get(g, {}).get("high") for g in groups],
            )
        )
    return groups, series


def _value(row: dict, metric: str):
    result = row["results"].get(metric)
    return result.value if result else None


def leaderboard_plots(board: dict) -> list[dict]:
    """The plots of one leaderboard as SVG strings with a caption."""
    family = board["family"]
    rows = [r for r in board["rows"] if r["computed"]]
    out: list[dict] = []
    if not rows:
        return out
    names = [str(r["run"].model.name) for r in rows]
    if family == Family.NATURALBENCH:
        metrics = ["acc", "q_acc", "i_acc", "g_acc"]
        series = [
            plots.Series(
                names[k],
                [_value(r, m) for m in metrics],
                [getattr(r["results"].get(m), "interval_low", None) for m in metrics],
                [getattr(r["results"].get(m), "interval_high", None) for m in metrics],
            )
            for k, r in enumerate(rows)
        ]
        out.append(
            {
                "svg": plots.bar_chart(
                    ["Acc", "Q-Acc", "I-Acc", "G-Acc"],
                    series,
                    title=_("Headline metrics with 95% intervals"),
                    y_max=1.0,
                    reference=0.0625,
                    reference_label=_("chance G-Acc 6.25"),
                ),
                "caption": _("Chance: 50 / 25 / 25 / 6.25."),
            }
        )
        groups, series = _series_for(board, "q_acc", "skill")
        if groups:
            out.append(
                {
                    "svg": plots.bar_chart(
                        groups, series, title=_("Q-Acc per skill"), y_max=1.0, width=960
                    ),
                    "caption": _("Q-Acc over the questions carrying each skill tag."),
                }
            )
    elif family == Family.NATURALBENCH_RETRIEVAL:
        metrics = ["text", "image", "group"]
        series = [
            plots.Series(names[k], [_value(r, m) for m in metrics]) for k, r in enumerate(rows)
        ]
        out.append(
            {
                "svg": plots.bar_chart(
                    [_("Text"), _("Image"), _("Group")],
                    series,
                    title=_("Winoground scores"),
                    y_max=1.0,
                ),
                "caption": _("Chance: 25 / 25 / 16.67."),
            }
        )
    elif family == Family.VHEXPANSION:
        points = [
            (names[k], _value(r, "accuracy"), _value(r, "symmetric_accuracy"))
            for k, r in enumerate(rows)
            if _value(r, "accuracy") is not None
        ]
        out.append(
            {
                "svg": plots.scatter_chart(
                    points,
                    title=_("Accuracy vs symmetric accuracy"),
                    x_label=_("Accuracy"),
                    y_label=_("Symmetric accuracy"),
                    markers=[(_("random p=0.5"), 0.5, 0.25)],
                ),
                "caption": _(
                    "A random guesser answering yes with probability p has symmetric accuracy "
                    "p(1−p) ≤ 25 whatever the labels (Theorem 2); accuracy can be gamed by the "
                    "label balance (Theorem 1)."
                ),
            }
        )
        groups, series = _series_for(board, "symmetric_accuracy", "perturbation")
        if groups:
            out.append(
                {
                    "svg": plots.bar_chart(
                        groups, series, title=_("Symmetric accuracy per perturbation"), y_max=1.0
                    ),
                    "caption": "",
                }
            )
    elif family == Family.VLIND:
        stages = ["s_ck", "s_vp", "s_cb", "s_lp"]
        series = [
            plots.Series(names[k], [_value(r, m) for m in stages]) for k, r in enumerate(rows)
        ]
        out.append(
            {
                "svg": plots.funnel_chart(
                    ["CK", "VP", "CB", "LP"], series, title=_("Pipeline CK → VP → CB → LP")
                ),
                "caption": _(
                    "S_CB is computed over instances passing CK, S_LP over those passing CK, VP "
                    "and CB; an empty denominator shows no point (n/a)."
                ),
            }
        )
        groups, series = _series_for(board, "s_lp", "concept")
        if groups:
            out.append(
                {
                    "svg": plots.bar_chart(groups, series, title=_("S_LP per concept"), y_max=1.0),
                    "caption": "",
                }
            )
    elif family == Family.VISIT:
        rated = [
            (names[k], r["results"]["elo_length"])
            for k, r in enumerate(rows)
            if r["results"].get("elo_length")
        ]
        if rated:
            reference = rated[0][1].details.get("reference_elo")
            out.append(
                {
                    "svg": plots.whisker_chart(
                        [n for n, _ in rated],
                        [m.value for _, m in rated],
                        [m.interval_low for _, m in rated],
                        [m.interval_high for _, m in rated],
                        title=_("Elo under the length baseline, bootstrap 95% interval"),
                        x_label=_("Elo (median of 1000 bootstrap rounds)"),
                        reference=reference,
                        reference_label=_("GPT-4 reference"),
                    ),
                    "caption": _(
                        "Battles where the longer response wins: a baseline, not a quality "
                        "judgment. Elo from judge or crowd battles is on the pairwise "
                        "judgments page."
                    ),
                }
            )
        metrics = ["bleu4", "rouge_l", "meteor"]
        series = [
            plots.Series(names[k], [_value(r, m) for m in metrics]) for k, r in enumerate(rows)
        ]
        out.append(
            {
                "svg": plots.bar_chart(
                    ["BLEU-4", "ROUGE-L", "METEOR"],
                    series,
                    title=_("Reference-based text metrics vs the GPT-4 reference"),
                ),
                "caption": "",
            }
        )
    return out


@roles.roles_required(*READ)
def leaderboard(request: HttpRequest, version_id: int) -> HttpResponse:
    fmt = request.GET.get("format")
    download = fmt in ("csv", "json")
    version = selectors.version_for_user_or_404(
        request.user, version_id, allowed=EVALUATE if download else READ
    )
    board = selectors.leaderboard(
        version, sort=request.GET.get("sort", ""), descending=request.GET.get("dir") != "asc"
    )
    if fmt == "csv":
        return _leaderboard_csv(version, board)
    if fmt == "json":
        return JsonResponse(_leaderboard_json(version, board), json_dumps_params={"indent": 2})
    return render(
        request,
        "evaluation/leaderboard.html",
        {
            "version": version,
            "board": board,
            "plots": leaderboard_plots(board),
            "tables": selectors.breakdowns(board),
            "family": board["family"],
            "judgment_count": version.judgment_sets.count()
            if board["family"] == Family.VISIT
            else 0,
            **_abilities(request),
        },
    )


def _leaderboard_json(version: BenchmarkVersion, board: dict) -> dict:
    return {
        "benchmark": version.benchmark.name,
        "family": version.benchmark.family,
        "version": version.label,
        "version_id": version.pk,
        "items": version.item_count,
        "kept": version.kept_count,
        "code_version": compute.CODE_VERSION,
        "reference_rows": [
            {
                "label": ref["label"],
                "note": ref["note"],
                "metrics": {spec.key: cell["value"] for spec, cell in ref["cells"] if cell},
            }
            for ref in board["references"]
        ],
        "rows": [
            {
                "rank": row["rank"],
                "run_id": row["run"].pk,
                "model": row["run"].model.name,
                "label": row["run"].label,
                "metrics": {
                    name: {
                        "value": m.value,
                        "low": m.interval_low,
                        "high": m.interval_high,
                        "n": m.n,
                        "details": m.details,
                    }
                    for name, m in sorted(row["results"].items())
                },
            }
            for row in board["rows"]
        ],
    }


def _leaderboard_csv(version: BenchmarkVersion, board: dict) -> HttpResponse:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    columns = board["columns"] + board["extra_columns"]
    header = ["rank", "model", "run_label"]
    for spec in columns:
        header += [spec.key, f"{spec.key}_low", f"{spec.key}_high", f"{spec.key}_n"]
    writer.writerow(header)
    for row in board["rows"]:
        line = [row["rank"] or "", row["run"].model.name, row["run"].label]
        for spec in columns:
            m = row["results"].get(spec.key)
            line += [
                "" if not m or m.value is None else m.value,
                "" if not m or m.interval_low is None else m.interval_low,
                "" if not m or m.interval_high is None else m.interval_high,
                m.n if m else "",
            ]
        writer.writerow(line)
    response = HttpResponse(buffer.getvalue(), content_type="text/csv; charset=utf-8")
    name = f"{version.benchmark.name}-{version.label}-leaderboard.csv".replace(" ", "_")
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


@roles.roles_required(*READ)
def run_detail(request: HttpRequest, run_id: int) -> HttpResponse:
    run = selectors.run_for_user_or_404(request.user, run_id)
    specs = compute.spec_map(run.version.benchmark.family)
    results = [
        {"m": m, "spec": specs.get(m.metric), "details": json.dumps(m.details, ensure_ascii=False)}
        for m in run.metric_results.all()
    ]
    predictions = run.predictions.select_related("item").order_by("item__position")[:20]
    return render(
        request,
        "evaluation/run.html",
        {"run": run, "results": results, "predictions": predictions, **_abilities(request)},
    )


def _import_page(request: HttpRequest, form: ImportForm, start, checked: str, **context):
    """An import: the form's fields are ``start``'s arguments (with the content of the file or
    text); checked now, so nothing is written on a refusal, then imported in a job whose page
    the person is sent to with ``checked`` (the number of rows as %(n)d)."""

    def save(data: dict):
        content, filename = form.content()
        args = {k: v for k, v in data.items() if k not in ("file", "text")}
        return start(**args, content=content, filename=filename, created_by=request.user)

    return form_page(
        request,
        form,
        save,
        "evaluation/import.html",
        {**context, **_abilities(request)},
        done=lambda started: checked % {"n": started[1]},
        then=lambda started: reverse("curator-job", args=[started[0].pk]),
    )


@roles.roles_required(*CURATE)
def version_import(request: HttpRequest) -> HttpResponse:
    return _import_page(
        request,
        VersionImportForm(request.POST or None, request.FILES or None, user=request.user),
        services.version_import_start,
        _("%(n)d items checked; the import job is running."),
        formats=FORMATS,
        target="items",
    )


@roles.roles_required(*EVALUATE)
def run_import(request: HttpRequest, version_id: int) -> HttpResponse:
    version = selectors.version_for_user_or_404(request.user, version_id, allowed=EVALUATE)
    return _import_page(
        request,
        RunImportForm(request.POST or None, request.FILES or None),
        partial(services.run_import_start, version=version),
        _("%(n)d predictions checked; importing and computing metrics."),
        formats={version.benchmark.family: FORMATS[version.benchmark.family]},
        target="predictions",
        version=version,
    )


@require_POST
@roles.roles_required(*EVALUATE)
def run_compute(request: HttpRequest, run_id: int) -> HttpResponse:
    run = selectors.run_for_user_or_404(request.user, run_id, allowed=EVALUATE)
    return start_job(
        request,
        partial(services.compute_enqueue, run=run, created_by=request.user),
        page=reverse("eval-version", args=[run.version_id]),
        message=_("Computing metrics for %(run)s.") % {"run": run.model.name},
        job_page=True,
    )


def _visit_version(request: HttpRequest, version_id: int, allowed=READ) -> BenchmarkVersion:
    """Pairwise judgments belong to VisIT-Bench versions."""
    return selectors.version_for_user_or_404(
        request.user, version_id, allowed=allowed, family=Family.VISIT
    )


def judgment_plots(sets: list) -> dict[int, str]:
    """An Elo whisker chart per judgment set with results (bootstrap median and 95% interval)."""
    out = {}
    for judgment_set in sets:
        results = judgment_set.results or {}
        players = results.get("players") or []
        if not players:
            continue
        out[judgment_set.pk] = plots.whisker_chart(
            [p["model"] for p in players],
            [float(p["elo"]) for p in players],
            [p["low"] for p in players],
            [p["high"] for p in players],
            title=_("%(label)s: Elo with bootstrap 95%% interval") % {"label": judgment_set.label},
            x_label=_("Elo (median of %(n)d bootstrap rounds)") % {"n": results.get("rounds", 0)},
            reference=results.get("reference_elo"),
            reference_label=_("reference"),
        )
    return out


def agreement_plot(agreement: dict) -> str:
    rows = [m for m in agreement.get("metrics", []) if not m.get("unavailable")]
    if not rows:
        return ""
    groups = [_("all")] + list(visit.STRATA)
    series = [
        plots.Series(
            m["name"],
            [m["overall"]["value"]] + [m["strata"][s]["value"] for s in visit.STRATA],
            [m["overall"]["low"]] + [m["strata"][s]["low"] for s in visit.STRATA],
            [m["overall"]["high"]] + [m["strata"][s]["high"] for s in visit.STRATA],
        )
        for m in rows
    ]
    return plots.bar_chart(
        groups,
        series,
        title=_("Agreement with the crowd majority, by agreement stratum"),
        y_max=1.0,
        reference=0.5,
        reference_label=_("chance 50"),
    )


def _judge_form(request: HttpRequest, version: BenchmarkVersion, data=None):
    if not selectors.can(request.user, EVALUATE):
        return None
    players = runners.judge_player_names(version)
    if not players:
        return None
    initial = {"label": _("LLM judge"), "model": players[0]}
    return JudgeForm(
        data,
        user=request.user,
        project=version.benchmark.project,
        players=players,
        initial=initial,
    )


@roles.roles_required(*READ)
def judgments(request: HttpRequest, version_id: int) -> HttpResponse:
    version = _visit_version(request, version_id)
    return _judgments_page(request, version)


@require_POST
@roles.roles_required(*EVALUATE)
def judge_run(request: HttpRequest, version_id: int) -> HttpResponse:
    """Sample pairs for one model with a seed and judge them in both orders in a job."""
    version = _visit_version(request, version_id, EVALUATE)
    form = _judge_form(request, version, request.POST)
    if form is None:
        raise Http404("No model has responses on this version yet.")
    error = None
    if form.is_valid():
        data = form.cleaned_data
        pairing = {
            "model": data["model"],
            "instances": data["instances"],
            "seed": data["seed"],
            "opponents": data["opponents"],
        }
        try:
            pairs = runners.judge_pairs_sample(
                version=version,
                model=data["model"],
                n=data["instances"],
                seed=data["seed"],
                opponents=data["opponents"],
            )
            runners.judge_start(
                version=version,
                judgment_set_name=data["label"],
                pairs=pairs,
                provider=data["provider"],
                created_by=request.user,
                seed=data["seed"],
                with_reference=data["with_reference"],
                pairing=pairing,
            )
        except ServiceError as exc:
            error = error_context(exc)
        else:
            messages.success(
                request,
                _("Judging %(n)d pairs in both orders; progress is shown below.")
                % {"n": len(pairs)},
            )
            return redirect(reverse("eval-judgments", args=[version.pk]) + "#active-judges")
    return _judgments_page(request, version, form=form, error=error, status=400)


def _judgments_page(
    request: HttpRequest, version: BenchmarkVersion, *, form=None, error=None, status=200
) -> HttpResponse:
    sets = list(selectors.judgment_sets(version))
    for judgment_set in sets:
        judgment_set.rows = [
            {
                "p": p,
                "elo": {"value": p["elo"], "low": p["low"], "high": p["high"], "n": p["matches"]},
            }
            for p in (judgment_set.results or {}).get("players", [])
        ]
    agreement = [
        {"set": s, "data": s.results["agreement"], "svg": agreement_plot(s.results["agreement"])}
        for s in sets
        if (s.results or {}).get("agreement")
    ]
    return render(
        request,
        "evaluation/judgments.html",
        {
            "version": version,
            "sets": sets,
            "plots": judgment_plots(sets),
            "agreement": agreement,
            "strata": visit.STRATA,
            "pending": any(
                s.results_computed_at is None and s.status == JudgmentSet.Status.SUCCEEDED
                for s in sets
            ),
            "judge_form": form if form is not None else _judge_form(request, version),
            "judge_error": error,
            "active_judges": [s for s in sets if s.job is not None and not s.job.is_finished],
            **_abilities(request),
        },
        status=status,
    )


@roles.roles_required(*EVALUATE)
def judgments_import(request: HttpRequest, version_id: int) -> HttpResponse:
    version = _visit_version(request, version_id, EVALUATE)
    return _import_page(
        request,
        JudgmentImportForm(request.POST or None, request.FILES or None),
        partial(services.judgments_import_start, version=version),
        _("%(n)d judged pairs checked; importing and rating them."),
        formats=JUDGMENT_FORMATS,
        target="judgments",
        version=version,
    )


@require_POST
@roles.roles_required(*EVALUATE)
def judgments_compute(request: HttpRequest, version_id: int) -> HttpResponse:
    version = _visit_version(request, version_id, EVALUATE)
    return start_job(
        request,
        partial(services.judgments_compute_enqueue, version=version, created_by=request.user),
        page=reverse("eval-judgments", args=[version.pk]),
        message=_("Rating the judgment sets again."),
        job_page=True,
    )


def _default_pair(options: list) -> tuple[str, str]:
    """The paper's system-level check when there is one: crowd Elo vs an LLM judge's Elo."""
    elo = [r.key for r in options if r.key.startswith("set:") and r.key.endswith(":elo")]
    if len(elo) >= 2:
        return elo[0], elo[1]
    keys = [r.key for r in options]
    return (keys[0], keys[1]) if len(keys) >= 2 else ("", "")


@roles.roles_required(*READ)
def rankings(request: HttpRequest, version_id: int) -> HttpResponse:
    """Spearman ρ between two rankings of the version's systems (visit-bench.txt Sec. 4.3)."""
    version = selectors.version_for_user_or_404(request.user, version_id)
    sets = (
        list(selectors.judgment_sets(version)) if version.benchmark.family == Family.VISIT else []
    )
    options = selectors.rankings(version, sets=sets)
    by_key = {r.key: r for r in options}
    default_a, default_b = _default_pair(options)
    key_a = request.GET.get("a") or default_a
    key_b = request.GET.get("b") or default_b
    unknown = [k for k in (key_a, key_b) if k and k not in by_key]
    result = None
    if key_a in by_key and key_b in by_key:
        result = pairwise.correlate(by_key[key_a], by_key[key_b])
    if request.GET.get("format") == "json":
        if result is None:
            return JsonResponse(
                {"detail": "Choose two rankings.", "rankings": [r.key for r in options]},
                status=400,
            )
        return JsonResponse({"a": key_a, "b": key_b, **result}, json_dumps_params={"indent": 2})
    context = {
        "version": version,
        "options": options,
        "key_a": key_a,
        "key_b": key_b,
        "result": result,
        "unknown": unknown,
        "plot": _rank_plot(result) if result and result["rows"] else "",
    }
    template = "evaluation/_rank_result.html" if request.htmx else "evaluation/rankings.html"
    return render(request, template, context, status=400 if unknown else 200)


def _rank_plot(result: dict) -> str:
    return plots.rank_chart(
        [(row["system"], row["rank_a"], row["rank_b"]) for row in result["rows"]],
        title=_("Rank under each ranking (1 = best)"),
        x_label=result["a"],
        y_label=result["b"],
    )


@require_POST
@roles.roles_required(*CURATE)
def version_publish(request: HttpRequest, version_id: int) -> HttpResponse:
    version = selectors.version_for_user_or_404(request.user, version_id, allowed=CURATE)
    services.version_publish(version=version)
    messages.success(request, _("Published: the items of this version are now frozen."))
    return redirect(reverse("eval-version", args=[version.pk]))


urlpatterns = [
    path("", benchmarks, name="eval-benchmarks"),
    path("import/", version_import, name="eval-import"),
    path("versions/<int:version_id>/", version_detail, name="eval-version"),
    path("versions/<int:version_id>/leaderboard/", leaderboard, name="eval-leaderboard"),
    path("versions/<int:version_id>/import/", run_import, name="eval-run-import"),
    path("versions/<int:version_id>/publish/", version_publish, name="eval-version-publish"),
    path("versions/<int:version_id>/run/", run_model, name="eval-run-model"),
    path("versions/<int:version_id>/judgments/run/", judge_run, name="eval-judge-run"),
    path("versions/<int:version_id>/judgments/", judgments, name="eval-judgments"),
    path(
        "versions/<int:version_id>/judgments/import/",
        judgments_import,
        name="eval-judgments-import",
    ),
    path(
        "versions/<int:version_id>/judgments/compute/",
        judgments_compute,
        name="eval-judgments-compute",
    ),
    path("versions/<int:version_id>/rankings/", rankings, name="eval-rankings"),
    path("runs/<int:run_id>/", run_detail, name="eval-run"),
    path("runs/<int:run_id>/compute/", run_compute, name="eval-run-compute"),
]
