"""Cards other apps add to the home page (a crowdworker's open hunt rounds, a researcher's
datasets): an explicit registry the home view reads, each card for the roles it names. The
platform imports none of the apps that register."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import roles
from .registry import Registry

HomeContext = Callable[[Any], dict]
HOME_CARDS: Registry[tuple[str, HomeContext, tuple[str, ...]]] = Registry("home card", "home cards")


def home_card_add(
    name: str,
    template: str,
    context: HomeContext,
    *,
    for_roles: tuple[str, ...] = (roles.CROWDWORKER,),
) -> None:
    """Show ``template`` on the home page of people with one of ``for_roles`` (admins pass
    every role check) with ``context(user)`` (an empty dict: no card)."""
    HOME_CARDS.add(name, (template, context, for_roles))


def home_card_remove(name: str) -> None:
    HOME_CARDS.pop(name, None)


def home_cards(user) -> list[dict]:
    """The cards to show ``user``, in registration order: ``{"template", "context"}``."""
    cards = []
    for template, context, for_roles in HOME_CARDS.values():
        if not roles.has_role(user, for_roles):
            continue
        values = context(user)
        if values:
            cards.append({"template": template, "context": values})
    return cards
