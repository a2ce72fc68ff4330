"""A progress bar: tqdm's (``tqdm.auto``, a widget in notebooks) when it is installed, else one
line redrawn on stderr; nothing at all when disabled."""

from __future__ import annotations

import sys
from typing import Any


class Progress:
    def __init__(self, total: int, description: str, *, enabled: bool = True) -> None:
        self.total, self.description, self.enabled = total, description, enabled
        self.done = 0
        self._bar: Any = None
        if enabled:
            try:
                from tqdm.auto import tqdm
            except ImportError:
                tqdm = None
            if tqdm is not None:
                self._bar = tqdm(total=total, desc=description, leave=True)

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        if not self.enabled:
            return
        if self._bar is not None:
            self._bar.close()
        else:
            sys.stderr.write("\n")
            sys.stderr.flush()

    def update(self, n: int) -> None:
        self.set(self.done + n)

    def set(self, done: int) -> None:
        self.done = done
        if not self.enabled:
            return
        if self._bar is not None:
            self._bar.total = self.total
            self._bar.n = done
            self._bar.refresh()
            return
        width = 30
        filled = int(width * done / self.total) if self.total else 0
        line = f"\r{self.description} [{'#' * filled}{'.' * (width - filled)}] {done}/{self.total}"
        sys.stderr.write(line)
        sys.stderr.flush()

    def describe(self, message: str) -> None:
        if self.enabled and self._bar is not None and message:
            self._bar.set_postfix_str(message[:60], refresh=False)
