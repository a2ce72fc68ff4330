"""What a process keeps between calls, newest last, within a budget: the chat clients per
endpoint (``calls.pooled_client``), image URLs' JSON text (``calls._url_json``) and stored
images' data URLs (``images.prepare_image``). Thread-safe; no Django."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

V = TypeVar("V")


class Kept(Generic[V]):
    """A least-recently-used map whose values weigh ``weight(value)`` (1 each by default), at
    most ``budget`` in all: the oldest go first. A value over ``budget // 4`` is not kept (one
    would push out most of the others)."""

    def __init__(self, budget: int, weight: Callable[[V], int] = lambda _value: 1) -> None:
        self.budget = budget
        self.weight_of = weight
        self.weight = 0  # of what is kept now
        self._items: OrderedDict[Hashable, V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> V | None:
        """The value of ``key`` (now the newest), or None."""
        with self._lock:
            found = self._items.get(key)
            if found is not None:
                self._items.move_to_end(key)
            return found

    def put(self, key: Hashable, value: V) -> V:
        """Keep ``value`` under ``key`` unless a value is kept there already (another thread's,
        made meanwhile); returns the one kept, or ``value`` when it is too heavy to keep."""
        size = self.weight_of(value)
        if size > self.budget // 4:
            return value
        with self._lock:
            found = self._items.get(key)
            if found is not None:
                self._items.move_to_end(key)
                return found
            self._items[key] = value
            self.weight += size
            while self.weight > self.budget:
                _key, gone = self._items.popitem(last=False)
                self.weight -= self.weight_of(gone)
            return value

    def keys(self) -> list:
        """The keys kept, oldest first."""
        with self._lock:
            return list(self._items)

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)
