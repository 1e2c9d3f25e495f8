"""What settlement's use cases need from outside, as protocols.

``Ledgers`` is the balances projection (``ddz.adapters.service_db.balances``:
synchronous, called through ``asyncio.to_thread``), ``StartedHands`` the bus's copy of
a hand's ``hand_started`` (``consumer.BusStartedHands``), ``Streams`` the event store
read for a hand the bus no longer holds.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from ddz.domain.balances import Balance, SettledHand
from ddz.domain.hand.events import HandSettled

if TYPE_CHECKING:  # the store's records
    from ddz.adapters.store import StoredEvent


class Ledgers(Protocol):
    def apply_settled(
        self,
        event_id: str,
        hand_id: str,
        players: Sequence[str],
        settled: HandSettled,
        payload: bytes,
    ) -> bool:
        """Fold one HandSettled; False when this event id was already applied."""
        ...

    def balance(self, player_id: str) -> Balance: ...

    def settled_hand(self, hand_id: str) -> SettledHand | None: ...

    def player_hands(self, player_id: str, limit: int) -> list[SettledHand]:
        """The player's settled hands, newest first."""
        ...


class StartedHands(Protocol):
    async def last_started(self, stream_id: str) -> bytes | None:
        """The envelope of the hand's ``hand_started`` on the bus (None: not there)."""
        ...


class Streams(Protocol):
    def read_stream(self, stream_id: str, after_version: int = 0) -> list[StoredEvent]: ...
