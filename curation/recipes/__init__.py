"""Recipes: the four published methods as pipelines over the annotation engine.

Each recipe is a subpackage; importing it registers its outcome handlers, offline drafter rules
and default prompt templates' definitions. ``CurationConfig.ready`` imports this package.
"""

import importlib
import pkgutil

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")
