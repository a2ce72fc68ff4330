"""Queue configs the crowd demo borrows from the app that owns them.

The demo's ``skill_tags`` queue tags with NaturalBench's 27-skill taxonomy (App. C, Table 8),
which belongs to the NaturalBench recipe (``curation/recipes/naturalbench/skills.json``) above
the annotator: the recipe lends it when it loads, the demo reads it here, and the annotator
imports no recipe — an explicit registry, like the home cards (``annotator.platform.home``).
"""

from __future__ import annotations

import copy

from annotator.platform.registry import Registry

DEMO_CONFIGS: Registry[dict] = Registry("demo queue config", "demo queue configs", LookupError)


def demo_config_lend(kind: str, config: dict) -> None:
    """Give the demo's ``kind`` queue ``config`` (once per kind)."""
    DEMO_CONFIGS.add(kind, config)


def demo_config(kind: str) -> dict:
    """The config lent for the demo's ``kind`` queue (a copy); LookupError naming the lent ones
    when no installed app lends it."""
    return copy.deepcopy(DEMO_CONFIGS.lookup(kind))
