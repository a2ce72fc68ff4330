"""The recipes, registered once at start-up (each recipe app's ``RecipeConfig.ready`` imports its
``recipe.py``).

``register(recipe)`` registers the recipe's outcome handlers (``annotator.outcomes``) and one
Celery task per job kind — its stages' and its exports' — each the one dispatcher
``jobs.stage_job``, named exactly as the kind (``Job.kind`` and task names never change).
Nothing here imports a recipe: recipes import this.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from annotator.outcomes import HANDLERS, outcome_handler
from annotator.platform.home import home_card_add, home_card_remove
from annotator.platform.webhooks import JOB_SUCCESS_EVENTS

from .declare import Export, Recipe, Stage
from .jobs import kind_forget, kind_register, kind_taken, step_of

__all__ = [
    "recipe_for",
    "recipe_of",
    "recipes",
    "register",
    "stage_of_run",
    "step_of",
    "unregister",
]
_RECIPES: dict[str, Recipe] = {}
_RUNS: dict[Callable, tuple[Recipe, Stage]] = {}  # a stage's run function -> its stage


def register(recipe: Recipe) -> Recipe:
    """Add ``recipe``; a second recipe with the same key or job kind is an error."""
    if recipe.key in _RECIPES:
        raise ValueError(f"recipe {recipe.key!r} registered twice")
    steps: list[Stage | Export] = [*recipe.stages, *recipe.exports]
    kinds = [step.job_kind for step in steps]
    taken = sorted({k for k in kinds if kind_taken(k)} | {k for k in kinds if kinds.count(k) > 1})
    if taken:
        raise ValueError(f"recipe {recipe.key!r}: job kinds declared twice: {', '.join(taken)}")
    runs = [stage.run for stage in recipe.stages]
    if any(run in _RUNS for run in runs) or len(set(runs)) < len(runs):
        raise ValueError(f"recipe {recipe.key!r}: a stage's run function is another stage's too")
    for name, handler in recipe.outcomes.items():
        outcome_handler(name)(handler)
    for step in steps:
        kind_register(recipe, step)
    for export in recipe.exports:  # its webhooks hear "export.ready" when the job succeeds
        JOB_SUCCESS_EVENTS.add(export.job_kind, "export.ready")
    _RUNS.update((stage.run, (recipe, stage)) for stage in recipe.stages)
    workers = recipe.workers
    if workers is not None and workers.home_template and workers.home_context is not None:
        home_card_add(recipe.key, workers.home_template, workers.home_context)
    _RECIPES[recipe.key] = recipe
    return recipe


def unregister(key: str) -> None:
    """Forget a recipe (tests register a toy recipe and take it away again). Its Celery tasks
    stay registered: they only dispatch, and find no recipe for the kind."""
    recipe = _RECIPES.pop(key, None)
    if recipe is None:
        return
    for name in recipe.outcomes:
        HANDLERS.pop(name, None)
    for kind in recipe.job_kinds:
        kind_forget(kind)
        JOB_SUCCESS_EVENTS.pop(kind, None)
    for stage in recipe.stages:
        _RUNS.pop(stage.run, None)
    home_card_remove(key)


def recipes() -> list[Recipe]:
    """Every registered recipe, in ``order`` (then key)."""
    return sorted(_RECIPES.values(), key=lambda r: (r.order, r.key))


def stage_of_run(run: Callable) -> tuple[Recipe, Stage]:
    """The recipe and the stage whose ``run`` is this function: a recipe's code names its own
    stages by their functions (``stage_once(questions_draft, pipeline)``), not by strings."""
    try:
        return _RUNS[run]
    except KeyError:
        raise LookupError(f"no registered stage runs {run.__qualname__}") from None


def recipe_for(obj: Any) -> Recipe:
    """The recipe whose model ``obj`` (an object, or the model itself) is."""
    model = obj if isinstance(obj, type) else type(obj)
    found = next((r for r in _RECIPES.values() if issubclass(model, r.model)), None)
    if found is None:
        raise LookupError(f"no registered recipe has the model {model.__name__}")
    return found


def recipe_of(key: str) -> Recipe:
    try:
        return _RECIPES[key]
    except KeyError:
        raise LookupError(f"no recipe {key!r}") from None
