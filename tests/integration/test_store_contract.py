"""The event store contract.

One contract, run against every backend by the ``database_url`` fixture: SQLite always,
PostgreSQL when ``DDZ_TEST_DATABASE_URL`` is set (after eventsourcing's abstract
recorder tests). Everything here goes through a real database.
"""

from __future__ import annotations

import hashlib
import hmac
import subprocess
import sys
import threading
from collections.abc import Callable

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from ddz.adapters.store import (
    DuplicateEventId,
    InvalidEnvelope,
    SignatureConflict,
    SqlEventStore,
    StoredEvent,
    UnknownStream,
    VersionConflict,
    chain,
    create_store,
    upgrade_store,
)
from ddz.adapters.store.schema import metadata
from ddz.urls import normalize_database_url
from ddz.v1.envelope_pb2 import EventEnvelope
from store_kit import batch, envelope

ZERO_HASH = "0" * 64


# -- append and read ------------------------------------------------------------------


def test_append_returns_records_with_every_envelope_field(store: SqlEventStore) -> None:
    data = envelope("hand-1", 1, event_id="e-1", body=b"\x00\xffpayload")
    (record,) = store.append("hand-1", 0, [data])
    assert record.position == 1
    assert (record.event_id, record.stream_id, record.stream_version) == ("e-1", "hand-1", 1)
    assert (record.type, record.type_version) == ("CardsPlayed", 1)
    assert (record.causation_id, record.correlation_id, record.producer) == (
        "cause-1",
        "corr-1",
        "pytest",
    )
    assert record.occurred_at is not None
    assert record.occurred_at.timestamp() == 1_700_000_001
    assert record.payload == b"\x00\xffpayload"
    assert record.envelope == data
    assert store.read_stream("hand-1") == [record]


def test_read_stream_and_read_all_keep_order(store: SqlEventStore) -> None:
    store.append("hand-a", 0, batch("hand-a", 1, 2))
    store.append("hand-b", 0, batch("hand-b", 1, 3))
    store.append("hand-a", 2, batch("hand-a", 3, 2))

    stream_a = store.read_stream("hand-a")
    assert [event.stream_version for event in stream_a] == [1, 2, 3, 4]
    assert [event.position for event in stream_a] == [1, 2, 6, 7]
    assert [event.stream_version for event in store.read_stream("hand-a", after_version=2)] == [
        3,
        4,
    ]
    assert store.read_stream("hand-unknown") == []

    everything = store.read_all()
    assert [event.position for event in everything] == [1, 2, 3, 4, 5, 6, 7]
    assert [event.stream_id for event in everything] == ["hand-a"] * 2 + ["hand-b"] * 3 + [
        "hand-a"
    ] * 2
    assert store.read_all(after_position=2, limit=3) == everything[2:5]
    assert store.read_all(after_position=7) == []
    assert store.max_position() == 7
    assert store.stream_version("hand-a") == 4
    assert store.stream_version("hand-unknown") == 0
    assert store.stream_ids() == ["hand-a", "hand-b"]


def test_empty_store(store: SqlEventStore) -> None:
    assert store.max_position() == 0
    assert store.read_all() == []
    assert store.stream_ids() == []
    assert store.append("hand-1", 0, []) == []


# -- version conflicts and duplicates ----------------------------------------------------


def test_version_conflict_when_someone_else_extended_the_stream(store: SqlEventStore) -> None:
    store.append("hand-1", 0, batch("hand-1", 1, 2))
    with pytest.raises(VersionConflict) as caught:
        store.append("hand-1", 0, batch("hand-1", 1, 1))
    assert (caught.value.expected, caught.value.actual) == (0, 2)
    with pytest.raises(VersionConflict):
        store.append("hand-1", 3, batch("hand-1", 4, 1))  # a gap is a conflict too
    assert store.stream_version("hand-1") == 2


