"""Hands dealt straight through ``DealerService.Deal``, as the table service deals them.

The dealer takes a hand's rule set, room settings, seats, first bidder and balances from
the table's stream, never from the request: ``assigned`` writes a fresh table's
``table_opened`` and the hand's ``hand_assigned`` on the real bus, with the table
service's own writer (``JetStreamTableLog``) and signing key (from the suite's data
dir, as the table service finds it), and returns the request that names them.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence

from ddz.adapters import codec
from ddz.adapters.messaging.bus import EventBus
from ddz.adapters.messaging.table_stream import JetStreamTableLog
from ddz.adapters.security.event_signing import ensure_signer, event_keyring
from ddz.application.table_history import TableCursor
from ddz.config import Settings
from ddz.domain.hand import SeatInfo
from ddz.domain.ruleset import RuleSet, ruleset_for
from ddz.domain.settlement import RoomSettings
from ddz.domain.table import HandAssigned, TableEvent, TableOpened
from ddz.v1 import dealer_pb2, hand_events_pb2

Seat = SeatInfo | hand_events_pb2.SeatInfo
PLAYERS = ("alice", "bob", "carol")


def _seat(seat: Seat | str) -> SeatInfo:
    if isinstance(seat, str):
        return SeatInfo(seat)
    return seat if isinstance(seat, SeatInfo) else codec.seat_from_pb(seat)


async def _write(
    bus: EventBus, settings: Settings, table_id: str, after: TableCursor, event: TableEvent
) -> TableCursor:
    """One event on the table's stream, as the table service writes and signs it."""
    log = JetStreamTableLog(
        bus, keyring=event_keyring(settings.keys), signer=ensure_signer(settings.keys, "table")
    )
    return await log.append(table_id, after, [event])


async def open_table(
    bus: EventBus,
    settings: Settings,
    variant: str = "classic",
    *,
    rules: RuleSet | None = None,
    room: RoomSettings | None = None,
    seats: Iterable[Seat | str] = PLAYERS,
    room_id: str = "",
    balances: tuple[int, int, int] | None = None,
    table_id: str = "",
) -> tuple[str, TableCursor]:
    """A table's stream opened (its id, and its cursor to assign hands after)."""
    table_id = table_id or f"t-{uuid.uuid4().hex[:16]}"
    three = [_seat(seat) for seat in seats]
    assert len(three) == 3, three
    opened = TableOpened(
        table_id, rules or ruleset_for(variant), room or RoomSettings(),
        (three[0], three[1], three[2]), room_id, balances,
    )  # fmt: skip
    return table_id, await _write(bus, settings, table_id, TableCursor(), opened)


async def assign(
    bus: EventBus,
    settings: Settings,
    table_id: str,
    cursor: TableCursor,
    hand_id: str,
    *,
    first_bidder: int | None = None,
    balances: tuple[int, int, int] | None = None,
) -> TableCursor:
    """The table's next hand assigned, as the table service records it before a deal."""
    assigned = HandAssigned(hand_id, first_bidder, balances)
    return await _write(bus, settings, table_id, cursor, assigned)


async def assigned(
    bus: EventBus,
    settings: Settings,
    hand_id: str,
    variant: str = "classic",
    *,
    rules: RuleSet | None = None,
    room: RoomSettings | None = None,
    seats: Iterable[Seat | str] = PLAYERS,
    first_bidder: int | None = None,
    balances: tuple[int, int, int] | None = None,
    client_seeds: Sequence[bytes] = (),
    show_before_deal: Sequence[int] = (),
) -> dealer_pb2.DealRequest:
    """The Deal request of ``hand_id``, assigned at a table of its own with these values
    recorded on the table's stream."""
    table_id, cursor = await open_table(
        bus, settings, variant, rules=rules, room=room, seats=seats, balances=balances
    )
    await assign(
        bus, settings, table_id, cursor, hand_id, first_bidder=first_bidder, balances=balances
    )
    return dealer_pb2.DealRequest(
        hand_id=hand_id,
        table_id=table_id,
        client_seeds=list(client_seeds),
        show_before_deal=list(show_before_deal),
    )
