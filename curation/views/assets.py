"""Corpus pages (curators and admins): corpora per project with the import form and its job
card, a corpus's samples with thumbnails and captions (search, language filter), an image's
metadata, licence and derivatives.

Reads go through ``assets.corpora_for`` / ``assets.images_for`` (project membership, like
``annotator.selectors``) so anything out of reach answers 404 exactly like a missing object.
"""

from __future__ import annotations

import json

from django import forms
from django.core.paginator import Paginator
from django.db.models import Count, Exists, OuterRef, Prefetch, prefetch_related_objects
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from annotator.platform import roles
from annotator.platform.errors import Invalid
from annotator.platform.forms import ARCHIVE_TYPES, upload_field
from annotator.platform.scoping import get_or_404, jobs_for, projects_for
from annotator.platform.views import error_context, flash, job_news

from .. import assets
from ..corpora import FORMAT_CHOICES, IMPORT_JOB, corpus_import_start
from ..models import Caption, Image, Sample

CURATOR = (roles.CURATOR,)  # admins pass every role check
PAGE_SIZE = 24
PREVIEWS = 4
RECENT_IMPORTS = 5


class CorpusImportForm(forms.Form):
    """Shape only; ``corpus_import_start`` checks the archive and every manifest line."""

    name = forms.CharField(max_length=200, label=gettext_lazy("Corpus name"))
    archive = upload_field(
        accept=ARCHIVE_TYPES,
        label=gettext_lazy("Images (zip or tar archive)"),
        help_text=gettext_lazy(
            ".zip, .tar, .tar.gz or .tgz with JPEG, PNG, WEBP or GIF images, and the manifest "
            "unless you upload it below."
        ),
    )
    manifest = upload_field(
        accept=".jsonl,.ndjson,.csv,.json,.token,.txt",
        required=False,
        label=gettext_lazy("Manifest or caption file (optional)"),
        help_text=gettext_lazy(
            "Not needed when the archive holds manifest.jsonl, manifest.csv or a caption file."
        ),
    )
    format = forms.ChoiceField(choices=FORMAT_CHOICES, initial="auto", label=gettext_lazy("Format"))
    language = forms.CharField(
        max_length=35,
        initial="en",
        label=gettext_lazy("Caption language"),
        help_text=gettext_lazy("BCP 47 tag for captions that do not name one: en, zh, hi, …"),
    )
    licence = forms.CharField(max_length=200, required=False, label=gettext_lazy("Licence"))
    source = forms.CharField(
        max_length=500, required=False, label=gettext_lazy("Source (URL or dataset id)")
    )
    description = forms.CharField(
        required=False,
        label=gettext_lazy("Description"),
        widget=forms.Textarea(attrs={"rows": 2}),
    )


def _languages_by_corpus(corpus_ids: list[int]) -> dict[int, list[dict]]:
    rows = (
        Caption.objects.filter(sample__corpus_id__in=corpus_ids)
        .values("sample__corpus_id", "language")
        .annotate(n=Count("id"))
        .order_by("sample__corpus_id", "-n", "language")
    )
    out: dict[int, list[dict]] = {cid: [] for cid in corpus_ids}
    for row in rows:
        out[row["sample__corpus_id"]].append({"code": row["language"], "n": row["n"]})
    return out


def _with_previews(corpora: list) -> list:
    """Attach the first few samples (with images) and the caption languages: two queries."""
    ids = [c.pk for c in corpora]
    previews: dict[int, list[Sample]] = {cid: [] for cid in ids}
    for sample in (
        Sample.objects.filter(corpus_id__in=ids, position__lt=PREVIEWS)
        .select_related("image")
        .order_by("corpus_id", "position")
    ):
        previews[sample.corpus_id].append(sample)
    languages = _languages_by_corpus(ids)
    for corpus in corpora:
        corpus.previews = previews[corpus.pk]
        corpus.languages = languages[corpus.pk]
    return corpora


@roles.roles_required(*CURATOR)
def corpora(request: HttpRequest) -> HttpResponse:
    """Every corpus in reach, grouped by project, with a way to import into each project."""
    projects = list(projects_for(request.user).order_by("name", "id"))
    items = _with_previews(
        list(assets.corpora_for(request.user).select_related("project").order_by("name", "id"))
    )
    by_project: dict[int, list] = {p.pk: [] for p in projects}
    for corpus in items:
        by_project.setdefault(corpus.project_id, []).append(corpus)
    groups = [{"project": p, "corpora": by_project[p.pk]} for p in projects]
    return render(
        request,
        "curation/assets/corpora.html",
        {"groups": groups, "total": len(items)},
    )


