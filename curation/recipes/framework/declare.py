"""What a recipe declares: its stages (each a job), its annotation queues, its outcome handlers,
its exports, what it publishes to which evaluation family, its pages' names and templates.

A recipe folder's ``recipe.py`` builds one ``Recipe`` and registers it
(``RECIPE = register(Recipe(...))``); the generic services, jobs, views and URLs of this package
read the declaration, so a recipe writes only its domain: models, stage functions, queue
payloads, export writers, the pages that are its own.

Calling conventions (every callable takes the recipe's object first, positionally):
- ``run(obj, *, job_id, created_by, **params) -> dict``: a job's body; ``params`` is
  ``Job.params`` without ``Recipe.job_param``; its return value becomes ``Job.result``.
- ``blocked_by(obj, counts) -> str``: why a stage cannot start now ("" = it can); ``counts`` is
  ``Recipe.funnel(obj)``.
- ``check(obj, params) -> int``: just before the job is enqueued; raise ``Invalid`` to refuse,
  complete ``params`` in place (defaults), return the job's ``total`` (0 = unknown).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from django.db.models import Model
from django.utils.translation import gettext

if TYPE_CHECKING:
    from django import forms

Params = dict[str, Any]
Run = Callable[..., dict]


def _no_blocker(obj: Any, counts: dict) -> str:
    return ""


def _all_params(params: Params) -> Hashable:
    return tuple(sorted((k, repr(v)) for k, v in params.items()))


def _no_label(params: Params) -> str:
    return ""


def _route_kwargs(obj: Any, kwargs: dict, data: Mapping[str, str]) -> Params:
    return dict(kwargs)


@dataclass(frozen=True)
class Stage:
    """One step of the funnel that runs as a job (a button on the detail page)."""

    name: str  # "mine": the <slug:stage> of run/<slug:stage>/ and the key in context["stages"]
    label: str  # the button ("Mine pairs")
    job_kind: str  # Celery task name == Job.kind, unchanged ("naturalbench.mine")
    run: Run
    blocked_by: Callable[[Any, dict], str] = _no_blocker
    check: Callable[[Any, Params], int] | None = None
    form: type[forms.Form] | None = None  # POST fields -> Job.params (forms.StageForm)
    url: str = ""  # own route under the object; with url_name, "" = "<name>/"
    url_name: str = ""  # that route's name ("curator-vhx-negate"); "" = Recipe's run/<slug:stage>/
    card: str = ""  # the job card's title (default: label)
    started: str = ""  # "<started> started." after the POST; "" = "<label>: job #N started."
    refused_at: str = ""  # anchor of the detail page a refusal goes back to
    one_at_a_time: bool = False  # refuse while a job of this kind runs for the object
    button: bool = True  # False: started by the recipe's own code (an upload), no generic POST
    needs_object: bool = True  # False: the job makes the object: run(None, ..., **Job.params)
    # (job_id=, error=) when the platform fails a job of this stage (its worker stopped, an
    # error its run did not handle), in that transaction: the recipe's objects follow it
    on_failed: Callable[..., None] | None = None

    def __post_init__(self) -> None:
        if self.url_name and not self.url:
            object.__setattr__(self, "url", f"{self.name}/")

    @property
    def card_label(self) -> str:
        return self.card or self.label


@dataclass(frozen=True)
class QueueSpec:
    """An annotation queue a recipe object owns in one of its TaskQueue foreign keys; made on
    first use under the object's row lock (``queues.queue_ensure``)."""

    field: str  # the object's FK to annotator.TaskQueue ("pair_queue")
    kind: str  # the annotator kind ("pair_verify")
    title: Callable[[Any], str]  # obj -> title (cut to 200 characters)
    handler: str  # TaskQueue.outcome_handler, unchanged ("naturalbench.pair_verified")
    instructions: str | Callable[[Any], str] = ""
    config: Mapping[str, Any] | Callable[[Any], Mapping[str, Any]] = field(default_factory=dict)
    redundancy: int | Callable[[Any], int] = 1
    max_redundancy: int | Callable[[Any], int] | None = None  # None: queue_create's default
    rule: str = "majority"  # TaskQueue.Rule value


