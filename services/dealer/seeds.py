"""The dealer's seed vault: each hand's server seed, kept until the hand needs it.

A seed is written before the hand's first event is published, so a restarted dealer
still knows the seeds of hands in play (``GetSeed``). See service_db.schema for who may
read the table.
"""

from __future__ import annotations

import datetime as dt

import sqlalchemy as sa
from ddz.adapters.service_db.schema import dealer_seeds
from sqlalchemy.engine import Engine

from .ports import SeedExists


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
            raise SeedExists(hand_id) from None

    def forget(self, hand_id: str) -> None:
        """Undo ``put`` for a hand whose first events could not be published."""
        with self.engine.begin() as conn:
            conn.execute(sa.delete(dealer_seeds).where(dealer_seeds.c.hand_id == hand_id))

    def get(self, hand_id: str) -> bytes | None:
        with self.engine.connect() as conn:
            seed = conn.execute(
                sa.select(dealer_seeds.c.seed).where(dealer_seeds.c.hand_id == hand_id)
            ).scalar_one_or_none()
        return None if seed is None else bytes(seed)
