"""The hand-stall watchdog: a hand in play with no event for longer than the turn
timeout plus a margin (``DDZ_TURN_TIMEOUT`` + ``DDZ_STALL_MARGIN``) is got moving again.
(A room's own turn seconds are at most ``DDZ_TURN_TIMEOUT``: the table checks it.)

Why the bot service: it follows every hand, internal events too, whoever dealt it, and
it is the one that plays a seat whose turn timed out, so the remedy is its own job.
The table's turn clock (``services/table/use_cases/clock.py``) watches only the hands of the
tables it holds in memory: a hand dealt through the dealer directly has no clock, and a
restarted table service has forgotten its clocks. The watchdog is the backstop; with a
table running, its clock acts first (at the turn timeout) and its time-out is an event.

What a stalled hand gets (``remedy_for``):

- a person on turn (not a bot seat, not disconnected, the deal complete, the turn not
  timed out yet): ``TimeOut`` of their turn through the rules (as the table's clock
  would: the bot moves once for them; no disconnect, no escapee) with
  ``expected_version`` = the hand's version as seen, so it is refused as stale if the
  hand moved meanwhile;
- anything else in play (a seat the bot plays, a deal not yet complete): the hand is read
  again from JetStream and looked at again, in case an event never reached the feed.

A remedy restarts the hand's stall time: each is tried once per stall period.
"""

from __future__ import annotations

import asyncio
import enum
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass

import structlog
from ddz.application.errors import Kind, Refusal
from ddz.application.hand_fold import HandFold, deal_complete
from ddz.application.tasks import cancel_and_wait
from ddz.domain.hand import HandState, Phase, TimeOut

from .ports import BotMetrics, Hands, Move, MoveSender, NoMetrics

log = structlog.get_logger("ddz.bot.watchdog")

IN_PLAY = frozenset({Phase.BIDDING, Phase.PLAYING})


class Remedy(enum.Enum):
    TIME_OUT = "time_out"  # the person on turn: their turn timed out, the bot moves once
    RELOAD = "reload"  # the hand read again from the bus, the bot looks again


@dataclass(frozen=True, slots=True)
class Stall:
    """A hand found stalled, and what it gets."""

    hand_id: str
    remedy: Remedy
    version: int  # the hand's stream version as the watchdog saw it
    seat: int | None = None  # the seat whose turn times out (TIME_OUT)


def person_on_turn(state: HandState) -> int | None:
    """The seat on turn if a person plays it now (not a bot seat, not disconnected)."""
    if state.phase not in IN_PLAY or not 0 <= state.turn < len(state.seats):
        return None
    seat = state.turn
    if state.seats[seat].is_bot or seat in state.disconnected or state.timed_out is not None:
        return None
    return seat if deal_complete(state) else None


def remedy_for(state: HandState) -> tuple[Remedy, int | None] | None:
    """What a hand in this state gets once it has stalled (None: it is not in play)."""
    if state.phase not in IN_PLAY:
        return None
    seat = person_on_turn(state)
    return (Remedy.RELOAD, None) if seat is None else (Remedy.TIME_OUT, seat)


class Watchdog:
    """``seen(fold)`` on every change of a hand (the feed's ``on_change``); ``stalled()``
    says which hands have gone ``stall_after`` seconds without one, ``check()`` acts on
    them, ``start()`` checks every ``every`` seconds until ``close()``."""

    def __init__(
        self,
        hands: Hands,
        moves: MoveSender,
        wake: Callable[[str], None],
        *,
        stall_after: float,
        clock: Callable[[], float] = time.monotonic,
        every: float | None = None,
        auto_play_after: int = 2,
        metrics: BotMetrics | None = None,
    ) -> None:
        self.hands = hands
        self.metrics = metrics or NoMetrics()
        self.moves = moves
        self.wake = wake
        self.stall_after = stall_after
        self.auto_play_after = auto_play_after
        self.clock = clock
        self.every = every if every is not None else max(0.05, min(1.0, stall_after / 4))
        self.remedies = {remedy: 0 for remedy in Remedy}  # remedies applied, by kind
        self._last: dict[str, float] = {}  # hand -> when it last changed (or was remedied)
        self._changed: dict[str, float] = {}  # hand -> when it last changed (remedies aside)
        self._task: asyncio.Task[None] | None = None

    def seen(self, fold: HandFold) -> None:
        if fold.state.phase in IN_PLAY:
            self._last[fold.hand_id] = self._changed[fold.hand_id] = self.clock()
        else:
            self._last.pop(fold.hand_id, None)  # not dealt yet, or over: nothing to watch
            self._changed.pop(fold.hand_id, None)

    def stalled_count(self) -> int:
        """Hands still in play with no event for ``stall_after`` seconds or more, remedied
        or not (``ddz_hands_stalled``: a remedy that does not get a hand moving shows)."""
        now = self.clock()
        count = 0
        for hand_id, changed in list(self._changed.items()):
            if hand_id not in self._last:  # no longer followed or in play (stalled() saw)
                del self._changed[hand_id]
            elif now - changed >= self.stall_after:
                count += 1
        return count

    def stalled(self) -> list[Stall]:
        """The hands with no change for ``stall_after`` seconds, and their remedies."""
        now = self.clock()
        found: list[Stall] = []
        for hand_id, last in list(self._last.items()):
            fold = self.hands.get(hand_id)
            remedy = None if fold is None else remedy_for(fold.state)
            if fold is None or remedy is None:
                del self._last[hand_id]  # no longer followed, or no longer in play
            elif now - last >= self.stall_after:
                found.append(Stall(hand_id, remedy[0], fold.version, remedy[1]))
        return found

    async def check(self) -> list[Stall]:
        """Act on every stalled hand; the stalls acted on."""
        stalls = self.stalled()
        for stall in stalls:
            self._last[stall.hand_id] = self.clock()  # once per stall period
            self.remedies[stall.remedy] += 1
        # Together: the disconnects go to the rules in one batch.
        await asyncio.gather(*(self._apply(stall) for stall in stalls))
        return stalls

    async def _apply(self, stall: Stall) -> None:
        log.warning("hand_stalled", hand_id=stall.hand_id, remedy=stall.remedy.value,
                    seat=stall.seat, version=stall.version, idle_s=self.stall_after)  # fmt: skip
        try:
            await self._remedy(stall)
        except Exception:
            log.exception("stall_remedy_failed", hand_id=stall.hand_id)

    async def _remedy(self, stall: Stall) -> None:
        if stall.remedy is Remedy.RELOAD:
            await self.hands.load(stall.hand_id)
            self.wake(stall.hand_id)
            return
        assert stall.seat is not None
        timed_out = TimeOut(stall.seat, round(time.time() * 1000), self.stall_after,
                            self.auto_play_after)  # fmt: skip
        move = Move(stall.hand_id, stall.seat, timed_out, stall.version, str(uuid.uuid4()))
        try:
            answer = await self.moves.decide(move)
        except Refusal as refusal:
            if refusal.kind is not Kind.CONFLICT:  # CONFLICT: the hand moved, all is well
                log.warning("stall_time_out_failed", hand_id=stall.hand_id,
                            kind=refusal.kind.name, details=refusal.message)  # fmt: skip
            return
        if answer.accepted:
            await self.hands.learn(stall.hand_id, answer.events)

    def start(self) -> None:
        self.metrics.follow_stalls(self.stalled_count)
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="bot:watchdog")

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self.every)
            await self.check()

    async def close(self) -> None:
        self.metrics.unfollow_stalls()
        await cancel_and_wait([self._task])
        self._task = None
