"""Import-linter contracts that find the recipes themselves (``[tool.importlinter]`` in
pyproject.toml names them under ``contract_types``).

A recipe is every package directly in the container (``curation.recipes``) except the framework
beside them, so a new recipe folder is covered the moment it exists; nobody lists it.

- ``recipes_apart``: the recipes never import each other, and the framework imports none of them.
- ``recipes_private``: nothing outside a recipe imports it (curation's infrastructure, the
  framework, evaluation, the annotator, the project package).
"""

from __future__ import annotations

import grimp
from importlinter.application import output
from importlinter.domain import fields
from importlinter.domain.contract import Contract, ContractCheck


def recipes_in(graph: grimp.ImportGraph, container: str, framework: str) -> list[str]:
    """The recipe packages: the container's children, the framework aside."""
    if container not in graph.modules:
        raise ValueError(f"Recipe container {container!r} does not exist.")
    if framework not in graph.find_children(container):
        raise ValueError(f"Framework {framework!r} is not a child of {container!r}.")
    return sorted(set(graph.find_children(container)) - {framework})


def _recipe_of(module: str, recipes: list[str]) -> str | None:
    return next((r for r in recipes if module == r or module.startswith(f"{r}.")), None)


def _line(graph: grimp.ImportGraph, importer: str, imported: str) -> str:
    details = graph.get_import_details(importer=importer, imported=imported)
    lines = ", ".join(f"l.{d['line_number']}" for d in details) or "l.?"
    return f"{importer} -> {imported} ({lines})"


class _RecipesContract(Contract):
    container = fields.ModuleField()
    framework = fields.ModuleField()

    def _recipes(self, graph: grimp.ImportGraph) -> list[str]:
        return recipes_in(graph, self.container.name, self.framework.name)  # type: ignore[attr-defined]

    def render_broken_contract(self, check: ContractCheck) -> None:
        for line in check.metadata["broken"]:
            output.print_error(line, bold=False)
        output.new_line()


class RecipesApartContract(_RecipesContract):
    """Every recipe is an independent layer above the framework (a ``layers`` contract whose
    top layer is found, not listed)."""

    type_name = "recipes_apart"

    def check(self, graph: grimp.ImportGraph, verbose: bool) -> ContractCheck:
        recipes = self._recipes(graph)
        framework = self.framework.name  # type: ignore[attr-defined]
        dependencies = graph.find_illegal_dependencies_for_layers(
            layers=(grimp.Layer(*recipes, independent=True), grimp.Layer(framework))
        )
        broken = []
        for dependency in sorted(dependencies, key=lambda d: (d.importer, d.imported)):
            broken.append(f"{dependency.importer} is not allowed to import {dependency.imported}:")
            for route in dependency.routes:
                for head in sorted(route.heads):
                    for tail in sorted(route.tails):
                        chain = [head, *route.middle, tail]
                        broken.append("  " + " -> ".join(chain))
        if verbose:
            output.print(f"Recipes found in {self.container}: {', '.join(recipes)}")
        return ContractCheck(kept=not broken, warnings=[], metadata={"broken": broken})


class RecipesPrivateContract(_RecipesContract):
    """No module outside a recipe imports anything in it, directly (an indirect import has a
    direct one somewhere along it, which this names)."""

    type_name = "recipes_private"

    def check(self, graph: grimp.ImportGraph, verbose: bool) -> ContractCheck:
        recipes = self._recipes(graph)
        broken = []
        for importer in sorted(graph.modules):
            own = _recipe_of(importer, recipes)
            for imported in sorted(graph.find_modules_directly_imported_by(importer)):
                if own is None and _recipe_of(imported, recipes) is not None:
                    broken.append(_line(graph, importer, imported))
        return ContractCheck(kept=not broken, warnings=[], metadata={"broken": broken})