def test_batch_is_atomic(store: SqlEventStore) -> None:
    store.append("hand-1", 0, [envelope("hand-1", 1, event_id="taken")])
    bad_batch = [envelope("hand-2", 1), envelope("hand-2", 2, event_id="taken")]
    with pytest.raises(DuplicateEventId):
        store.append("hand-2", 0, bad_batch)
    assert store.read_stream("hand-2") == []
    assert store.max_position() == 1
    # The refused batch used no positions: numbering stays gapless.
    assert store.append("hand-2", 0, batch("hand-2", 1, 1))[0].position == 2


def test_identical_duplicate_is_an_idempotent_no_op(store: SqlEventStore) -> None:
    events = batch("hand-1", 1, 3)
    first = store.append("hand-1", 0, events)
    assert store.append("hand-1", 0, events) == first  # the whole batch redelivered
    assert store.append("hand-1", 1, events[1:2]) == first[1:2]  # one event redelivered
    assert store.max_position() == 3


def test_redelivered_prefix_is_skipped_and_the_rest_appended(store: SqlEventStore) -> None:
    events = batch("hand-1", 1, 4)
    first = store.append("hand-1", 0, events[:2])
    records = store.append("hand-1", 0, events)
    assert records[:2] == first
    assert [record.stream_version for record in records] == [1, 2, 3, 4]
    assert [record.position for record in store.read_all()] == [1, 2, 3, 4]


def test_same_event_id_with_different_bytes_is_refused(store: SqlEventStore) -> None:
    store.append("hand-1", 0, [envelope("hand-1", 1, event_id="e-1", body=b"original")])
    with pytest.raises(DuplicateEventId):
        store.append("hand-1", 0, [envelope("hand-1", 1, event_id="e-1", body=b"forged")])
    with pytest.raises(DuplicateEventId):  # the id is global, not per stream
        store.append("hand-2", 0, [envelope("hand-2", 1, event_id="e-1")])
    assert store.read_stream("hand-1")[0].payload == b"original"


def test_envelope_must_match_where_it_is_appended(store: SqlEventStore) -> None:
    with pytest.raises(InvalidEnvelope):
        store.append("hand-1", 0, [envelope("hand-2", 1)])
    with pytest.raises(InvalidEnvelope):
        store.append("hand-1", 0, [envelope("hand-1", 2)])
    with pytest.raises(InvalidEnvelope):
        store.append("hand-1", 0, [b"\xff\xff not protobuf"])
    same_id = envelope("hand-1", 1, event_id="x")
    with pytest.raises(InvalidEnvelope):
        store.append("hand-1", 0, [same_id, envelope("hand-1", 2, event_id="x")])
    assert store.max_position() == 0


# -- concurrency -------------------------------------------------------------------------


def run_together(workers: list[Callable[[], object]]) -> list[BaseException]:
    """Start every worker on its own thread, release them at once, collect errors."""
    start = threading.Event()
    errors: list[BaseException] = []

    def run(work: Callable[[], object]) -> None:
        start.wait()
        try:
            work()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(work,), daemon=True) for work in workers]
    for thread in threads:
        thread.start()
    start.set()
    for thread in threads:
        thread.join(timeout=120)
    assert not any(thread.is_alive() for thread in threads)
    return errors


def test_concurrent_batches_get_contiguous_non_interleaving_positions(store: SqlEventStore) -> None:
    streams = [f"hand-{n}" for n in range(4)]
    size = 100
    stacks = {stream: batch(stream, 1, size) for stream in streams}
    errors = run_together(
        [lambda stream=stream: store.append(stream, 0, stacks[stream]) for stream in streams]
    )
    assert errors == []
    everything = store.read_all(limit=10_000)
    assert [event.position for event in everything] == list(range(1, len(streams) * size + 1))
    for stream in streams:
        positions = [event.position for event in everything if event.stream_id == stream]
        assert positions == list(range(positions[0], positions[0] + size)), stream


