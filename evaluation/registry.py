"""The benchmark families evaluation knows: one declaration per family, read by generic code.

A family (one published benchmark and its metrics) lives in ``evaluation/families/<key>/`` and
registers one ``Family`` when ``evaluation.families.load()`` imports it (from
``EvaluationConfig.ready``). Importers, compute, runners, services, views, API and CLI look a
family up here by ``Benchmark.family`` and call what it declares; they never name one. This
module imports none of them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from annotator.platform.errors import Invalid

if TYPE_CHECKING:
    from evaluation.compute import ItemData, Items, MetricRow, MetricSpec, Predictions, ReferenceRow
    from evaluation.parsed import ItemRow, JudgmentFile, JudgmentRow, PredictionRow


# --- The data side: parsing, metrics, demo ------------------------------------------------------


class RowsFn(Protocol):
    """A run's metric rows from the version's items and the run's predictions (no database)."""

    def __call__(
        self, items: Items, predictions: Predictions, *, seed: int, rounds: int, text_metrics: bool
    ) -> list[MetricRow]: ...


class VersionRowsFn(Protocol):
    """Rows that rate every run of a version together (stored on each run), keyed like `runs`
    (each run's player name: its model's name). Any seed comes from the data, never a database
    id, so the same data gives the same ratings in any database."""

    def __call__(
        self, items: Items, runs: Mapping[str, Predictions], *, rounds: int
    ) -> dict[str, list[MetricRow]]: ...


@dataclass(frozen=True)
class PredictionOption:
    """The one free-text option a predictions file may need (a column, a model identifier).

    ``setting``: when set, the option's value (given, else ``detect(content)``) is stored in the
    imported run's ``prompt_settings`` under this key."""

    label: str
    help: str = ""
    setting: str = ""
    detect: Callable[[str], str] | None = None  # (content) -> value found in the file, or ""


class DemoSink(Protocol):
    """What ``evaluate demo`` gives a family's demo: make a version, import a run into it."""

    def version(self, name: str, content: str, filename: str) -> Any: ...

    def run(
        self, version: Any, model: str, content: str, filename: str, option: str = ""
    ) -> None: ...


@dataclass(frozen=True)
class FamilyDemo:
    """Synthetic versions and runs for ``evaluate demo`` (``order`` keeps today's sequence)."""

    build: Callable[[DemoSink], None]
    order: int = 0


# --- The run / show side (filled by the families' runner, plots, pairwise, templates) ------------


@dataclass(frozen=True)
class RunOption:
    """One yes/no option of a model run: a form checkbox, an API boolean, a CLI flag."""

    name: str
    label: str


@dataclass(frozen=True)
class RunOptions:
    """Per-run options a family's runner accepts (form fields, CLI flags, API keys)."""

    fields: tuple[RunOption, ...] = ()
    clean: Callable[[dict], dict] | None = None  # {name: bool} -> stored options (or Invalid)
    summary: str = ""  # what they are: "These options ({summary}) belong to {label}."

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(o.name for o in self.fields)


@dataclass(frozen=True)
class LLMRunner:
    """Answers items with an LLM provider through the gateway's templates."""

    templates: tuple[str, ...]  # gateway template names the runner renders
    calls: Callable[..., list]  # (item, options) -> list[runners.CallSpec]
    # (item, {call key: runners.Outcome}) -> raw, parsed, extra scores (after "provenance")
    prediction: Callable[..., tuple[Any, Any, dict]]
    options: RunOptions = field(default_factory=RunOptions)


@dataclass(frozen=True)
class ScorerRunner:
    """Scores items with a CLIP-style scorer instead of asking a model: one score per
    (caption, image), rows in ``texts`` order, columns in ``images`` order."""

    images: tuple[str, ...]  # item data keys naming the images
    texts: tuple[str, ...]  # item data keys holding the captions


@dataclass(frozen=True)
class PairJudge:
    """An LLM judge of a family's pairs, run as a job (``runners.JUDGE_JOB``)."""

    # (*, version, judgment_set_name, pairs, provider, created_by, …) -> Job
    start: Callable[..., Any]
    run: Callable[..., dict]  # the job's body: (*, judgment_set_id, pairs, provider_id, …)
    sample: Callable[..., list[dict]]  # (*, version, model, n, seed, opponents) -> pairs
    player_names: Callable[[Any], list[str]]  # version -> models with responses to judge
    players: Callable[[Any], dict[str, dict[int, str]]]  # version -> responses per player
    default_instances: int  # instances drawn per model when none are given


@dataclass(frozen=True)
class Pairwise:
    """Pairwise judgments of a family's runs (players, judged pairs, ratings, agreement)."""

    parse: Callable[..., JudgmentFile]  # (kind, content, filename, *, aliases) -> JudgmentFile
    item_key: Callable[[Mapping[str, Any]], str]  # item data -> instance key
    row_key: Callable[[JudgmentRow], str]  # judged row -> the same instance key
    reference_player: str  # the reference's player name in the official files
    order_winner: Callable[..., str]  # (judge_output, shown_a, shown_b, *, extraction_output)
    aggregate: Callable[[str, str], str]  # winners of both orders -> winner of the pair
    formats: Mapping[str, str] = field(default_factory=dict)  # import help, per file kind
    compute: Any = None  # module: PairData, set_results, agreement_results, CODE_VERSION, …
    judge: PairJudge | None = None  # the LLM judge runner
    strata: tuple[str, ...] = ()  # crowd agreement strata (judgments page columns)
    agreement_plot: Callable[[dict], str] | None = None  # agreement results -> SVG
    # A judgment set in the paper's own judgments layout: set -> (file name, text).
    export: Callable[[Any], tuple[str, str]] | None = None
    # How the reference player reads on pages, from where the version's references came from.
    reference_label: Callable[[int], str] | None = None


