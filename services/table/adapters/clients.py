"""The other services' ports over gRPC: each call goes through ``grpc_client.ask``, so a
failed call arrives at the use cases as a ``Refusal`` of the same kind and reason."""

from __future__ import annotations

from ddz.adapters import codec
from ddz.adapters.rpc.grpc_client import ask
from ddz.adapters.rpc.routing import RulesStub
from ddz.application.errors import Kind, Reason, Refusal
from ddz.domain.hand import SeatCommand
from ddz.v1 import (
    bot_pb2,
    bot_pb2_grpc,
    dealer_pb2,
    dealer_pb2_grpc,
    desk_pb2,
    desk_pb2_grpc,
    rules_pb2,
    settlement_pb2,
    settlement_pb2_grpc,
    table_pb2,
)

from ..use_cases.ports import DealOrder, Dealt, Decision, EvidenceFile


class DealerClient:
    def __init__(self, stub: dealer_pb2_grpc.DealerServiceStub) -> None:
        self.stub = stub

    async def deal(self, order: DealOrder) -> Dealt:
        # The hand and its table only: the dealer reads the rules, room, seats, first
        # bidder and balances from the table's stream (hand_assigned is recorded first).
        request = dealer_pb2.DealRequest(
            hand_id=order.hand_id,
            table_id=order.table_id,
            client_seeds=list(order.client_seeds),
            show_before_deal=list(order.show_before_deal),
            request_id=order.request_id,
        )
        answer: dealer_pb2.DealResponse = await ask("dealer", self.stub.Deal, request)
        return dealt_of(answer)

    async def cancel(self, order: DealOrder) -> Dealt | None:
        request = dealer_pb2.CancelDealRequest(
            hand_id=order.hand_id, table_id=order.table_id, request_id=order.request_id
        )
        answer: dealer_pb2.CancelDealResponse = await ask("dealer", self.stub.CancelDeal, request)
        if answer.outcome == dealer_pb2.CANCEL_OUTCOME_CANCELLED:
            return None
        if answer.outcome == dealer_pb2.CANCEL_OUTCOME_DEALT:
            return dealt_of(answer.dealt)
        raise Refusal(
            Kind.INTERNAL, Reason.REASON_UNSPECIFIED,
            f"the dealer's CancelDeal answered no outcome ({answer.outcome})",
        )  # fmt: skip


def dealt_of(answer: dealer_pb2.DealResponse) -> Dealt:
    return Dealt(answer.commitment, int(answer.version), list(answer.events))


class RulesClient:
    def __init__(self, stub: RulesStub) -> None:  # each hand's calls to its instance
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


class EvidenceClient:
    """The recorder's evidence files (``DeskService.GetEvidence``)."""

    def __init__(self, stub: desk_pb2_grpc.DeskServiceStub) -> None:
        self.stub = stub

    async def evidence(self, hand_id: str) -> EvidenceFile:
        request = desk_pb2.GetEvidenceRequest(hand_id=hand_id)
        answer: desk_pb2.GetEvidenceResponse = await ask("recorder", self.stub.GetEvidence, request)
        return EvidenceFile(answer.file, answer.file_name)
