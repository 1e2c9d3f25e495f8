"""A table as the fold of its stream (``table-<table_id>``): opened with its rules,
room settings and seats, then the hands dealt there, the people who left and, last,
why it closed. Pure: ``evolve`` one event, ``replay`` a stream; no I/O.

The table service keeps one ``TableState`` per table and writes each event to the
table's stream before (or as) it acts on it, so a restarted service folds the same
tables back.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import ClassVar

from ddz.domain.hand import SeatInfo
from ddz.domain.ruleset import RuleSet
from ddz.domain.settlement import RoomSettings

Balances = tuple[int, int, int]


@dataclass(frozen=True, slots=True)
class TableOpened:
    TYPE: ClassVar[str] = "table_opened"
    table_id: str
    rules: RuleSet
    room: RoomSettings
    seats: tuple[SeatInfo, SeatInfo, SeatInfo]
    room_id: str = ""  # "" = opened by an operator
    balances: Balances | None = None


@dataclass(frozen=True, slots=True)
class HandAssigned:
    TYPE: ClassVar[str] = "hand_assigned"
    hand_id: str
    first_bidder: int | None = None
    balances: Balances | None = None


@dataclass(frozen=True, slots=True)
class PlayerLeft:
    TYPE: ClassVar[str] = "player_left"
    seat: int
    player_id: str
    escaped_hand_id: str = ""


@dataclass(frozen=True, slots=True)
class TableClosed:
    TYPE: ClassVar[str] = "table_closed"
    reason: str


TableEvent = TableOpened | HandAssigned | PlayerLeft | TableClosed


class TableHistoryError(ValueError):
    """A stream that cannot be a table's (an event out of place)."""


@dataclass(frozen=True, slots=True)
class TableState:
    table_id: str
    rules: RuleSet
    room: RoomSettings
    seats: tuple[SeatInfo, SeatInfo, SeatInfo]
    room_id: str = ""
    balances: Balances | None = None  # the last hand's starting balances (or the opening)
    hand_ids: tuple[str, ...] = ()
    first_bidders: tuple[int | None, ...] = ()  # per hand, as assigned
    left: tuple[tuple[int, str], ...] = ()  # (seat, player) in the order they left
    escaped: tuple[str, ...] = ()  # hands left in play
    closed_reason: str = ""
    version: int = 1  # events folded (the opened event is version 1)

    @property
    def closed(self) -> bool:
        return bool(self.closed_reason)

    @property
    def last_hand_id(self) -> str | None:
        return self.hand_ids[-1] if self.hand_ids else None

    @property
    def left_seats(self) -> dict[int, str]:
        return dict(self.left)

    @property
    def people(self) -> list[int]:
        """Seats a person still holds (not a bot, not left)."""
        gone = self.left_seats
        return [s for s, seat in enumerate(self.seats) if not seat.is_bot and s not in gone]


def opened(event: TableOpened) -> TableState:
    return TableState(
        event.table_id, event.rules, event.room, event.seats, event.room_id, event.balances
    )


def evolve(state: TableState | None, event: TableEvent) -> TableState:
    """The table after ``event``; ``TableHistoryError`` when it cannot follow ``state``."""
    if isinstance(event, TableOpened):
        if state is not None:
            raise TableHistoryError(f"table {state.table_id} is already open")
        return opened(event)
    if state is None:
        raise TableHistoryError(f"{event.TYPE} before the table was opened")
    after = replace(state, version=state.version + 1)
    if isinstance(event, HandAssigned):
        balances = event.balances if event.balances is not None else state.balances
        return replace(
            after,
            hand_ids=(*state.hand_ids, event.hand_id),
            first_bidders=(*state.first_bidders, event.first_bidder),
            balances=balances,
        )
    if isinstance(event, PlayerLeft):
        if not 0 <= event.seat < len(state.seats):
            raise TableHistoryError(f"no seat {event.seat} at table {state.table_id}")
        left = state.left if event.seat in state.left_seats else (
            *state.left, (event.seat, event.player_id)
        )  # fmt: skip
        escaped = state.escaped
        if event.escaped_hand_id and event.escaped_hand_id not in escaped:
            escaped = (*escaped, event.escaped_hand_id)
        return replace(after, left=left, escaped=escaped)
    return replace(after, closed_reason=state.closed_reason or event.reason)


def replay(events: Iterable[TableEvent]) -> TableState:
    """The table its whole stream makes (``TableHistoryError`` for an empty one)."""
    state: TableState | None = None
    for event in events:
        state = evolve(state, event)
    if state is None:
        raise TableHistoryError("a table's stream starts with table_opened")
    return state
