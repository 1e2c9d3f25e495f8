"""The SQLAlchemy (Core) event store, for SQLite and PostgreSQL.

Writers are serialised so that positions are handed out in commit order and a reader
paging by position never skips an event that commits later with a lower position:
PostgreSQL takes ``LOCK TABLE events IN EXCLUSIVE MODE`` in the append transaction
(plain SELECTs still run), SQLite opens write transactions with ``BEGIN IMMEDIATE``.
Under that lock the store checks the stream's version, numbers the new events
``max(position) + 1 ...`` (gapless, unlike a sequence, which skips numbers when a
transaction rolls back) and links each to its predecessor's hash.

The hot statements (append, read_all, read_stream) are compiled once per engine and
run with ``exec_driver_sql``; a 2-core machine spends most of an append in SQLAlchemy's
per-call statement handling otherwise.
"""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from google.protobuf.message import DecodeError
from sqlalchemy.engine import Connection, Dialect, Engine
from sqlalchemy.pool import StaticPool

from ddz.adapters.store import chain
from ddz.adapters.store.keys import HmacSigner
from ddz.adapters.store.schema import events, stream_signatures
from ddz.application.event_store import (
    Append,
    DuplicateEventId,
    EventStore,
    HeadSigner,
    InvalidEnvelope,
    SignatureConflict,
    StoredEvent,
    StreamSignature,
    UnknownStream,
    VersionConflict,
)
from ddz.urls import normalize_database_url
from ddz.v1 import envelope_pb2

SQLITE_BUSY_TIMEOUT_MS = 30_000
_BEGIN_OPTION = "ddz_sqlite_begin"
_SQLITE_DATETIME = "%Y-%m-%d %H:%M:%S.%f"


def make_engine(url: str, **kwargs: Any) -> Engine:
    """An engine for ``url`` with the store's connection settings.

    SQLite: WAL journal, ``busy_timeout``, ``synchronous=NORMAL`` (safe with WAL: a
    crash loses at most the last commits, never consistency), and SQLAlchemy emitting
    BEGIN itself so write transactions can say ``BEGIN IMMEDIATE``.
    """
    url = normalize_database_url(url)
    parsed = sa.make_url(url)
    if parsed.get_backend_name() != "sqlite":
        kwargs.setdefault("pool_pre_ping", True)
        return sa.create_engine(url, **kwargs)
    database = parsed.database or ""
    in_memory = database in ("", ":memory:") or parsed.query.get("mode") == "memory"
    if in_memory:
        # One shared connection, or each checkout would see its own empty database.
        kwargs.setdefault("poolclass", StaticPool)
        kwargs.setdefault("connect_args", {"check_same_thread": False})
    else:
        Path(database).expanduser().parent.mkdir(parents=True, exist_ok=True)
    engine = sa.create_engine(url, **kwargs)

    @sa.event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Let SQLAlchemy, not the sqlite3 module, decide when transactions begin.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        try:
            if not in_memory:
                cursor.execute("PRAGMA journal_mode=WAL")
                cursor.execute("PRAGMA synchronous=NORMAL")
            cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
        finally:
            cursor.close()

    @sa.event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        conn.exec_driver_sql(conn.get_execution_options().get(_BEGIN_OPTION, "BEGIN"))

    return engine


@contextmanager
def write_transaction(engine: Engine) -> Iterator[Connection]:
    """A transaction that holds the store's single-writer lock until it commits."""
    with engine.connect() as conn:
        if engine.dialect.name == "sqlite":
            conn.execution_options(**{_BEGIN_OPTION: "BEGIN IMMEDIATE"})
        with conn.begin():
            if engine.dialect.name == "postgresql":
                conn.exec_driver_sql("LOCK TABLE events IN EXCLUSIVE MODE")
            yield conn


_COLUMNS = ", ".join(column.name for column in events.c)
_HEAD_SQL = """
SELECT (SELECT max(position) FROM events),
       (SELECT stream_version FROM events WHERE stream_id = :stream_id
         ORDER BY stream_version DESC LIMIT 1),
       (SELECT hash FROM events WHERE stream_id = :stream_id
         ORDER BY stream_version DESC LIMIT 1)
"""
_INSERT_SQL = (
    f"INSERT INTO events ({_COLUMNS}) VALUES ("
    + ", ".join(f":{column.name}" for column in events.c)
    + ")"
)
_READ_ALL_SQL = (
    "SELECT {columns} FROM events WHERE position > :after ORDER BY position LIMIT :limit"
)
_READ_STREAM_SQL = (
    "SELECT {columns} FROM events WHERE stream_id = :stream_id AND stream_version > :after "
    "ORDER BY stream_version"
)
_UNTRACED_COLUMNS = _COLUMNS.replace("trace_id", "NULL AS trace_id")
"""A store of a revision before 0003 (not upgraded: ``ddz audit`` reads, never migrates)
has no ``trace_id`` column: its events read with none."""