@roles.roles_required(*CURATOR)
def project_corpora(request: HttpRequest, project_id: int) -> HttpResponse:
    """A project's corpora and the import form; the latest import's job card polls (htmx)."""
    project = get_or_404(projects_for(request.user), pk=project_id)
    imports = list(
        jobs_for(request.user)
        .filter(project=project, kind=IMPORT_JOB)
        .select_related("created_by")[:RECENT_IMPORTS]
    )
    importing = any(not job.is_finished for job in imports)
    items = _with_previews(
        list(assets.corpora_for(request.user).filter(project=project).order_by("name", "id"))
    )
    if request.htmx and request.GET.get("part") == "table":
        return render(
            request,
            "curation/assets/_corpora_table.html",
            {"project": project, "corpora": items, "importing": importing},
        )
    form = CorpusImportForm(request.POST or None, request.FILES or None)
    error = None
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            job, n = corpus_import_start(
                project=project,
                name=data["name"],
                archive=data["archive"],
                manifest=data.get("manifest"),
                fmt=data["format"],
                language=data["language"],
                licence=data["licence"],
                source=data["source"],
                description=data["description"],
                created_by=request.user,
            )
        except Invalid as exc:
            error = error_context(exc)
        else:
            said = {"n": n, "job": job.pk}
            news = job_news(
                job,
                what=_("The import (job #%(job)d)") % said,
                started=_("%(n)d samples checked; job #%(job)d is importing the images.") % said,
                finished=_("%(n)d samples checked and imported (job #%(job)d).") % said,
            )
            flash(request, news)
            return redirect("curator-project-corpora", project_id=project.pk)
    return render(
        request,
        "curation/assets/project_corpora.html",
        {
            "project": project,
            "corpora": items,
            "form": form,
            "error": error,
            "job": imports[0] if imports else None,
            "imports": imports,
            "importing": importing,
        },
        status=400 if error or form.errors else 200,
    )


@roles.roles_required(*CURATOR)
def corpus_detail(request: HttpRequest, corpus_id: int) -> HttpResponse:
    """Samples with thumbnails and captions; ``q`` searches caption text, ``lang`` filters.

    htmx requests (the search box) get the sample list fragment only.
    """
    corpus = get_or_404(assets.corpora_for(request.user).select_related("project"), pk=corpus_id)
    q = request.GET.get("q", "").strip()[:200]
    lang = request.GET.get("lang", "").strip()[:35]
    samples = Sample.objects.filter(corpus=corpus).select_related("image").order_by("position")
    if q or lang:
        matching = Caption.objects.filter(sample=OuterRef("pk"))
        if q:
            matching = matching.filter(text__icontains=q)
        if lang:
            matching = matching.filter(language=lang)
        samples = samples.filter(Exists(matching))
    page = Paginator(samples, PAGE_SIZE).get_page(request.GET.get("page"))
    page.object_list = list(page.object_list)
    prefetch_related_objects(
        page.object_list, Prefetch("captions", queryset=Caption.objects.order_by("position"))
    )
    needle = q.casefold()
    for sample in page.object_list:
        for caption in sample.captions.all():
            caption.hit = bool(q or lang) and (
                (not q or needle in caption.text.casefold())
                and (not lang or caption.language == lang)
            )
    context = {"corpus": corpus, "page": page, "q": q, "lang": lang}
    if request.htmx:
        return render(request, "curation/assets/_samples.html", context)
    context["caption_languages"] = _languages_by_corpus([corpus.pk])[corpus.pk]
    return render(request, "curation/assets/corpus.html", context)


@roles.roles_required(*CURATOR)
def image_detail(request: HttpRequest, image_id: int) -> HttpResponse:
    """One image: metadata, licence, attribution, source, where it is used and its derivatives."""
    image = get_or_404(
        assets.images_for(request.user).select_related("derived_from", "created_by"),
        pk=image_id,
    )
    samples = list(
        Sample.objects.filter(image=image, corpus__in=assets.corpora_for(request.user))
        .select_related("corpus", "corpus__project")
        .prefetch_related(Prefetch("captions", queryset=Caption.objects.order_by("position")))
        .order_by("corpus__name", "position")[:50]
    )
    derivatives = list(Image.objects.filter(derived_from=image).order_by("id")[:48])
    parent = None
    if image.derived_from_id:
        parent = assets.images_for(request.user).filter(pk=image.derived_from_id).first()
    return render(
        request,
        "curation/assets/image.html",
        {
            "image": image,
            "samples": samples,
            "derivatives": derivatives,
            "parent": parent,
            "display": assets.display_size(image, side=640),
            "derivation_json": json.dumps(image.derivation, indent=2, ensure_ascii=False),
        },
    )
