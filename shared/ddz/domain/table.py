"""A table as the fold of its stream (``table-<table_id>``): opened with its rules,
room settings and seats, then the hands dealt there (and any withdrawn again), who is
ready for the next hand and since when, the people who left and, last, why it closed.
Pure: ``evolve`` one event, ``replay`` a stream; no I/O.

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
    """The table's next hand, recorded before the dealer is asked for it, with what
    the table asks for: the same deal can be asked for again by whoever holds the
    table next (an empty ``deal_request_id``: a record from before it was kept)."""

    TYPE: ClassVar[str] = "hand_assigned"
    hand_id: str
    first_bidder: int | None = None
    balances: Balances | None = None
    client_seeds: tuple[bytes, ...] = ()
    show_before_deal: tuple[int, ...] = ()
    deal_request_id: str = ""


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


@dataclass(frozen=True, slots=True)
class SeatReady:
    """The seat asked for the table's next hand (NextHand)."""

    TYPE: ClassVar[str] = "seat_ready"
    seat: int
    hand_number: int  # the hand it is ready for: the hands assigned when it said so
    said_at: float = 0.0  # Unix seconds


@dataclass(frozen=True, slots=True)
class HandWithdrawn:
    """A hand assigned here that the table gave up dealing: no longer the table's."""

    TYPE: ClassVar[str] = "hand_withdrawn"
    hand_id: str
    reason: str = ""


TableEvent = TableOpened | HandAssigned | PlayerLeft | TableClosed | SeatReady | HandWithdrawn


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
    # Who has asked for hand number ``ready_for`` (the next one while it equals
    # len(hand_ids)), and when the first of them did (Unix seconds).
    ready: tuple[int, ...] = ()
    ready_for: int = 0
    ready_since: float = 0.0
    last_assigned: HandAssigned | None = None  # the last hand_assigned (None: withdrawn)
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

    @property
    def ready_for_next(self) -> tuple[int, ...]:
        """The seats ready for the next hand (none once it is assigned)."""
        return self.ready if self.ready_for == len(self.hand_ids) else ()


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
            ready=(),  # the round is over: its hand dealt (or, if withdrawn, asked for anew)
            last_assigned=event,
        )
    if isinstance(event, SeatReady):
        _check_seat(state, event.seat)
        if state.ready and state.ready_for == event.hand_number:
            ready = state.ready if event.seat in state.ready else (*state.ready, event.seat)
            return replace(after, ready=ready)
        return replace(
            after, ready=(event.seat,), ready_for=event.hand_number, ready_since=event.said_at
        )
    if isinstance(event, HandWithdrawn):
        if event.hand_id not in state.hand_ids:
            return after
        index = state.hand_ids.index(event.hand_id)
        last = state.last_assigned
        # The balances stay: the hand never played, so the next starts with the same.
        return replace(
            after,
            hand_ids=state.hand_ids[:index] + state.hand_ids[index + 1 :],
            first_bidders=state.first_bidders[:index] + state.first_bidders[index + 1 :],
            last_assigned=None if last is not None and last.hand_id == event.hand_id else last,
        )
    if isinstance(event, PlayerLeft):
        _check_seat(state, event.seat)
        left = state.left if event.seat in state.left_seats else (
            *state.left, (event.seat, event.player_id)
        )  # fmt: skip
        escaped = state.escaped
        if event.escaped_hand_id and event.escaped_hand_id not in escaped:
            escaped = (*escaped, event.escaped_hand_id)
        return replace(after, left=left, escaped=escaped)
    return replace(after, closed_reason=state.closed_reason or event.reason)


def _check_seat(state: TableState, seat: int) -> None:
    if not 0 <= seat < len(state.seats):
        raise TableHistoryError(f"no seat {seat} at table {state.table_id}")


def replay(events: Iterable[TableEvent]) -> TableState:
    """The table its whole stream makes (``TableHistoryError`` for an empty one)."""
    state: TableState | None = None
    for event in events:
        state = evolve(state, event)
    if state is None:
        raise TableHistoryError("a table's stream starts with table_opened")
    return state
