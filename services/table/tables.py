"""The tables this service has opened: who sits where, under which rules, which hands.

In memory for now. Issue 7 (rooms, matchmaking, seats that belong to authenticated
players, leaving a table) turns this into a ``table-<id>`` event stream (TableOpened,
PlayerSeated, PlayerLeft, HandDealt) folded the same way hands are; the registry's
interface (open, get, table_of, next first bidder) is what the servicer relies on.
"""

from __future__ import annotations

import asyncio
import re
import uuid
from dataclasses import dataclass, field

from ddz.domain.hand import SeatInfo, next_first_bidder
from ddz.domain.ruleset import RuleSet
from ddz.domain.settlement import RoomSettings

ID_PATTERN = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
"""Table and player ids: they become parts of NATS subjects and of hand ids."""


class TableError(ValueError):
    """A table that cannot be opened as asked (the message says why)."""


@dataclass
class Table:
    table_id: str
    rules: RuleSet
    room: RoomSettings
    seats: tuple[SeatInfo, SeatInfo, SeatInfo]
    hand_ids: list[str] = field(default_factory=list)
    # The first bidder of each hand dealt here, once known (§2 rotation).
    lock: asyncio.Lock = field(default_factory=asyncio.Lock, repr=False)

    @property
    def last_hand_id(self) -> str | None:
        return self.hand_ids[-1] if self.hand_ids else None

    def first_bidder_after(self, previous_first_bidder: int | None) -> int | None:
        """The first bidder to ask for the next hand (§2): None (the golden card decides)
        for the table's first hand, else the previous hand's first bidder rotated one
        seat in play order."""
        if previous_first_bidder is None or previous_first_bidder < 0:
            return None
        return next_first_bidder(previous_first_bidder)


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
    ) -> Table:
        if len(seats) != 3:
            raise TableError(f"a table has exactly three seats, got {len(seats)}")
        for seat in seats:
            check_id("player id", seat.player_id)
        if len({seat.player_id for seat in seats}) != 3:
            raise TableError("the three seats need three different player ids")
        table_id = check_id("table id", table_id) if table_id else uuid.uuid4().hex[:16]
        if table_id in self._tables:
            raise KeyError(table_id)
        table = Table(table_id, rules, room, (seats[0], seats[1], seats[2]))
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