@dataclass(frozen=True)
class Export:
    """A file an export job writes and stores (``curation.export_files``), started by POST on
    ``url`` and served, newest first, by GET on it and on ``file_url_name``'s route."""

    job_kind: str  # "vhexpansion.export"
    run: Run  # (obj, *, job_id, created_by, **params) -> export_store's dict (+ extras)
    # (obj, route kwargs, GET/POST) -> Job.params; default: the route kwargs ({"fmt": "jsonl"})
    params: Callable[[Any, dict, Mapping[str, str]], Params] = _route_kwargs
    check: Callable[[Any, Params], int] | None = None  # before enqueue (refuse: Invalid)
    unknown: Callable[[Params], str] | None = None  # GET: why these params are no export ("")
    label: Callable[[Params], str] = _no_label  # the job card's title
    what: Callable[[Params], str] = _no_label  # "No finished <what> export yet…"
    variant: Callable[[Params], Hashable] = _all_params  # one card per variant
    variants: tuple[Hashable, ...] = ()  # card order (empty: newest first)
    cards: int = 0  # at most this many cards (0: all)
    url: str = "export/<str:fmt>/"  # under the object
    url_name: str = ""  # "curator-vhx-export"
    also: tuple[tuple[str, str], ...] = ()  # more (route, name) served alike (vlind versions)
    buttons: tuple[tuple[str, dict], ...] = ()  # generic _exports.html: (label, route kwargs)
    file_url_name: str = ""  # "curator-vhx-export-file" (route exports/<int:job_id>/)
    anchor: str = "export-title"  # where on the detail page its cards and refusals are
    refused_at: str = ""  # anchor a refused POST goes back to ("" = no anchor)
    # The datasets pages (researchers): what a file holds and how it is laid out, and which
    # official code reads it unchanged, from its params.
    layout: Callable[[Params], str] = _no_label
    reads: Callable[[Params], str] = _no_label


def _published(version: Any) -> str:
    return gettext("Published %(n)d items as %(version)s.") % {
        "n": version.item_count,
        "version": version,
    }


@dataclass(frozen=True)
class Publish:
    """Publishing the object as a version of an evaluation benchmark of ``family``, the one way
    every recipe publishes (``publish.publish_object``): the items — ``items(obj)``, the family's
    ItemRows (raise Invalid when there is nothing to publish), or those a stage passes — frozen
    as a published version of the object's benchmark (``obj.benchmark``, else ``name(obj, **form
    extras)`` in its project, got or made), ``obj.benchmark`` pointed at it (when the model has
    that field), then ``published(obj, version, items)``, all in one transaction. With
    ``url_name`` the detail page has a "publish a version" form; without, a stage publishes
    (NaturalBench's export)."""

    family: str  # evaluation registry key ("vhexpansion")
    name: Callable[..., str]  # (obj, **form extras) -> the benchmark's name on first publish
    items: Callable[[Any], list] | None = None  # obj -> ItemRows (None: a stage passes them)
    source: Callable[[Any], str] = _no_label  # obj -> the version's source line
    published: Callable[[Any, Any, list], None] | None = None  # (obj, version, items), after
    done: Callable[[Any], str] = _published  # version -> the form's success message
    versions: Callable[[Any], Any] | None = None  # obj -> its versions (None: obj.benchmark's)
    form: type[forms.Form] | None = None  # None: publish.PublishForm (the label)
    initial: Callable[[Any], dict] | None = None  # extra initial form values
    url_name: str = ""  # "curator-vhx-publish"
    back: str = ""  # anchor a refusal goes back to
    then: str | None = None  # anchor after success (None: back)


@dataclass(frozen=True)
class DatasetFile:
    """A file a recipe keeps with one of its published versions, as the datasets pages show it
    (NaturalBench's archive and Parquet file; exports are found from ``Recipe.exports``)."""

    label: str  # the button ("JSONL + images (.zip)")
    url: str  # its download address (a view the project's researchers may read)
    filename: str
    sha256: str
    size: int | None = None  # bytes, when known
    layout: str = ""  # what it holds and how it is laid out
    reads: str = ""  # which official code reads it unchanged


