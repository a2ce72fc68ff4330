"""What the datasets pages show (researchers and curators, read-only): every recipe object in the
person's projects with its published versions — each a dataset card (counts, the family, where
it came from, who made it and when, its hash) with a download button per file — and the object's
other export files. Versions are the evaluation app's ``BenchmarkVersion`` rows the recipe
published (``publish.published_versions``); files are the recipe's finished export jobs (those
whose params name a version go with it) and whatever it keeps with a version itself
(``Recipe.version_files``, NaturalBench's archive and Parquet file).

Objects are read through ``selectors.objects_for(..., readers=True)``: a project the person is
not a member of never shows, and an object out of reach answers 404 like a missing one."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.db.models import Count
from django.urls import reverse

from annotator.platform.models import Job
from annotator.platform.scoping import projects_for
from curation.export_files import export_deleted
from evaluation.models import BenchmarkVersion

from . import exports, selectors
from .declare import DatasetFile, Recipe, VersionFiles
from .publish import published_versions
from .registry import recipes

VERSION_PARAM = "version_id"  # an export job's param that ties its file to a published version


@dataclass
class VersionEntry:
    version: BenchmarkVersion
    files: list[DatasetFile] = field(default_factory=list)
    sha256: str = ""
    card_url: str = ""

    @property
    def anchor(self) -> str:
        return f"version-{self.version.pk}"


@dataclass
class ObjectEntry:
    recipe: Recipe
    obj: Any
    url: str  # its datasets page
    versions: list[VersionEntry] = field(default_factory=list)
    files: list[DatasetFile] = field(default_factory=list)  # exports tied to no version

    @property
    def file_count(self) -> int:
        return len(self.files) + sum(len(v.files) for v in self.versions)


def object_url(recipe: Recipe, obj: Any) -> str:
    return reverse(f"datasets-{recipe.key}", args=[obj.pk])


def export_files(recipe: Recipe, obj: Any) -> list[tuple[DatasetFile, Any]]:
    """(file, version id or None) of the newest finished export of each variant whose file is
    still stored, for every export the recipe declares with a download route."""
    out = []
    for export, job in exports.latest_exports(recipe, obj):
        if not export.file_url_name or job.status != Job.Status.SUCCEEDED or export_deleted(job):
            continue
        result, params = job.result or {}, exports.job_variant(recipe, job)
        made = DatasetFile(
            label=str(export.label(params)) or str(export.what(params)) or export.job_kind,
            url=reverse(export.file_url_name, args=[obj.pk, job.pk]),
            filename=result.get("filename", ""),
            sha256=result.get("sha256", ""),
            size=result.get("size"),
            layout=str(export.layout(params)),
            reads=str(export.reads(params)),
        )
        out.append((made, params.get(VERSION_PARAM)))
    return out


def versions_of(recipe: Recipe, obj: Any) -> list[BenchmarkVersion]:
    """``obj``'s published versions (newest first), with their benchmark and run counts."""
    return list(
        published_versions(recipe, obj)
        .filter(frozen=True)
        .select_related("benchmark", "created_by")
        .annotate(run_count=Count("runs"))
    )


def object_entry(recipe: Recipe, obj: Any) -> ObjectEntry:
    """One object's versions with their files, and its other files."""
    entry = ObjectEntry(recipe, obj, object_url(recipe, obj))
    versions = versions_of(recipe, obj) if recipe.publishes or recipe.version_files else []
    own: dict[int, VersionFiles] = {}
    if recipe.version_files is not None and versions:
        own = dict(recipe.version_files(obj, versions))
    by_pk = {}
    for version in versions:
        extra = own.get(version.pk, VersionFiles())
        by_pk[version.pk] = VersionEntry(
            version, list(extra.files), sha256=extra.sha256, card_url=extra.card_url
        )
        entry.versions.append(by_pk[version.pk])
    for made, version_id in export_files(recipe, obj):
        if version_id in by_pk:
            by_pk[version_id].files.append(made)
        else:
            entry.files.append(made)
    return entry


def datasets_for(user) -> list[dict]:
    """Every project in ``user``'s reach (by name) with its recipes' objects as entries, in
    the recipes' order then newest first: ``{"project", "entries"}``; no reach, no projects."""
    projects = list(projects_for(user).order_by("name", "id"))
    by_project: dict[int, list[ObjectEntry]] = {p.pk: [] for p in projects}
    for recipe in recipes():
        for obj in selectors.objects_for(recipe, user, readers=True):
            if obj.project_id in by_project:
                by_project[obj.project_id].append(object_entry(recipe, obj))
    return [{"project": p, "entries": by_project[p.pk]} for p in projects]


HOME_VERSIONS = 6  # the newest published versions on a researcher's home card


def home_context(user) -> dict:
    """The home page's datasets card: the newest published versions in the person's projects
    (with their object's datasets page) and how many datasets and versions there are."""
    entries = [e for group in datasets_for(user) for e in group["entries"]]
    newest = sorted(
        ((entry, v) for entry in entries for v in entry.versions),
        key=lambda pair: (pair[1].version.published_at, pair[1].version.pk),
        reverse=True,
    )
    return {
        "url": reverse("datasets"),
        "objects": len(entries),
        "version_count": len(newest),
        "versions": newest[:HOME_VERSIONS],
    }
