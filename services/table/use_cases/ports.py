"""What the table's use cases need from outside, in their own terms: the other services
(dealer, rules, bot, settlement), the hands as the bus folds them, the tables' own
streams, and the rooms' queued tickets. The tokens' port, ``Tokens``, and the callers it
reads are the suite's words for who is calling (``ddz.access.callers``).

``clients`` implements the services' ports over gRPC (``ddz.access.table_tokens`` the
tokens'); the fakes of the unit tests implement them in memory. A port that answers with the
hand's events speaks protobuf envelopes: they are passed on as published.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from ddz.application.hand_fold import HandFold
from ddz.application.room_tickets import QueuedTicket
from ddz.application.table_history import TableCursor
from ddz.domain.hand import SeatCommand, SeatInfo
from ddz.domain.ruleset import RuleSet
from ddz.domain.settlement import RoomSettings
from ddz.domain.table import TableEvent
from ddz.v1 import envelope_pb2, table_pb2

Envelope = envelope_pb2.EventEnvelope


@dataclass(frozen=True, slots=True)
class DealOrder:
    """A table's next hand, as the dealer deals it."""

    hand_id: str
    table_id: str
    rules: RuleSet
    room: RoomSettings
    seats: tuple[SeatInfo, ...]
    first_bidder: int | None
    balances: tuple[int, int, int] | None
    client_seeds: Sequence[bytes]
    show_before_deal: Sequence[int]
    request_id: str


@dataclass(frozen=True, slots=True)
class Dealt:
    commitment: str
    version: int  # the hand's stream version after the deal
    events: Sequence[Envelope]  # the public events, as published


@dataclass(frozen=True, slots=True)
class Decision:
    """The rules' answer to a seat's command."""

    accepted: bool
    reason: str  # a RejectReason value when refused ("not_your_turn"), else ""
    message: str
    version: int  # the hand's stream version after the command (refusals count)
    events: Sequence[Envelope]


class Dealer(Protocol):
    async def deal(self, order: DealOrder) -> Dealt: ...

    async def cancel(self, order: DealOrder) -> Dealt | None:
        """Call the order's deal off: None once the dealer recorded that it never deals
        the hand; the hand dealt when its deal had begun (finished, not withdrawn)."""
        ...


class Rules(Protocol):
    async def decide(
        self,
        hand_id: str,
        command: SeatCommand,
        *,
        request_id: str,
        expected_version: int | None = None,
    ) -> Decision: ...


class Bot(Protocol):
    async def suggest(self, hand_id: str, seat: int, min_version: int) -> table_pb2.SuggestedMove:
        """The bot's move for the seat, once it has seen ``min_version`` of the hand."""
        ...


class Settlement(Protocol):
    async def balance(self, player_id: str) -> int:
        """The sum of the player's settled ledgers (without the opening balance)."""
        ...


@dataclass(frozen=True, slots=True)
class EvidenceFile:
    """A hand's evidence file: its exact bytes and its name."""

    data: bytes
    name: str


class EvidenceFiles(Protocol):
    async def evidence(self, hand_id: str) -> EvidenceFile:
        """The recorder's evidence file of an ended hand (a ``Refusal`` while it has
        not stored the hand whole)."""
        ...


class TableLog(Protocol):
    """The tables' streams (``ddz.adapters.messaging.table_stream.JetStreamTableLog``): each
    table's events written after the position its writer last saw (a CONFLICT
    ``Refusal`` when another writer got there first)."""

    async def append(
        self, table_id: str, after: TableCursor, events: Sequence[TableEvent]
    ) -> TableCursor: ...


class RoomQueueLog(Protocol):
    """The rooms' queued tickets where a restart finds them
    (``ddz.adapters.messaging.room_queue.RoomQueueKV``). ``keep`` and ``drop`` only schedule their
    write (the lobby's steps do not wait), each key's writes in the order asked."""

    def keep(self, ticket: QueuedTicket, ttl: float) -> None: ...

    def drop(self, room_id: str, player_id: str) -> None: ...

    async def open(self) -> None:
        """Reach the queues' store (made when missing); raises when it is out of reach."""
        ...

    async def tickets(self) -> list[QueuedTicket]: ...

    async def settle(self) -> None:
        """Wait for the writes under way (on close: before the bus goes)."""
        ...


class Hands(Protocol):
    """The hands followed from the bus (``ddz.adapters.messaging.hand_feed.HandFeed``)."""

    def get(self, hand_id: str) -> HandFold | None: ...

    def forget(self, hand_id: str) -> None:
        """Drop an ended hand from memory (its table is gone; ``load`` reads it again)."""
        ...

    async def load(self, hand_id: str) -> HandFold | None: ...

    async def learn(self, hand_id: str, envelopes: Iterable[Envelope]) -> None: ...
