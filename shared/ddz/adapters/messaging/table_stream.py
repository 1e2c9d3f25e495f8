"""A table's stream on the bus: the table service writes it as its single writer and
folds it back after a restart.

A table is the stream ``table-<table_id>``; its events go to
``ddz.v1.table.<bucket>.<table_id>.<type>`` (``table_opened``, ``hand_assigned``,
``seat_ready``, ``hand_withdrawn``, ``player_left``, ``table_closed``), each an
``EventEnvelope`` like a hand's, so the recorder stores them with the rest of
``ddz.v1.>``. Every publish carries
``Nats-Expected-Last-Subject-Sequence`` over the table's filter
(``ddz.v1.table.<bucket>.<id>.*``), the check of ``hand_stream``: a second writer starting from
the same table gets a CONFLICT ``Refusal`` and has published nothing; a retry after a
lost acknowledgement is recognised by its event id. A write the bus does not answer (the
stream electing a new leader after a node died or was cut off) is asked again until
``election.RIDE_OUT`` has passed, so an election costs the table a wait, not a failed
call (``ddz.adapters.messaging.election``).

The open tables are found without reading every table ever opened: the stream's
subject counts (``table_opened`` minus ``table_closed`` subjects), then each open
table's own events.
"""

from __future__ import annotations

from collections.abc import Sequence

import nats.js.errors
from google.protobuf.message import DecodeError, Message

from ddz.adapters.codec import CodecError
from ddz.adapters.codec.envelope import new_envelope
from ddz.adapters.codec.values import (
    _balances_to_pb,
    balances_from_pb,
    room_from_pb,
    room_to_pb,
    ruleset_from_pb,
    ruleset_to_pb,
    seat_from_pb,
    seat_to_pb,
)
from ddz.adapters.messaging.bus import EventBus
from ddz.adapters.messaging.hand_stream import HandConflict, _publish_checked
from ddz.adapters.messaging.subjects import (
    category_filter,
    parse_subject,
    stream_filter,
    stream_id_for,
    stream_parts,
    subject_for,
)
from ddz.adapters.security.event_signing import EventKeyring, EventSigner
from ddz.application.errors import Kind, Reason, Refusal
from ddz.application.table_history import TableCursor, TableHistory
from ddz.domain.table import (
    HandAssigned,
    HandWithdrawn,
    PlayerLeft,
    SeatReady,
    TableClosed,
    TableEvent,
    TableOpened,
    replay,
)
from ddz.v1 import envelope_pb2
from ddz.v1 import table_events_pb2 as pb

TABLE = "table"
TYPE_VERSION = 1


def table_stream_id(table_id: str) -> str:
    return stream_id_for(TABLE, table_id)


# -- the events as protobuf ------------------------------------------------------------


def encode(event: TableEvent) -> Message:
    if isinstance(event, TableOpened):
        return pb.TableOpened(
            table_id=event.table_id, rules=ruleset_to_pb(event.rules),
            room=room_to_pb(event.room), seats=[seat_to_pb(s) for s in event.seats],
            room_id=event.room_id, balances=_balances_to_pb(event.balances),
        )  # fmt: skip
    if isinstance(event, HandAssigned):
        return pb.HandAssigned(
            hand_id=event.hand_id, first_bidder=event.first_bidder,
            balances=_balances_to_pb(event.balances), client_seeds=event.client_seeds,
            show_before_deal=event.show_before_deal, deal_request_id=event.deal_request_id,
        )  # fmt: skip
    if isinstance(event, PlayerLeft):
        return pb.PlayerLeft(
            seat=event.seat, player_id=event.player_id, escaped_hand_id=event.escaped_hand_id
        )
    if isinstance(event, SeatReady):
        return pb.SeatReady(seat=event.seat, hand_number=event.hand_number, said_at=event.said_at)
    if isinstance(event, HandWithdrawn):
        return pb.HandWithdrawn(hand_id=event.hand_id, reason=event.reason)
    return pb.TableClosed(reason=event.reason)


def _opened(m: pb.TableOpened) -> TableOpened:
    seats = tuple(seat_from_pb(s) for s in m.seats)
    if len(seats) != 3:
        raise CodecError(f"a table has three seats, table_opened has {len(seats)}")
    return TableOpened(
        m.table_id, ruleset_from_pb(m.rules), room_from_pb(m.room),
        (seats[0], seats[1], seats[2]), m.room_id, balances_from_pb(m),
    )  # fmt: skip


def _assigned(m: pb.HandAssigned) -> HandAssigned:
    first = m.first_bidder if m.HasField("first_bidder") else None
    return HandAssigned(
        m.hand_id, first, balances_from_pb(m), tuple(m.client_seeds),
        tuple(m.show_before_deal), m.deal_request_id,
    )  # fmt: skip


