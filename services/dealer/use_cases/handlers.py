"""The dealer's use cases: deal a new hand, call a deal off, give a dealt hand's seed
to the rules.

No rules here: ``decide(HandState(), StartHand(...))`` deals (ddz-shuffle-v1 from the
seed made here). The caller names the hand and its table; what the hand is played for
(rule set, room settings, seats, first bidder, balances) is read from the table's
stream, which the table service alone writes, and the hand must be the last one it
assigned there: whoever reaches the dealer cannot choose a room's stakes or put
players at a table they never sat at.

The seed is stored *before* anything is published, so a restarted dealer still knows
the seeds of hands in play; a hand whose first events cannot be published because it
has events already gets its seed forgotten again.

A table whose Deal answers were all lost calls the deal off (``cancel``) before it
withdraws the hand. Seed and cancellation share one row per hand (``SeedStore``), so
exactly one of them is written first: a cancel that comes first makes every deal of the
hand, later or still under way, a refusal; a deal that stored its seed first is finished
by the cancel (a retry of the same request) and the table told it was dealt.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import structlog
from ddz.application.errors import Kind, Reason, Refusal
from ddz.domain.hand import HandState, Rejection, RejectReason, StartHand, decide
from ddz.domain.hand.events import HandStarted
from ddz.domain.shuffle import SEED_BYTES
from ddz.domain.table import HandAssigned, TableOpened
from ddz.v1 import envelope_pb2

from .ports import DealCancelled, HandStarts, SeedExists, SeedStore, TableRecords

log = structlog.get_logger("ddz.dealer")

# The reason of a deal the aggregate refuses; any other refusal is a plain bad request.
_DEAL_REASONS = {RejectReason.UNKNOWN_SEAT: Reason.UNKNOWN_SEAT}


@dataclass(frozen=True, slots=True)
class DealOrder:
    """What a caller may say of the hand it asks for: which hand of which table, the
    players' public seeds and who plays open. Nothing that moves money: the rule set,
    room settings, seats, first bidder and balances are the table's, as its stream
    recorded them (``TableRecords``)."""

    hand_id: str
    table_id: str
    client_seeds: tuple[bytes, ...] = ()
    show_before_deal: frozenset[int] = field(default_factory=frozenset)

    def start(self, seed: bytes, table: TableOpened, hand: HandAssigned) -> StartHand:
        return StartHand(
            hand_id=self.hand_id,
            rules=table.rules,
            room=table.room,
            seats=table.seats,
            seed=seed,
            first_bidder=hand.first_bidder,
            client_seeds=self.client_seeds,
            balances=hand.balances,
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
        tables: TableRecords,
        producer: str,
        make_seed: Callable[[], bytes] = fresh_seed,
    ) -> None:
        self.seeds = seeds
        self.hands = hands
        self.tables = tables
        self.producer = producer
        self.make_seed = make_seed

    async def deal(self, order: DealOrder, request_id: str) -> Dealt:
        """Deal the hand. The same request again (a retry whose first answer was lost,
        or whose dealer died part-way) deals it from the seed stored the first time and
        answers as the first deal did; any other request for a dealt hand is refused."""
        table, hand = await self.assignment(order)
        hand_id = order.hand_id
        stored = await self._seed_to_deal(hand_id)
        seed = self.make_seed() if stored is None else stored
        command = order.start(seed, table, hand)
        decision = decide(HandState(), command, seed)
        if isinstance(decision, Rejection):
            reason = _DEAL_REASONS.get(decision.code, Reason.INVALID_ARGUMENT)
            raise Refusal.invalid(decision.message, reason)
        if stored is None:
            try:
                await asyncio.to_thread(self.seeds.put, hand_id, seed)
            except SeedExists:  # another deal of this hand at this very moment
                raise Refusal(
                    Kind.EXISTS, Reason.VERSION_CONFLICT, f"hand {hand_id} is being dealt"
                ) from None
            except DealCancelled:  # called off while this deal was under way
                raise cancelled_refusal(hand_id) from None
        try:
            version, public = await self.hands.start(
                hand_id, decision,
                causation_id=request_id, correlation_id=hand_id, producer=self.producer,
            )  # fmt: skip
        except Refusal as refusal:
            if refusal.kind is not Kind.CONFLICT:
                raise
            if stored is None:  # the hand exists on the bus without our seed: never deal over it
                await asyncio.to_thread(self.seeds.forget, hand_id)
            raise Refusal(
                Kind.EXISTS, Reason.VERSION_CONFLICT, f"hand {hand_id} was dealt before"
            ) from None
        started = decision[0]
        assert isinstance(started, HandStarted)  # what StartHand always decides first
        log.info("hand_dealt", hand_id=hand_id, version=version, rules=command.rules.name,
                 table_id=order.table_id, room_id=table.room_id)  # fmt: skip
        return Dealt(hand_id, started.commitment, version, public)

    async def cancel(self, hand_id: str, table_id: str, request_id: str) -> Dealt | None:
        """Never deal the hand (None), recorded before this answers; or, when its deal
        had begun (its seed is kept), the hand dealt: finished here as a retry of that
        request, which publishes nothing twice. Asked again, the same answer."""
        seed = await asyncio.to_thread(self.seeds.cancel, hand_id, request_id)
        if seed is None:
            log.warning("hand_deal_cancelled", hand_id=hand_id, table_id=table_id)
            return None
        # The order as the table recorded it (the assignment names the hand, its seeds
        # and who plays open), the same the deal under way was asked with.
        _, hand = await self.assignment(DealOrder(hand_id, table_id))
        order = DealOrder(hand_id, table_id, hand.client_seeds, frozenset(hand.show_before_deal))
        dealt = await self.deal(order, request_id)
        log.info("hand_deal_not_cancelled", hand_id=hand_id, table_id=table_id,
                 why="dealt before the cancel")  # fmt: skip
        return dealt

    async def _seed_to_deal(self, hand_id: str) -> bytes | None:
        try:
            return await asyncio.to_thread(self.seeds.get, hand_id)
        except DealCancelled:
            raise cancelled_refusal(hand_id) from None

    async def assignment(self, order: DealOrder) -> tuple[TableOpened, HandAssigned]:
        """The table the hand is dealt at and the hand as the table assigned it."""
        table = await self.tables.opened(order.table_id)
        if table is None:
            raise Refusal.not_found(Reason.UNKNOWN_TABLE, f"no table {order.table_id!r} was opened")
        hand = await self.tables.last_assigned(order.table_id)
        if hand is None or hand.hand_id != order.hand_id:
            raise Refusal.precondition(
                Reason.UNKNOWN_HAND,
                f"hand {order.hand_id!r} is not the hand table {order.table_id!r} deals next",
            )
        return table, hand

    async def seed(self, hand_id: str) -> bytes:
        """The seed of a hand dealt here (only the rules service may ask)."""
        try:
            seed = await asyncio.to_thread(self.seeds.get, hand_id)
        except DealCancelled:
            seed = None
        if seed is None:
            raise Refusal.not_found(Reason.UNKNOWN_HAND, f"no hand {hand_id!r} was dealt here")
        return seed


def cancelled_refusal(hand_id: str) -> Refusal:
    return Refusal.precondition(
        Reason.UNKNOWN_HAND,
        f"hand {hand_id} was called off by its table (CancelDeal): it is never dealt",
    )
