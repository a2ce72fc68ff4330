"""Scorer pages (curators and admins): the global registry of open_clip scorers, their weights
status and embedding caches, add / edit, and starting a corpus's embedding job.

Scorers are shared by every project, so only admins add or change them (as with shared LLM
providers): no curator, of any project or none, changes the model another project mines with.
Curators embed their own projects' corpora with any scorer."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_POST

from annotator.platform import roles
from annotator.platform.models import Job
from annotator.platform.scoping import get_or_404, jobs_for, projects_for

from ..embeddings import EMBED_JOB, embed_corpus_start
from ..models import Corpus, Scorer
from ..scorers import (
    RANDOM_WEIGHTS_LABEL,
    ScorerUnavailable,
    scorer_create,
    scorer_ensure_default,
    scorer_tiny,
    scorer_update,
    scorer_uses,
    scorer_weights,
)

CURATOR = (roles.CURATOR,)  # admins pass every role check
RECENT_JOBS = 3


class ScorerForm(forms.Form):
    """Shape only; ``scorer_validate`` (called by the services) checks the meaning."""

    label = forms.CharField(max_length=100, label=gettext_lazy("Name"))
    model_name = forms.CharField(
        max_length=100,
        label=gettext_lazy("open_clip architecture"),
        help_text=gettext_lazy("e.g. ViT-L-14, ViT-B-32"),
        widget=forms.TextInput(attrs={"list": "clip-models", "autocomplete": "off"}),
    )
    pretrained = forms.CharField(
        max_length=200,
        required=False,
        label=gettext_lazy("Pretrained tag"),
        help_text=gettext_lazy("e.g. laion400m_e32; looked up in the local weights cache."),
        widget=forms.TextInput(attrs={"list": "clip-tags", "autocomplete": "off"}),
    )
    checkpoint_path = forms.CharField(
        max_length=500,
        required=False,
        label=gettext_lazy("…or a checkpoint file"),
        help_text=gettext_lazy("Absolute path on the web and worker machines."),
    )
    random_weights = forms.BooleanField(
        required=False,
        label=gettext_lazy("Random weights (demo and tests only: scores are not meaningful)"),
    )
    dtype = forms.ChoiceField(choices=Scorer.DType.choices, label=gettext_lazy("Precision"))
    device = forms.ChoiceField(choices=Scorer.Device.choices, label=gettext_lazy("Device"))
    batch_size = forms.IntegerField(min_value=1, max_value=4096, label=gettext_lazy("Batch size"))
    is_default = forms.BooleanField(required=False, label=gettext_lazy("Default scorer"))


def _scorer_or_404(scorer_id: int) -> Scorer:
    return get_or_404(Scorer.objects.all(), pk=scorer_id)


def _corpora_for(user):
    return (
        Corpus.objects.filter(project__in=projects_for(user))
        .select_related("project")
        .order_by("project__name", "name", "id")
    )


@roles.roles_required(*CURATOR)
def scorer_list(request: HttpRequest) -> HttpResponse:
    scorers = list(Scorer.objects.order_by("-is_default", "label").prefetch_related("caches"))
    corpora = list(_corpora_for(request.user))
    corpus_names = {c.pk: c for c in corpora}
    recent: dict[int, list[Job]] = {}
    jobs = jobs_for(request.user).filter(kind=EMBED_JOB).select_related("created_by")
    for job in jobs[:200]:
        params = job.params if isinstance(job.params, dict) else {}
        job.corpus = corpus_names.get(params.get("corpus_id"))
        bucket = recent.setdefault(params.get("scorer_id"), [])
        if len(bucket) < RECENT_JOBS:
            bucket.append(job)
    for scorer in scorers:
        scorer.weights = scorer_weights(scorer)
        caches = {c.modality: c for c in scorer.caches.all()}
        scorer.image_cache, scorer.text_cache = caches.get("image"), caches.get("text")
        jobs = recent.get(scorer.pk, [])
        scorer.active_jobs = [j for j in jobs if not j.is_finished]
        scorer.done_jobs = [j for j in jobs if j.is_finished]
    return render(
        request,
        "curation/scorers/list.html",
        {
            "scorers": scorers,
            "corpora": corpora,
            "random_label": RANDOM_WEIGHTS_LABEL,
        },
    )


def _form_page(request: HttpRequest, form: ScorerForm, scorer: Scorer | None) -> HttpResponse:
    import open_clip

    tags = sorted({tag for _name, tag in open_clip.list_pretrained()})
    return render(
        request,
        "curation/scorers/form.html",
        {
            "form": form,
            "scorer": scorer,
            "models": open_clip.list_models(),
            "tags": tags,
            "weights": scorer_weights(scorer) if scorer else None,
            "uses": scorer_uses(scorer) if scorer else [],
        },
        status=400 if form.is_bound and form.errors else 200,
    )


def _save(request: HttpRequest, form: ScorerForm, scorer: Scorer | None) -> HttpResponse | None:
    """Validate and save; returns the redirect, or None with the errors put on the form."""
    if not form.is_valid():
        return None
    data = form.cleaned_data
    try:
        if scorer is None:
            scorer = scorer_create(**data)
            messages.success(request, _("Scorer “%(label)s” added.") % {"label": scorer.label})
        else:
            scorer = scorer_update(scorer=scorer, **data)
            messages.success(request, _("Scorer “%(label)s” saved.") % {"label": scorer.label})
    except ValidationError as exc:
        form.add_error(None, exc)
        return None
    return redirect("curator-scorers")


@roles.roles_required(roles.ADMIN)
def scorer_new(request: HttpRequest) -> HttpResponse:
    if request.method == "POST":
        form = ScorerForm(request.POST)
        done = _save(request, form, None)
        if done is not None:
            return done
    else:
        initial = {"dtype": Scorer.DType.FP32, "device": Scorer.Device.AUTO, "batch_size": 32}
        form = ScorerForm(initial=initial)
    return _form_page(request, form, None)


@roles.roles_required(roles.ADMIN)
def scorer_edit(request: HttpRequest, scorer_id: int) -> HttpResponse:
    scorer = _scorer_or_404(scorer_id)
    if request.method == "POST":
        form = ScorerForm(request.POST)
        done = _save(request, form, scorer)
        if done is not None:
            return done
    else:
        form = ScorerForm(initial={f: getattr(scorer, f) for f in ScorerForm.base_fields})
    return _form_page(request, form, scorer)


@roles.roles_required(roles.ADMIN)
@require_POST
def scorer_add_default(request: HttpRequest) -> HttpResponse:
    scorer = scorer_ensure_default()
    messages.success(request, _("Scorer “%(label)s” is in the registry.") % {"label": scorer.label})
    return redirect("curator-scorers")


@roles.roles_required(roles.ADMIN)
@require_POST
def scorer_add_tiny(request: HttpRequest) -> HttpResponse:
    scorer = scorer_tiny()
    messages.warning(
        request,
        _("Scorer “%(label)s” is in the registry: %(warning)s.")
        % {"label": scorer.label, "warning": RANDOM_WEIGHTS_LABEL},
    )
    return redirect("curator-scorers")


@roles.roles_required(*CURATOR)
@require_POST
def scorer_embed(request: HttpRequest, scorer_id: int) -> HttpResponse:
    """Start the embedding job of one corpus; htmx gets the job's progress card."""
    scorer = _scorer_or_404(scorer_id)
    try:
        corpus_id = int(request.POST.get("corpus", ""))
    except ValueError:
        corpus_id = 0
    corpus = _corpora_for(request.user).filter(pk=corpus_id).first()
    error = ""
    if corpus is None:
        error = _("Choose a corpus of one of your projects.")
    else:
        try:
            job = embed_corpus_start(scorer=scorer, corpus=corpus, created_by=request.user)
        except ScorerUnavailable as exc:
            error = str(exc)
    if request.htmx:
        if error:
            return render(request, "curation/scorers/_embed_error.html", {"error": error})
        return render(request, "annotator/curator/_job_card.html", {"job": job})
    if error:
        messages.error(request, error)
        return redirect("curator-scorers")
    return redirect("curator-job", job_id=job.pk)
