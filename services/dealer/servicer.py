"""DealerService over gRPC: a Deal request to a ``DealOrder``, ``Dealer`` (handlers.py)
deals, the answer back to a message; GetSeed likewise. Nothing else.

A request that cannot be an order (not three seats, an unknown variant, a hand id no
stream can have, ...) is INVALID_ARGUMENT; every other refusal is the use case's.
"""

from __future__ import annotations

import uuid
from typing import Any, TypeAlias

import grpc
import structlog
from ddz.adapters import codec, hand_stream
from ddz.application.errors import Refusal
from ddz.domain.ruleset import ruleset_for
from ddz.domain.settlement import RoomSettings
from ddz.v1 import dealer_pb2, dealer_pb2_grpc

from .handlers import Dealer, DealOrder

Context: TypeAlias = grpc.aio.ServicerContext[Any, Any]


class DealerServicer(dealer_pb2_grpc.DealerServiceServicer):
    def __init__(self, dealer: Dealer) -> None:
        self.dealer = dealer

    async def Deal(
        self, request: dealer_pb2.DealRequest, context: Context
    ) -> dealer_pb2.DealResponse:
        order = deal_order(request)
        if request.request_id:
            structlog.contextvars.bind_contextvars(request_id=request.request_id)
        dealt = await self.dealer.deal(order, request.request_id or str(uuid.uuid4()))
        return dealer_pb2.DealResponse(
            hand_id=dealt.hand_id,
            commitment=dealt.commitment,
            version=dealt.version,
            events=dealt.events,
        )

    async def GetSeed(
        self, request: dealer_pb2.GetSeedRequest, context: Context
    ) -> dealer_pb2.GetSeedResponse:
        seed = await self.dealer.seed(request.hand_id)
        return dealer_pb2.GetSeedResponse(hand_id=request.hand_id, seed=seed)


MAX_CLIENT_SEEDS = 16
MAX_CLIENT_SEED_BYTES = 256
"""Client seeds are recorded in ``hand_started``: bounded, so a deal's event stays small."""


def deal_order(request: dealer_pb2.DealRequest) -> DealOrder:
    """The hand a Deal request asks for; INVALID_ARGUMENT when it cannot be one."""
    try:
        hand_stream.hand_stream_id(request.hand_id)
        if request.HasField("rules"):
            rules = codec.ruleset_from_pb(request.rules)
        else:
            rules = ruleset_for(request.variant)
        room = codec.room_from_pb(request.room) if request.HasField("room") else RoomSettings()
        if len(request.seats) != 3:
            raise ValueError(f"a hand has exactly three seats, got {len(request.seats)}")
        if len(request.client_seeds) > MAX_CLIENT_SEEDS or any(
            len(seed) > MAX_CLIENT_SEED_BYTES for seed in request.client_seeds
        ):
            raise ValueError(
                f"at most {MAX_CLIENT_SEEDS} client seeds of at most {MAX_CLIENT_SEED_BYTES} "
                "bytes each"
            )
        seats = tuple(codec.seat_from_pb(s) for s in request.seats)
        return DealOrder(
            hand_id=request.hand_id,
            rules=rules,
            room=room,
            seats=(seats[0], seats[1], seats[2]),
            first_bidder=request.first_bidder if request.HasField("first_bidder") else None,
            client_seeds=tuple(request.client_seeds),
            balances=codec.balances_from_pb(request),
            show_before_deal=frozenset(request.show_before_deal),
        )
    except ValueError as exc:
        raise Refusal.invalid(str(exc)) from None
