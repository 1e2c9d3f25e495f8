"""The event store: an append-only SQL table of event envelopes with a hash chain.

    store = create_store(settings.store.database_url, upgrade=True)
    records = store.append("hand-42", expected_version=0, envelopes=[envelope_bytes])
    store.read_stream("hand-42"); store.read_all(after_position=0, limit=1000)

``EventStore`` is the contract (``ddz.application.event_store``, the use cases' port),
``SqlEventStore`` the SQLite/PostgreSQL implementation (``sql.py``), ``chain`` the hash
chain and head signatures.
"""

from __future__ import annotations

from typing import Any

from ddz.adapters.store import chain
from ddz.adapters.store.migrate import upgrade_store
from ddz.adapters.store.sql import SqlEventStore, make_engine
from ddz.application.event_store import (
    Append,
    DuplicateEventId,
    EventStore,
    InvalidEnvelope,
    SignatureConflict,
    StoredEvent,
    StoreError,
    StreamSignature,
    UnknownStream,
    VersionConflict,
)


def create_store(url: str, *, upgrade: bool = False, **engine_options: Any) -> SqlEventStore:
    """The store at ``url`` (``postgresql://`` is mapped to psycopg).

    ``upgrade=True`` first runs the migrations (idempotent); processes that only read
    may leave it off and rely on whoever owns the schema (the recorder, ``ddz up``).
    """
    engine = make_engine(url, **engine_options)
    if upgrade:
        upgrade_store(engine)
    return SqlEventStore(engine)


__all__ = [
    "Append",
    "DuplicateEventId",
    "EventStore",
    "InvalidEnvelope",
    "SignatureConflict",
    "SqlEventStore",
    "StoreError",
    "StoredEvent",
    "StreamSignature",
    "UnknownStream",
    "VersionConflict",
    "chain",
    "create_store",
    "make_engine",
    "upgrade_store",
]
