"""The researcher's home card: the datasets the recipes published in their projects
(``datasets.home_context``). Imported once by ``CurationConfig.ready``, as a recipe's
``recipe.py`` is by its config, so the platform's home page never names curation."""

from __future__ import annotations

from annotator.platform import roles
from annotator.platform.home import home_card_add

from .datasets import home_context

home_card_add(
    "datasets",
    "curation/recipes/_home_datasets.html",
    home_context,
    for_roles=(roles.RESEARCHER,),
)
