"""How stored events change the desk's hand index (``hand_index``): one stream's newly
stored events become a write of the summaries they change (``change_of``), which
``HandIndex.apply_many`` runs with the other streams' writes in one transaction. Only the
few event types that change a summary are opened."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ddz.adapters import codec
from ddz.adapters.codec import CodecError
from ddz.adapters.service_db.schema import (
    hand_players,
    hand_summaries,
    table_rooms,
    table_seats,
    table_summaries,
)
from ddz.domain.hand.events import (
    HandEnded,
    HandSettled,
    HandStarted,
    PlayerDisconnected,
    TurnTimedOut,
)
from ddz.v1 import table_events_pb2

INDEXED_TYPES = frozenset(
    {"table_opened", "hand_assigned", "hand_started", "player_disconnected", "turn_timed_out",
     "hand_ended", "hand_settled", "seed_revealed"}
)  # fmt: skip
"""The event types that change a summary; the others are counted, never opened."""

Write = Callable[[Connection], None]
"""What one stream's events change, run in the index's transaction."""


@dataclass
class _Change:
    """What one batch of a stream changes in a summary (only what it names)."""

    values: dict[str, Any] = field(default_factory=dict)
    seats: list[tuple[str, bool]] | None = None
    deltas: tuple[int, ...] | None = None
    events: int = 0


@dataclass
class _TableChange:
    """What one batch of a table's stream changes in its summary."""

    values: dict[str, Any] = field(default_factory=dict)
    seats: list[tuple[str, bool]] | None = None
    left: list[int] = field(default_factory=list)


def change_of(stream_id: str, envelopes: Sequence[bytes]) -> Write | None:
    """What folding ``envelopes`` writes, or None when it changes nothing."""
    category, _, own_id = stream_id.partition("-")
    if category == "table":
        return _table_change(own_id, envelopes)
    if category == "hand":
        return _hand_change(own_id, envelopes)
    return None


def _table_change(table_id: str, envelopes: Sequence[bytes]) -> Write | None:
    rooms: dict[str, str] = {}
    hands: list[str] = []
    summary = _TableChange()
    for data in envelopes:
        envelope = codec.parse_envelope(data)
        if envelope.type == "table_opened":
            opened = table_events_pb2.TableOpened.FromString(envelope.payload)
            rooms[table_id] = opened.room_id
            summary.values.update(room=opened.room_id, variant=opened.rules.name,
                                opened_at=_seconds(envelope))  # fmt: skip
            summary.seats = [(seat.player_id, seat.is_bot) for seat in opened.seats]
        elif envelope.type == "hand_assigned":
            hands.append(table_events_pb2.HandAssigned.FromString(envelope.payload).hand_id)
            summary.values["last_hand_id"] = hands[-1]
        elif envelope.type == "player_left":
            summary.left.append(table_events_pb2.PlayerLeft.FromString(envelope.payload).seat)
        elif envelope.type == "table_closed":
            closed = table_events_pb2.TableClosed.FromString(envelope.payload)
            summary.values.update(closed_at=_seconds(envelope) or time.time(),
                                close_reason=closed.reason[:200])  # fmt: skip
    if not rooms and not hands and not summary.values and not summary.left:
        return None

    def write(conn: Connection) -> None:
        _upsert_table(conn, table_id, summary, len(hands))
        for table, room in rooms.items():
            if (
                conn.execute(
                    sa.select(table_rooms.c.room).where(table_rooms.c.table_id == table)
                ).first()
                is None
            ):
                conn.execute(sa.insert(table_rooms), {"table_id": table, "room": room})
        room = (
            rooms.get(table_id)
            or conn.execute(
                sa.select(table_rooms.c.room).where(table_rooms.c.table_id == table_id)
            ).scalar_one_or_none()
            or ""
        )
        for hand_id in hands:
            _upsert(conn, hand_id, _Change({"table_id": table_id, "room": room}))

    return write


def _upsert_table(conn: Connection, table_id: str, change: _TableChange, hands: int) -> None:
    t = table_summaries.c
    if conn.execute(sa.select(t.hands).where(t.table_id == table_id)).first() is None:
        conn.execute(sa.insert(table_summaries),
                     {"table_id": table_id, **change.values, "hands": hands})  # fmt: skip
    elif change.values or hands:
        conn.execute(
            sa.update(table_summaries).where(t.table_id == table_id)
            .values(**change.values, hands=t.hands + hands)
        )  # fmt: skip
    seats = table_seats.c
    if change.seats is not None:
        conn.execute(sa.delete(table_seats).where(seats.table_id == table_id))
    if change.seats:
        conn.execute(sa.insert(table_seats), [
            {"table_id": table_id, "seat": seat, "player_id": player, "is_bot": is_bot}
            for seat, (player, is_bot) in enumerate(change.seats)
        ])  # fmt: skip
    if change.left:
        conn.execute(
            sa.update(table_seats)
            .where(seats.table_id == table_id, seats.seat.in_(change.left))
            .values(person_left=True)
        )


