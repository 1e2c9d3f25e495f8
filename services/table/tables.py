"""The tables this service has opened: who sits where, under which rules, which hands,
and (for a room's tables) who has left and who is ready for the next hand.

In memory: a restarted table service forgets its tables and queues (the hands
themselves live on the bus and finish with the bot). The registry's interface (open,
get, table_of, next first bidder) is what the use cases rely on; a ``table-<id>``
event stream could back it without changing that interface.
"""

from __future__ import annotations

import asyncio
import re
import uuid
from dataclasses import dataclass, field

from ddz.application.errors import Kind, Reason, Refusal
from ddz.domain.hand import SeatInfo, next_first_bidder
from ddz.domain.ruleset import RuleSet
from ddz.domain.settlement import RoomSettings

ID_PATTERN = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
"""Table and player ids: they become parts of NATS subjects and of hand ids."""


class TableError(Refusal, ValueError):
    """A table that cannot be opened as asked, or an id that cannot be one (the message
    says why): an invalid request."""

    def __init__(self, message: str) -> None:
        super().__init__(Kind.INVALID, Reason.INVALID_ARGUMENT, message)


class TableClosed(Exception):
    """The table deals no more hands (a player left); the message says why."""


@dataclass
class NextRound:
    """Who has said they are ready for the table's next hand (NextHand)."""

    number: int  # the hand to come: len(hand_ids) when the round began
    ready: set[int] = field(default_factory=set)
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
            waiting.dealt.set_exception(TableClosed(self.closed_reason))
            waiting.dealt.exception()  # retrieved: nobody may be waiting
        if waiting is not None and waiting.deadline is not None:
            waiting.deadline.cancel()


def check_id(kind: str, value: str) -> str:
    if not ID_PATTERN.match(value):
        raise TableError(f"{kind} {value!r} must be 1-64 letters, digits, '_' or '-'")
    return value


class Tables:
    def __init__(self) -> None:
        self._tables: dict[str, Table] = {}
        self._by_hand: dict[str, Table] = {}

    def open(
        self,
        rules: RuleSet,
        room: RoomSettings,
        seats: list[SeatInfo],
        table_id: str = "",
        *,
        room_id: str = "",
    ) -> Table:
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
        table = Table(table_id, rules, room, (seats[0], seats[1], seats[2]), room_id=room_id)
        self._tables[table_id] = table
        return table

    def get(self, table_id: str) -> Table | None:
        return self._tables.get(table_id)

    def add_hand(self, table: Table, hand_id: str) -> None:
        table.hand_ids.append(hand_id)
        self._by_hand[hand_id] = table

    def drop_hand(self, table: Table, hand_id: str) -> None:
        """Forget a hand the dealer did not deal."""
        if hand_id in table.hand_ids:
            table.hand_ids.remove(hand_id)
        self._by_hand.pop(hand_id, None)

    def table_of(self, hand_id: str) -> Table | None:
        """The table a hand was dealt at (hands dealt by this instance only)."""
        return self._by_hand.get(hand_id)

    def all(self) -> list[Table]:
        return list(self._tables.values())

    def in_room(self, room_id: str) -> int:
        return sum(1 for table in self._tables.values() if table.room_id == room_id)


def new_table_id() -> str:
    return uuid.uuid4().hex[:16]
