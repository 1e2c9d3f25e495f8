"""RulesService over gRPC: requests to commands, ``Rules`` (handlers.py) decides,
answers back to messages. Nothing else.

Bad input (malformed cards, an empty play, no command) is the codec's ``Refusal``;
every other refusal is the use case's. Raised from ``Decide`` or ``GetPublicState``,
the server's interceptor turns it into the call's status; in ``DecideBatch`` it
becomes that command's outcome instead.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any, TypeAlias

import grpc
import structlog
from ddz.adapters import codec
from ddz.adapters.messaging.hand_stream import HandCursor
from ddz.adapters.rpc.grpc_server import status_of
from ddz.application.errors import Refusal
from ddz.v1 import rules_pb2, rules_pb2_grpc

from .use_cases.handlers import Rules

log = structlog.get_logger("ddz.rules")

Context: TypeAlias = grpc.aio.ServicerContext[Any, Any]


class RulesServicer(rules_pb2_grpc.RulesServiceServicer):
    def __init__(self, rules: Rules[HandCursor]) -> None:
        self.rules = rules

    async def Decide(
        self, request: rules_pb2.DecideRequest, context: Context
    ) -> rules_pb2.DecideResponse:
        return await self._decide(request)

    async def DecideBatch(
        self, request: rules_pb2.DecideBatchRequest, context: Context
    ) -> rules_pb2.DecideBatchResponse:
        """Every command as by ``Decide``, concurrently: the per-hand lock keeps one
        hand's commands in the order given (asyncio locks are FIFO and the tasks
        start in order), different hands overlap, e.g. while waiting for JetStream's
        acknowledgements. A command's error is its outcome, not the call's."""
        outcomes = await asyncio.gather(*(self._outcome(command) for command in request.commands))
        return rules_pb2.DecideBatchResponse(outcomes=outcomes)

    async def GetPublicState(
        self, request: rules_pb2.GetPublicStateRequest, context: Context
    ) -> rules_pb2.GetPublicStateResponse:
        state, version = await self.rules.public_state(request.hand_id)
        return codec.public_state_to_pb(request.hand_id, state, version)

    async def _outcome(self, request: rules_pb2.DecideRequest) -> rules_pb2.DecideOutcome:
        structlog.contextvars.bind_contextvars(hand_id=request.hand_id)
        try:
            response = await self._decide(request)
        except Refusal as refusal:
            status = status_of(refusal)
            return rules_pb2.DecideOutcome(
                code=status.code, reason=refusal.reason.value, message=status.message
            )
        except Exception:
            log.exception("rpc_failed", batched=True)
            return rules_pb2.DecideOutcome(
                code=grpc.StatusCode.INTERNAL.value[0],
                message=f"internal error (request id {request.request_id})",
            )
        return rules_pb2.DecideOutcome(response=response)

    async def _decide(self, request: rules_pb2.DecideRequest) -> rules_pb2.DecideResponse:
        command = codec.command_from_request(request.seat, request)
        if request.request_id:  # the caller's own id wins over the metadata's
            structlog.contextvars.bind_contextvars(request_id=request.request_id)
        request_id = (
            request.request_id
            or structlog.contextvars.get_contextvars().get("request_id")
            or str(uuid.uuid4())
        )
        expected = request.expected_version if request.HasField("expected_version") else None
        decided = await self.rules.decide(request.hand_id, command, expected, request_id)
        # One line per refusal at INFO; accepted commands are in the event store anyway.
        (log.debug if decided.accepted else log.info)(
            "decided",
            seat=request.seat,
            command=codec.command_type(command),
            accepted=decided.accepted,
            reason=decided.reason or None,
            version=decided.version,
        )
        return rules_pb2.DecideResponse(
            accepted=decided.accepted,
            reason=decided.reason,
            message=decided.message,
            version=decided.version,
            events=decided.events,
        )
