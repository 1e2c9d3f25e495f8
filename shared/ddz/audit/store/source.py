"""Reading hands to audit from the event store: the audit's only I/O.

``load_hand`` reads one hand through the ``EventStore`` contract. ``read_hands`` reads
many at once for ``ddz audit --all``: on the SQL store, one query per batch of streams
(in stream and version order) and one for their signatures, returning plain rows with
just the columns the audit reads (no per-row datetime parsing, no re-serialising).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from operator import itemgetter
from typing import Any, NamedTuple

from sqlalchemy import Connection, Dialect

from ddz.adapters.store import EventStore, SqlEventStore, StreamSignature
from ddz.audit.run import StoredRow

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


def load_hand(store: EventStore, hand_id: str) -> HandRecord | None:
    """One hand's stored events and head signatures; None when the store has none."""
    stream_id = hand_stream_id(hand_id)
    stored = store.read_stream(stream_id)
    if not stored:
        return None
    return HandRecord(stream_id, stored, store.read_signatures(stream_id))


def hand_stream_ids(store: EventStore, limit: int | None = None) -> list[str]:
    """Every hand's stream id, oldest first (at most ``limit``)."""
    if isinstance(store, SqlEventStore) and store.engine.dialect.name == "sqlite":
        ids = _sqlite_hand_stream_ids(store)
    else:
        ids = [s for s in store.stream_ids() if s.startswith(HAND_PREFIX)]
    return ids if limit is None else ids[:limit]


# SQLite compares text byte by byte (BINARY), so the ids starting with "hand-" are
# exactly those from "hand-" up to "hand." (the next byte): a range that SQLite reads
# from its (stream_id, stream_version) index alone, not by scanning every event's row.
_SQLITE_HAND_IDS = (
    "SELECT stream_id FROM events WHERE stream_id >= ? AND stream_id < ? "
    "AND stream_version = 1 ORDER BY position"
)
_AFTER_PREFIX = HAND_PREFIX[:-1] + chr(ord(HAND_PREFIX[-1]) + 1)


def _sqlite_hand_stream_ids(store: SqlEventStore) -> list[str]:
    with store.engine.connect() as conn:
        found = conn.exec_driver_sql(_SQLITE_HAND_IDS, (HAND_PREFIX, _AFTER_PREFIX))
        return [row[0] for row in found]


_COLUMNS = (
    "event_id, stream_id, stream_version, type, type_version, payload, envelope, prev_hash, hash"
)
_SIGNATURE_COLUMNS = "stream_id, head_version, head_hash, signature, key_id, algorithm"
_STREAM_VERSION = 2  # Row's index of stream_version


def read_hands(store: EventStore, stream_ids: Sequence[str]) -> Iterator[HandRecord]:
    """The hands of ``stream_ids``, in that order, read in as few queries as possible.

    On the SQL store: one query for the events of every listed stream and one for their
    signatures, run on the driver directly (the rows become ``Row`` tuples as they come,
    without SQLAlchemy's per-row processing: this is ``ddz audit --all``'s reading)."""
    if not isinstance(store, SqlEventStore):
        for stream_id in stream_ids:
            record = load_hand(store, stream_id)
            if record is not None:
                yield record
        return
    ids = list(stream_ids)
    if not ids:
        return
    rows: dict[str, list[StoredRow]] = {stream_id: [] for stream_id in ids}
    signatures: dict[str, list[StreamSignature]] = {stream_id: [] for stream_id in ids}
    # The fresh rows are acyclic tuples: nothing for the cycle collector to find, which
    # would otherwise trace them over and over as they pile up (a quarter of the read).
    paused = gc.isenabled()
    gc.disable()
    try:
        with store.engine.connect() as conn:
            make, binary = tuple.__new__, bytes  # Row._make without its Python frame
            for row in _fetch(conn, _EVENTS_SQL, ids):
                if type(row[5]) is not binary or type(row[6]) is not binary:
                    row = _bytes(row)
                rows[row[1]].append(make(Row, row))
            for sig in _fetch(conn, _SIGNATURES_SQL, ids):
                signatures[sig[0]].append(StreamSignature(*sig))
    finally:
        if paused:
            gc.enable()
    lateral = _lateral(store.engine.dialect)
    by_version: Any = itemgetter(_STREAM_VERSION)
    for stream_id in ids:
        found = rows[stream_id]
        if found:
            if lateral:  # the join's order is the plan's: made sure (a no-op when sorted)
                found.sort(key=by_version)
            yield HandRecord(stream_id, found, signatures[stream_id])


@dataclass(frozen=True)
class _Query:
    """One bulk read: the portable text (``IN`` a list of streams) and PostgreSQL's."""

    portable: str
    postgresql: str


# PostgreSQL: one index look-up per listed stream (a lateral join over the id array);
# ``IN (...)`` of a batch of ids makes it scan and filter the whole table instead.
_EVENTS_SQL = _Query(
    f"SELECT {_COLUMNS} FROM events WHERE stream_id IN ({{marks}}) "
    "ORDER BY stream_id, stream_version",
    f"SELECT e.* FROM unnest(%s::text[]) AS s(id) CROSS JOIN LATERAL "
    f"(SELECT {_COLUMNS} FROM events WHERE stream_id = s.id ORDER BY stream_version) AS e",
)
_SIGNATURES_SQL = _Query(
    f"SELECT {_SIGNATURE_COLUMNS} FROM stream_signatures WHERE stream_id IN ({{marks}}) "
    "ORDER BY id",
    f"SELECT g.* FROM unnest(%s::text[]) AS s(id) CROSS JOIN LATERAL "
    f"(SELECT {_SIGNATURE_COLUMNS} FROM stream_signatures WHERE stream_id = s.id "
    "ORDER BY id) AS g",
)


def _lateral(dialect: Dialect) -> bool:
    return dialect.name == "postgresql" and dialect.driver == "psycopg"


def _fetch(conn: Connection, query: _Query, ids: list[str]) -> Sequence[Sequence[Any]]:
    dialect = conn.dialect
    if _lateral(dialect):
        # binary results: bytea arrives as bytes, not as hex text made and parsed
        driver = conn.connection.driver_connection
        assert driver is not None
        with driver.cursor(binary=True) as cursor:
            cursor.execute(query.postgresql, (ids,))
            fetched: Sequence[Sequence[Any]] = cursor.fetchall()
            return fetched
    marks = ", ".join(["?" if dialect.paramstyle == "qmark" else "%s"] * len(ids))
    found = conn.exec_driver_sql(query.portable.format(marks=marks), tuple(ids))
    return found.cursor.fetchall() if found.cursor is not None else []


def _bytes(row: Sequence[Any]) -> tuple[Any, ...]:
    """Drivers may hand binary columns back as memoryview; the audit compares bytes.
    Anything else (text written into a binary column of SQLite by raw SQL) is kept as it
    is, for the hash chain check to fail that hand alone."""
    values = list(row)
    for index in (5, 6):
        if isinstance(values[index], memoryview | bytearray):
            values[index] = bytes(values[index])
    return tuple(values)
