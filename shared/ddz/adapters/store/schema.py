"""The store's tables as SQLAlchemy Core metadata.

The migrations in ``ddz/adapters/migrations`` create them (they are frozen copies; a
test checks that they match this module). Both tables are append-only: triggers
created by the migration refuse UPDATE and DELETE.
"""

from __future__ import annotations

import sqlalchemy as sa

metadata = sa.MetaData()

# Global positions are assigned by the store under its writer lock (max + 1, gapless),
# not by a sequence. SQLite stores them as an INTEGER PRIMARY KEY (the rowid).
Position = sa.BigInteger().with_variant(sa.Integer(), "sqlite")

events = sa.Table(
    "events",
    metadata,
    sa.Column("position", Position, primary_key=True, autoincrement=False),
    sa.Column("event_id", sa.String(64), nullable=False),
    sa.Column("stream_id", sa.String(200), nullable=False),
    sa.Column("stream_version", sa.BigInteger(), nullable=False),
    sa.Column("type", sa.String(200), nullable=False),
    sa.Column("type_version", sa.Integer(), nullable=False),
    sa.Column("occurred_at", sa.DateTime(timezone=True), nullable=True),
    sa.Column("causation_id", sa.String(64), nullable=False),
    sa.Column("correlation_id", sa.String(64), nullable=False),
    sa.Column("producer", sa.String(200), nullable=False),
    sa.Column("payload", sa.LargeBinary(), nullable=False),
    sa.Column("envelope", sa.LargeBinary(), nullable=False),
    sa.Column("prev_hash", sa.String(64), nullable=False),
    sa.Column("hash", sa.String(64), nullable=False),
    # Added by revision 0003: the trace (W3C trace id, 32 hex digits) of the message that
    # carried the event to the recorder; NULL for rows from before it or sent untraced.
    # Not part of the envelope, its hash or its signature.
    sa.Column("trace_id", sa.String(32), nullable=True),
    sa.UniqueConstraint("event_id", name="uq_events_event_id"),
    sa.UniqueConstraint("stream_id", "stream_version", name="uq_events_stream_version"),
)

stream_signatures = sa.Table(
    "stream_signatures",
    metadata,
    sa.Column("id", Position, primary_key=True, autoincrement=True),
    sa.Column("stream_id", sa.String(200), nullable=False),
    sa.Column("head_version", sa.BigInteger(), nullable=False),
    sa.Column("head_hash", sa.String(64), nullable=False),
    sa.Column("signature", sa.String(128), nullable=False),
    sa.Column("key_id", sa.String(64), nullable=False),
    # Added by revision 0002: rows from before it are HMAC signatures.
    sa.Column("algorithm", sa.String(32), nullable=False, server_default="hmac-sha256"),
    sa.UniqueConstraint(
        "stream_id", "head_version", "key_id", name="uq_stream_signatures_head_key"
    ),
)

APPEND_ONLY_TABLES = ("events", "stream_signatures")
