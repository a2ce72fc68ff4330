"""Recipes: the published methods as pipelines over the annotation engine, one Django app each.

A recipe is a package here (``curation/recipes/<name>/``) whose ``apps.py`` subclasses
``framework.appconfig.RecipeConfig``; naming it in ``INSTALLED_APPS`` installs it, and its
``ready`` imports its ``recipe.py`` (``RECIPE = register(Recipe(...))``). ``framework`` is what
every recipe stands on. See /README.md "Write your own recipe".
"""
