"""The desk's sessions: one row per sign-in, ended at sign-out or by the operator
(``ddz desk end-sessions STAFF``), read by every console instance through the recorder.

Revision ID: svc0005
Revises: svc0004
Create Date: 2026-12-07

A frozen copy of ``ddz.adapters.service_db.schema`` as of this revision (a test checks
that the two agree).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "svc0005"
down_revision = "svc0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "desk_sessions",
        sa.Column("digest", sa.String(64), primary_key=True),
        sa.Column("staff", sa.String(200), nullable=False),
        sa.Column("role", sa.String(32), nullable=False),
        sa.Column("opened_at", sa.Float(), nullable=False),
        sa.Column("expires_at", sa.Float(), nullable=False),
        sa.Column("ended_at", sa.Float(), nullable=True),
    )
    op.create_index("ix_desk_sessions_staff", "desk_sessions", ["staff", "ended_at"])
    op.create_index("ix_desk_sessions_expires", "desk_sessions", ["expires_at"])


def downgrade() -> None:
    op.drop_table("desk_sessions")
