"""The dealer's seed vault: each hand's server seed, kept until the hand needs it.

A seed is written before the hand's first event is published, so a restarted dealer
still knows the seeds of hands in play (``GetSeed``). See service_db.schema for who may
read the table.

A cancelled deal (``CancelDeal``) is a row of its own in the same table, with no seed:
the hand's id is the row's key, so a deal and a cancel of the same hand racing each
other cannot both win (one insert fails on the key, in SQLite and PostgreSQL alike).
"""

from __future__ import annotations

import datetime as dt

import sqlalchemy as sa
from ddz.adapters.service_db.schema import dealer_seeds
from sqlalchemy.engine import Engine

from ..use_cases.ports import DealCancelled, SeedExists


class SeedVault:
    """``SeedStore`` in the dealer's table. Synchronous (call it through
    ``asyncio.to_thread``)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def put(self, hand_id: str, seed: bytes) -> None:
        row = {"hand_id": hand_id, "seed": seed, "created_at": dt.datetime.now(dt.UTC)}
        try:
            with self.engine.begin() as conn:
                conn.execute(sa.insert(dealer_seeds), row)
        except sa.exc.IntegrityError:
            if self.get(hand_id) is None:  # raises DealCancelled when it was that
                raise  # neither a seed nor cancelled: not a clash of ours
            raise SeedExists(hand_id) from None

    def cancel(self, hand_id: str, request_id: str) -> bytes | None:
        row = {
            "hand_id": hand_id, "seed": b"", "cancelled_by": request_id,
            "created_at": dt.datetime.now(dt.UTC),
        }  # fmt: skip
        try:
            with self.engine.begin() as conn:
                conn.execute(sa.insert(dealer_seeds), row)
        except sa.exc.IntegrityError:
            try:
                return self.get(hand_id)
            except DealCancelled:
                return None  # cancelled before: the same answer
        return None

    def forget(self, hand_id: str) -> None:
        """Undo ``put`` for a hand whose first events could not be published."""
        with self.engine.begin() as conn:
            conn.execute(
                sa.delete(dealer_seeds).where(
                    dealer_seeds.c.hand_id == hand_id, dealer_seeds.c.cancelled_by.is_(None)
                )
            )

    def get(self, hand_id: str) -> bytes | None:
        columns = dealer_seeds.c.seed, dealer_seeds.c.cancelled_by
        with self.engine.connect() as conn:
            row = conn.execute(
                sa.select(*columns).where(dealer_seeds.c.hand_id == hand_id)
            ).one_or_none()
        if row is None:
            return None
        if row.cancelled_by is not None:
            raise DealCancelled(hand_id)
        return bytes(row.seed)
