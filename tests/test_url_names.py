"""Every URL keeps its route and its name (issue 14: the recipe framework serves the recipes'
pages from generic patterns, and nothing a template, a bookmark or an API client uses may move).

``tests/url_names.txt`` is the resolver walked on the tree before the change, one ``route name``
line per pattern. Regenerate it only for a deliberate URL change, and say so in the commit.
"""

from __future__ import annotations

from pathlib import Path

from django.urls import URLPattern, URLResolver, get_resolver

from tests import recipes_in_tests

SNAPSHOT = Path(__file__).with_name("url_names.txt")


def _walk(resolver, prefix: str = "", skip: frozenset[str] = frozenset()):
    """``route name`` of every pattern but those named in ``skip``."""
    for pattern in resolver.url_patterns:
        route = prefix + str(pattern.pattern)
        if isinstance(pattern, URLResolver):
            yield from _walk(pattern, route, skip)
        elif isinstance(pattern, URLPattern) and pattern.name not in skip:
            yield f"{route} {pattern.name or ''}"


def test_url_routes_and_names_are_unchanged():
    expected = sorted(SNAPSHOT.read_text(encoding="utf-8").splitlines())
    # (the recipes defined in tests, installed by the test settings only, are not the product's)
    actual = sorted(_walk(get_resolver(), skip=frozenset(recipes_in_tests.url_names())))
    missing = sorted(set(expected) - set(actual))
    added = sorted(set(actual) - set(expected))
    assert not missing, f"URL patterns gone or changed: {missing}"
    assert not added, f"URL patterns new or changed: {added}"
    assert actual == expected  # the same number of each (no pattern twice)
