"""Turn deadlines. A person's turn (bidding, showing and play alike) has a clock: the
room's turn seconds (``DDZ_TURN_TIMEOUT`` unless the room sets ``turn_seconds``), the
shorter ``DDZ_AUTOPLAY_TURN_TIMEOUT`` while the seat is in auto-play. When it runs out
the table sends ``TimeOut`` to the rules: the hand records a timed-out turn with its
deadline, and the bot makes that one move for the person. That is no disconnect and no
escape (docs/RULE_DECISIONS.md §10.2): after ``DDZ_TIMEOUTS_TO_AUTOPLAY`` timeouts in a
row the seat is in auto-play, until its person moves or resumes.

A turn starts at the hand's last event (a refused command is no event: it does not
restart the clock), so the deadline is the same in every view, in the clock here and
after a restart of the service (the events carry their time). A turn is identified by
the hand's state version and the seat on turn. The time-out is sent with the stream
version the clock saw, so a move that lands at the last moment wins the race and the
time-out is refused as stale (ABORTED), never applied on top of it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import structlog
from ddz.application.hand_fold import HandFold, deal_complete
from ddz.application.table_history import occurred_at
from ddz.application.tasks import cancel_and_wait
from ddz.application.turns import TurnDeadline
from ddz.domain.hand import CommandRejected, HandState, Phase

log = structlog.get_logger("ddz.table.clock")

TimeOutAction = Callable[[str, TurnDeadline, int], Awaitable[None]]
"""``time_out(hand_id, deadline, expected_version)``."""


def person_on_clock(state: HandState) -> int | None:
    """The seat on turn if its person plays it now and its clock runs: not a bot seat,
    not away, the deal complete, this turn not already timed out."""
    if state.phase not in (Phase.BIDDING, Phase.PLAYING) or not 0 <= state.turn < len(state.seats):
        return None
    seat = state.turn
    if state.seats[seat].is_bot or seat in state.disconnected or state.timed_out is not None:
        return None
    return seat if deal_complete(state) else None


def turn_started(fold: HandFold, version: int | None = None) -> float:
    """When the turn at ``version`` (default: now) started: the time of the hand's last
    event up to there (Unix seconds); now when the fold keeps no log."""
    log_ = fold.log if version is None else fold.log[:version]
    for entry in reversed(log_):
        if not isinstance(entry.event, CommandRejected):
            return occurred_at(entry.envelope)
    return time.time()


@dataclass(frozen=True, slots=True)
class Timing:
    """How long turns are: ``turn_seconds(hand_id)`` (the hand's room), the auto-play
    clock, and the timeouts in a row that start auto-play."""

    turn_seconds: Callable[[str], float]
    auto_play_seconds: float
    auto_play_after: int

    def deadline(self, hand_id: str, state: HandState, started: float) -> TurnDeadline | None:
        """The running clock of ``state``'s turn (None: no person's clock runs)."""
        seat = person_on_clock(state)
        if seat is None:
            return None
        seconds = self.turn_seconds(hand_id)
        if seat in state.auto_play:
            seconds = min(seconds, self.auto_play_seconds)
        return TurnDeadline(seat, started + seconds, seconds)

    def of(self, fold: HandFold) -> TurnDeadline | None:
        return self.deadline(fold.hand_id, fold.state, turn_started(fold))


class TurnClock:
    def __init__(self, timing: Timing, time_out: TimeOutAction) -> None:
        self.timing = timing
        self.time_out = time_out
        self._timers: dict[str, tuple[tuple[int, int], asyncio.Task[None]]] = {}

    def update(self, fold: HandFold) -> None:
        """Look at the hand after a change: start, keep or stop its turn's clock."""
        hand_id = fold.hand_id
        deadline = self.timing.of(fold) if person_on_clock(fold.state) is not None else None
        turn = (fold.state.version, deadline.seat if deadline is not None else -1)
        current = self._timers.get(hand_id)
        if current is not None and current[0] == turn:
            return  # the same turn: the clock keeps running
        if current is not None:
            current[1].cancel()
            del self._timers[hand_id]
        if deadline is not None:
            task = asyncio.create_task(self._expire(fold, turn, deadline), name=f"turn:{hand_id}")
            self._timers[hand_id] = (turn, task)

    def resume(self, fold: HandFold, since: float | None = None) -> None:
        """After a restart: the clock runs from the hand's last event, so a turn that
        was nearly out is out soon, and one that ran out while no table service
        watched is out at once. (``since`` is read from the fold's own log.)"""
        self.update(fold)

    async def _expire(self, fold: HandFold, turn: tuple[int, int], deadline: TurnDeadline) -> None:
        await asyncio.sleep(max(0.0, deadline.deadline - time.time()))
        if (fold.state.version, person_on_clock(fold.state)) != turn:
            return
        self._timers.pop(fold.hand_id, None)
        log.info("turn_timed_out", hand_id=fold.hand_id, seat=turn[1], turn_s=deadline.seconds)
        try:
            await self.time_out(fold.hand_id, deadline, fold.version)
        except Exception:
            log.exception("time_out_failed", hand_id=fold.hand_id, seat=turn[1])

    @property
    def running(self) -> int:
        return len(self._timers)

    async def close(self) -> None:
        tasks = [task for _turn, task in self._timers.values()]
        self._timers.clear()
        await cancel_and_wait(tasks)