_DECODERS: dict[str, tuple[type[Message], object]] = {
    TableOpened.TYPE: (pb.TableOpened, _opened),
    HandAssigned.TYPE: (pb.HandAssigned, _assigned),
    PlayerLeft.TYPE: (pb.PlayerLeft, lambda m: PlayerLeft(m.seat, m.player_id, m.escaped_hand_id)),
    TableClosed.TYPE: (pb.TableClosed, lambda m: TableClosed(m.reason)),
    SeatReady.TYPE: (pb.SeatReady, lambda m: SeatReady(m.seat, m.hand_number, m.said_at)),
    HandWithdrawn.TYPE: (pb.HandWithdrawn, lambda m: HandWithdrawn(m.hand_id, m.reason)),
}


def decode(event_type: str, type_version: int, payload: bytes) -> TableEvent:
    """A table event from its envelope's fields; ``CodecError`` when it is none."""
    known = _DECODERS.get(event_type)
    if known is None or type_version != TYPE_VERSION:
        raise CodecError(f"not a table event: {event_type} v{type_version}")
    message_type, build = known
    try:
        message = message_type.FromString(payload)
        event: TableEvent = build(message)  # type: ignore[operator]
    except (DecodeError, ValueError) as exc:
        raise CodecError(f"{event_type}: {exc}") from exc
    return event


def envelope_for(
    table_id: str, version: int, event: TableEvent, *, producer: str, correlation_id: str = ""
) -> envelope_pb2.EventEnvelope:
    message = encode(event)
    stream_id = table_stream_id(table_id)
    return new_envelope(
        stream_id, version, event.TYPE, TYPE_VERSION, message.SerializeToString(),
        message.DESCRIPTOR.full_name,
        causation_id="", correlation_id=correlation_id or stream_id, producer=producer,
    )  # fmt: skip


# -- the stream ------------------------------------------------------------------------


class JetStreamTableLog:
    """The tables' streams as the table service uses them: each event it publishes is
    signed by ``signer`` (the table's key), each it reads verified with ``keyring``
    (``ddz.adapters.security.event_signing``); a reader alone needs no signer."""

    def __init__(
        self,
        bus: EventBus,
        producer: str = "table",
        timeout: float = 5.0,
        *,
        keyring: EventKeyring,
        signer: EventSigner | None = None,
    ) -> None:
        self.bus = bus
        self.producer = producer
        self.timeout = timeout
        self.keyring = keyring
        self.signer = signer

    async def append(
        self, table_id: str, after: TableCursor, events: Sequence[TableEvent]
    ) -> TableCursor:
        """Publish ``events`` after ``after``; CONFLICT if another writer got there first."""
        if self.signer is None:
            raise ValueError("a table log without a signer only reads")
        stream_id = table_stream_id(table_id)
        cursor = after
        for event in events:
            envelope = envelope_for(table_id, cursor.version + 1, event, producer=self.producer)
            try:
                seq = await _publish_checked(
                    self.bus, subject_for(stream_id, event.TYPE),
                    self.signer.seal(envelope), envelope.event_id, cursor.seq,
                    stream_filter(stream_id), self.timeout, ride_out=True,
                )  # fmt: skip
            except HandConflict as exc:
                if cursor.version == 0:  # the id is taken: by a table open or closed
                    raise Refusal(
                        Kind.EXISTS, Reason.INVALID_ARGUMENT, f"table {table_id!r} exists already"
                    ) from None
                raise Refusal.conflict(f"table {table_id}: {exc}") from None
            cursor = TableCursor(cursor.version + 1, seq)
        return cursor

    async def read(self, table_id: str) -> TableHistory | None:
        """The table folded from its stream (None: the bus has no such table)."""
        subject_filter = stream_filter(table_stream_id(table_id))
        events: list[TableEvent] = []
        seq = last = 0
        while True:
            try:
                msg = await self.bus.js.get_msg(
                    self.bus.stream, seq + 1, subject=subject_filter, next=True
                )
            except nats.js.errors.NotFoundError:
                break
            envelope = self.keyring.open(msg.data or b"")
            events.append(decode(envelope.type, envelope.type_version, envelope.payload))
            seq = last = int(msg.seq or 0)
        if not events:
            return None
        return TableHistory(replay(events), TableCursor(len(events), last))

    async def open_table_ids(self) -> list[str]:
        """Tables opened and not closed, as the stream's subjects say (no events read)."""
        opened = await self._ids_with(TableOpened.TYPE)
        closed = set(await self._ids_with(TableClosed.TYPE))
        return [table_id for table_id in opened if table_id not in closed]

    async def open_tables(self) -> list[TableHistory]:
        found = []
        for table_id in await self.open_table_ids():
            history = await self.read(table_id)
            if history is not None and not history.state.closed:
                found.append(history)
        return found

    async def _ids_with(self, event_type: str) -> list[str]:
        info = await self.bus.js.stream_info(
            self.bus.stream, subjects_filter=category_filter(TABLE, event_type=event_type)
        )
        subjects = info.state.subjects or {}
        return sorted(stream_parts(parse_subject(s).stream_id)[1] for s in subjects)