def test_racing_writers_on_one_stream_exactly_one_wins(store: SqlEventStore) -> None:
    contenders = [batch("hand-1", 1, 5) for _ in range(4)]
    errors = run_together(
        [lambda events=events: store.append("hand-1", 0, events) for events in contenders]
    )
    assert len(errors) == 3
    assert all(isinstance(error, VersionConflict) for error in errors)
    assert [event.envelope for event in store.read_stream("hand-1")] in contenders


def test_readers_never_see_a_gap_while_writers_append(store: SqlEventStore) -> None:
    writers, appends, size = 3, 15, 4
    done = threading.Event()
    seen: list[int] = []

    def read_until_done() -> None:
        last = 0
        while True:
            finished = done.is_set()
            page = store.read_all(after_position=last, limit=1000)
            for event in page:
                seen.append(event.position)
                last = event.position
            if finished and not page:
                return

    def write(stream: str) -> None:
        for n in range(appends):
            store.append(stream, n * size, batch(stream, n * size + 1, size))

    reader = threading.Thread(target=read_until_done, daemon=True)
    reader.start()
    errors = run_together([lambda n=n: write(f"hand-{n}") for n in range(writers)])
    done.set()
    reader.join(timeout=60)
    assert errors == []
    assert seen == list(range(1, writers * appends * size + 1))


# -- append-only, enforced by the database -------------------------------------------------


@pytest.mark.parametrize(
    "statement",
    [
        "UPDATE events SET payload = :bytes",
        "UPDATE events SET hash = 'x' WHERE position = 1",
        "DELETE FROM events WHERE position = 1",
        "DELETE FROM events",
        "UPDATE stream_signatures SET signature = 'x'",
        "DELETE FROM stream_signatures",
    ],
)
def test_database_refuses_update_and_delete(store: SqlEventStore, statement: str) -> None:
    store.append("hand-1", 0, batch("hand-1", 1, 2))
    store.sign_head("hand-1", b"key", "k1")
    before = (store.read_all(), store.read_signatures("hand-1"))
    with store.engine.connect() as conn, pytest.raises(sa.exc.DBAPIError, match="append-only"):
        conn.execute(sa.text(statement), {"bytes": b"forged"})
    assert (store.read_all(), store.read_signatures("hand-1")) == before


def test_truncate_is_refused(store: SqlEventStore) -> None:
    # PostgreSQL's TRUNCATE skips row triggers, so it has a trigger of its own; SQLite has
    # no TRUNCATE, its equivalent is an unqualified DELETE (the "truncate optimisation",
    # which SQLite turns off when a DELETE trigger exists).
    postgres = store.engine.dialect.name == "postgresql"
    statement = "TRUNCATE events" if postgres else "DELETE FROM events"
    store.append("hand-1", 0, batch("hand-1", 1, 1))
    with store.engine.connect() as conn, pytest.raises(sa.exc.DBAPIError, match="append-only"):
        conn.execute(sa.text(statement))
    assert store.max_position() == 1


# -- hash chain and signatures -------------------------------------------------------


def test_hash_chain_covers_the_exact_stored_bytes(store: SqlEventStore) -> None:
    # A valid envelope encoded with its fields in reverse order: a parser accepts it, but
    # re-serialising it gives other bytes. The store must keep and hash these bytes.
    parsed = EventEnvelope.FromString(envelope("hand-1", 1))
    reversed_fields = b"".join(
        EventEnvelope(**{field.name: value}).SerializeToString()
        for field, value in reversed(parsed.ListFields())
    )
    assert EventEnvelope.FromString(reversed_fields) == parsed
    assert parsed.SerializeToString() != reversed_fields
    events = [reversed_fields, envelope("hand-1", 2), envelope("hand-1", 3)]
    store.append("hand-1", 0, events)

    stored = store.read_stream("hand-1")
    assert [event.envelope for event in stored] == events
    prev = ZERO_HASH
    for event, data in zip(stored, events, strict=True):
        assert event.prev_hash == prev
        assert event.hash == hashlib.sha256(bytes.fromhex(prev) + data).hexdigest()
        prev = event.hash
    links = [(event.prev_hash, event.hash, event.envelope) for event in stored]
    assert chain.first_broken_link(links) is None
    tampered = bytearray(events[1])
    tampered[-1] ^= 1
    links[1] = (links[1][0], links[1][1], bytes(tampered))
    assert chain.first_broken_link(links) == 1


