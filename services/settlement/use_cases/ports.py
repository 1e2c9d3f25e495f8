"""What settlement's use cases need from outside, as protocols.

``Ledgers`` is the balances projection (``ddz.adapters.service_db.balances``:
synchronous, called through ``asyncio.to_thread``), ``StartedHands`` the bus's copy of
a hand's ``hand_started`` (``consumer.BusStartedHands``), ``Streams`` the event store
read for a hand the bus no longer holds, ``SignedEvents`` the producers' keys an event is
verified with (``ddz.adapters.security.event_signing.EventKeyring``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from ddz.domain.balances import Balance, SettledHand
from ddz.domain.hand.events import HandSettled

if TYPE_CHECKING:
    from ddz.application.event_store import StoredEvent
    from ddz.domain.hand import Recorded
    from ddz.v1 import envelope_pb2


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


class SignedEvents(Protocol):
    def decode(self, data: bytes) -> tuple[envelope_pb2.EventEnvelope, Recorded]:
        """The envelope ``data`` and its event, once its producer's signature is verified;
        raises ``BadEvent`` (not signed, or not by a key allowed to) or ``CodecError``
        (``ddz.application.bad_events``)."""
        ...
