"""The dispute desk: the hand summaries projection and the desk's access log.

Revision ID: svc0003
Revises: svc0002
Create Date: 2026-12-04

A frozen copy of ``ddz.adapters.service_db.schema`` as of this revision (a test checks
that the two agree).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "svc0003"
down_revision = "svc0002"
branch_labels = None
depends_on = None

Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "hand_summaries",
        sa.Column("hand_id", sa.String(200), primary_key=True),
        sa.Column("table_id", sa.String(200), nullable=False, server_default=""),
        sa.Column("room", sa.String(200), nullable=False, server_default=""),
        sa.Column("variant", sa.String(64), nullable=False, server_default=""),
        sa.Column("started_at", sa.Float(), nullable=True),
        sa.Column("ended_at", sa.Float(), nullable=True),
        sa.Column("outcome", sa.String(16), nullable=False, server_default="in_play"),
        sa.Column("landlord", sa.Integer(), nullable=True),
        sa.Column("multiplier", sa.BigInteger(), nullable=True),
        sa.Column("bot_for_person", sa.Boolean(), nullable=False, server_default=sa.false()),
        sa.Column("audit", sa.String(16), nullable=False, server_default=""),
        sa.Column("audit_detail", sa.String(500), nullable=False, server_default=""),
        sa.Column("events", sa.Integer(), nullable=False, server_default="0"),
    )
    for name, columns in (
        ("ix_hand_summaries_started", ["started_at"]),
        ("ix_hand_summaries_table", ["table_id", "started_at"]),
        ("ix_hand_summaries_room", ["room", "started_at"]),
        ("ix_hand_summaries_variant", ["variant", "started_at"]),
        ("ix_hand_summaries_audit", ["audit", "started_at"]),
        ("ix_hand_summaries_bot", ["bot_for_person", "started_at"]),
        ("ix_hand_summaries_outcome", ["outcome", "started_at"]),
    ):
        op.create_index(name, "hand_summaries", columns)
    op.create_table(
        "hand_players",
        sa.Column("hand_id", sa.String(200), primary_key=True),
        sa.Column("seat", sa.Integer(), primary_key=True),
        sa.Column("player_id", sa.String(200), nullable=False),
        sa.Column("is_bot", sa.Boolean(), nullable=False, server_default=sa.false()),
        sa.Column("delta", sa.BigInteger(), nullable=True),
        sa.Column("started_at", sa.Float(), nullable=True),
    )
    op.create_index("ix_hand_players_player", "hand_players", ["player_id", "started_at"])
    op.create_table(
        "table_rooms",
        sa.Column("table_id", sa.String(200), primary_key=True),
        sa.Column("room", sa.String(200), nullable=False),
    )
    op.create_table(
        "desk_access",
        sa.Column("id", Id, primary_key=True, autoincrement=True),
        sa.Column("at", sa.Float(), nullable=False),
        sa.Column("staff", sa.String(200), nullable=False),
        sa.Column("role", sa.String(32), nullable=False),
        sa.Column("what", sa.String(400), nullable=False),
    )
    op.create_index("ix_desk_access_at", "desk_access", ["at"])


def downgrade() -> None:
    op.drop_table("desk_access")
    op.drop_table("table_rooms")
    op.drop_table("hand_players")
    op.drop_table("hand_summaries")
