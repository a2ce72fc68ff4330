"""Publishing a recipe's object as a version of an evaluation benchmark: the "publish a version"
form (a label, plus whatever a recipe adds) and the button's POST, and the versions published."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from django import forms
from django.contrib import messages
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from annotator.platform.errors import ServiceError
from annotator.platform.views import perform, refuse
from evaluation.models import BenchmarkVersion
from evaluation.services import benchmark_get_or_create, version_create

from .declare import Recipe

RECENT_VERSIONS = 5  # versions listed on the detail page


class PublishForm(forms.Form):
    label = forms.CharField(max_length=60, label=gettext_lazy("Version label"), initial="v1")


def publish_version(
    request: HttpRequest,
    publish: Callable[..., Any],
    *,
    back: str,
    done: Callable[[Any], str],
    then: str | None = None,
    form_class: type[forms.Form] = PublishForm,
    refuse: Callable[[HttpRequest, ServiceError], None] = refuse,
) -> HttpResponse:
    """The "publish a version" button: the form's fields (the label, at most 60 characters)
    are ``publish``'s arguments, then as ``perform``."""
    form = form_class(request.POST)
    if not form.is_valid():
        messages.error(request, _("Give the version a label (at most 60 characters)."))
        return redirect(back)
    call = partial(publish, **form.cleaned_data, created_by=request.user)
    return perform(request, call, back=back, done=done, then=then, refuse=refuse)


def object_benchmark(obj: Any, *, family: str, name: str, created_by=None) -> Any:
    """The evaluation benchmark ``obj`` publishes to: the one it has, else ``family`` / ``name``
    in its project (got or made)."""
    return getattr(obj, "benchmark", None) or benchmark_get_or_create(
        family=family, name=name, project=obj.project, created_by=created_by
    )


def _benchmark_set(obj: Any, version: Any) -> None:
    """Point ``obj.benchmark`` at ``version``'s benchmark (when the model has that field)."""
    has_benchmark = any(f.name == "benchmark" for f in type(obj)._meta.concrete_fields)
    if has_benchmark and getattr(obj, "benchmark_id", None) != version.benchmark_id:
        type(obj).objects.filter(pk=obj.pk).update(benchmark=version.benchmark)
        obj.benchmark_id = version.benchmark_id


def publish_object(
    recipe: Recipe,
    obj: Any,
    *,
    label: str,
    created_by=None,
    items: list | None = None,
    source: str | None = None,
    **extras: Any,
) -> Any:
    """The one way a recipe publishes (``declare.Publish``): ``items`` (else the declared
    ``items(obj)``) frozen as a published version ``label`` of ``obj``'s benchmark (its own, else
    the declared ``name(obj, **extras)`` in its project, got or made) with ``source`` (else the
    declared ``source(obj)``), ``obj.benchmark`` pointed at the version's benchmark, then the
    declared ``published(obj, version, items)``, in one transaction. ``extras``: the publish
    form's other fields (VisIT's benchmark name)."""
    declared = recipe.publishes
    with transaction.atomic():
        rows = declared.items(obj) if items is None else items
        benchmark = object_benchmark(
            obj, family=declared.family, name=declared.name(obj, **extras), created_by=created_by
        )
        version = version_create(
            benchmark=benchmark,
            label=label,
            rows=rows,
            source=declared.source(obj) if source is None else source,
            publish=True,
            created_by=created_by,
        )
        _benchmark_set(obj, version)
        if declared.published is not None:
            declared.published(obj, version, rows)
    return version


def published_versions(recipe: Recipe, obj: Any):
    """``obj``'s published versions, newest first."""
    declared = recipe.publishes
    if declared is not None and declared.versions is not None:
        return declared.versions(obj)
    benchmark_id = getattr(obj, "benchmark_id", None)
    return BenchmarkVersion.objects.filter(benchmark_id=benchmark_id).order_by("-created_at", "-id")


def publish_context(recipe: Recipe, obj: Any) -> dict:
    """The detail page's publish form (next label ``v<n + 1>``) and the newest versions."""
    declared = recipe.publishes
    if declared is None or not declared.url_name:
        return {}
    versions = published_versions(recipe, obj)
    initial = {"label": f"v{versions.count() + 1}"}
    if declared.initial is not None:
        initial.update(declared.initial(obj))
    form_class = declared.form or PublishForm
    return {
        "publish_url": reverse(declared.url_name, args=[obj.pk]),
        "publish_form": form_class(initial=initial),
        "versions": list(versions.select_related("benchmark")[:RECENT_VERSIONS]),
    }
