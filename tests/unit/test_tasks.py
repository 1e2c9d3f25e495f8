"""Stopping a background task ends even when the task swallows a cancellation."""

from __future__ import annotations

import asyncio

import pytest
from ddz.application.tasks import cancel_and_wait


async def test_a_task_that_swallows_its_cancellation_is_cancelled_again_and_stops() -> None:
    swallowed = 0

    async def stubborn() -> None:
        nonlocal swallowed
        while True:
            try:
                await asyncio.sleep(10)
            except asyncio.CancelledError:
                if swallowed == 2:
                    raise
                swallowed += 1  # as wait_for does when its call completed in the same step

    task = asyncio.create_task(stubborn())
    await asyncio.sleep(0)
    async with asyncio.timeout(5):
        await cancel_and_wait([task, None])
    assert task.cancelled()
    assert swallowed == 2


async def test_a_task_that_failed_raises_its_error_and_the_others_still_stop() -> None:
    async def fails() -> None:
        raise ValueError("broken")

    failed = asyncio.create_task(fails())
    sleeper = asyncio.create_task(asyncio.sleep(10))
    await asyncio.sleep(0)
    with pytest.raises(ValueError, match="broken"):
        await cancel_and_wait([failed, sleeper])
    assert sleeper.cancelled()


async def test_a_task_already_done_is_left_as_it_is() -> None:
    done = asyncio.create_task(asyncio.sleep(0, result=7))
    await done
    await cancel_and_wait([done])
    assert done.result() == 7