@dataclass(frozen=True)
class FamilyTemplates:
    """Template paths a family adds to generic pages ("" = none)."""

    item: str = ""  # one item's summary on the version page
    version_note: str = ""  # a note under the version's counts
    leaderboard_note: str = ""  # a note above the leaderboard
    metrics_note: str = ""  # a note under the leaderboard's "More metrics"
    judgments_intro: str = ""  # the judgments page before any judgment
    rankings_note: str = ""  # a sentence in the rankings page's introduction
    benchmarks_example: str = ""  # a terminal example on the empty benchmarks page


# --- The family -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Family:
    key: str  # Benchmark.family value
    label: str  # shown name
    order: int  # position in choices (today's order)
    parse_items: Callable[[str, str], list[ItemRow]]  # (content, filename)
    parse_predictions: Callable[[str, str, str], list[PredictionRow]]  # (content, filename, option)
    rows: RowsFn
    specs: tuple[MetricSpec, ...]
    primary: str  # the metric a leaderboard sorts by
    reference_rows: tuple[ReferenceRow, ...] = ()
    # Reference rows that depend on the version's items (chance under its label balance);
    # when set, the leaderboard shows these instead of ``reference_rows``.
    reference_rows_of: Callable[[Items], tuple[ReferenceRow, ...]] | None = None
    version_rows: VersionRowsFn | None = None
    parse_answer: Callable[[ItemData, Any], Any] | None = None  # import: raw -> parsed answer
    prediction_option: PredictionOption | None = None
    formats: Mapping[str, str] = field(default_factory=dict)  # "items", "predictions" examples
    demo: FamilyDemo | None = None
    templates: FamilyTemplates = field(default_factory=FamilyTemplates)
    plots: Callable[[dict], list[dict]] | None = None  # leaderboard -> plot dicts
    runner: LLMRunner | ScorerRunner | None = None
    pairwise: Pairwise | None = None
    # The paper's published release from a local folder or file (Path) -> releases.ReleaseFile:
    # the family's importable text, its images ingested (``evaluate import-version``).
    release: Callable[[Path], Any] | None = None
    # Extra context for the family's templates on the version page: version -> dict.
    version_context: Callable[[Any], dict] | None = None
    # A run's predictions in the paper's published layout: (items, predictions) -> (file name,
    # text), Invalid when the run lacks some (``evaluate export-predictions``); imports back.
    predictions_file: Callable[[Items, Predictions], tuple[str, str]] | None = None

    def spec_map(self) -> dict[str, MetricSpec]:
        return {s.key: s for s in self.specs}


def declare(
    key: str,
    label: str,
    order: int,
    *,
    parse: Any,
    metric_rows: Any,
    demo: Any = None,
    runner: Any = None,
    plots: Any = None,
    **fields: Any,
) -> Family:
    """A family from its package's modules, by the convention of ``evaluation/families/<key>/``:
    ``parse`` (parse_items, parse_predictions, FORMATS, optional parse_answer and
    predictions_file), ``metric_rows`` (rows,
    SPECS, PRIMARY, optional REFERENCE_ROWS, reference_rows_of and version_rows), ``demo``
    (DEMO), ``runner`` (RUNNER), ``plots`` (plots, TEMPLATES). ``fields`` sets the rest
    (prediction_option, pairwise)."""
    return Family(
        key=key,
        label=label,
        order=order,
        parse_items=parse.parse_items,
        parse_predictions=parse.parse_predictions,
        parse_answer=getattr(parse, "parse_answer", None),
        predictions_file=getattr(parse, "predictions_file", None),
        formats=parse.FORMATS,
        rows=metric_rows.rows,
        specs=metric_rows.SPECS,
        primary=metric_rows.PRIMARY,
        reference_rows=getattr(metric_rows, "REFERENCE_ROWS", ()),
        reference_rows_of=getattr(metric_rows, "reference_rows_of", None),
        version_rows=getattr(metric_rows, "version_rows", None),
        demo=getattr(demo, "DEMO", None),
        runner=getattr(runner, "RUNNER", None),
        plots=getattr(plots, "plots", None),
        templates=getattr(plots, "TEMPLATES", FamilyTemplates()),
        **fields,
    )


_FAMILIES: dict[str, Family] = {}


def register(entry: Family) -> Family:
    """Add a family; a key registered twice is a programming error."""
    if entry.key in _FAMILIES:
        raise ValueError(f"Benchmark family {entry.key!r} is already registered.")
    _FAMILIES[entry.key] = entry
    return entry


def unregister(key: str) -> None:
    """Remove a family (tests that register their own)."""
    _FAMILIES.pop(key, None)


def family_of(key: str) -> Family:
    try:
        return _FAMILIES[key]
    except KeyError:
        raise Invalid(f"Unknown benchmark family {key!r}.") from None


def pairwise_of(key: str) -> Pairwise:
    """The family's pairwise judgments; Invalid when the family has none."""
    pairwise = family_of(key).pairwise
    if pairwise is None:
        names = " or ".join(f.label for f in families() if f.pairwise is not None)
        raise Invalid(f"Pairwise judgments belong to {names} versions.")
    return pairwise


def families() -> list[Family]:
    return sorted(_FAMILIES.values(), key=lambda f: (f.order, f.key))


def choices() -> list[tuple[str, str]]:
    return [(f.key, f.label) for f in families()]


def label_of(key: str) -> str:
    """The family's shown name; an unknown key is shown as it is stored."""
    found = _FAMILIES.get(key)
    return found.label if found else key