@dataclass(frozen=True, slots=True)
class _Prepared:
    """A statement compiled once for the engine's driver and run with
    ``exec_driver_sql``: the hot paths skip SQLAlchemy's per-call compilation."""

    sql: str
    order: tuple[str, ...] | None  # parameter order for positional drivers (SQLite)

    @classmethod
    def compile(cls, text: str, dialect: Dialect) -> _Prepared:
        compiled = sa.text(text).compile(dialect=dialect)
        order = tuple(compiled.positiontup or ()) if dialect.positional else None
        return cls(str(compiled), order)

    def params(self, values: Mapping[str, Any]) -> Any:
        if self.order is None:
            return values
        return tuple(values[name] for name in self.order)


class SqlEventStore(EventStore):
    """The ``EventStore`` over a SQLAlchemy engine whose schema is at head.

    Positions are handed out here, under the writer lock, as ``max(position) + 1``:
    gapless even when an append is rolled back (a database sequence would skip
    numbers), so "after position N" is exact for every reader.
    """

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        dialect = engine.dialect
        self._sqlite = dialect.name == "sqlite"
        self._head = _Prepared.compile(_HEAD_SQL, dialect)
        self._insert = _Prepared.compile(_INSERT_SQL, dialect)
        self._reads: dict[bool, tuple[_Prepared, _Prepared]] = {
            traced: (
                _Prepared.compile(_READ_ALL_SQL.format(columns=columns), dialect),
                _Prepared.compile(_READ_STREAM_SQL.format(columns=columns), dialect),
            )
            for traced, columns in ((True, _COLUMNS), (False, _UNTRACED_COLUMNS))
        }
        self._traced: bool | None = None  # whether events has trace_id: looked up once
        # An in-memory SQLite database is one shared connection: one user at a time.
        self._memory_lock = threading.Lock() if isinstance(engine.pool, StaticPool) else None

    @contextmanager
    def _writing(self) -> Iterator[Connection]:
        if self._memory_lock is None:
            with write_transaction(self.engine) as conn:
                yield conn
            return
        with self._memory_lock, write_transaction(self.engine) as conn:
            yield conn

    @contextmanager
    def _reading(self) -> Iterator[Connection]:
        if self._memory_lock is None:
            with self.engine.connect() as conn:
                yield conn
            return
        with self._memory_lock, self.engine.connect() as conn:
            yield conn

    # -- writing -------------------------------------------------------------------

    def append(
        self,
        stream_id: str,
        expected_version: int,
        envelopes: Sequence[bytes],
        trace_ids: Sequence[str | None] | None = None,
    ) -> list[StoredEvent]:
        [stored] = self.append_streams([Append(stream_id, expected_version, envelopes, trace_ids)])
        return stored

    def append_streams(self, appends: Sequence[Append]) -> list[list[StoredEvent]]:
        """Every stream's events in one transaction: all of them, or none."""
        batches = [(a, _rows_of(a)) for a in appends]
        ids = [row["event_id"] for _, rows in batches for row in rows]
        if len(set(ids)) != len(ids):
            raise InvalidEnvelope("the same event id appears twice in one batch")
        if not ids:
            return [[] for _ in appends]
        try:
            with self._writing() as conn:
                return [
                    self._append_locked(conn, a.stream_id, a.expected_version, rows) if rows else []
                    for a, rows in batches
                ]
        except sa.exc.IntegrityError:
            # Only a unique event id can collide here (versions and positions are
            # checked under the lock): an id stored elsewhere with other content.
            with self._reading() as conn:
                taken = conn.execute(
                    sa.select(events.c.event_id).where(events.c.event_id.in_(ids))
                ).scalar()
            if taken is None:
                raise
            raise DuplicateEventId(taken) from None

    def _append_locked(
        self, conn: Connection, stream_id: str, expected_version: int, rows: list[dict[str, Any]]
    ) -> list[StoredEvent]:
        top, version, prev_hash = conn.exec_driver_sql(
            self._head.sql, self._head.params({"stream_id": stream_id})
        ).one()
        version = version or 0
        skip = 0
        stored: dict[str, StoredEvent] = {}
        if version != expected_version:
            # A redelivered batch: its events already stored with identical bytes
            # form a prefix; the rest must directly follow the stream's head.
            stored = {
                record.event_id: record
                for record in map(
                    self._record,
                    conn.execute(
                        sa.select(*events.c).where(
                            events.c.event_id.in_([row["event_id"] for row in rows])
                        )
                    ),
                )
            }
            while skip < len(rows) and rows[skip]["event_id"] in stored:
                skip += 1
        for row in rows:
            known = stored.get(row["event_id"])
            if known is not None and known.envelope != row["envelope"]:
                raise DuplicateEventId(row["event_id"])
        fresh = rows[skip:]
        if fresh:
            if version != expected_version + skip:
                raise VersionConflict(stream_id, expected_version + skip, version)
            position = top or 0
            prev_hash = prev_hash or chain.GENESIS_HASH
            for row in fresh:
                position += 1
                row["position"] = position
                row["prev_hash"] = prev_hash
                row["hash"] = prev_hash = chain.chain_hash(prev_hash, row["envelope"])
            conn.exec_driver_sql(
                self._insert.sql, [self._insert.params(self._to_db(row)) for row in fresh]
            )
        return [
            stored[row["event_id"]] if index < skip else StoredEvent(**row)
            for index, row in enumerate(rows)
        ]

    def _to_db(self, row: dict[str, Any]) -> dict[str, Any]:
        occurred_at = row["occurred_at"]
        if self._sqlite and occurred_at is not None:
            # The text form SQLAlchemy's SQLite DateTime uses (UTC, zone dropped).
            return {**row, "occurred_at": occurred_at.strftime(_SQLITE_DATETIME)}
        return row

    def _record(self, row: Sequence[Any]) -> StoredEvent:
        """A record from a row of all the columns (same order as StoredEvent's fields)."""
        occurred_at = row[6]
        if occurred_at is None:
            return StoredEvent(*row)
        if isinstance(occurred_at, str):
            occurred_at = dt.datetime.fromisoformat(occurred_at)
        if occurred_at.tzinfo is None:  # SQLite keeps no zone; the store writes UTC
            occurred_at = occurred_at.replace(tzinfo=dt.UTC)
        values = list(row)
        values[6] = occurred_at
        return StoredEvent(*values)

    def sign_head(
        self, stream_id: str, key: HeadSigner | bytes, key_id: str = ""
    ) -> StreamSignature:
        signer = HmacSigner(key, key_id) if isinstance(key, bytes) else key
        key_id = signer.key_id
        with self._writing() as conn:
            head = conn.execute(
                sa.select(events.c.stream_version, events.c.hash)
                .where(events.c.stream_id == stream_id)
                .order_by(events.c.stream_version.desc())
                .limit(1)
            ).first()
            if head is None:
                raise UnknownStream(stream_id)
            signature = StreamSignature(
                stream_id=stream_id,
                head_version=head[0],
                head_hash=head[1],
                signature=signer.sign(stream_id, head[0], head[1]),
                key_id=key_id,
                algorithm=signer.algorithm,
            )
            existing = conn.execute(
                sa.select(stream_signatures.c.signature, stream_signatures.c.algorithm).where(
                    stream_signatures.c.stream_id == stream_id,
                    stream_signatures.c.head_version == signature.head_version,
                    stream_signatures.c.key_id == key_id,
                )
            ).first()
            if existing is None:
                conn.execute(
                    sa.insert(stream_signatures),
                    {
                        "stream_id": stream_id,
                        "head_version": signature.head_version,
                        "head_hash": signature.head_hash,
                        "signature": signature.signature,
                        "key_id": key_id,
                        "algorithm": signature.algorithm,
                    },
                )
            elif tuple(existing) != (signature.signature, signature.algorithm):
                raise SignatureConflict(
                    f"head {signature.head_version} of {stream_id!r} is already signed under "
                    f"key id {key_id!r} with another key"
                )
        return signature

    # -- reading -------------------------------------------------------------------

    def read_stream(self, stream_id: str, after_version: int = 0) -> list[StoredEvent]:
        with self._reading() as conn:
            read = self._read_statements(conn)[1]
            params = read.params({"stream_id": stream_id, "after": after_version})
            rows = conn.exec_driver_sql(read.sql, params).all()
        return list(map(self._record, rows))

    def read_all(self, after_position: int = 0, limit: int = 1000) -> list[StoredEvent]:
        if limit < 1:
            raise ValueError(f"limit must be >= 1, got {limit}")
        with self._reading() as conn:
            read = self._read_statements(conn)[0]
            params = read.params({"after": after_position, "limit": limit})
            rows = conn.exec_driver_sql(read.sql, params).all()
        return list(map(self._record, rows))

    def _read_statements(self, conn: Connection) -> tuple[_Prepared, _Prepared]:
        """The reads of every column (``read_all``'s, ``read_stream``'s) for this store's
        revision: with ``trace_id`` from 0003 on, else with none in its place."""
        if self._traced is None:
            try:
                names = {c["name"] for c in sa.inspect(conn).get_columns("events")}
            except sa.exc.NoSuchTableError:
                return self._reads[True]  # nothing to read yet; asked again next time
            self._traced = "trace_id" in names
        return self._reads[self._traced]

    def max_position(self) -> int:
        with self._reading() as conn:
            return int(conn.execute(sa.select(sa.func.max(events.c.position))).scalar() or 0)

    def stream_version(self, stream_id: str) -> int:
        query = sa.select(sa.func.max(events.c.stream_version)).where(
            events.c.stream_id == stream_id
        )
        with self._reading() as conn:
            return int(conn.execute(query).scalar() or 0)

    def stream_ids(self) -> list[str]:
        # Every stream starts at version 1, so its first event names it once.
        query = (
            sa.select(events.c.stream_id)
            .where(events.c.stream_version == 1)
            .order_by(events.c.position)
        )
        with self._reading() as conn:
            return list(conn.execute(query).scalars())

    def read_signatures(self, stream_id: str) -> list[StreamSignature]:
        query = (
            sa.select(
                stream_signatures.c.stream_id,
                stream_signatures.c.head_version,
                stream_signatures.c.head_hash,
                stream_signatures.c.signature,
                stream_signatures.c.key_id,
                stream_signatures.c.algorithm,
            )
            .where(stream_signatures.c.stream_id == stream_id)
            .order_by(stream_signatures.c.id)
        )
        with self._reading() as conn:
            return [StreamSignature(*row) for row in conn.execute(query)]

    def close(self) -> None:
        self.engine.dispose()


