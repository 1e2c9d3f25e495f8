"""What the dealer's use cases need from the world, and nothing of how it is done.

- ``SeedStore``: each hand's server seed, kept until the hand needs it.
- ``HandStarts``: a new hand's stream; its first events, published once.
- ``TableRecords``: what the table service recorded of a table (its stream): the rule
  set, room settings, seats and balances a deal uses come from there, never the caller.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from ddz.domain.hand import Event
from ddz.domain.table import HandAssigned, TableOpened
from ddz.v1 import envelope_pb2


class SeedExists(Exception):
    """The hand id already has a seed: it was dealt before."""


class DealCancelled(Exception):
    """The hand's table called its deal off: it is never dealt."""


class SeedStore(Protocol):
    """Synchronous (the use cases call it through ``asyncio.to_thread``). A hand has
    a seed, or is cancelled, or neither; never both (one row per hand id)."""

    def put(self, hand_id: str, seed: bytes) -> None:
        """Keep ``seed`` for the hand; ``SeedExists`` when it has one already,
        ``DealCancelled`` when its deal was called off."""
        ...

    def cancel(self, hand_id: str, request_id: str) -> bytes | None:
        """Record, durably, that the hand is never dealt, unless it has a seed: that
        seed then (its deal had begun), else None (cancelled, now or before)."""
        ...

    def forget(self, hand_id: str) -> None:
        """Undo ``put`` for a hand whose first events could not be published."""
        ...

    def get(self, hand_id: str) -> bytes | None:
        """The hand's seed (None: none yet); ``DealCancelled`` when it never will be."""
        ...


class HandStarts(Protocol):
    async def start(
        self,
        hand_id: str,
        events: Sequence[Event],
        *,
        causation_id: str,
        correlation_id: str,
        producer: str,
    ) -> tuple[int, list[envelope_pb2.EventEnvelope]]:
        """Record ``events`` as versions 1..k of a new hand: the stream's version after
        them and the envelopes of the public ones. The stream may already hold the
        beginning of these same events from the same ``causation_id`` (a retried
        request): the rest is recorded. ``Refusal`` of kind CONFLICT when it holds
        anything else (nothing recorded then)."""
        ...


class TableRecords(Protocol):
    """A table's stream (``table-<table_id>``), which the table service alone writes."""

    async def opened(self, table_id: str) -> TableOpened | None:
        """The table as it was opened (None: no such table)."""
        ...

    async def last_assigned(self, table_id: str) -> HandAssigned | None:
        """The last hand assigned at the table (None: none yet)."""
        ...
