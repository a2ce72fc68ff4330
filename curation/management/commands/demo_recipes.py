"""``manage.py demo_recipes``: the recipes' demo data in the demo project (run after ``demo``).

Each registered recipe with a ``demo`` (in ``Recipe.order``) builds a small pipeline with the
offline drafter and the tiny random-weights scorer (both labelled as such in the UI) and leaves
tasks for a visitor. Idempotent: a recipe whose demo exists is left alone.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from annotator.demo import content
from annotator.platform.models import Project
from curation.recipes.framework.registry import recipes


def recipe_demos() -> list[tuple[str, Callable[..., Any]]]:
    """(label, build) of every recipe with a demo, in the recipes' order."""
    return [(recipe.label, recipe.demo) for recipe in recipes() if recipe.demo is not None]


class Command(BaseCommand):
    help = "Build each recipe's demo pipeline in the demo project (after `manage.py demo`)."
    requires_system_checks: list[str] = []

    def add_arguments(self, parser):
        parser.add_argument("--allow-insecure", action="store_true")

    def handle(self, *args, allow_insecure: bool, **options):
        if not settings.DEBUG and not allow_insecure:
            raise CommandError(
                "DEBUG is off: run with DEBUG=1, or pass --allow-insecure on a throwaway "
                "database (demo data is for a local demo)."
            )
        project = Project.objects.filter(slug=content.PROJECT_SLUG).first()
        curator = get_user_model().objects.filter(username="curator").first()
        if project is None or curator is None:
            raise CommandError("Run `manage.py demo` first: it makes the demo project and users.")
        for name, build in recipe_demos():
            started = time.monotonic()
            build(project=project, curator=curator)
            self.stdout.write(f"  {name} demo ready ({time.monotonic() - started:.1f} s)")
