"""Reading hands to audit from the event store: the audit's only I/O.

``load_hand`` reads one hand through the ``Recorder`` contract. ``read_hands`` reads
many at once for ``ddz audit --all``: on the SQL store, one query per batch of streams
(in stream and version order) and one for their signatures, returning plain rows with
just the columns the audit reads (no per-row datetime parsing, no re-serialising).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from ddz.adapters.store import Recorder, SqlRecorder, StreamSignature
from ddz.audit.checks import StoredRow

HAND_PREFIX = "hand-"


def hand_stream_id(hand_id: str) -> str:
    """``hand-<id>`` for a hand id (given with or without its ``hand-`` prefix)."""
    return hand_id if hand_id.startswith(HAND_PREFIX) else HAND_PREFIX + hand_id


class Row(NamedTuple):  # the field names are the events table's column names
    """The columns of one stored event that the audit reads (a ``StoredRow``). A named
    tuple: built straight from the driver's row, the cheapest object that has names."""

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


_COLUMNS = (
    "event_id, stream_id, stream_version, type, type_version, payload, envelope, prev_hash, hash"
)
_SIGNATURE_COLUMNS = "stream_id, head_version, head_hash, signature, key_id"


def read_hands(recorder: Recorder, stream_ids: Sequence[str]) -> Iterator[HandRecord]:
    """The hands of ``stream_ids``, in that order, read in as few queries as possible.

    On the SQL store: one query for the events of every listed stream and one for their
    signatures, run on the driver directly (the rows become ``Row`` tuples as they come,
    without SQLAlchemy's per-row processing: this is ``ddz audit --all``'s reading)."""
    if not isinstance(recorder, SqlRecorder):
        for stream_id in stream_ids:
            record = load_hand(recorder, stream_id)
            if record is not None:
                yield record
        return
    ids = list(stream_ids)
    if not ids:
        return
    dialect = recorder.engine.dialect
    marks = ", ".join(["?" if dialect.paramstyle == "qmark" else "%s"] * len(ids))
    rows: dict[str, list[StoredRow]] = {stream_id: [] for stream_id in ids}
    signatures: dict[str, list[StreamSignature]] = {stream_id: [] for stream_id in ids}
    with recorder.engine.connect() as conn:
        found = conn.exec_driver_sql(
            f"SELECT {_COLUMNS} FROM events WHERE stream_id IN ({marks}) "
            "ORDER BY stream_id, stream_version",
            tuple(ids),
        )
        for row in found.cursor.fetchall() if found.cursor is not None else ():
            rows[row[1]].append(Row._make(_bytes(row)))
        signed = conn.exec_driver_sql(
            f"SELECT {_SIGNATURE_COLUMNS} FROM stream_signatures WHERE stream_id IN ({marks}) "
            "ORDER BY id",
            tuple(ids),
        )
        for sig in signed.cursor.fetchall() if signed.cursor is not None else ():
            signatures[sig[0]].append(StreamSignature(*sig))
    for stream_id in ids:
        if rows[stream_id]:
            yield HandRecord(stream_id, rows[stream_id], signatures[stream_id])


def _bytes(row: Sequence[Any]) -> Sequence[Any]:
    """Drivers may hand binary columns back as memoryview; the audit compares bytes."""
    if type(row[5]) is bytes and type(row[6]) is bytes:
        return row
    values = list(row)
    values[5], values[6] = bytes(values[5]), bytes(values[6])
    return values
