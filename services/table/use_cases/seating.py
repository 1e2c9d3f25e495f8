"""Rooms at work (RULES.md §11): players join a room's queue and are seated at new
tables, come back to their seat, leave (an escape when a hand is in play, §10.3), and
agree to play the table's next hand.

A room's table deals its hands one after another while its people stay: after a hand,
each person asks for the next (``next_hand``); when all have, it is dealt with the
first bidder rotated (§2). Someone who leaves, or does not ask within the ready wait
(from the round's first ask), closes the table: consecutive hands (and the rotation)
end there, and the others join the room again for a new table. What it refuses (one
place at a time, not now) it raises as a ``Refusal``.

A restart loses neither: each ask is a ``seat_ready`` on the table's stream, so a
rebuilt table resumes its round (``restore``), its wait running from the first ask;
and the queues' tickets are kept in the ``RoomQueueLog``, read back once at start
(``restore_queues``).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import Any

import structlog
from ddz.application.errors import Kind, Reason, Refusal
from ddz.application.tasks import cancel_and_wait
from ddz.domain.hand import SeatInfo
from ddz.domain.ruleset import Scoring

from .lobby import LeftQueue, Lobby, Seat, Ticket
from .ports import RoomQueueLog
from .rooms import Room, Rooms
from .tables import NextRound, Table, TableGone, Tables, new_table_id

log = structlog.get_logger("ddz.table.seating")

Deal = Callable[[Table], Awaitable[tuple[str, int | None]]]
"""Deal the table's next hand (the caller holds ``table.lock``): (hand id, first bidder)."""
Escape = Callable[[Table, int], Awaitable[str]]
"""The seat's player leaves the hand in play: the hand's id ("" when none is in play)."""
HandOver = Callable[[Table], Awaitable[bool]]
"""Whether the table's last hand is over (True when it has none)."""


def _wrong_phase(message: str) -> Refusal:
    return Refusal.precondition(Reason.WRONG_PHASE, message)


def _elsewhere(message: str) -> Refusal:
    """The player is somewhere already (one place at a time)."""
    return Refusal(Kind.EXISTS, Reason.INVALID_ARGUMENT, message)


@dataclass(frozen=True, slots=True)
class Left:
    dequeued: bool = False
    table_id: str = ""
    seat: int | None = None
    escaped_hand_id: str = ""


