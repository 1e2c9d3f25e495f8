"""DealerService over gRPC: a Deal request to a ``DealOrder``, ``Dealer`` (handlers.py)
deals, the answer back to a message; CancelDeal and GetSeed likewise. Nothing else.

A request that cannot be an order (a hand or table id no stream can have, too many
client seeds, a field the request no longer has) is INVALID_ARGUMENT; every other
refusal is the use case's.
"""

from __future__ import annotations

import uuid
from typing import Any, TypeAlias

import grpc
import structlog
from ddz.adapters.messaging import hand_stream
from ddz.adapters.messaging.table_stream import table_stream_id
from ddz.application.errors import Refusal
from ddz.v1 import dealer_pb2, dealer_pb2_grpc
from google.protobuf.unknown_fields import UnknownFieldSet

from .use_cases.handlers import Dealer, DealOrder, Dealt

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
        return deal_response(dealt)

    async def CancelDeal(
        self, request: dealer_pb2.CancelDealRequest, context: Context
    ) -> dealer_pb2.CancelDealResponse:
        try:
            hand_stream.hand_stream_id(request.hand_id)
            table_stream_id(request.table_id)
        except ValueError as exc:
            raise Refusal.invalid(str(exc)) from None
        if not request.request_id:
            raise Refusal.invalid("CancelDeal needs the request id of the Deal it calls off")
        structlog.contextvars.bind_contextvars(request_id=request.request_id)
        dealt = await self.dealer.cancel(request.hand_id, request.table_id, request.request_id)
        if dealt is None:
            return dealer_pb2.CancelDealResponse(outcome=dealer_pb2.CANCEL_OUTCOME_CANCELLED)
        return dealer_pb2.CancelDealResponse(
            outcome=dealer_pb2.CANCEL_OUTCOME_DEALT, dealt=deal_response(dealt)
        )

    async def GetSeed(
        self, request: dealer_pb2.GetSeedRequest, context: Context
    ) -> dealer_pb2.GetSeedResponse:
        seed = await self.dealer.seed(request.hand_id)
        return dealer_pb2.GetSeedResponse(hand_id=request.hand_id, seed=seed)


def deal_response(dealt: Dealt) -> dealer_pb2.DealResponse:
    return dealer_pb2.DealResponse(
        hand_id=dealt.hand_id,
        commitment=dealt.commitment,
        version=dealt.version,
        events=dealt.events,
    )


MAX_CLIENT_SEEDS = 16
MAX_CLIENT_SEED_BYTES = 256
"""Client seeds are recorded in ``hand_started``: bounded, so a deal's event stays small."""

REMOVED_FIELDS = {3: "variant", 4: "rules", 5: "room", 6: "seats", 7: "first_bidder", 8: "balances"}
"""The numbers ``DealRequest`` once gave what the dealer now reads from the table's
stream (reserved in dealer.proto). A caller that still sends one is refused rather than
dealt under other values than it asked for."""


def deal_order(request: dealer_pb2.DealRequest) -> DealOrder:
    """The hand a Deal request asks for; INVALID_ARGUMENT when it cannot be one."""
    try:
        unknown = {f.field_number for f in UnknownFieldSet(request)}
        removed = [name for number, name in REMOVED_FIELDS.items() if number in unknown]
        if removed:
            raise ValueError(
                f"Deal no longer takes {', '.join(removed)}: the rule set, room settings, "
                "seats, first bidder and balances are the table's, read from its stream"
            )
        hand_stream.hand_stream_id(request.hand_id)
        table_stream_id(request.table_id)
        if len(request.client_seeds) > MAX_CLIENT_SEEDS or any(
            len(seed) > MAX_CLIENT_SEED_BYTES for seed in request.client_seeds
        ):
            raise ValueError(
                f"at most {MAX_CLIENT_SEEDS} client seeds of at most {MAX_CLIENT_SEED_BYTES} "
                "bytes each"
            )
        return DealOrder(
            hand_id=request.hand_id,
            table_id=request.table_id,
            client_seeds=tuple(request.client_seeds),
            show_before_deal=frozenset(request.show_before_deal),
        )
    except ValueError as exc:
        raise Refusal.invalid(str(exc)) from None
