"""The tables this service has opened: who sits where, under which rules, which hands,
and (for a room's tables) who has left and who is ready for the next hand.

Each table is also the stream ``table-<id>`` (``ddz.domain.table``): the registry
writes its events (opened, hand assigned or withdrawn, seat ready, player left, closed)
through the ``TableLog`` port, in order, one table's writes after another's, and keeps
their fold (``Table.state``). A restarted service ``restore``s the open tables from
their streams, with who was ready for the next hand (``seating`` resumes the round).
What a restart's rebuild records before the log is set (a hand it withdraws) is
written once it is.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import structlog
from ddz.application.errors import Kind, Reason, Refusal
from ddz.application.table_history import TableCursor, TableHistory
from ddz.domain import ids
from ddz.domain.hand import SeatInfo, next_first_bidder
from ddz.domain.ruleset import RuleSet
from ddz.domain.settlement import RoomSettings
from ddz.domain.table import (
    HandAssigned,
    HandWithdrawn,
    PlayerLeft,
    SeatReady,
    TableClosed,
    TableEvent,
    TableOpened,
    TableState,
    evolve,
)

from .ports import TableLog

log = structlog.get_logger("ddz.table.tables")


class TableError(Refusal, ValueError):
    """A table that cannot be opened as asked, or an id that cannot be one (the message
    says why): an invalid request."""

    def __init__(self, message: str) -> None:
        super().__init__(Kind.INVALID, Reason.INVALID_ARGUMENT, message)


class TableGone(Exception):
    """The table deals no more hands (a player left); the message says why."""


@dataclass
class NextRound:
    """Who has said they are ready for the table's next hand (NextHand)."""

    number: int  # the hand to come: len(hand_ids) when the round began
    ready: set[int] = field(default_factory=set)
    since: float = field(default_factory=time.time)  # the first ask (Unix seconds)
    dealt: asyncio.Future[tuple[str, int | None]] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )
    deadline: asyncio.Task[None] | None = None


@dataclass
class Table:
    table_id: str
    rules: RuleSet
    room: RoomSettings
    seats: tuple[SeatInfo, SeatInfo, SeatInfo]
    hand_ids: list[str] = field(default_factory=list)
    room_id: str = ""  # the room the table was made for; "" = opened by an operator
    # Bean rooms: each seat's balance when the table was made (later hands: the last
    # hand's balances plus its ledger, read from the hand's events).
    balances: tuple[int, int, int] | None = None
    left: dict[int, str] = field(default_factory=dict)  # seat -> the player who left it
    closed_reason: str = ""
    next_round: NextRound | None = None
    lock: asyncio.Lock = field(default_factory=asyncio.Lock, repr=False)
    state: TableState | None = field(default=None, repr=False)  # the fold of its stream
    cursor: TableCursor = field(default_factory=TableCursor, repr=False)
    writing: asyncio.Future[None] | None = field(default=None, repr=False)

    @property
    def last_hand_id(self) -> str | None:
        return self.hand_ids[-1] if self.hand_ids else None

    @property
    def closed(self) -> bool:
        return bool(self.closed_reason)

    @property
    def people(self) -> list[int]:
        """Seats a person still holds (not a bot, not left)."""
        return [s for s, seat in enumerate(self.seats) if not seat.is_bot and s not in self.left]

    def seat_of(self, player_id: str) -> int | None:
        """The seat ``player_id`` holds here (None: none, or they left it)."""
        for number, seat in enumerate(self.seats):
            if seat.player_id == player_id and number not in self.left:
                return number
        return None

    def first_bidder_after(self, previous_first_bidder: int | None) -> int | None:
        """The first bidder to ask for the next hand (§2): None (the golden card decides)
        for the table's first hand, else the previous hand's first bidder rotated one
        seat in play order."""
        if previous_first_bidder is None or previous_first_bidder < 0:
            return None
        return next_first_bidder(previous_first_bidder)

    def close(self, reason: str) -> None:
        """No more hands here; whoever waits for the next one is told why."""
        if not self.closed_reason:
            self.closed_reason = reason
        waiting = self.next_round
        if waiting is not None and not waiting.dealt.done():
            waiting.dealt.set_exception(TableGone(self.closed_reason))
            waiting.dealt.exception()  # retrieved: nobody may be waiting
        if waiting is not None and waiting.deadline is not None:
            waiting.deadline.cancel()


