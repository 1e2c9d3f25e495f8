"""One suite per data dir: ``<data dir>/suite.lock``, held while a stack runs from it.

A ``Stack`` takes the lock before it starts anything (``ddz up``, or the stack that
``ddz simulate``, ``demo`` and ``bench`` start when none answers) and releases it when it
stops. It is an ``flock`` on the file, so the kernel releases it when the holder dies,
``kill -9`` included: a lock file left behind by a dead suite locks nothing. Two suites on
one data dir would share one JetStream directory, one event store and one ``stack.json``;
the second one is refused before it starts a thing (``SuiteRunning``).

The file says who holds it (pid, and the table's address once the stack is up) for the
refusal's message; the lock itself is the ``flock``, never the file's content.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
from pathlib import Path
from typing import Any

FILE = "suite.lock"


class SuiteRunning(RuntimeError):
    """Another suite runs from this data dir (the message names its pid and table)."""


class SuiteLock:
    """The lock of one data dir, held by this process from ``acquire`` to ``release``."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.path = data_dir / FILE
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self, table: str = "") -> None:
        """Take the lock, or raise ``SuiteRunning`` at once (no wait) when another process
        holds it. ``table``: the table's address, as far as it is known yet."""
        if self._fd is not None:
            return
        if self.data_dir.exists() and not self.data_dir.is_dir():
            raise NotADirectoryError(errno.ENOTDIR, "not a directory", str(self.data_dir))
        self.data_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(fd)
            os.close(fd)
            raise SuiteRunning(running_message(self.data_dir, holder)) from None
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        self.update(table)

    def update(self, table: str) -> None:
        """Say (in the file) where this suite's table answers, now that it is known."""
        if self._fd is None:
            return
        record = json.dumps({"pid": os.getpid(), "table": table}).encode()
        os.ftruncate(self._fd, 0)
        os.pwrite(self._fd, record + b"\n", 0)

    def release(self) -> None:
        """Let the lock go (the file stays: removing it would race a new holder)."""
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)
        os.close(fd)  # closing the only descriptor of the open file releases the flock


PREVIOUS_LOGS = "previous"
"""Where the logs of the run before this one go (``<data dir>/logs/previous/``)."""


def new_run_logs(log_dir: Path) -> None:
    """Begin a new run's logs: the last run's ``*.log`` move to ``previous/`` (replacing
    the run before it), so what a failed start shows is this run's alone."""
    log_dir.mkdir(parents=True, exist_ok=True)
    last = sorted(log_dir.glob("*.log"))
    if not last:
        return
    previous = log_dir / PREVIOUS_LOGS
    previous.mkdir(exist_ok=True)
    for old in previous.glob("*.log"):
        old.unlink()
    for log in last:
        log.replace(previous / log.name)


def running_message(data_dir: Path, holder: dict[str, Any]) -> str:
    pid = holder.get("pid")
    table = holder.get("table")
    who = f"pid {pid}" if isinstance(pid, int) else "another process"
    at = f", table at {table}" if isinstance(table, str) and table else ""
    stop = f"kill {pid}" if isinstance(pid, int) else "stop it"
    return (
        f"a suite is already running from {data_dir} ({who}{at}): use it (same "
        f"DDZ_DATA_DIR), stop it first (Ctrl-C in its terminal, or {stop}), or set "
        "DDZ_DATA_DIR to another directory"
    )


def _holder(fd: int) -> dict[str, Any]:
    with contextlib.suppress(OSError, ValueError):
        record = json.loads(os.pread(fd, 4096, 0) or b"{}")
        if isinstance(record, dict):
            return record
    return {}