def test_chains_are_per_stream(store: SqlEventStore) -> None:
    store.append("hand-a", 0, batch("hand-a", 1, 1))
    store.append("hand-b", 0, batch("hand-b", 1, 1))
    store.append("hand-a", 1, batch("hand-a", 2, 1))
    a1, a2 = store.read_stream("hand-a")
    (b1,) = store.read_stream("hand-b")
    assert a1.prev_hash == b1.prev_hash == ZERO_HASH
    assert a2.prev_hash == a1.hash


def test_sign_head(store: SqlEventStore) -> None:
    with pytest.raises(UnknownStream):
        store.sign_head("hand-1", b"key", "k1")
    store.append("hand-1", 0, batch("hand-1", 1, 3))
    head = store.read_stream("hand-1")[-1]
    signature = store.sign_head("hand-1", b"operator key", "k1")
    message = f"ddz.v1/head\nhand-1\n3\n{head.hash}".encode()
    assert signature.signature == hmac.new(b"operator key", message, hashlib.sha256).hexdigest()
    assert (signature.head_version, signature.head_hash) == (3, head.hash)
    assert chain.verify_head(b"operator key", "hand-1", 3, head.hash, signature.signature)
    assert not chain.verify_head(b"wrong key", "hand-1", 3, head.hash, signature.signature)
    assert store.sign_head("hand-1", b"operator key", "k1") == signature  # idempotent
    with pytest.raises(SignatureConflict):
        store.sign_head("hand-1", b"another key", "k1")
    store.sign_head("hand-1", b"another key", "k2")
    assert [s.key_id for s in store.read_signatures("hand-1")] == ["k1", "k2"]
    assert "operator key" not in repr(store.read_signatures("hand-1"))


# -- the trace each event arrived in ------------------------------------------------------------

TRACE_A = "4bf92f3577b34da6a3ce929d0e0e4736"
TRACE_B = "0af7651916cd43dd8448eb211c80319c"


def test_trace_ids_are_kept_beside_the_events_not_in_their_hashes(store: SqlEventStore) -> None:
    untraced = create_store("sqlite://", upgrade=True)
    try:
        events = batch("hand-1", 1, 3)
        kept = store.append("hand-1", 0, events, [TRACE_A, None, TRACE_B])
        plain = untraced.append("hand-1", 0, events)
        assert [r.trace_id for r in kept] == [TRACE_A, None, TRACE_B]
        assert [r.trace_id for r in plain] == [None, None, None]
        # The chain and the bytes are the same with or without traces.
        assert [r.hash for r in kept] == [r.hash for r in plain]
        assert store.read_stream("hand-1") == kept
        assert store.read_all() == kept
        assert kept[0].to_proto().trace_id == TRACE_A and kept[1].to_proto().trace_id == ""
        # A redelivery in another trace is the same event: it keeps the trace it came in.
        again = store.append("hand-1", 0, events[:1], [TRACE_B])
        assert again == kept[:1]
    finally:
        untraced.close()


def test_a_trace_id_per_envelope(store: SqlEventStore) -> None:
    with pytest.raises(ValueError, match="one trace id"):
        store.append("hand-1", 0, batch("hand-1", 1, 2), [TRACE_A])
    assert store.read_all() == []