@dataclass(frozen=True, slots=True)
class Counted:
    """A hand's newly stored events that change nothing in its summary but its count
    (most batches: plays and passes). ``count_all`` writes a batch's in one statement;
    called alone, it is any other change's write."""

    hand_id: str
    events: int

    def __call__(self, conn: Connection) -> None:
        _upsert(conn, self.hand_id, _Change(events=self.events))


def count_all(conn: Connection, counted: Sequence[Counted]) -> None:
    """The counts of a batch's hands, in two statements whatever their number: the
    summaries found at once, then one executemany of their counts. A summary not there
    yet (its start was in no batch indexed) is made as any change makes it."""
    s = hand_summaries.c
    found = set(
        conn.execute(
            sa.select(s.hand_id).where(s.hand_id.in_({c.hand_id for c in counted}))
        ).scalars()
    )
    known = [{"counted_id": c.hand_id, "more": c.events} for c in counted if c.hand_id in found]
    if known:
        conn.execute(
            sa.update(hand_summaries)
            .where(s.hand_id == sa.bindparam("counted_id"))
            .values(events=s.events + sa.bindparam("more")),
            known,
        )
    for change in counted:
        if change.hand_id not in found:
            change(conn)


def _hand_change(hand_id: str, envelopes: Sequence[bytes]) -> Write:
    change = _Change(events=len(envelopes))
    for data in envelopes:
        envelope = codec.parse_envelope(data)
        if envelope.type not in INDEXED_TYPES:
            continue
        when = _seconds(envelope)
        try:
            event = codec.decode_event(envelope.type, envelope.type_version, envelope.payload)
        except CodecError:
            continue  # the audit says what is wrong with it; the index skips it
        match event:
            case HandStarted():
                change.values.update(variant=event.rules.name, started_at=when)
                change.seats = [(s.player_id, s.is_bot) for s in event.seats]
            case PlayerDisconnected() | TurnTimedOut():  # the bot moves for the person
                change.values["bot_for_person"] = True
            case HandEnded():
                winner = event.winner.value if event.winner is not None else "no_winner"
                change.values.update(outcome=winner, ended_at=when)
            case HandSettled():
                change.values.update(landlord=event.landlord, multiplier=event.ledger.multiplier)
                change.deltas = event.ledger.deltas
            case _:  # seed_revealed: the end of the record; audit it (again)
                change.values.update(audit="", audit_detail="")
                change.values.setdefault("ended_at", when)
    if not change.values and change.seats is None and change.deltas is None:
        return Counted(hand_id, change.events)
    return lambda conn: _upsert(conn, hand_id, change)


def _upsert(conn: Connection, hand_id: str, change: _Change) -> None:
    row = conn.execute(
        sa.select(hand_summaries.c.events, hand_summaries.c.started_at).where(
            hand_summaries.c.hand_id == hand_id
        )
    ).first()
    values = dict(change.values)
    if row is None:
        conn.execute(
            sa.insert(hand_summaries), {"hand_id": hand_id, "events": change.events, **values}
        )
    else:
        values["events"] = row.events + change.events
        conn.execute(sa.update(hand_summaries).where(hand_summaries.c.hand_id == hand_id), values)
    started = values.get("started_at", row.started_at if row is not None else None)
    if change.seats is not None:
        conn.execute(sa.delete(hand_players).where(hand_players.c.hand_id == hand_id))
        conn.execute(
            sa.insert(hand_players),
            [
                {"hand_id": hand_id, "seat": seat, "player_id": player, "is_bot": bot,
                 "started_at": started}
                for seat, (player, bot) in enumerate(change.seats)
            ],
        )  # fmt: skip
    if change.deltas is not None:
        for seat, delta in enumerate(change.deltas):
            conn.execute(
                sa.update(hand_players)
                .where(hand_players.c.hand_id == hand_id, hand_players.c.seat == seat)
                .values(delta=delta)
            )


def _seconds(envelope: Any) -> float | None:
    if not envelope.HasField("occurred_at"):
        return None
    stamp = envelope.occurred_at
    seconds: float = stamp.seconds + stamp.nanos / 1e9
    return seconds
