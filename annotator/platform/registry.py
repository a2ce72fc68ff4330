"""A registry: entries declared once by name (task kinds here; outcome handlers, benchmark
families and recipes follow the same pattern), looked up by that name."""

from __future__ import annotations

from typing import TypeVar

T = TypeVar("T")


class Registry(dict[str, T]):
    """A dict of named entries. ``add`` refuses a name given twice (a programming error);
    ``lookup`` raises ``missing`` naming the known entries when a name is not registered."""

    def __init__(self, what: str, plural: str, missing: type[Exception] = KeyError):
        super().__init__()
        self.what, self.plural, self.missing = what, plural, missing

    def add(self, name: str, entry: T) -> T:
        if name in self:
            raise ValueError(f"{self.what} {name!r} registered twice")
        self[name] = entry
        return entry

    def lookup(self, name: str) -> T:
        try:
            return self[name]
        except KeyError:
            known = ", ".join(sorted(self))
            raise self.missing(
                f"Unknown {self.what} {name!r}; known {self.plural}: {known}."
            ) from None