class Seating:
    def __init__(
        self,
        rooms: Rooms,
        tables: Tables,
        *,
        deal: Deal,
        escape: Escape,
        hand_over: HandOver,
        ready_wait: float,
    ) -> None:
        self.rooms = rooms
        self.tables = tables
        self.deal = deal
        self.escape = escape
        self.hand_over = hand_over
        self.ready_wait = ready_wait
        self.lobby = Lobby(rooms, self._seat_group)

    # -- joining -------------------------------------------------------------------------

    def seat_held(self, player_id: str, room: Room) -> Seat | None:
        """Where ``player_id`` sits if joining ``room`` brings them back to a seat.

        A player seated at a table of this room comes back to it while the table plays
        on or its last hand is still in play; one whose table has closed after its last
        hand is free to queue again. Seated in another room: refused. Already queued or
        joining: refused (one place at a time)."""
        place = self.lobby.place_of(player_id)
        if place is None:
            return None
        if isinstance(place, str):
            raise _elsewhere(f"{player_id} is already waiting in room {place}")
        table = self.tables.get(place.table_id)
        if table is None:
            self.lobby.release(player_id)
            return None
        if table.room_id != room.room_id:
            raise _wrong_phase(f"{player_id} sits at table {table.table_id} of room "
                               f"{table.room_id or '(none)'}: leave it first")  # fmt: skip
        return place

    def reserve(self, player_id: str, room: Room) -> None:
        if not self.lobby.reserve(player_id, room.room_id):
            raise _elsewhere(f"{player_id} is already in a room")

    async def join(self, room: Room, player_id: str, balance: int | None) -> Seat:
        """Queue a reserved player and wait until they are seated."""
        try:
            ticket = self.lobby.enqueue(room, player_id, balance)
        except LeftQueue as exc:  # they left while their balance was being checked
            raise _wrong_phase(str(exc)) from None
        return await self.wait(ticket)

    def back_in_queue(self, player_id: str, room: Room) -> Ticket | None:
        """The place ``player_id`` kept in the room's queue when their JoinRoom was cut
        (or the service restarted), if any: joining again waits on it."""
        return self.lobby.attend(player_id, room.room_id)

    async def wait(self, ticket: Ticket) -> Seat:
        try:
            # Shielded: the JoinRoom call ending must not cancel the seating itself.
            return await asyncio.shield(ticket.seated)
        except asyncio.CancelledError:
            self.lobby.detach(ticket)  # the caller went away while queued
            raise
        except LeftQueue as exc:
            raise _wrong_phase(str(exc)) from None

    def _seat_group(self, room: Room, tickets: list[Ticket]) -> Coroutine[Any, Any, None]:
        """Open the table and record every seat now (no await: atomic with the queue);
        the returned coroutine deals the first hand."""
        table_id = new_table_id()
        people = [SeatInfo(ticket.player_id) for ticket in tickets]
        bots = [SeatInfo(f"bot-{table_id}-{s}", is_bot=True) for s in range(len(tickets), 3)]
        balances = None
        if room.rules.scoring is Scoring.BEANS:
            opening = self.rooms.opening_balance
            values = [t.balance if t.balance is not None else opening for t in tickets]
            values += [opening] * (3 - len(tickets))
            balances = (max(0, values[0]), max(0, values[1]), max(0, values[2]))
        table = self.tables.open(room.rules, room.settings, [*people, *bots], table_id,
                                 room_id=room.room_id, balances=balances)  # fmt: skip
        for number, ticket in enumerate(tickets):
            self.lobby.sit(ticket.player_id, Seat(table_id, number))
        log.info("table_made", room=room.room_id, table_id=table_id,
                 players=[t.player_id for t in tickets])  # fmt: skip
        return self._first_hand(table, tickets)

    async def _first_hand(self, table: Table, tickets: list[Ticket]) -> None:
        try:
            async with table.lock:
                await self.deal(table)  # the table is on its stream before the deal
        except Exception as exc:
            log.exception("first_hand_failed", table_id=table.table_id)
            self.lobby.forget(tickets)  # they are told, and join again
            self.tables.close(table, "the table's first hand could not be dealt")
            for ticket in tickets:
                self.lobby.release(ticket.player_id)
                if not ticket.seated.done():
                    ticket.seated.set_exception(exc)
                    ticket.seated.exception()
            return
        self.lobby.forget(tickets)  # a restart finds them at the table, not queued
        for number, ticket in enumerate(tickets):
            if not ticket.seated.done():
                ticket.seated.set_result(Seat(table.table_id, number))

    def restore(self, table: Table) -> None:
        """A room table rebuilt after a restart: its people are seated at it again, and
        the round of its next hand resumes with whoever had asked for it, its ready wait
        running from the first ask (a wait that ran out meanwhile runs out at once)."""
        if not table.room_id or table.closed:
            return
        for seat in table.people:
            self.lobby.sit(table.seats[seat].player_id, Seat(table.table_id, seat))
        state = table.state
        ready = {s for s in state.ready_for_next if s in table.people} if state else set()
        if state is not None and ready:
            self._start_round(table, NextRound(len(table.hand_ids), ready, state.ready_since))
            log.info("next_hand_round_resumed", table_id=table.table_id, ready=sorted(ready),
                     since=state.ready_since)  # fmt: skip

    async def restore_queues(self, store: RoomQueueLog) -> int:
        """Keep the queues in ``store`` from now on and queue its tickets again (once,
        at start, after the tables are restored): each in its room in the order they
        joined, its bot fill wait counting from then; a player joining again waits on
        their ticket, one who does not is seated like anyone (joining later brings them
        to their seat). A ticket of a room no longer in the file, or of a player seated
        at a restored table already, is dropped. Returns how many were queued again."""
        kept = await store.tickets()
        self.lobby.store = store
        queued = 0
        for saved in sorted(kept, key=lambda t: t.joined):
            room = self.rooms.get(saved.room_id)
            if room is None or self.lobby.requeue(room, saved) is None:
                store.drop(saved.room_id, saved.player_id)
                continue
            queued += 1
        log.info("queues_restored", tickets=queued)
        return queued

    # -- leaving -------------------------------------------------------------------------

    async def leave(self, player_id: str, *, only: Seat | None = None, room_id: str = "") -> Left:
        """Take the player out of the queue or off their table. ``only``: the seat a seat
        token names (leaving anything else with it is refused)."""
        place = self.lobby.place_of(player_id)
        if place is None:
            raise _wrong_phase(f"{player_id} is not in a room")
        if only is not None and place != only:
            raise Refusal.denied("this token is for another seat")
        if isinstance(place, str):
            if not self.lobby.dequeue(player_id):
                self.lobby.release(player_id)  # still joining: JoinRoom sees it and stops
            return Left(dequeued=True)
        table = self.tables.get(place.table_id)
        if table is None:
            self.lobby.release(player_id)
            return Left(table_id=place.table_id, seat=place.seat)
        if room_id and table.room_id != room_id:
            raise _wrong_phase(f"{player_id} sits at a table of room {table.room_id}")
        escaped = await self.leave_table(table, place.seat)
        return Left(table_id=table.table_id, seat=place.seat, escaped_hand_id=escaped)

    async def leave_table(self, table: Table, seat: int) -> str:
        player_id = table.seats[seat].player_id
        if self.lobby.place_of(player_id) == Seat(table.table_id, seat):
            self.lobby.release(player_id)
        table.left[seat] = player_id
        table.close(f"{player_id} left")
        escaped = ""
        try:
            escaped = await self.escape(table, seat)
        finally:  # on the table's stream with the hand it escaped, if any
            self.tables.leave(table, seat, escaped)
            self.tables.close(table, table.closed_reason)
        log.info("player_left", table_id=table.table_id, seat=seat, player=player_id,
                 escaped_hand_id=escaped)  # fmt: skip
        return escaped

    async def release_if_done(self, player_id: str, seat: Seat) -> bool:
        """Free a player whose table has closed and whose last hand there is over."""
        table = self.tables.get(seat.table_id)
        if table is None or (table.closed and await self.hand_over(table)):
            self.lobby.release(player_id)
            return True
        return False

    # -- the next hand -------------------------------------------------------------------

    async def next_hand(self, table: Table, seat: int | None) -> tuple[str, int | None]:
        """``seat`` is ready for the table's next hand (None: the operator deals now);
        returns the hand once every person at the table is ready."""
        async with table.lock:
            if table.closed:
                raise _wrong_phase(f"table {table.table_id} is closed ({table.closed_reason}): "
                                   "join the room again")  # fmt: skip
            if not await self.hand_over(table):
                raise _wrong_phase(f"hand {table.last_hand_id} is still in play")
            current = table.next_round
            if current is None or current.number != len(table.hand_ids):
                current = self._start_round(table, NextRound(len(table.hand_ids)))
            if seat is not None and seat not in current.ready:
                self.tables.ready(table, seat, current.number)  # a restart resumes the round
            current.ready |= set(table.people) if seat is None else {seat}
            if set(table.people) <= current.ready and not current.dealt.done():
                await self._deal_round(table, current)
        try:
            return await asyncio.shield(current.dealt)
        except TableGone as exc:
            raise _wrong_phase(f"table {table.table_id} is closed ({exc}): "
                               "join the room again") from None  # fmt: skip

    def _start_round(self, table: Table, current: NextRound) -> NextRound:
        table.next_round = current
        current.deadline = asyncio.create_task(self._ready_deadline(table, current))
        return current

    async def _deal_round(self, table: Table, current: NextRound) -> None:
        """Deal the round's hand (the caller holds ``table.lock``)."""
        try:
            dealt = await self.deal(table)
        except BaseException as exc:
            table.next_round = None  # whoever asks next starts a new round
            current.dealt.set_exception(_wrong_phase(f"the next hand failed: {exc}"))
            current.dealt.exception()
            self._end_wait(current)
            raise
        current.dealt.set_result(dealt)
        self._end_wait(current)

    @staticmethod
    def _end_wait(current: NextRound) -> None:
        if current.deadline is not None and current.deadline is not asyncio.current_task():
            current.deadline.cancel()

    async def _ready_deadline(self, table: Table, current: NextRound) -> None:
        """Whoever has not asked for the next hand within the wait has left the table.
        Everyone has (a round a restart brought back, its deal not made): deal it now."""
        everyone = set(table.people) <= current.ready
        await asyncio.sleep(0 if everyone else current.since + self.ready_wait - time.time())
        async with table.lock:
            if current.dealt.done() or table.next_round is not current or table.closed:
                return
            late = [s for s in table.people if s not in current.ready]
            if not late:
                with contextlib.suppress(Exception):  # told to whoever waits on the round
                    await self._deal_round(table, current)
                return
            self._late_leave(table, late)

    def _late_leave(self, table: Table, late: list[int]) -> None:
        for seat in late:
            player_id = table.seats[seat].player_id
            self.tables.leave(table, seat)
            if self.lobby.place_of(player_id) == Seat(table.table_id, seat):
                self.lobby.release(player_id)
        names = ", ".join(table.seats[s].player_id for s in late)
        self.tables.close(table, f"{names} did not come back for the next hand")

    async def close(self) -> None:
        await self.lobby.close()
        if self.lobby.store is not None:
            await self.lobby.store.settle()  # what is still queued is kept for the next start
        for table_id in list(self._tables_with_rounds()):
            table = self.tables.get(table_id)
            if table is not None and table.next_round is not None:
                deadline = table.next_round.deadline
                await cancel_and_wait([deadline])

    def _tables_with_rounds(self) -> list[str]:
        return [t.table_id for t in self.tables.all() if t.next_round is not None]
