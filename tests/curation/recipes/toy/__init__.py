"""The toy recipe: a complete recipe app defined in tests (``apps.py``, ``models.py``,
``migrations/``, ``templates/toy/``, ``recipe.py``), installed only by the test settings."""
