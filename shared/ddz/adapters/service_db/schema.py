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

# --- the dispute desk's projection (ddz.adapters.service_db.hand_index) ---------------------
# One row per hand, kept by the recorder's writer from the events it stores and
# rebuildable from them (``rebuild_hand_index``); times are Unix seconds (UTC), which
# index and compare alike on SQLite and PostgreSQL.

hand_summaries = sa.Table(
    "hand_summaries",
    metadata,
    sa.Column("hand_id", sa.String(200), primary_key=True),
    sa.Column("table_id", sa.String(200), nullable=False, server_default=""),
    sa.Column("room", sa.String(200), nullable=False, server_default=""),
    sa.Column("variant", sa.String(64), nullable=False, server_default=""),
    sa.Column("started_at", sa.Float(), nullable=True),
    sa.Column("ended_at", sa.Float(), nullable=True),
    # in_play | landlord | farmers | no_winner (everyone passed, or given up)
    sa.Column("outcome", sa.String(16), nullable=False, server_default="in_play"),
    sa.Column("landlord", sa.Integer(), nullable=True),
    sa.Column("multiplier", sa.BigInteger(), nullable=True),
    # a person was disconnected (turn clock, connection lost, left): the bot played for them
    sa.Column("bot_for_person", sa.Boolean(), nullable=False, server_default=sa.false()),
    # "" not audited yet | clean | failed | incomplete (ddz.audit.Verdict)
    sa.Column("audit", sa.String(16), nullable=False, server_default=""),
    sa.Column("audit_detail", sa.String(500), nullable=False, server_default=""),
    sa.Column("events", sa.Integer(), nullable=False, server_default="0"),
    sa.Index("ix_hand_summaries_started", "started_at"),
    sa.Index("ix_hand_summaries_table", "table_id", "started_at"),
    sa.Index("ix_hand_summaries_room", "room", "started_at"),
    sa.Index("ix_hand_summaries_variant", "variant", "started_at"),
    sa.Index("ix_hand_summaries_audit", "audit", "started_at"),
    sa.Index("ix_hand_summaries_bot", "bot_for_person", "started_at"),
    sa.Index("ix_hand_summaries_outcome", "outcome", "started_at"),
)

hand_players = sa.Table(
    "hand_players",
    metadata,
    sa.Column("hand_id", sa.String(200), primary_key=True),
    sa.Column("seat", sa.Integer(), primary_key=True),
    sa.Column("player_id", sa.String(200), nullable=False),
    sa.Column("is_bot", sa.Boolean(), nullable=False, server_default=sa.false()),
    sa.Column("delta", sa.BigInteger(), nullable=True),  # once settled
    sa.Column("started_at", sa.Float(), nullable=True),  # the hand's, for the player index
    sa.Index("ix_hand_players_player", "player_id", "started_at"),
)

table_rooms = sa.Table(
    "table_rooms",
    metadata,
    sa.Column("table_id", sa.String(200), primary_key=True),
    sa.Column("room", sa.String(200), nullable=False),
)

table_summaries = sa.Table(
    "table_summaries",
    metadata,
    # The desk's live tables: one row per table opened, closed_at set once it closes.
    sa.Column("table_id", sa.String(200), primary_key=True),
    sa.Column("room", sa.String(200), nullable=False, server_default=""),
    sa.Column("variant", sa.String(64), nullable=False, server_default=""),
    sa.Column("opened_at", sa.Float(), nullable=True),
    sa.Column("closed_at", sa.Float(), nullable=True),
    sa.Column("close_reason", sa.String(200), nullable=False, server_default=""),
    sa.Column("hands", sa.Integer(), nullable=False, server_default="0"),
    sa.Column("last_hand_id", sa.String(200), nullable=False, server_default=""),
    sa.Index("ix_table_summaries_open", "closed_at", "opened_at"),
)

table_seats = sa.Table(
    "table_seats",
    metadata,
    sa.Column("table_id", sa.String(200), primary_key=True),
    sa.Column("seat", sa.Integer(), primary_key=True),
    sa.Column("player_id", sa.String(200), nullable=False),
    sa.Column("is_bot", sa.Boolean(), nullable=False, server_default=sa.false()),
    sa.Column("person_left", sa.Boolean(), nullable=False, server_default=sa.false()),
)

desk_access = sa.Table(
    "desk_access",
    metadata,
    # Append-only: who opened which hand or player page, when (docs/SECURITY.md).
    sa.Column("id", Id, primary_key=True, autoincrement=True),
    sa.Column("at", sa.Float(), nullable=False),
    sa.Column("staff", sa.String(200), nullable=False),
    sa.Column("role", sa.String(32), nullable=False),
    sa.Column("what", sa.String(400), nullable=False),
    sa.Index("ix_desk_access_at", "at"),
)

desk_sessions = sa.Table(
    "desk_sessions",
    metadata,
    # The desk's signed-in sessions, so that signing out ends one for every console
    # instance (ddz.adapters.service_db.desk_sessions). The id is the SHA-256 of the
    # cookie's session secret: this table alone opens no session.
    sa.Column("digest", sa.String(64), primary_key=True),
    sa.Column("staff", sa.String(200), nullable=False),
    sa.Column("role", sa.String(32), nullable=False),
    sa.Column("opened_at", sa.Float(), nullable=False),
    sa.Column("expires_at", sa.Float(), nullable=False),
    sa.Column("ended_at", sa.Float(), nullable=True),  # signed out, or ended by the operator
    sa.Index("ix_desk_sessions_staff", "staff", "ended_at"),
    sa.Index("ix_desk_sessions_expires", "expires_at"),
)