def check_id(kind: str, value: str) -> str:
    """Table and player ids become parts of NATS subjects and of hand ids."""
    if not ids.is_name(value):
        raise TableError(f"{kind} {value!r} must be {ids.NAME_RULE}")
    return value


class Tables:
    def __init__(self, log: TableLog | None = None) -> None:
        self._log = log  # None: in memory only (the unit tests), or not yet (a rebuild)
        self._unwritten: dict[str, list[TableEvent]] = {}  # restored tables, no log yet
        self._tables: dict[str, Table] = {}
        self._by_hand: dict[str, Table] = {}
        # Told when a table closes (its ``table_closed`` recorded): the service then
        # forgets it once its last hand is over (``evict``).
        self.on_closed: Callable[[Table], None] | None = None

    @property
    def log(self) -> TableLog | None:
        return self._log

    @log.setter
    def log(self, log: TableLog | None) -> None:
        """Write to ``log`` from now on, first what restored tables recorded meanwhile."""
        self._log = log
        unwritten, self._unwritten = self._unwritten, {}
        for table_id, events in unwritten.items():
            table = self._tables.get(table_id)
            if table is not None and log is not None:
                self._write(table, events)

    def open(
        self,
        rules: RuleSet,
        room: RoomSettings,
        seats: list[SeatInfo],
        table_id: str = "",
        *,
        room_id: str = "",
        balances: tuple[int, int, int] | None = None,
    ) -> Table:
        """Open the table now (no await: a room seats its group atomically); its
        ``table_opened`` event is written in the background (``recorded``)."""
        if len(seats) != 3:
            raise TableError(f"a table has exactly three seats, got {len(seats)}")
        for seat in seats:
            check_id("player id", seat.player_id)
        if len({seat.player_id for seat in seats}) != 3:
            raise TableError("the three seats need three different player ids")
        table_id = check_id("table id", table_id) if table_id else new_table_id()
        if table_id in self._tables:
            raise Refusal(
                Kind.EXISTS, Reason.INVALID_ARGUMENT, f"table {table_id!r} is already open"
            )
        three = (seats[0], seats[1], seats[2])
        table = Table(table_id, rules, room, three, room_id=room_id, balances=balances)
        self._tables[table_id] = table
        self._record(table, TableOpened(table_id, rules, room, three, room_id, balances))
        return table

    def restore(self, history: TableHistory) -> Table:
        """A table folded from its stream (a restart), known again with its hands."""
        state = history.state
        table = Table(
            state.table_id, state.rules, state.room, state.seats, list(state.hand_ids),
            state.room_id, state.balances, state.left_seats, state.closed_reason,
            state=state, cursor=history.cursor,
        )  # fmt: skip
        self._tables[table.table_id] = table
        for hand_id in table.hand_ids:
            self._by_hand[hand_id] = table
        return table

    def forget(self, table: Table) -> None:
        """Drop a table whose opening could not be written (it never was)."""
        if self._tables.get(table.table_id) is table:
            del self._tables[table.table_id]
        for hand_id in table.hand_ids:
            if self._by_hand.get(hand_id) is table:
                del self._by_hand[hand_id]

    def evict(self, table: Table) -> bool:
        """Forget a closed table whose events are all written (its stream keeps them):
        from now on its id and its hands' ids name no table here, so its seat tokens
        are refused -- as after a restart, which restores no closed table."""
        if not table.closed or (table.writing is not None and not table.writing.done()):
            return False
        known = self._tables.get(table.table_id) is table
        self.forget(table)
        return known

    async def recorded(self, table: Table) -> None:
        """Wait until the table's events so far are on its stream (a failed write is an
        UNAVAILABLE ``Refusal``, or the ``Refusal`` the log raised)."""
        if table.writing is None:
            return
        try:
            await asyncio.shield(table.writing)
        except Refusal:
            raise
        except Exception as exc:
            why = f"table {table.table_id} could not be recorded: {exc}"
            raise Refusal.unavailable(why) from exc

    async def settle(self) -> None:
        """Wait for every write under way (on close: before the bus goes)."""
        writing = [t.writing for t in self._tables.values() if t.writing is not None]
        await asyncio.gather(*writing, return_exceptions=True)

    def _record(self, table: Table, *events: TableEvent) -> None:
        """Fold ``events`` into the table's state and write them after its earlier ones."""
        state = table.state
        for event in events:
            state = evolve(state, event)
        table.state = state
        if self._log is not None:
            self._write(table, events)
        elif table.cursor.version > 0:  # a table of the bus, being rebuilt
            self._unwritten.setdefault(table.table_id, []).extend(events)

    def _write(self, table: Table, events: Sequence[TableEvent]) -> None:
        log_, previous = self._log, table.writing
        assert log_ is not None

        async def write() -> None:
            if previous is not None:
                await previous  # an earlier write failed: so do the ones after it
            table.cursor = await log_.append(table.table_id, table.cursor, events)

        table.writing = asyncio.ensure_future(write())
        table.writing.add_done_callback(_report_failure(table.table_id, events))

    def leave(self, table: Table, seat: int, escaped_hand_id: str = "") -> None:
        """The seat's player has left (their escaped hand, if any, is named)."""
        player_id = table.seats[seat].player_id
        table.left[seat] = player_id
        self._record(table, PlayerLeft(seat, player_id, escaped_hand_id))

    def close(self, table: Table, reason: str) -> None:
        """No more hands at the table (``Table.close``), as an event."""
        table.close(reason)
        if table.state is None or not table.state.closed:
            self._record(table, TableClosed(table.closed_reason))
            if self.on_closed is not None:
                self.on_closed(table)

    def get(self, table_id: str) -> Table | None:
        return self._tables.get(table_id)

    def add_hand(self, table: Table, assigned: HandAssigned) -> None:
        """The hand is the table's (before the dealer deals it: known to its table
        before its first event, here and after a restart)."""
        table.hand_ids.append(assigned.hand_id)
        self._by_hand[assigned.hand_id] = table
        self._record(table, assigned)

    def drop_hand(
        self, table: Table, hand_id: str, reason: str = "assigned, never dealt",
        *, record: bool = True,
    ) -> None:  # fmt: skip
        """Forget a hand the dealer did not deal, with a ``hand_withdrawn`` on the
        stream (so a restart does not list it again). ``record`` False: in memory only,
        for a deal cut short that may have happened (a restart looks for it on the
        bus and drops it then if it is not there)."""
        if hand_id in table.hand_ids:
            table.hand_ids.remove(hand_id)
        self._by_hand.pop(hand_id, None)
        if record and table.state is not None and hand_id in table.state.hand_ids:
            self._record(table, HandWithdrawn(hand_id, reason))
            log.warning("hand_withdrawn", table_id=table.table_id, hand_id=hand_id,
                        reason=reason)  # fmt: skip

    def ready(self, table: Table, seat: int, hand_number: int) -> None:
        """The seat asked for hand ``hand_number`` (a restart resumes the round)."""
        self._record(table, SeatReady(seat, hand_number, time.time()))

    def table_of(self, hand_id: str) -> Table | None:
        """The table a hand was dealt at (hands dealt by this instance only)."""
        return self._by_hand.get(hand_id)

    def all(self) -> list[Table]:
        return list(self._tables.values())

    def in_room(self, room_id: str) -> int:
        return sum(1 for table in self._tables.values() if table.room_id == room_id)


def _report_failure(
    table_id: str, events: Sequence[TableEvent]
) -> Callable[[asyncio.Future[None]], None]:
    def report(done: asyncio.Future[None]) -> None:
        if not done.cancelled() and done.exception() is not None:
            log.error("table_event_not_written", table_id=table_id,
                      events=[e.TYPE for e in events], error=str(done.exception()))  # fmt: skip

    return report


def new_table_id() -> str:
    return uuid.uuid4().hex[:16]
