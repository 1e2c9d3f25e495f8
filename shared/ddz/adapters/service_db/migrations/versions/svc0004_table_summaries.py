"""The desk's live tables: a summary of each open table (room, rules, who sits, the hands
dealt there), kept from the tables' streams like the hand summaries.

Revision ID: svc0004
Revises: svc0003
Create Date: 2026-12-06

A frozen copy of ``ddz.adapters.service_db.schema`` as of this revision (a test checks
that the two agree). Tables opened before it are summarised once the index is rebuilt
(``rebuild_hand_index``, docs/OPERATIONS.md).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "svc0004"
down_revision = "svc0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "table_summaries",
        sa.Column("table_id", sa.String(200), primary_key=True),
        sa.Column("room", sa.String(200), nullable=False, server_default=""),
        sa.Column("variant", sa.String(64), nullable=False, server_default=""),
        sa.Column("opened_at", sa.Float(), nullable=True),
        sa.Column("closed_at", sa.Float(), nullable=True),
        sa.Column("close_reason", sa.String(200), nullable=False, server_default=""),
        sa.Column("hands", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("last_hand_id", sa.String(200), nullable=False, server_default=""),
    )
    op.create_index("ix_table_summaries_open", "table_summaries", ["closed_at", "opened_at"])
    op.create_table(
        "table_seats",
        sa.Column("table_id", sa.String(200), primary_key=True),
        sa.Column("seat", sa.Integer(), primary_key=True),
        sa.Column("player_id", sa.String(200), nullable=False),
        sa.Column("is_bot", sa.Boolean(), nullable=False, server_default=sa.false()),
        sa.Column("person_left", sa.Boolean(), nullable=False, server_default=sa.false()),
    )


def downgrade() -> None:
    op.drop_table("table_seats")
    op.drop_table("table_summaries")
