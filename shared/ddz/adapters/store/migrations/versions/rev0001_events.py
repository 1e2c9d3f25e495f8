"""Event store: append-only ``events`` and ``stream_signatures`` tables.

Revision ID: 0001
Revises:
Create Date: 2025-01-01

A frozen copy of ``ddz.adapters.store.schema`` as of this revision (a test checks that
the two agree), plus triggers that make both tables refuse UPDATE and DELETE (and
TRUNCATE on PostgreSQL) in the database itself.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

Position = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
TABLES = ("events", "stream_signatures")


def upgrade() -> None:
    op.create_table(
        "events",
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
        sa.UniqueConstraint("event_id", name="uq_events_event_id"),
        sa.UniqueConstraint("stream_id", "stream_version", name="uq_events_stream_version"),
    )
    op.create_table(
        "stream_signatures",
        sa.Column("id", Position, primary_key=True, autoincrement=True),
        sa.Column("stream_id", sa.String(200), nullable=False),
        sa.Column("head_version", sa.BigInteger(), nullable=False),
        sa.Column("head_hash", sa.String(64), nullable=False),
        sa.Column("signature", sa.String(128), nullable=False),
        sa.Column("key_id", sa.String(64), nullable=False),
        sa.UniqueConstraint(
            "stream_id", "head_version", "key_id", name="uq_stream_signatures_head_key"
        ),
    )
    dialect = op.get_bind().dialect.name
    if dialect == "postgresql":
        op.execute(
            """
            CREATE FUNCTION ddz_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                RAISE EXCEPTION 'ddz: % on % refused: the event store is append-only',
                    TG_OP, TG_TABLE_NAME USING ERRCODE = 'restrict_violation';
            END
            $$
            """
        )
        for table in TABLES:
            op.execute(
                f"CREATE TRIGGER {table}_append_only BEFORE UPDATE OR DELETE ON {table} "
                "FOR EACH ROW EXECUTE FUNCTION ddz_refuse_change()"
            )
            op.execute(
                f"CREATE TRIGGER {table}_no_truncate BEFORE TRUNCATE ON {table} "
                "FOR EACH STATEMENT EXECUTE FUNCTION ddz_refuse_change()"
            )
    elif dialect == "sqlite":
        for table in TABLES:
            for action in ("UPDATE", "DELETE"):
                op.execute(
                    f"CREATE TRIGGER {table}_no_{action.lower()} BEFORE {action} ON {table} "
                    f"BEGIN SELECT RAISE(ABORT, 'ddz: {action} on {table} refused: "
                    "the event store is append-only'); END"
                )
    else:
        raise NotImplementedError(f"the event store supports SQLite and PostgreSQL, not {dialect}")


def downgrade() -> None:
    raise NotImplementedError("the event store is never downgraded")