def test_rows_from_before_traces_read_with_none_upgraded_or_not(database_url: str) -> None:
    upgrade_store(database_url, "0002")
    engine = sa.create_engine(normalize_database_url(database_url))
    try:
        with engine.connect() as conn:
            columns = [c["name"] for c in sa.inspect(conn).get_columns("events")]
        assert "trace_id" not in columns
        old = StoredEvent.__dataclass_fields__
        row = {name: None for name in old if name != "trace_id"}
        data = envelope("hand-1", 1)
        row.update(
            position=1, event_id="e-1", stream_id="hand-1", stream_version=1, type="CardsPlayed",
            type_version=1, causation_id="cause-1", correlation_id="corr-1", producer="pytest",
            payload=b"hand-1:1", envelope=data, prev_hash=ZERO_HASH,
            hash=chain.chain_hash(ZERO_HASH, data),
        )  # fmt: skip
        with engine.begin() as conn:
            conn.execute(sa.text(
                f"INSERT INTO events ({', '.join(row)}) VALUES ({', '.join(':' + k for k in row)})"
            ), row)  # fmt: skip
    finally:
        engine.dispose()
    readers = create_store(database_url)  # a reader (ddz audit) never upgrades the store
    try:
        (unread,) = readers.read_stream("hand-1")
        assert unread.trace_id is None and readers.read_all() == [unread]
    finally:
        readers.close()
    upgrade_store(database_url)
    store = create_store(database_url)
    try:
        (before,) = store.read_stream("hand-1")
        assert before.trace_id is None and before.envelope == data
        (after,) = store.append("hand-1", 1, [envelope("hand-1", 2)], [TRACE_A])
        assert after.trace_id == TRACE_A and after.prev_hash == before.hash
    finally:
        store.close()


# -- migrations -------------------------------------------------------------------------------


def test_migrations_are_idempotent_and_match_the_schema(database_url: str) -> None:
    upgrade_store(database_url)
    store = create_store(database_url)
    try:
        (record,) = store.append("hand-1", 0, batch("hand-1", 1, 1))
        upgrade_store(database_url)  # again: nothing changes, nothing is lost
        assert store.read_all() == [record]
        with store.engine.connect() as conn:
            diff = compare_metadata(MigrationContext.configure(conn), metadata)
        assert diff == []
    finally:
        store.close()


UPGRADE_SCRIPT = (
    "import sys; from ddz.adapters.store import upgrade_store; upgrade_store(sys.argv[1])"
)


def test_concurrent_upgrades_of_a_fresh_database(database_url: str) -> None:
    # Services may start together, each upgrading the schema: processes and threads.
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", UPGRADE_SCRIPT, database_url], stderr=subprocess.PIPE
        )
        for _ in range(2)
    ]
    errors = run_together([lambda: upgrade_store(database_url) for _ in range(2)])
    outcomes = [
        (process.wait(timeout=120), process.stderr.read())
        for process in processes
        if process.stderr
    ]
    assert errors == []
    assert outcomes == [(0, b"")] * 2
    store = create_store(database_url)
    try:
        assert store.append("hand-1", 0, batch("hand-1", 1, 1))[0].position == 1
    finally:
        store.close()


def test_plain_postgresql_urls_use_psycopg() -> None:
    assert normalize_database_url("postgresql://u@h:5432/db") == "postgresql+psycopg://u@h:5432/db"
    assert normalize_database_url("postgres://u@h/db") == "postgresql+psycopg://u@h/db"
    assert normalize_database_url("postgresql+psycopg://u@h/db") == "postgresql+psycopg://u@h/db"
    assert normalize_database_url("sqlite:///x.db") == "sqlite:///x.db"


def test_stored_event_fields_follow_the_table_columns() -> None:
    # SqlEventStore builds records positionally from rows; the orders must agree.
    from ddz.adapters.store.schema import events

    assert list(StoredEvent.__dataclass_fields__) == [column.name for column in events.c]
