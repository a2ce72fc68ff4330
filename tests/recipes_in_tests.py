"""Recipes defined in tests (the toy, ``tests/curation/recipes/toy/``): apps the test settings
install and the product does not. The URL snapshot and the permission matrix hold the product's
URLs, so they leave these recipes' pages out; the matrix's database fingerprint takes in every
recipe app's tables, whatever their names."""

from __future__ import annotations

from django.urls import URLResolver

from curation.recipes.framework.appconfig import installed
from curation.recipes.framework.registry import recipe_of
from curation.recipes.framework.urls import dataset_patterns, patterns_for


def _names(patterns) -> set[str]:
    names = set()
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            names |= _names(pattern.url_patterns)
        elif pattern.name:
            names.add(pattern.name)
    return names


def url_names() -> set[str]:
    """The URL names of the recipes defined in tests."""
    return {
        name
        for config in installed()
        if config.name.startswith("tests.")
        for recipe in [recipe_of(config.label)]
        for name in _names(patterns_for(recipe)) | _names(dataset_patterns([recipe])[1:])
    }


def recipe_tables() -> set[str]:
    """The tables of every installed recipe app (``curation_*`` for the four that were once in
    curation, ``<label>_*`` for the others)."""
    return {model._meta.db_table for config in installed() for model in config.get_models()}
