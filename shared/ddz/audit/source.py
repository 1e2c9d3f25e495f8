"""Reading hands to audit from the event store: the audit's only I/O.

``load_hand`` reads one hand through the ``Recorder`` contract. ``read_hands`` reads
many at once for ``ddz audit --all``: on the SQL store, one query per batch of streams
(in stream and version order) and one for their signatures, returning plain rows with
just the columns the audit reads (no per-row datetime parsing, no re-serialising).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import sqlalchemy as sa

from ddz.adapters.store import Recorder, SqlRecorder, StreamSignature
from ddz.adapters.store.schema import events, stream_signatures
from ddz.audit.checks import StoredRow

HAND_PREFIX = "hand-"


def hand_stream_id(hand_id: str) -> str:
    """``hand-<id>`` for a hand id (given with or without its ``hand-`` prefix)."""
    return hand_id if hand_id.startswith(HAND_PREFIX) else HAND_PREFIX + hand_id


@dataclass(frozen=True, slots=True)
class Row:
    """The columns of one stored event that the audit reads (a ``StoredRow``)."""

    event_id: str
    stream_id: str
    stream_version: int
    type: str
    type_version: int
    payload: bytes
    envelope: bytes
    prev_hash: str
    hash: str


@dataclass(frozen=True, slots=True)
class HandRecord:
    stream_id: str
    events: Sequence[StoredRow]
    signatures: Sequence[StreamSignature]

    @property
    def hand_id(self) -> str:
        return self.stream_id.removeprefix(HAND_PREFIX)


def load_hand(recorder: Recorder, hand_id: str) -> HandRecord | None:
    """One hand's stored events and head signatures; None when the store has none."""
    stream_id = hand_stream_id(hand_id)
    stored = recorder.read_stream(stream_id)
    if not stored:
        return None
    return HandRecord(stream_id, stored, recorder.read_signatures(stream_id))


def hand_stream_ids(recorder: Recorder, limit: int | None = None) -> list[str]:
    """Every hand's stream id, oldest first (at most ``limit``)."""
    ids = [s for s in recorder.stream_ids() if s.startswith(HAND_PREFIX)]
    return ids if limit is None else ids[:limit]


_ROW_COLUMNS = (
    events.c.event_id,
    events.c.stream_id,
    events.c.stream_version,
    events.c.type,
    events.c.type_version,
    events.c.payload,
    events.c.envelope,
    events.c.prev_hash,
    events.c.hash,
)


def read_hands(recorder: Recorder, stream_ids: Sequence[str]) -> Iterator[HandRecord]:
    """The hands of ``stream_ids``, in that order, read in as few queries as possible."""
    if not isinstance(recorder, SqlRecorder):
        for stream_id in stream_ids:
            record = load_hand(recorder, stream_id)
            if record is not None:
                yield record
        return
    query = (
        sa.select(*_ROW_COLUMNS)
        .where(events.c.stream_id.in_(sa.bindparam("ids", expanding=True)))
        .order_by(events.c.stream_id, events.c.stream_version)
    )
    signed = (
        sa.select(
            stream_signatures.c.stream_id,
            stream_signatures.c.head_version,
            stream_signatures.c.head_hash,
            stream_signatures.c.signature,
            stream_signatures.c.key_id,
        )
        .where(stream_signatures.c.stream_id.in_(sa.bindparam("ids", expanding=True)))
        .order_by(stream_signatures.c.id)
    )
    ids = list(stream_ids)
    with recorder.engine.connect() as conn:
        rows: dict[str, list[StoredRow]] = {stream_id: [] for stream_id in ids}
        for event_row in conn.execute(query, {"ids": ids}):
            rows[event_row[1]].append(Row(*event_row))
        signatures: dict[str, list[StreamSignature]] = {stream_id: [] for stream_id in ids}
        for stream_id, version, head_hash, signature, key_id in conn.execute(signed, {"ids": ids}):
            signatures[stream_id].append(
                StreamSignature(stream_id, version, head_hash, signature, key_id)
            )
    for stream_id in ids:
        if rows[stream_id]:
            yield HandRecord(stream_id, rows[stream_id], signatures[stream_id])