@dataclass(frozen=True)
class VersionFiles:
    """What a recipe adds to one published version on the datasets pages."""

    files: tuple[DatasetFile, ...] = ()
    sha256: str = ""  # the version's content hash, when the recipe keeps one
    card_url: str = ""  # the recipe's own full dataset card (a ``Page(readers=True)``)


@dataclass(frozen=True)
class Page:
    """A recipe's own page under its object (``<slug>/<int:pk_kwarg>/<route>``), for curators
    (and admins; with ``readers``, the project's researchers too): the object is loaded as the
    detail page loads it (404 when out of reach), then ``view(request, obj, **route kwargs)``
    answers."""

    route: str  # "triples/<int:triple_id>/"
    view: Callable[..., Any]  # (request, obj, **kwargs) -> HttpResponse
    name: str  # the URL name ("curator-vlind-triple")
    methods: tuple[str, ...] | None = ("GET",)  # None: any method (a form page)
    readers: bool = False  # researchers of the object's project too (a leaderboard)


@dataclass(frozen=True)
class WorkerPage:
    """A page crowdworkers use in one of the recipe's objects
    (``work/<slug>/<int:pk_kwarg>/<route>``): the object is loaded among those of the worker's
    projects that ``Workers.open`` keeps (404 otherwise, as a missing one), then
    ``view(request, obj, **route kwargs)`` answers."""

    route: str  # "" (the object's workspace) or "items/<int:item_id>/"
    view: Callable[..., Any]  # (request, obj, **kwargs) -> HttpResponse
    name: str  # the URL name ("hunt-work")
    methods: tuple[str, ...] | None = ("GET",)


@dataclass(frozen=True)
class Workers:
    """What crowdworkers do in a recipe's objects besides the engine's task queues (a hunt):
    their pages, which objects are open to them, and a card on their home page."""

    pages: tuple[WorkerPage, ...]
    # The objects open for work: fields equal to these values ({"state": "open"}); a fixed
    # condition, so that each page's lookup is one hand-written statement (selectors.py).
    open_when: Mapping[str, Any]
    select_related: tuple[str, ...] = ()  # forward keys the pages read with the object
    home_template: str = ""  # included on the home page with ``home_context(user)``
    home_context: Callable[[Any], dict] | None = None  # user -> its context ({}: no card)


@dataclass(frozen=True)
class ItemList:
    """A paged list of an object's items behind a funnel count (cases, pairs, triples…), under
    the object at ``url``, filtered by ``?state=`` with a chip (label and count) per state."""

    url: str  # under the object ("cases/")
    url_name: str  # "curator-vhx-cases"
    template: str  # gets recipe, object, <context_name>, page, state, chips, total (+ extra)
    rows: Callable[[Any, str], Any]  # (obj, ?state= as given) -> the queryset to page
    counts: Callable[[Any], tuple[Mapping[str, int], int]]  # obj -> ({state: n}, total)
    choices: Any  # (state, label) pairs of the chips, or obj -> them
    page_size: int = 25
    extra: Callable[[Any, Any, Mapping[str, int]], dict] | None = None  # (obj, page, counts)
    # request.GET -> more filters ({"family": 3}): rows(obj, state, **them), in the context too
    params: Callable[[Mapping[str, str]], dict] | None = None


@dataclass(frozen=True)
class Create:
    """Another way in on the new page: its own form, POSTed to ``url`` under
    ``projects/<int:project_id>/<slug>/``, whose data ``create`` makes the object from; a refusal
    shows the new page again with this form (bound, as ``context_name``) and why (400)."""

    url: str  # "from-naturalbench/"
    url_name: str  # "curator-vhx-from-naturalbench"
    form: Callable[..., Any]  # (request, data=None) -> the form (unbound on the new page)
    create: Callable[..., Any]  # (*, project, created_by, **cleaned data) -> the object
    done: str  # the message after it was made
    context_name: str  # the form's name in the new page's context ("nb_form")


@dataclass(frozen=True)
class RecipeUrlNames:
    """Today's URL names of the generic pages ("" = the recipe serves that page itself or has
    none)."""

    list: str  # <slug>/
    detail: str  # <slug>/<int:pk_kwarg>/
    new: str = ""  # projects/<int:project_id>/<slug>/new/
    settings: str = ""  # <slug>/<int:pk_kwarg>/settings/
    stage: str = ""  # <slug>/<int:pk_kwarg>/run/<slug:stage>/