def _rows_of(append: Append) -> list[dict[str, Any]]:
    """The rows ``append`` would add (its envelopes checked and parsed)."""
    if append.expected_version < 0:
        raise ValueError(f"expected_version must be >= 0, got {append.expected_version}")
    trace_ids = append.trace_ids
    if trace_ids is not None and len(trace_ids) != len(append.envelopes):
        raise ValueError("one trace id (or None) per envelope")
    return [
        _row_from_envelope(
            append.stream_id,
            append.expected_version + offset + 1,
            data,
            trace_ids[offset] if trace_ids is not None else None,
        )
        for offset, data in enumerate(append.envelopes)
    ]


def _row_from_envelope(
    stream_id: str, version: int, data: bytes, trace_id: str | None = None
) -> dict[str, Any]:
    """The row for one envelope; checks it belongs where it is being appended."""
    data = bytes(data)
    try:
        envelope = envelope_pb2.EventEnvelope.FromString(data)
    except DecodeError as exc:
        raise InvalidEnvelope(f"not an EventEnvelope: {exc}") from None
    if envelope.stream_id != stream_id or envelope.stream_version != version:
        raise InvalidEnvelope(
            f"envelope {envelope.event_id!r} is for {envelope.stream_id!r} version "
            f"{envelope.stream_version}, but is appended to {stream_id!r} at version {version}"
        )
    if not envelope.event_id or not envelope.type:
        raise InvalidEnvelope("an envelope needs an event_id and a type")
    occurred_at = (
        envelope.occurred_at.ToDatetime(tzinfo=dt.UTC) if envelope.HasField("occurred_at") else None
    )
    return {
        "event_id": envelope.event_id,
        "stream_id": stream_id,
        "stream_version": version,
        "type": envelope.type,
        "type_version": envelope.type_version,
        "occurred_at": occurred_at,
        "causation_id": envelope.causation_id,
        "correlation_id": envelope.correlation_id,
        "producer": envelope.producer,
        "payload": envelope.payload,
        "envelope": data,
        "trace_id": trace_id,
    }
