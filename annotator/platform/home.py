"""Cards other apps add to a crowdworker's home page (the open hunt rounds of a recipe): an
explicit registry the home view reads. The platform imports none of the apps that register."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .registry import Registry

HomeContext = Callable[[Any], dict]
HOME_CARDS: Registry[tuple[str, HomeContext]] = Registry("home card", "home cards")


def home_card_add(name: str, template: str, context: HomeContext) -> None:
    """Show ``template`` on the home page with ``context(user)`` (an empty dict: no card)."""
    HOME_CARDS.add(name, (template, context))


def home_card_remove(name: str) -> None:
    HOME_CARDS.pop(name, None)


def home_cards(user) -> list[dict]:
    """The cards to show ``user``, in registration order: ``{"template", "context"}``."""
    cards = []
    for template, context in HOME_CARDS.values():
        values = context(user)
        if values:
            cards.append({"template": template, "context": values})
    return cards
