"""The dealer's use cases: deal a new hand, give a dealt hand's seed to the rules.

No rules here: ``decide(HandState(), StartHand(...))`` deals (ddz-shuffle-v1 from the
seed made here). The seed is stored *before* anything is published, so a restarted
dealer still knows the seeds of hands in play; a hand whose first events cannot be
published because it has events already gets its seed forgotten again.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import structlog
from ddz.application.errors import Kind, Reason, Refusal
from ddz.domain.hand import HandState, Rejection, RejectReason, SeatInfo, StartHand, decide
from ddz.domain.hand.events import HandStarted
from ddz.domain.ruleset import RuleSet
from ddz.domain.settlement import RoomSettings
from ddz.domain.shuffle import SEED_BYTES
from ddz.v1 import envelope_pb2

from .ports import HandStarts, SeedExists, SeedStore

log = structlog.get_logger("ddz.dealer")

# The reason of a deal the aggregate refuses; any other refusal is a plain bad request.
_DEAL_REASONS = {RejectReason.UNKNOWN_SEAT: Reason.UNKNOWN_SEAT}


@dataclass(frozen=True, slots=True)
class DealOrder:
    """The hand a deal is asked for: a ``StartHand`` but for the seed, which only the
    dealer makes."""

    hand_id: str
    rules: RuleSet
    room: RoomSettings
    seats: tuple[SeatInfo, SeatInfo, SeatInfo]
    first_bidder: int | None = None
    client_seeds: tuple[bytes, ...] = ()
    balances: tuple[int, int, int] | None = None
    show_before_deal: frozenset[int] = field(default_factory=frozenset)

    def start(self, seed: bytes) -> StartHand:
        return StartHand(
            hand_id=self.hand_id,
            rules=self.rules,
            room=self.room,
            seats=self.seats,
            seed=seed,
            first_bidder=self.first_bidder,
            client_seeds=self.client_seeds,
            balances=self.balances,
            show_before_deal=self.show_before_deal,
        )


@dataclass(frozen=True, slots=True)
class Dealt:
    """A hand dealt: its seed's commitment, its stream's version, and the public
    envelopes of its first events."""

    hand_id: str
    commitment: str
    version: int
    events: Sequence[envelope_pb2.EventEnvelope]


def fresh_seed() -> bytes:
    """A server seed from the operating system's CSPRNG."""
    return secrets.token_bytes(SEED_BYTES)


class Dealer:
    def __init__(
        self,
        seeds: SeedStore,
        hands: HandStarts,
        producer: str,
        make_seed: Callable[[], bytes] = fresh_seed,
    ) -> None:
        self.seeds = seeds
        self.hands = hands
        self.producer = producer
        self.make_seed = make_seed

    async def deal(self, order: DealOrder, request_id: str) -> Dealt:
        seed = self.make_seed()
        command = order.start(seed)
        decision = decide(HandState(), command, seed)
        if isinstance(decision, Rejection):
            reason = _DEAL_REASONS.get(decision.code, Reason.INVALID_ARGUMENT)
            raise Refusal.invalid(decision.message, reason)
        hand_id = order.hand_id
        try:
            await asyncio.to_thread(self.seeds.put, hand_id, seed)
        except SeedExists:
            raise Refusal(
                Kind.EXISTS, Reason.VERSION_CONFLICT, f"hand {hand_id} was dealt before"
            ) from None
        try:
            version, public = await self.hands.start(
                hand_id, decision,
                causation_id=request_id, correlation_id=hand_id, producer=self.producer,
            )  # fmt: skip
        except Refusal as refusal:
            if refusal.kind is not Kind.CONFLICT:
                raise
            # The hand exists on the bus without our seed: never deal over it.
            await asyncio.to_thread(self.seeds.forget, hand_id)
            raise Refusal(
                Kind.EXISTS, Reason.VERSION_CONFLICT, f"hand {hand_id} already has events"
            ) from None
        started = decision[0]
        assert isinstance(started, HandStarted)  # what StartHand always decides first
        log.info("hand_dealt", hand_id=hand_id, version=version, rules=command.rules.name)
        return Dealt(hand_id, started.commitment, version, public)

    async def seed(self, hand_id: str) -> bytes:
        """The seed of a hand dealt here (only the rules service may ask)."""
        seed = await asyncio.to_thread(self.seeds.get, hand_id)
        if seed is None:
            raise Refusal.not_found(Reason.UNKNOWN_HAND, f"no hand {hand_id!r} was dealt here")
        return seed
