"""One way for a long command to say how far it is, on stderr (stdout stays the result's).

On a terminal, a rich progress bar. Elsewhere (a pipe, a log file, CI) a plain line every
``EVERY`` seconds, so a run that takes minutes is never silent until the end::

    ddz simulate: classic: 120/1000 hands (12%), 15 s

and one last line when it ends, if it ran long enough to print any. ``--quiet`` (``quiet``)
prints nothing. A command goes through stages (``stage``: starting a stack, playing,
measuring ...), each with its own count.
"""

from __future__ import annotations

import sys
import threading
import time
from types import TracebackType
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    import argparse

    from rich.progress import Progress as RichProgress
    from rich.progress import TaskID

EVERY = 3.0
"""Seconds between two progress lines off a terminal."""


def add_quiet(parser: argparse.ArgumentParser) -> None:
    """The ``--quiet`` flag of a command that reports progress."""
    parser.add_argument(
        "--quiet", "-q", action="store_true", help="no progress on stderr (results only)"
    )


class Progress:
    """How far ``command`` is; a context manager around the long part of it."""

    def __init__(
        self,
        command: str,
        *,
        quiet: bool = False,
        every: float = EVERY,
        stream: TextIO | None = None,
    ) -> None:
        self.command = command
        self.quiet = quiet
        self.every = every
        self.stream = stream if stream is not None else sys.stderr
        self.what = "starting"
        self.unit = ""
        self.done = 0
        self.total: int | None = None
        self._started = time.monotonic()
        self._printed = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._bar: RichProgress | None = None
        self._task: TaskID | None = None

    @property
    def on_terminal(self) -> bool:
        isatty = getattr(self.stream, "isatty", None)
        return bool(isatty and isatty())

    def __enter__(self) -> Progress:
        if self.quiet:
            return self
        if self.on_terminal:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, TimeElapsedColumn
            from rich.progress import Progress as RichProgress

            self._bar = RichProgress(
                "[progress.description]{task.description}", BarColumn(),
                MofNCompleteColumn(), TimeElapsedColumn(),
                console=Console(file=self.stream),
            )  # fmt: skip
            self._bar.start()
        else:
            self._thread = threading.Thread(target=self._tick, name="progress", daemon=True)
            self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            if self._printed and exc_type is None:
                self._say(done=True)
        if self._bar is not None:
            self._bar.stop()

    def stage(self, what: str, total: int | None = None, unit: str = "hands") -> None:
        """A new stage of the command: ``what`` it does, of ``total`` ``unit`` (None: no
        total known)."""
        self.what, self.total, self.unit, self.done = what, total, unit, 0
        if self._bar is not None:
            if self._task is not None:
                self._bar.stop_task(self._task)
            self._task = self._bar.add_task(what, total=total)

    def describe(self, what: str) -> None:
        """Say what the stage does now in other words (its counts changed), same stage."""
        self.what = what
        if self._bar is not None and self._task is not None:
            self._bar.update(self._task, description=what)

    def advance(self, count: int = 1) -> None:
        self.done += count
        if self._bar is not None and self._task is not None:
            self._bar.advance(self._task, count)

    def update(self, done: int, total: int | None = None) -> None:
        """``done`` of ``total`` (when given) in this stage so far."""
        self.done = done
        if total is not None:
            self.total = total
        if self._bar is not None and self._task is not None:
            self._bar.update(self._task, completed=done, total=self.total)

    def line(self, *, done: bool = False) -> str:
        """The plain line: where the command is, and for how long it has run."""
        text = f"{self.command}: {self.what}"
        if self.unit and self.total:
            text += f": {self.done}/{self.total} {self.unit} ({self.done / self.total:.0%})"
        elif self.unit:
            text += f": {self.done} {self.unit}"
        text += f", {time.monotonic() - self._started:.0f} s"
        return text + (", done" if done else "")

    def _tick(self) -> None:
        while not self._stop.wait(self.every):
            self._say()

    def _say(self, *, done: bool = False) -> None:
        try:
            print(self.line(done=done), file=self.stream, flush=True)
        except (OSError, ValueError):  # stderr closed: nobody to tell
            self._stop.set()
            return
        self._printed = True
