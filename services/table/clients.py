"""The other services' ports over gRPC: each call goes through ``grpc_client.ask``, so a
failed call arrives at the use cases as a ``Refusal`` of the same kind and reason."""

from __future__ import annotations

from ddz.adapters import codec
from ddz.adapters.grpc_client import ask
from ddz.domain.hand import SeatCommand
from ddz.v1 import (
    bot_pb2,
    bot_pb2_grpc,
    dealer_pb2,
    dealer_pb2_grpc,
    rules_pb2,
    rules_pb2_grpc,
    settlement_pb2,
    settlement_pb2_grpc,
    table_pb2,
)

from .ports import DealOrder, Dealt, Decision


class DealerClient:
    def __init__(self, stub: dealer_pb2_grpc.DealerServiceStub) -> None:
        self.stub = stub

    async def deal(self, order: DealOrder) -> Dealt:
        request = dealer_pb2.DealRequest(
            hand_id=order.hand_id,
            table_id=order.table_id,
            variant=order.rules.name,
            rules=codec.ruleset_to_pb(order.rules),
            room=codec.room_to_pb(order.room),
            seats=[codec.seat_to_pb(seat) for seat in order.seats],
            client_seeds=list(order.client_seeds),
            show_before_deal=list(order.show_before_deal),
            request_id=order.request_id,
        )
        if order.first_bidder is not None:
            request.first_bidder = order.first_bidder
        if order.balances is not None:
            request.balances.values.extend(order.balances)
        answer: dealer_pb2.DealResponse = await ask("dealer", self.stub.Deal, request)
        return Dealt(answer.commitment, int(answer.version), list(answer.events))


class RulesClient:
    def __init__(self, stub: rules_pb2_grpc.RulesServiceStub) -> None:
        self.stub = stub

    async def decide(
        self,
        hand_id: str,
        command: SeatCommand,
        *,
        request_id: str,
        expected_version: int | None = None,
    ) -> Decision:
        request = rules_pb2.DecideRequest(hand_id=hand_id, seat=command.seat, request_id=request_id)
        codec.set_command(request, command)
        if expected_version is not None:
            request.expected_version = expected_version
        answer: rules_pb2.DecideResponse = await ask("rules", self.stub.Decide, request)
        return Decision(
            answer.accepted, answer.reason, answer.message, int(answer.version),
            list(answer.events),
        )  # fmt: skip


class BotClient:
    def __init__(self, stub: bot_pb2_grpc.BotServiceStub) -> None:
        self.stub = stub

    async def suggest(self, hand_id: str, seat: int, min_version: int) -> table_pb2.SuggestedMove:
        request = bot_pb2.SuggestRequest(hand_id=hand_id, seat=seat, min_version=min_version)
        answer: bot_pb2.SuggestResponse = await ask("bot", self.stub.Suggest, request)
        return answer.move


class SettlementClient:
    def __init__(self, stub: settlement_pb2_grpc.SettlementServiceStub) -> None:
        self.stub = stub

    async def balance(self, player_id: str) -> int:
        request = settlement_pb2.GetBalanceRequest(player_id=player_id)
        answer: settlement_pb2.GetBalanceResponse = await ask(
            "settlement", self.stub.GetBalance, request
        )
        return int(answer.balance)
