"""Head signatures name their algorithm: ``stream_signatures.algorithm``.

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-01

Heads are now signed with Ed25519 (verifiable with a public key); every signature
stored before this revision is an HMAC-SHA256 one, which the column's default says.
Adding a column with a default rewrites no row (no UPDATE: the append-only triggers
stay as they are).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column(
        "stream_signatures",
        sa.Column("algorithm", sa.String(32), nullable=False, server_default="hmac-sha256"),
    )


def downgrade() -> None:
    raise NotImplementedError("the event store is never downgraded")
