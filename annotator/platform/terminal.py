"""Progress bars in the terminal: a command that runs jobs in its own process (``evaluate run``,
``naturalbench mine``, ``import_corpus``, ``embed`` …) shows each job's progress as a tqdm bar,
fed by the same reports that move the job's card on the pages (``jobs.job_progress``), so every
command gets the same bar the same way: ``with command_bars(self, options)`` around its work,
and ``bars.callback(label)`` for work that takes a ``(done, total, message)`` callable directly.

No bar when the stream is not a terminal (a pipe, a log file, CI) or when the person asked for
quiet (``--quiet`` or ``-v 0``): the command's own output is then exactly what it was.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import IO, Any

from tqdm import tqdm

from .jobs import progress_listening
from .models import Job

REFRESH_S = 0.1  # at most ten redraws a second per bar, plus the last one
QUIET_HELP = "No progress bars (they are shown only on a terminal anyway)."


class JobBars:
    """One bar per job (or per labelled piece of work) that reports progress, drawn on ``file``
    while ``enabled``; they stay on screen when the block ends."""

    def __init__(self, file: IO[str], *, enabled: bool) -> None:
        self.file, self.enabled = file, enabled
        self.bars: dict[Any, tqdm] = {}
        self.drawn: dict[Any, float] = {}
        self.lock = threading.Lock()

    def report(self, key: Any, done: int, total: int | None, message: str, label: str) -> None:
        if not self.enabled:
            return
        with self.lock:
            bar = self.bars.get(key)
            if bar is None:
                bar = tqdm(
                    desc=label,
                    total=total or None,
                    file=self.file,
                    position=len(self.bars),
                    dynamic_ncols=True,
                    leave=True,
                )
                self.bars[key] = bar
            if total is not None:
                bar.total = total or None
            bar.n = done
            if message:
                bar.set_postfix_str(message, refresh=False)
            now = time.monotonic()
            final = bar.total is not None and done >= bar.total
            if final or now - self.drawn.get(key, 0.0) >= REFRESH_S:
                self.drawn[key] = now
                bar.refresh()

    def job_report(self, job_id: int, done: int, total: int | None, message: str) -> None:
        """A ``jobs.job_progress`` listener: the job's bar, named by its id and kind."""
        if not self.enabled:
            return
        if job_id not in self.bars:
            kind = Job.objects.filter(pk=job_id).values_list("kind", flat=True).first() or ""
            label = f"job #{job_id} {kind}".strip()
        else:
            label = ""
        self.report(job_id, done, total, message, label)

    def callback(self, label: str) -> Callable[[int, int, str], None]:
        """A ``(done, total, message)`` callable drawing the bar ``label`` (work called
        directly, without a Job row)."""

        def progress(done: int, total: int, message: str = "") -> None:
            self.report(label, done, total, message, label)

        return progress

    def close(self) -> None:
        with self.lock:
            for bar in self.bars.values():
                bar.refresh()
                bar.close()
            self.bars.clear()


def bars_wanted(file: IO[str], *, quiet: bool = False) -> bool:
    isatty = getattr(file, "isatty", None)
    return not quiet and bool(isatty and isatty())


@contextmanager
def job_bars(*, quiet: bool = False, file: IO[str] | None = None) -> Iterator[JobBars]:
    """Within the block, the progress of every job this process runs is drawn as a bar on
    ``file`` (standard error by default, so standard output stays what the command prints);
    nothing is drawn with ``quiet`` or when ``file`` is not a terminal."""
    file = file if file is not None else sys.stderr
    bars = JobBars(file, enabled=bars_wanted(file, quiet=quiet))
    try:
        with progress_listening(bars.job_report):
            yield bars
    finally:
        bars.close()


class CommandStream:
    """A command's ``self.stderr`` as tqdm's file: Django's ``OutputWrapper`` ends every write
    with a newline and colours it, which would break a bar redrawn in place."""

    def __init__(self, wrapper: Any) -> None:
        self.wrapper = wrapper

    def write(self, text: str) -> None:
        self.wrapper.write(text, style_func=str, ending="")

    def flush(self) -> None:
        self.wrapper.flush()

    def isatty(self) -> bool:
        return self.wrapper.isatty()


def command_bars(command: Any, options: dict) -> AbstractContextManager[JobBars]:
    """``job_bars`` for a management command: on its standard error (``call_command(...,
    stderr=…)`` too), quiet with ``--quiet`` or ``-v 0``."""
    return job_bars(quiet=quiet_of(options), file=CommandStream(command.stderr))


def add_quiet_argument(parser) -> None:
    """The commands' ``--quiet``: no progress bars."""
    parser.add_argument("--quiet", action="store_true", help=QUIET_HELP)


def quiet_of(options: dict) -> bool:
    """Whether a command's options ask for no bars: ``--quiet`` or ``--verbosity 0``."""
    return bool(options.get("quiet")) or int(options.get("verbosity", 1)) == 0
