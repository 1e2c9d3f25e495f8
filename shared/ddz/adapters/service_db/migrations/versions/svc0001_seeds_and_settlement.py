"""Dealer seeds and the settlement projection.

Revision ID: svc0001
Revises:
Create Date: 2025-01-02

A frozen copy of ``ddz.adapters.service_db.schema`` as of this revision (a test checks
that the two agree).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "svc0001"
down_revision = None
branch_labels = None
depends_on = None

Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "dealer_seeds",
        sa.Column("hand_id", sa.String(200), primary_key=True),
        sa.Column("seed", sa.LargeBinary(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "balances",
        sa.Column("player_id", sa.String(200), primary_key=True),
        sa.Column("balance", sa.BigInteger(), nullable=False),
        sa.Column("hands", sa.BigInteger(), nullable=False),
    )
    op.create_table(
        "settled_hands",
        sa.Column("id", Id, primary_key=True, autoincrement=True),
        sa.Column("hand_id", sa.String(200), nullable=False),
        sa.Column("event_id", sa.String(64), nullable=False),
        sa.Column("landlord", sa.Integer(), nullable=False),
        sa.Column("base", sa.Integer(), nullable=False),
        sa.Column("payload", sa.LargeBinary(), nullable=False),
        sa.UniqueConstraint("hand_id", name="uq_settled_hands_hand_id"),
    )
    op.create_table(
        "settled_seats",
        sa.Column("hand_id", sa.String(200), primary_key=True),
        sa.Column("seat", sa.Integer(), primary_key=True),
        sa.Column("player_id", sa.String(200), nullable=False),
        sa.Column("delta", sa.BigInteger(), nullable=False),
        sa.Column("settled_id", Id, nullable=False),
    )
    op.create_index("ix_settled_seats_player", "settled_seats", ["player_id", "settled_id"])
    op.create_table(
        "processed_events",
        sa.Column("event_id", sa.String(64), primary_key=True),
    )


def downgrade() -> None:
    op.drop_table("processed_events")
    op.drop_index("ix_settled_seats_player", table_name="settled_seats")
    op.drop_table("settled_seats")
    op.drop_table("settled_hands")
    op.drop_table("balances")
    op.drop_table("dealer_seeds")
