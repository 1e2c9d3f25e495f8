"""Each stored event keeps the trace it arrived in: ``events.trace_id``.

Revision ID: 0003
Revises: 0002
Create Date: 2027-01-15

The W3C trace id of the JetStream message that carried the event to the recorder, so a
hand's transcript leads to its traces (docs/OPERATIONS.md "Traces"). Nullable: rows
stored before this revision, and events sent outside any trace, have none. Adding a
nullable column rewrites no row (no UPDATE: the append-only triggers stay as they are),
and the envelope bytes, their hashes and signatures are untouched.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("events", sa.Column("trace_id", sa.String(32), nullable=True))


def downgrade() -> None:
    raise NotImplementedError("the event store is never downgraded")
