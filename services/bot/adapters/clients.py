"""The ``Rules`` port over gRPC: ``RulesService.DecideBatch``, one call per batch of moves.

Transport errors become ``Refusal`` (``grpc_client.ask``: the same kind and reason as
the status); an outcome the rules answered with a status becomes the ``Refusal`` that
status stands for. A rules service without ``DecideBatch`` (UNIMPLEMENTED) is asked one
``Decide`` per move, concurrently, from then on.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Sequence

import grpc
from ddz.adapters import codec
from ddz.adapters.rpc.grpc_client import KIND_OF, ask, refusal_from
from ddz.adapters.rpc.routing import RulesStub
from ddz.adapters.telemetry import tracing
from ddz.application.errors import Kind, Reason, Refusal
from ddz.v1 import rules_pb2

from ..use_cases.ports import Move, Outcome

SERVICE = "rules"
_CODES = {code.value[0]: code for code in grpc.StatusCode}


class RulesClient:
    def __init__(self, stub: RulesStub, timeout: float) -> None:  # routing.rules_service
        self.stub = stub
        self.timeout = timeout
        self.batched = True

    async def decide_batch(self, moves: Sequence[Move]) -> Sequence[Outcome]:
        # Each batch of the bot's moves starts a trace: its hand's task was started
        # inside the span of the hand's first message, which would make a hand one trace.
        with tracing.new_trace("bot moves", **{"ddz.moves": len(moves)}):
            return await self._decide_batch(moves)

    async def _decide_batch(self, moves: Sequence[Move]) -> Sequence[Outcome]:
        requests = [request_of(move) for move in moves]
        if self.batched:
            try:
                answer: rules_pb2.DecideBatchResponse = await self.stub.DecideBatch(
                    rules_pb2.DecideBatchRequest(commands=requests), timeout=self.timeout
                )
            except grpc.aio.AioRpcError as error:
                if error.code() is not grpc.StatusCode.UNIMPLEMENTED:
                    raise refusal_from(error, SERVICE) from None
                self.batched = False  # an older rules service: one Decide per move
            else:
                return [outcome_of(outcome) for outcome in answer.outcomes]
        return await asyncio.gather(*(self._decide(request) for request in requests))

    async def _decide(self, request: rules_pb2.DecideRequest) -> Outcome:
        try:
            answer: rules_pb2.DecideResponse = await ask(
                SERVICE, functools.partial(self.stub.Decide, timeout=self.timeout), request
            )
        except Refusal as refusal:
            return refusal
        return answer


def request_of(move: Move) -> rules_pb2.DecideRequest:
    request = rules_pb2.DecideRequest(
        hand_id=move.hand_id,
        seat=move.seat,
        expected_version=move.expected_version,
        request_id=move.request_id,
    )
    codec.set_command(request, move.command)
    return request


def outcome_of(outcome: rules_pb2.DecideOutcome) -> Outcome:
    """The answer, or the refusal its status stands for (what ``Decide`` would have
    ended the call with)."""
    if outcome.HasField("response"):
        return outcome.response
    code = _CODES.get(outcome.code, grpc.StatusCode.UNKNOWN)
    try:
        reason = Reason(outcome.reason or Reason.REASON_UNSPECIFIED)
    except ValueError:
        reason = Reason.REASON_UNSPECIFIED
    return Refusal(KIND_OF.get(code, Kind.INTERNAL), reason, outcome.message)
