"""Cancelled deals: a dealer seed row may say "never deal this hand".

Revision ID: svc0002
Revises: svc0001
Create Date: 2026-12-04

``dealer_seeds.cancelled_by``: the request id of a Deal its table called off
(``DealerService.CancelDeal``). The row keeps the hand's id taken, so a deal of the
hand that comes later, or is still under way, cannot store a seed and is refused.
Old rows read as seeds (NULL).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "svc0002"
down_revision = "svc0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("dealer_seeds", sa.Column("cancelled_by", sa.String(200), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("dealer_seeds") as batch:
        batch.drop_column("cancelled_by")
