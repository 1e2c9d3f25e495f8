"""What the bot's application modules need from outside, as protocols.

``Rules`` is the rules service (``clients.RulesClient`` over gRPC), ``Hands`` the hands
this instance follows (``ddz.adapters.messaging.hand_feed.HandFeed``), ``HandLookup`` any hand,
followed or not (``hands.FeedLookup``). The rules' answers stay in their protobuf
vocabulary (``DecideResponse``): their events are the envelopes the feed folds.
``BotMetrics`` is what the bot records for the process's metrics.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from ddz.application.errors import Refusal
from ddz.domain.hand import Command
from ddz.v1 import envelope_pb2, rules_pb2

if TYPE_CHECKING:
    from ddz.application.hand_fold import HandFold


class BotMetrics(Protocol):
    """What the bot records for the process's metrics (``ddz.adapters.telemetry.metrics``,
    which the app passes in)."""

    def decision_took(self, seconds: float) -> None:
        """One move decided by the rules in ``seconds``."""
        ...

    def follow_stalls(self, count: Callable[[], int]) -> None:
        """The stalled hands are ``count()`` from now on (read at each scrape)."""
        ...

    def unfollow_stalls(self) -> None: ...


class NoMetrics:
    """Records nothing: a bot built without the process's metrics."""

    def decision_took(self, seconds: float) -> None:
        pass

    def follow_stalls(self, count: Callable[[], int]) -> None:
        pass

    def unfollow_stalls(self) -> None:
        pass


@dataclass(frozen=True, slots=True)
class Move:
    """One command for a seat, sent on the hand's stream version as the bot saw it."""

    hand_id: str
    seat: int
    command: Command
    expected_version: int
    request_id: str


Outcome = rules_pb2.DecideResponse | Refusal
"""The rules' answer to one move, or why it was not decided (``Refusal.kind`` says
whether to retry: CONFLICT = stale version, UNAVAILABLE/TIMEOUT = try again later)."""


class Rules(Protocol):
    async def decide_batch(self, moves: Sequence[Move]) -> Sequence[Outcome]:
        """One outcome per move, in order; raises ``Refusal`` when the whole call failed."""
        ...


class MoveSender(Protocol):
    """One move at a time to the rules (``batcher.DecideBatcher``, which batches them)."""

    async def decide(self, move: Move) -> rules_pb2.DecideResponse:
        """The rules' answer; ``Refusal`` when the move was not decided."""
        ...


class Hands(Protocol):
    """The hands this instance follows, folded from the bus."""

    @property
    def hands(self) -> Mapping[str, HandFold]: ...

    def get(self, hand_id: str) -> HandFold | None: ...

    async def learn(self, hand_id: str, envelopes: Iterable[envelope_pb2.EventEnvelope]) -> None:
        """Fold the events a decision answered with, ahead of the bus."""
        ...

    def hold(self, hand_id: str) -> None:
        """Keep what the bus brings of the hand until ``release`` (a move is in flight)."""
        ...

    async def release(self, hand_id: str) -> None:
        """Fold what was kept, now that the move's answer is learned."""
        ...

    async def load(self, hand_id: str) -> HandFold | None:
        """Read the hand from the bus again (it brought nothing for a while)."""
        ...


class HandLookup(Protocol):
    async def __call__(self, hand_id: str) -> HandFold | None:
        """The hand, followed or read from the bus; None when there is no such hand."""
        ...
