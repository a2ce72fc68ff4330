"""Tests of the recipes and of the recipe framework (the toy recipe)."""
