"""The recipe contracts (tools/import_contracts.py) find the recipes themselves: on a small import
graph, a recipe nobody listed is held apart from the others, and nothing outside a recipe may
import it; the recipes installed in this project are the ones the contracts search."""

from __future__ import annotations

import tomllib
from pathlib import Path

import grimp
import pytest

from curation.recipes.framework import appconfig
from tools.import_contracts import (
    RecipesApartContract,
    RecipesPrivateContract,
    recipes_in,
)

ROOT = Path(__file__).resolve().parent.parent
OPTIONS = {"container": "app.recipes", "framework": "app.recipes.framework"}


def graph(*imports: tuple[str, str]) -> grimp.ImportGraph:
    """A graph of package ``app``: two listed-nowhere recipes, the framework, infrastructure."""
    g = grimp.ImportGraph()
    for module in (
        "app",
        "app.infra",
        "app.recipes",
        "app.recipes.framework",
        "app.recipes.alpha",
        "app.recipes.alpha.stages",
        "app.recipes.beta",
        "app.recipes.beta.models",
        "app.recipes.gamma",  # a new recipe folder
    ):
        g.add_module(module)
    standing = [
        ("app.recipes.alpha.stages", "app.recipes.framework"),
        ("app.recipes.framework", "app.infra"),
    ]
    for importer, imported in [*standing, *imports]:
        g.add_import(importer=importer, imported=imported, line_number=7, line_contents="")
    return g


def check(contract_class, g: grimp.ImportGraph):
    contract = contract_class(
        name="t", session_options={"root_packages": ["app"]}, contract_options=OPTIONS
    )
    return contract.check(g, verbose=False)


def test_the_recipes_are_the_containers_children_but_the_framework():
    assert recipes_in(graph(), "app.recipes", "app.recipes.framework") == [
        "app.recipes.alpha",
        "app.recipes.beta",
        "app.recipes.gamma",
    ]


def test_recipes_standing_on_the_framework_alone_keep_both_contracts():
    g = graph()
    assert check(RecipesApartContract, g).kept
    assert check(RecipesPrivateContract, g).kept


@pytest.mark.parametrize(
    ("importer", "imported"),
    [
        ("app.recipes.gamma", "app.recipes.alpha.stages"),  # the unlisted recipe, too
        ("app.recipes.beta.models", "app.recipes.gamma"),
        ("app.recipes.framework", "app.recipes.beta.models"),  # the framework reaching up
    ],
)
def test_a_recipe_importing_another_or_the_framework_importing_one_breaks_apart(importer, imported):
    result = check(RecipesApartContract, graph((importer, imported)))
    assert not result.kept
    assert any(importer in line and imported in line for line in result.metadata["broken"])


def test_infrastructure_importing_a_recipe_breaks_private_naming_the_line():
    result = check(RecipesPrivateContract, graph(("app.infra", "app.recipes.gamma")))
    assert not result.kept
    assert result.metadata["broken"] == ["app.infra -> app.recipes.gamma (l.7)"]


def test_a_recipe_importing_itself_keeps_private():
    g = graph(("app.recipes.alpha", "app.recipes.alpha.stages"))
    assert check(RecipesPrivateContract, g).kept


def test_every_installed_recipe_is_a_folder_the_contracts_search(settings):
    """Every recipe app installed (the ones defined in tests aside) sits in the container the
    recipe contracts search, and every folder there is an installed recipe app."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    recipes = next(c for c in config["contracts"] if c["id"] == "recipes")
    container, framework = recipes["container"], recipes["framework"]
    assert recipes["type"] == "recipes_apart"
    folders = {
        f"{container}.{path.name}"
        for path in (ROOT / container.replace(".", "/")).iterdir()
        if (path / "__init__.py").exists() and f"{container}.{path.name}" != framework
    }
    installed = {c.name for c in appconfig.installed() if not c.name.startswith("tests.")}
    assert installed == folders
    assert {"naturalbench", "vhexpansion", "visit", "vlind"} <= {
        c.label for c in appconfig.installed()
    }
