"""SettlementService: queries over the balances projection (``service_db.balances``)."""

from __future__ import annotations

import asyncio
from typing import Any, TypeAlias

import grpc
from ddz.adapters.grpc_server import abort
from ddz.adapters.service_db.balances import BalanceProjection, SettledHand
from ddz.v1 import hand_events_pb2, settlement_pb2, settlement_pb2_grpc

Context: TypeAlias = grpc.aio.ServicerContext[Any, Any]

DEFAULT_PAGE = 100
MAX_PAGE = 1000


class SettlementServicer(settlement_pb2_grpc.SettlementServiceServicer):
    def __init__(self, projection: BalanceProjection) -> None:
        self.projection = projection

    async def GetBalance(
        self, request: settlement_pb2.GetBalanceRequest, context: Context
    ) -> settlement_pb2.GetBalanceResponse:
        await _require_player(request.player_id, context)
        balance = await asyncio.to_thread(self.projection.balance, request.player_id)
        return settlement_pb2.GetBalanceResponse(
            player_id=balance.player_id, balance=balance.balance, hands=balance.hands
        )

    async def GetLedger(
        self, request: settlement_pb2.GetLedgerRequest, context: Context
    ) -> settlement_pb2.GetLedgerResponse:
        hand = await asyncio.to_thread(self.projection.settled_hand, request.hand_id)
        if hand is None:
            await abort(
                context, grpc.StatusCode.NOT_FOUND, "UNKNOWN_HAND",
                f"no settled hand {request.hand_id!r}",
            )  # fmt: skip
        return settlement_pb2.GetLedgerResponse(hand=_settled_hand(hand))

    async def ListLedgers(
        self, request: settlement_pb2.ListLedgersRequest, context: Context
    ) -> settlement_pb2.ListLedgersResponse:
        await _require_player(request.player_id, context)
        limit = min(request.limit or DEFAULT_PAGE, MAX_PAGE)
        hands = await asyncio.to_thread(self.projection.player_hands, request.player_id, limit)
        ledgers = []
        for hand in hands:
            seat = hand.players.index(request.player_id)
            ledgers.append(
                settlement_pb2.PlayerLedger(
                    hand=_settled_hand(hand), seat=seat, delta=hand.deltas[seat]
                )
            )
        return settlement_pb2.ListLedgersResponse(ledgers=ledgers)


async def _require_player(player_id: str, context: Context) -> None:
    if not player_id:
        await abort(
            context, grpc.StatusCode.INVALID_ARGUMENT, "INVALID_ARGUMENT", "player_id is empty"
        )


def _settled_hand(hand: SettledHand) -> settlement_pb2.SettledHand:
    settled = hand_events_pb2.HandSettled.FromString(hand.payload)
    return settlement_pb2.SettledHand(
        hand_id=hand.hand_id,
        players=list(hand.players),
        landlord=hand.landlord,
        base=hand.base,
        ledger=settled.ledger,
        multiplier=settled.multiplier,
        event_id=hand.event_id,
    )
