"""What the rules' use cases need from the world, and nothing of how it is done.

- ``HandLog``: a hand's stream; read it back, extend it as the hand's single writer.
- ``SeedSource``: a hand's server seed (the dealer's, for deals, draws and reveals).

The position a log hands out (``Position``) is opaque to the use cases apart from its
version: they keep it beside the folded state and hand it back with the next append,
which is how the log knows the writer's view is still the latest.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, TypeVar

from ddz.domain.hand import Recorded
from ddz.v1 import envelope_pb2


class Position(Protocol):
    """Where a hand's stream stands, as one writer last saw it."""

    @property
    def version(self) -> int:
        """How many events the stream has recorded, rejections included."""
        ...


P = TypeVar("P", bound=Position)


class HandLog(Protocol[P]):
    async def read(self, hand_id: str) -> tuple[Sequence[Recorded], P]:
        """Everything recorded for the hand, in order, and the position after it; no
        events (and the empty position) for a hand never dealt or an impossible id."""
        ...

    async def append(
        self,
        hand_id: str,
        after: P,
        recorded: Sequence[Recorded],
        *,
        causation_id: str,
        correlation_id: str,
        producer: str,
    ) -> tuple[P, list[envelope_pb2.EventEnvelope]]:
        """Record ``recorded`` as the next versions after ``after``: the new position
        and the envelopes of the public events. ``Refusal`` of kind CONFLICT when
        another writer extended the hand since ``after`` (nothing recorded then)."""
        ...


class SeedSource(Protocol):
    async def seed(self, hand_id: str) -> bytes:
        """The hand's server seed; ``Refusal`` when it cannot be had now."""
        ...
