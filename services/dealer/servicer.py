"""DealerService: map the request to the aggregate's StartHand, publish what it decides.

No rules here: ``decide(HandState(), StartHand(...))`` deals (ddz-shuffle-v1 from the
seed made here), the codec maps, ``hand_stream`` publishes.
"""

from __future__ import annotations

import asyncio
import secrets
import uuid
from typing import Any, TypeAlias

import grpc
import structlog
from ddz.adapters import codec, hand_stream
from ddz.adapters.bus import EventBus
from ddz.adapters.grpc_server import abort
from ddz.domain.hand import HandState, Rejection, RejectReason, StartHand, decide
from ddz.domain.hand.events import HandStarted
from ddz.domain.ruleset import ruleset_for
from ddz.domain.settlement import RoomSettings
from ddz.domain.shuffle import SEED_BYTES
from ddz.v1 import dealer_pb2, dealer_pb2_grpc

from .seeds import SeedExists, SeedVault

log = structlog.get_logger("ddz.dealer")

Context: TypeAlias = grpc.aio.ServicerContext[Any, Any]


class DealerServicer(dealer_pb2_grpc.DealerServiceServicer):
    def __init__(self, bus: EventBus, seeds: SeedVault, producer: str) -> None:
        self.bus = bus
        self.seeds = seeds
        self.producer = producer

    async def Deal(
        self, request: dealer_pb2.DealRequest, context: Context
    ) -> dealer_pb2.DealResponse:
        seed = secrets.token_bytes(SEED_BYTES)
        command = await _start_command(request, seed, context)
        decision = decide(HandState(), command, seed)
        if isinstance(decision, Rejection):
            reason = (
                "UNKNOWN_SEAT" if decision.code is RejectReason.UNKNOWN_SEAT else "INVALID_ARGUMENT"
            )
            await abort(context, grpc.StatusCode.INVALID_ARGUMENT, reason, decision.message)
        hand_id = request.hand_id
        try:
            await asyncio.to_thread(self.seeds.put, hand_id, seed)
        except SeedExists:
            await abort(
                context, grpc.StatusCode.ALREADY_EXISTS, "VERSION_CONFLICT",
                f"hand {hand_id} was dealt before",
            )  # fmt: skip
        if request.request_id:
            structlog.contextvars.bind_contextvars(request_id=request.request_id)
        request_id = request.request_id or str(uuid.uuid4())
        try:
            cursor, published = await hand_stream.publish(
                self.bus, hand_id, hand_stream.HandCursor(), decision,
                causation_id=request_id, correlation_id=hand_id, producer=self.producer,
            )  # fmt: skip
        except hand_stream.HandConflict:
            # The hand exists on the bus without our seed: never deal over it.
            await asyncio.to_thread(self.seeds.forget, hand_id)
            await abort(
                context, grpc.StatusCode.ALREADY_EXISTS, "VERSION_CONFLICT",
                f"hand {hand_id} already has events",
            )  # fmt: skip
        started = decision[0]
        assert isinstance(started, HandStarted)  # what StartHand always decides first
        log.info("hand_dealt", hand_id=hand_id, version=cursor.version, rules=command.rules.name)
        return dealer_pb2.DealResponse(
            hand_id=hand_id,
            commitment=started.commitment,
            version=cursor.version,
            events=[p.message for p in published if not p.hidden],
        )

    async def GetSeed(
        self, request: dealer_pb2.GetSeedRequest, context: Context
    ) -> dealer_pb2.GetSeedResponse:
        seed = await asyncio.to_thread(self.seeds.get, request.hand_id)
        if seed is None:
            await abort(
                context, grpc.StatusCode.NOT_FOUND, "UNKNOWN_HAND",
                f"no hand {request.hand_id!r} was dealt here",
            )  # fmt: skip
        return dealer_pb2.GetSeedResponse(hand_id=request.hand_id, seed=seed)


async def _start_command(
    request: dealer_pb2.DealRequest, seed: bytes, context: Context
) -> StartHand:
    """The StartHand a Deal request asks for; INVALID_ARGUMENT when it cannot be one."""
    try:
        hand_stream.hand_stream_id(request.hand_id)
        if request.HasField("rules"):
            rules = codec.ruleset_from_pb(request.rules)
        else:
            rules = ruleset_for(request.variant)
        room = codec.room_from_pb(request.room) if request.HasField("room") else RoomSettings()
        if len(request.seats) != 3:
            raise ValueError(f"a hand has exactly three seats, got {len(request.seats)}")
        seats = tuple(codec.seat_from_pb(s) for s in request.seats)
        return StartHand(
            hand_id=request.hand_id,
            rules=rules,
            room=room,
            seats=(seats[0], seats[1], seats[2]),
            seed=seed,
            first_bidder=request.first_bidder if request.HasField("first_bidder") else None,
            client_seeds=tuple(request.client_seeds),
            balances=codec.balances_from_pb(request),
            show_before_deal=frozenset(request.show_before_deal),
        )
    except ValueError as exc:
        await abort(context, grpc.StatusCode.INVALID_ARGUMENT, "INVALID_ARGUMENT", str(exc))
