"""Settings for the test suite: the demo-style defaults, whatever the shell exports.

Production settings turn on the SSL redirect and the manifest static storage, which the test
client does not use; tests run against DATABASE_URL (PostgreSQL in CI) with these on.
"""

import os

os.environ.setdefault("DEBUG", "true")

from .settings import *  # noqa: E402,F403

# The toy recipe (tests/curation/recipes/toy/): a recipe app defined in tests, installed here only.
INSTALLED_APPS = [*INSTALLED_APPS, "tests.curation.recipes.toy"]  # noqa: F405
