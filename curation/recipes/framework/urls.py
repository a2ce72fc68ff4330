"""A recipe's URL patterns (mounted under ``curate/``): the generic pages with the recipe's own
names, routes and kwarg names (``<int:pipeline_id>`` …), then the recipe's own pages."""

from __future__ import annotations

from collections.abc import Callable

from django.urls import URLPattern, path
from django.views.decorators.http import require_http_methods

from annotator.platform import roles
from annotator.platform.files import DOWNLOAD_ROLES

from . import views
from .declare import Export, ItemList, Page, Recipe, WorkerPage

CURATOR = (roles.CURATOR,)  # admins pass every role check
WORKER = (roles.CROWDWORKER,)
READERS = (roles.CURATOR, roles.RESEARCHER)
# As today's decorators: require_GET, require_POST, GET and POST, none (a form page).
GET, POST, BOTH, ANY = ("GET",), ("POST",), ("GET", "POST"), None


def _bound(recipe: Recipe, view: Callable, allowed: tuple[str, ...], methods, **fixed):
    """``view(recipe, request, pk=…, **kwargs)`` as a Django view taking the recipe's kwarg."""

    def page(request, **kwargs):
        if recipe.pk_kwarg in kwargs:
            kwargs["pk"] = kwargs.pop(recipe.pk_kwarg)
        return view(recipe, request, **fixed, **kwargs)

    page.__name__ = page.__qualname__ = f"{recipe.key}_{view.__name__}"
    page.__doc__ = view.__doc__
    if methods is not None:
        page = require_http_methods(list(methods))(page)
    return roles.roles_required(*allowed)(page)


def _export_patterns(recipe: Recipe, base: str) -> list[URLPattern]:
    out, file_names = [], set()
    for export in recipe.exports:
        view = _bound(recipe, _export_view(export), DOWNLOAD_ROLES, BOTH)
        for route, name in ((export.url, export.url_name), *export.also):
            out.append(path(base + route, view, name=name))
        if export.file_url_name and export.file_url_name not in file_names:
            file_names.add(export.file_url_name)
            file_view = _bound(recipe, views.export_file, DOWNLOAD_ROLES, GET)
            out.append(path(base + "exports/<int:job_id>/", file_view, name=export.file_url_name))
    return out


def _export_view(export: Export) -> Callable:
    def export_download(recipe, request, **kwargs):
        return views.export_download(recipe, export, request, **kwargs)

    return export_download


def _page_view(page: Page) -> Callable:
    def own_page(recipe, request, **kwargs):
        return views.own_page(recipe, page, request, **kwargs)

    own_page.__name__, own_page.__doc__ = page.view.__name__, page.view.__doc__
    return own_page


def _list_view(declared: ItemList) -> Callable:
    def item_list(recipe, request, **kwargs):
        return views.item_list(recipe, declared, request, **kwargs)

    return item_list


def patterns_for(recipe: Recipe) -> list[URLPattern]:
    slug, names = recipe.slug, recipe.names
    base = f"{slug}/<int:{recipe.pk_kwarg}>/"
    out = [
        path(f"{slug}/", _bound(recipe, views.object_list, CURATOR, GET), name=names.list),
    ]
    if names.new and recipe.create_form is not None:
        new = _bound(recipe, views.object_new, CURATOR, ANY)
        out.append(path(f"projects/<int:project_id>/{slug}/new/", new, name=names.new))
    for declared in recipe.creates:
        view = _bound(recipe, views.object_create, CURATOR, POST, declared=declared)
        route = f"projects/<int:project_id>/{slug}/{declared.url}"
        out.append(path(route, view, name=declared.url_name))
    out.append(path(base, _bound(recipe, views.object_detail, CURATOR, GET), name=names.detail))
    if names.settings and recipe.settings_form is not None:
        methods = ANY if recipe.templates.settings_page else POST
        settings = _bound(recipe, views.object_settings, CURATOR, methods)
        out.append(path(base + "settings/", settings, name=names.settings))
    if names.stage:
        stage = _bound(recipe, views.stage_post, CURATOR, POST)
        out.append(path(base + "run/<slug:stage>/", stage, name=names.stage))
    for declared in recipe.stages:
        if declared.url and declared.button:
            view = _bound(recipe, views.stage_post, CURATOR, POST, stage=declared.name)
            out.append(path(base + declared.url, view, name=declared.url_name))
    if recipe.publishes is not None and recipe.publishes.url_name:
        publish = _bound(recipe, views.publish_post, CURATOR, POST)
        out.append(path(base + "publish/", publish, name=recipe.publishes.url_name))
    out += _export_patterns(recipe, base)
    for page in recipe.pages:
        view = _bound(recipe, _page_view(page), READERS if page.readers else CURATOR, page.methods)
        out.append(path(base + page.route, view, name=page.name))
    for declared in recipe.lists:
        view = _bound(recipe, _list_view(declared), CURATOR, GET)
        out.append(path(base + declared.url, view, name=declared.url_name))
    return out


def dataset_patterns(recipes: list[Recipe]) -> list[URLPattern]:
    """The datasets pages (mounted at ``datasets/``), read-only for the projects' researchers
    and curators: the index, and each recipe's object page ``<slug>/<int:pk_kwarg>/``."""
    index = roles.roles_required(*READERS)(require_http_methods(list(GET))(views.datasets_index))
    out = [path("", index, name="datasets")]
    for recipe in recipes:
        view = _bound(recipe, views.object_datasets, READERS, GET)
        route = f"{recipe.slug}/<int:{recipe.pk_kwarg}>/"
        out.append(path(route, view, name=f"datasets-{recipe.key}"))
    return out


def _worker_view(page: WorkerPage) -> Callable:
    def worker_page(recipe, request, **kwargs):
        return views.worker_page(recipe, page, request, **kwargs)

    worker_page.__name__, worker_page.__doc__ = page.view.__name__, page.view.__doc__
    return worker_page


def worker_patterns_for(recipe: Recipe) -> list[URLPattern]:
    """The crowdworkers' pages of a recipe (``Recipe.workers``), under ``work/<slug>/``."""
    if recipe.workers is None:
        return []
    base = f"{recipe.slug}/<int:{recipe.pk_kwarg}>/"
    return [
        path(
            base + page.route,
            _bound(recipe, _worker_view(page), WORKER, page.methods),
            name=page.name,
        )
        for page in recipe.workers.pages
    ]
