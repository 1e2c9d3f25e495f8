"""What a seat sees: its view now, its stream of updates (the player's stream is their
presence at the seat, ``presence.Presence``), and the bot's hint for its move."""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass

from ddz.access.callers import Caller
from ddz.access.seat_gate import Gate
from ddz.application.errors import Reason, Refusal
from ddz.application.hand_fold import Entry, HandFold
from ddz.application.table_history import occurred_at
from ddz.domain.hand import CommandRejected, HandState, evolve, view_for
from ddz.v1 import table_pb2

from .floor import Floor, check_seat
from .limits import StreamSlots
from .moves import Moves, Seen
from .ports import Bot, Envelope
from .presence import Presence

STREAM_WAIT = 60.0
"""Seconds a stream waits for the hand's next event before looking again."""


@dataclass(frozen=True, slots=True)
class Update:
    """One position of a seat's stream: the event it may see there (None: hidden from
    it), and its view as of there (None when only events were asked for)."""

    position: int
    event: Envelope | None
    seen: Seen | None


def fold_until(fold: HandFold, state: HandState, version: int, until: int) -> HandState:
    """``state`` (the hand as of ``version``) carried on to ``until`` with the fold's log."""
    for entry in fold.entries_after(version)[: until - version]:
        if not isinstance(entry.event, CommandRejected):
            state = evolve(state, entry.event)
    return state


def visible_event(entry: Entry, seat: int) -> Envelope | None:
    """The envelope ``seat`` may receive for ``entry``, or None: hidden events (every
    seat's cards) never; another seat's refused command neither (it may name cards
    that seat holds)."""
    if entry.hidden:
        return None
    rejected = entry.rejected_seat
    if rejected is not None and rejected != seat:
        return None
    return entry.envelope


class Watching:
    def __init__(
        self, floor: Floor, moves: Moves, gate: Gate, presence: Presence, bot: Bot,
        streams: StreamSlots | None = None,
    ) -> None:  # fmt: skip
        self.floor = floor
        self.moves = moves
        self.gate = gate
        self.presence = presence
        self.bot = bot
        self.streams = streams or StreamSlots(4)

    async def view(self, token: str | None, hand_id: str, seat: int, min_version: int,
                   budget: float) -> Seen:  # fmt: skip
        """The seat's view, once it includes ``min_version`` (waiting up to ``budget`` s)."""
        fold = await self.moves.seat_call(token, hand_id, seat, comes_back=True)
        if min_version:
            await fold.wait_for(min_version, budget)
        return self.moves.seen(fold, seat)

    async def watch(
        self, token: str | None, hand_id: str, seat: int, *, after: int, events_only: bool
    ) -> AsyncGenerator[Update, None]:
        """The seat's updates after position ``after``, until the hand is over. A
        player has at most ``streams.per_seat`` of them open on a seat at once."""
        fold = await self.floor.hand(hand_id)
        check_seat(seat)
        caller = self.gate.seat(token, fold, seat)
        counted = not caller.operator
        if counted:
            self.streams.take(fold.hand_id, seat)  # TOO_MANY_STREAMS when none is free
        # The player's own stream is their presence at the seat (an operator's is not).
        present = counted and self.moves.person_in_play(fold, seat)
        try:
            if present:
                await self.presence.opened(fold.hand_id, seat)
            finished = False
            try:
                async for update in self._updates(fold, seat, after, events_only):
                    yield update
                finished = True
            finally:
                if present:
                    self.presence.closed(fold.hand_id, seat, dropped=not finished)
        finally:
            if counted:
                self.streams.give_back(fold.hand_id, seat)

    async def _updates(
        self, fold: HandFold, seat: int, after: int, events_only: bool
    ) -> AsyncIterator[Update]:
        table_id = self.floor.table_id_of(fold.hand_id)
        # Each update shows the view exactly as of its position. A watcher that has caught
        # up takes the shared fold's state (the state at that very position); one behind
        # it (the fold already further on) carries its own copy on with the fold's log,
        # from where its copy was. With events_only only the hand's last update has a
        # view: the fold's own, at its end.
        replica, replica_version = HandState(), 0
        position = 0
        timing = self.moves.timing
        started = 0.0  # the time of the last event so far: when the turn's clock started
        while True:
            for entry in fold.entries_after(position):
                position = entry.version
                if not isinstance(entry.event, CommandRejected):
                    started = occurred_at(entry.envelope)
                if position <= after:
                    continue
                last = fold.over and position >= fold.version
                seen = None
                if last or not events_only:
                    if events_only:
                        state = fold.state
                    else:
                        # States are values (``evolve`` makes a new one): the fold's is shared.
                        replica = (
                            fold.state
                            if position == fold.version
                            else fold_until(fold, replica, replica_version, position)
                        )
                        replica_version = position
                        state = replica
                    clock = (
                        None if timing is None else timing.deadline(fold.hand_id, state, started)
                    )
                    # As of its position's time: a stream read again is the same, message
                    # for message (its seconds left are those at that moment).
                    at = occurred_at(entry.envelope)
                    seen = Seen(view_for(state, seat), position, table_id, clock, at)
                yield Update(position, visible_event(entry, seat), seen)
            if fold.over and position >= fold.version:
                return
            await fold.wait_for(position + 1, timeout=STREAM_WAIT)

    async def suggest(self, token: str | None, hand_id: str, seat: int) -> table_pb2.SuggestedMove:
        fold = await self.moves.seat_call(token, hand_id, seat, comes_back=True, limited="move")
        return await self.bot.suggest(fold.hand_id, seat, fold.version)

    async def hint(
        self, token: str | None, hand_id: str, seat: int | None
    ) -> table_pb2.SuggestedMove:
        """The bot's move for ``seat``, or (None) for the seat the caller's token holds."""
        if seat is None:
            fold = await self.floor.hand(hand_id)
            seat = self._seat_of(self.gate.caller(token), fold)
        return await self.suggest(token, hand_id, seat)

    @staticmethod
    def _seat_of(caller: Caller, fold: HandFold) -> int:
        seats = [s.player_id for s in fold.state.seats]
        seat = (
            caller.seat
            if caller.kind == "seat" and caller.seat is not None
            else (seats.index(caller.player_id) if caller.player_id in seats else -1)
        )
        if caller.operator or seat < 0:
            raise Refusal.invalid(
                "which seat? the token holds none of this hand", Reason.UNKNOWN_SEAT
            )
        return seat
