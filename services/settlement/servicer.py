"""SettlementService over gRPC: requests to ``handlers.Queries``, rows to protobuf."""

from __future__ import annotations

from typing import Any, TypeAlias

import grpc
from ddz.adapters import codec
from ddz.v1 import settlement_pb2, settlement_pb2_grpc

from .use_cases.handlers import Queries

Context: TypeAlias = grpc.aio.ServicerContext[Any, Any]


class SettlementServicer(settlement_pb2_grpc.SettlementServiceServicer):
    def __init__(self, queries: Queries) -> None:
        self.queries = queries

    async def GetBalance(
        self, request: settlement_pb2.GetBalanceRequest, context: Context
    ) -> settlement_pb2.GetBalanceResponse:
        return codec.balance_to_pb(await self.queries.balance(request.player_id))

    async def GetLedger(
        self, request: settlement_pb2.GetLedgerRequest, context: Context
    ) -> settlement_pb2.GetLedgerResponse:
        hand = await self.queries.ledger(request.hand_id)
        return settlement_pb2.GetLedgerResponse(hand=codec.settled_hand_to_pb(hand))

    async def ListLedgers(
        self, request: settlement_pb2.ListLedgersRequest, context: Context
    ) -> settlement_pb2.ListLedgersResponse:
        hands = await self.queries.ledgers_of(request.player_id, request.limit)
        return settlement_pb2.ListLedgersResponse(
            ledgers=[codec.player_ledger_to_pb(hand, request.player_id) for hand in hands]
        )
