"""Tables the services keep beside the event store, in the same database.

- ``dealer_seeds``: each hand's server seed, written by the dealer before the hand's
  first event is published, so a restarted dealer can still answer ``GetSeed`` for
  hands in play. Secret until the hand's ``SeedRevealed`` (anyone with read access
  to this table can see live hands' cards: grant it to the dealer only).
- ``balances``, ``settled_hands``, ``settled_seats``, ``processed_events``: the
  settlement projection of ``HandSettled`` events. A projection: it can be dropped and
  rebuilt from the events at any time (``ddz rebuild``).
  A row whose ``cancelled_by`` is set (and ``seed`` empty) is a hand its table called
  off (``CancelDeal``): it holds the hand's id so that no deal of it can begin.

Created by this package's own Alembic lineage (``migrations/``, version table
``alembic_version_services``), independent of the event store's, so neither
schema's migrations need to know the other's.
"""

from __future__ import annotations

import sqlalchemy as sa

metadata = sa.MetaData()

Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")

dealer_seeds = sa.Table(
    "dealer_seeds",
    metadata,
    sa.Column("hand_id", sa.String(200), primary_key=True),
    sa.Column("seed", sa.LargeBinary(), nullable=False),
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    # The request id of the cancelled Deal: the hand is never dealt (seed b"").
    sa.Column("cancelled_by", sa.String(200), nullable=True),
)

balances = sa.Table(
    "balances",
    metadata,
    sa.Column("player_id", sa.String(200), primary_key=True),
    sa.Column("balance", sa.BigInteger(), nullable=False),
    sa.Column("hands", sa.BigInteger(), nullable=False),
)

settled_hands = sa.Table(
    "settled_hands",
    metadata,
    # Settlement order: ListLedgers pages newest first by this id.
    sa.Column("id", Id, primary_key=True, autoincrement=True),
    sa.Column("hand_id", sa.String(200), nullable=False),
    sa.Column("event_id", sa.String(64), nullable=False),
    sa.Column("landlord", sa.Integer(), nullable=False),
    sa.Column("base", sa.Integer(), nullable=False),
    # The HandSettled payload exactly as published (ledger and multiplier breakdown).
    sa.Column("payload", sa.LargeBinary(), nullable=False),
    sa.UniqueConstraint("hand_id", name="uq_settled_hands_hand_id"),
)

settled_seats = sa.Table(
    "settled_seats",
    metadata,
    sa.Column("hand_id", sa.String(200), primary_key=True),
    sa.Column("seat", sa.Integer(), primary_key=True),
    sa.Column("player_id", sa.String(200), nullable=False),
    sa.Column("delta", sa.BigInteger(), nullable=False),
    sa.Column("settled_id", Id, nullable=False),
    sa.Index("ix_settled_seats_player", "player_id", "settled_id"),
)

processed_events = sa.Table(
    "processed_events",
    metadata,
    sa.Column("event_id", sa.String(64), primary_key=True),
)
