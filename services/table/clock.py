"""Turn deadlines: a human seat that does not act within ``DDZ_TURN_TIMEOUT`` seconds
is disconnected (a ``Disconnect`` command to the rules service), and from then on the
bot service plays for it (托管, §10.2) until the player acts again.

A turn is identified by the hand's state version (domain events only: a refused
command does not restart the clock) and the seat on turn. The disconnect is sent with
the stream version the clock saw, so a move that lands at the last moment wins the
race and the disconnect is refused as stale (ABORTED), never applied on top of it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

import structlog
from ddz.adapters.hand_feed import HandFold, deal_complete
from ddz.application.tasks import cancel_and_wait
from ddz.domain.hand import Phase

log = structlog.get_logger("ddz.table.clock")

Disconnect = Callable[[str, int, int], Awaitable[None]]
"""``disconnect(hand_id, seat, expected_version)``."""


def human_on_turn(fold: HandFold) -> int | None:
    """The seat on turn if a person plays it now (not a bot seat, not disconnected)."""
    state = fold.state
    if state.phase not in (Phase.BIDDING, Phase.PLAYING) or not 0 <= state.turn < len(state.seats):
        return None
    seat = state.turn
    if state.seats[seat].is_bot or seat in state.disconnected or not deal_complete(state):
        return None
    return seat


class TurnClock:
    def __init__(self, timeout: float, disconnect: Disconnect) -> None:
        self.timeout = timeout
        self.disconnect = disconnect
        self._timers: dict[str, tuple[tuple[int, int], asyncio.Task[None]]] = {}

    def update(self, fold: HandFold) -> None:
        """Look at the hand after a change: start, keep or stop its turn's clock."""
        self._start(fold, self.timeout, keep=True)

    def resume(self, fold: HandFold, since: float) -> None:
        """After a restart: the turn's clock runs from ``since`` (Unix seconds, the time
        of the hand's last event), so a turn that was nearly out is out soon, and one
        that ran out while no table service watched is out at once."""
        left = max(0.0, self.timeout - max(0.0, time.time() - since))
        self._start(fold, left, keep=False)

    def _start(self, fold: HandFold, wait: float, *, keep: bool) -> None:
        hand_id = fold.hand_id
        seat = human_on_turn(fold)
        turn = (fold.state.version, seat if seat is not None else -1)
        current = self._timers.get(hand_id)
        if keep and current is not None and current[0] == turn:
            return  # the same turn: the clock keeps running
        if current is not None:
            current[1].cancel()
            del self._timers[hand_id]
        if seat is not None:
            task = asyncio.create_task(self._expire(fold, turn, wait), name=f"turn:{hand_id}")
            self._timers[hand_id] = (turn, task)

    async def _expire(self, fold: HandFold, turn: tuple[int, int], wait: float) -> None:
        await asyncio.sleep(wait)
        if (fold.state.version, human_on_turn(fold)) != turn:
            return
        self._timers.pop(fold.hand_id, None)
        log.info("turn_timed_out", hand_id=fold.hand_id, seat=turn[1], timeout_s=self.timeout)
        try:
            await self.disconnect(fold.hand_id, turn[1], fold.version)
        except Exception:
            log.exception("disconnect_failed", hand_id=fold.hand_id, seat=turn[1])

    @property
    def running(self) -> int:
        return len(self._timers)

    async def close(self) -> None:
        tasks = [task for _turn, task in self._timers.values()]
        self._timers.clear()
        await cancel_and_wait(tasks)