@dataclass(frozen=True)
class RecipeTemplates:
    list: str = "curation/recipes/list.html"
    detail: str = "curation/recipes/detail.html"
    funnel: str = "curation/recipes/_funnel.html"  # the fragment ?part=funnel polls
    form: str = "curation/recipes/settings.html"  # the new page and the settings page
    settings_page: bool = False  # settings: a page (GET + POST); False: a POST from the detail


@dataclass(frozen=True)
class Recipe:
    key: str  # "naturalbench": exports/<key>/…, Job kinds' prefix, registry key
    label: str  # "NaturalBench"
    model: type[Model]  # the pipeline model (a framework.models.RecipePipeline)
    pk_kwarg: str  # URL kwarg: "pipeline_id" / "set_id" / "bench_id"
    names: RecipeUrlNames
    context_name: str  # the object's name in templates: "pipeline" / "case_set" / "bench"
    slug: str = ""  # URL segment under curate/ ("" = key)
    job_param: str = ""  # Job.params key ("" = pk_kwarg; VHExpansion: "case_set_id")
    list_key: str = "pipelines"  # each project group's list in the list template
    order: int = 100  # list, demo and URL order among recipes
    templates: RecipeTemplates = RecipeTemplates()
    stages: tuple[Stage, ...] = ()
    queues: tuple[QueueSpec, ...] = ()
    outcomes: Mapping[str, Callable[[Any, Any], None]] = field(default_factory=dict)
    exports: tuple[Export, ...] = ()
    lists: tuple[ItemList, ...] = ()
    publishes: Publish | None = None
    funnel: Callable[[Any], dict] = lambda obj: {}
    bar: Callable[[dict], int] | None = None  # funnel counts -> the count bars scale to
    # loading the object (pages and jobs); its queues' fields are added (``QueueSpec.field``)
    select_related: tuple[str, ...] = ("project",)
    # the list page's counts, as annotations of objects_for ({"n_cases": Count("cases")})
    list_counts: Mapping[str, Any] = field(default_factory=dict)
    detail_context: Callable[[Any, Any, dict], dict] | None = None  # (request, obj, base)
    funnel_extra: bool = False  # the polled funnel fragment gets detail_context too
    create_form: type[forms.Form] | None = None  # forms.RecipeForm subclass (the new page)
    # (*, project, created_by, **form data) -> obj, or the Job that makes it (an import): then
    # the new page comes back and lists the newest jobs of the stages with needs_object=False
    create: Callable[..., Any] | None = None
    created: str | Callable[[Any], str] = ""  # message after create (given the obj or Job)
    creates: tuple[Create, ...] = ()  # more ways in on the new page, each its own form
    settings_form: type[forms.Form] | None = None  # forms.RecipeForm subclass
    update: Callable[..., Any] | None = None  # (obj, **form data)
    settings_saved: str = ""  # message after update ("" = "Settings saved.")
    refuse: Callable[[Any, Any], None] | None = None  # (request, ServiceError) on a refusal
    pages: tuple[Page, ...] = ()  # the recipe's own pages under the object
    api_urls: str = ""  # dotted module of patterns mounted at api/<slug>/
    workers: Workers | None = None  # crowdworkers' own pages (a hunt), mounted at work/<slug>/
    demo: Callable[..., Any] | None = None  # (*, project, curator)
    # The datasets pages: (obj, its published versions) -> {BenchmarkVersion pk: VersionFiles}
    # for the files the recipe keeps with its versions itself (not export jobs).
    version_files: Callable[[Any, list], Mapping[int, VersionFiles]] | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "slug", self.slug or self.key)
        object.__setattr__(self, "job_param", self.job_param or self.pk_kwarg)
        queues = tuple(q.field for q in self.queues if q.field not in self.select_related)
        object.__setattr__(self, "select_related", (*self.select_related, *queues))

    def stage(self, name: str) -> Stage | None:
        return next((s for s in self.stages if s.name == name), None)

    @property
    def job_kinds(self) -> tuple[str, ...]:
        return tuple(s.job_kind for s in self.stages) + tuple(e.job_kind for e in self.exports)
