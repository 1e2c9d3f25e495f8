"""Stopping background tasks so that a stop always ends.

One cancellation is not enough: a task can swallow it. On Python 3.11 ``asyncio.wait_for``
returns its result when the awaited call completes in the same loop step as the
cancellation arrives, and nats-py waits on every request that way; the loop around it then
carries on, and ``task.cancel(); await task`` waits for ever. So a task is cancelled again
until it has ended.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

RECANCEL_EVERY = 0.1  # s between cancellations of a task still running


async def cancel_and_wait(tasks: Iterable[asyncio.Task[object] | None]) -> None:
    """Cancel ``tasks`` (None: no task) and return once every one has ended. A task
    that ended with an exception other than its cancellation raises it here, as
    awaiting it would."""
    ours = [task for task in tasks if task is not None]
    running = {task for task in ours if not task.done()}
    while running:
        for task in running:
            task.cancel()
        _ended, running = await asyncio.wait(running, timeout=RECANCEL_EVERY)
    for task in ours:
        error = None if task.cancelled() else task.exception()
        if error is not None:
            raise error
