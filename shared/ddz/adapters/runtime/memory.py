"""Memory a process has freed, given back to the system.

A service that served a crowd frees what it held for it when the people leave (their
connections, streams, hands), but the C allocator (glibc's ``malloc``) keeps freed pages
of its heaps for reuse: the process's resident size stays where the crowd left it.
``malloc_trim(0)`` hands every wholly free page back; ``GiveBack`` asks for it at a
steady pace, off the event loop. Elsewhere than glibc there is nothing to ask: a no-op.

``settle_collector`` tunes the cycle collector of a service once it has started.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import gc
import sys
from collections.abc import Callable

YOUNG_COLLECTION_EVERY = 50_000
"""Allocations between two collections of the youngest generation (Python's: 700)."""


def settle_collector() -> None:
    """Keep what a started service holds for good out of the cycle collector, and
    collect its young objects less often.

    A service's own objects are mostly short-lived and acyclic (messages, views, a bot's
    candidate plays), freed by their reference counts; the collector, run every 700
    allocations, found next to nothing to free in them and kept tracing the modules,
    rule sets and tables built at start (the bot under a crowd's hints spent about a
    sixth of its time in it). What exists once the service has started is frozen
    (``gc.freeze``: after a collection, so no garbage is frozen with it), and the young
    generation is collected every ``YOUNG_COLLECTION_EVERY`` allocations. Cycles (an
    exception and its frames) are still collected, a little later."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(YOUNG_COLLECTION_EVERY, *gc.get_threshold()[1:])


GIVE_BACK_EVERY = 30.0
"""Seconds between two requests to give freed memory back."""


def malloc_trim() -> Callable[[], bool] | None:
    """glibc's ``malloc_trim(0)`` (True: memory was given back); None without glibc."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):  # another C library (musl has no malloc_trim)
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return lambda: bool(trim(0))


class GiveBack:
    """A task that gives freed memory back every ``every`` seconds until stopped."""

    def __init__(self, every: float = GIVE_BACK_EVERY) -> None:
        if not every > 0:
            raise ValueError("give memory back at a positive interval")
        self.every = every
        self.trim = malloc_trim()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self.trim is not None and self._task is None:
            self._task = asyncio.create_task(self._loop(), name="memory:give-back")

    async def _loop(self) -> None:
        assert self.trim is not None
        while True:
            await asyncio.sleep(self.every)
            # In a thread: walking the heaps takes milliseconds the loop's calls need.
            await asyncio.to_thread(self.trim)

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
