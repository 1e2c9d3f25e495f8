"""RulesService: load the hand, ``decide``, publish what happened. Nothing else.

Per hand, commands run one at a time (``KeyedLocks``) against the cached state; a
cache miss rebuilds the hand from its events on JetStream. Rules live in
``ddz.domain.hand.decide`` only: this module maps requests to commands, decisions to
events, and errors to gRPC statuses.

- bad input (unknown hand, malformed cards, no command): an RPC error with a reason;
  nothing is recorded.
- a rule's refusal (not your turn, does not beat, ...): ``accepted = false`` with the
  domain's reason, and a ``CommandRejected`` event is recorded in the hand's stream.
- another writer got there first, or ``expected_version`` did not hold: ABORTED with
  reason VERSION_CONFLICT; the cached hand is dropped and rebuilt on the next call.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any, NoReturn, TypeAlias

import grpc
import structlog
from ddz.adapters import codec, hand_stream
from ddz.adapters.bus import EventBus
from ddz.adapters.codec import CommandRejected
from ddz.adapters.grpc_server import abort
from ddz.domain.hand import (
    Command,
    Event,
    Phase,
    Rejection,
    SeedRequired,
    decide,
    evolve,
    replay,
)
from ddz.domain.hand.state import NO_ONE
from ddz.v1 import dealer_pb2, dealer_pb2_grpc, rules_pb2, rules_pb2_grpc
from google.rpc import error_details_pb2, status_pb2

from .cache import HandCache, KeyedLocks, LiveHand

log = structlog.get_logger("ddz.rules")

GRPC_DETAILS_KEY = "grpc-status-details-bin"

Context: TypeAlias = grpc.aio.ServicerContext[Any, Any]

_PHASES = {
    Phase.NOT_STARTED: rules_pb2.HAND_PHASE_NOT_STARTED,
    Phase.BIDDING: rules_pb2.HAND_PHASE_BIDDING,
    Phase.PLAYING: rules_pb2.HAND_PHASE_PLAYING,
    Phase.ENDED: rules_pb2.HAND_PHASE_ENDED,
}


class RulesServicer(rules_pb2_grpc.RulesServiceServicer):
    def __init__(
        self,
        bus: EventBus,
        dealer: dealer_pb2_grpc.DealerServiceStub,
        producer: str,
        cache_size: int = 2000,
    ) -> None:
        self.bus = bus
        self.dealer = dealer
        self.producer = producer
        self.cache = HandCache(cache_size)
        self.locks = KeyedLocks()

    async def Decide(
        self, request: rules_pb2.DecideRequest, context: Context
    ) -> rules_pb2.DecideResponse:
        return await self._decide_request(request, context)

    async def DecideBatch(
        self, request: rules_pb2.DecideBatchRequest, context: Context
    ) -> rules_pb2.DecideBatchResponse:
        """Every command as by ``Decide``, concurrently: the per-hand lock keeps one
        hand's commands in the order given (asyncio locks are FIFO and the tasks
        start in order), different hands overlap, e.g. while waiting for JetStream's
        acknowledgements. A command's error is its outcome, not the call's."""
        outcomes = await asyncio.gather(*(self._outcome(command) for command in request.commands))
        return rules_pb2.DecideBatchResponse(outcomes=outcomes)

    async def _outcome(self, request: rules_pb2.DecideRequest) -> rules_pb2.DecideOutcome:
        structlog.contextvars.bind_contextvars(hand_id=request.hand_id)
        capture = _CapturedAbort()
        try:
            response = await self._decide_request(request, capture)
        except _Aborted as aborted:
            return aborted.outcome
        except Exception:
            log.exception("rpc_failed", batched=True)
            return rules_pb2.DecideOutcome(
                code=grpc.StatusCode.INTERNAL.value[0],
                message=f"internal error (request id {request.request_id})",
            )
        return rules_pb2.DecideOutcome(response=response)

    async def _decide_request(
        self, request: rules_pb2.DecideRequest, context: Context
    ) -> rules_pb2.DecideResponse:
        hand_id = request.hand_id
        command = await _command(request, context)
        if request.request_id:  # the caller's own id wins over the metadata's
            structlog.contextvars.bind_contextvars(request_id=request.request_id)
        request_id = (
            request.request_id
            or structlog.contextvars.get_contextvars().get("request_id")
            or str(uuid.uuid4())
        )
        async with self.locks.hold(hand_id):
            hand = await self._load(hand_id, context)
            if request.HasField("expected_version") and (
                request.expected_version != hand.cursor.version
            ):
                await abort(
                    context, grpc.StatusCode.ABORTED, "VERSION_CONFLICT",
                    f"hand {hand_id} is at version {hand.cursor.version}, "
                    f"not {request.expected_version}",
                    version=str(hand.cursor.version),
                )  # fmt: skip
            decision = await self._decide(hand, command, context)
            if isinstance(decision, Rejection):
                recorded: list[codec.Recorded] = [
                    CommandRejected(command, decision.code, decision.message, request_id)
                ]
            else:
                recorded = list(decision)
            try:
                cursor, published = await hand_stream.publish(
                    self.bus, hand_id, hand.cursor, recorded,
                    causation_id=request_id, correlation_id=hand_id, producer=self.producer,
                )  # fmt: skip
            except hand_stream.HandConflict as exc:
                self.cache.drop(hand_id)
                await abort(context, grpc.StatusCode.ABORTED, "VERSION_CONFLICT", str(exc))
            except BaseException:
                self.cache.drop(hand_id)  # part may be out: rebuild from the bus next time
                raise
            self._advance(hand_id, hand, cursor, codec.hand_events(recorded))
        refused = decision if isinstance(decision, Rejection) else None
        # One line per refusal at INFO; accepted commands are in the event store anyway.
        (log.info if refused else log.debug)(
            "decided",
            seat=request.seat,
            command=codec.command_type(command),
            accepted=refused is None,
            reason=refused.code.value if refused else None,
            version=cursor.version,
        )
        return rules_pb2.DecideResponse(
            accepted=refused is None,
            reason=refused.code.value if refused else "",
            message=refused.message if refused else "",
            version=cursor.version,
            events=[p.message for p in published if not p.hidden],
        )

    async def GetPublicState(
        self, request: rules_pb2.GetPublicStateRequest, context: Context
    ) -> rules_pb2.GetPublicStateResponse:
        async with self.locks.hold(request.hand_id):
            hand = await self._load(request.hand_id, context)
        return public_state(request.hand_id, hand)

    # -- the steps --------------------------------------------------------------------

    async def _load(self, hand_id: str, context: Context) -> LiveHand:
        """The cached hand, or rebuilt from JetStream; NOT_FOUND when it has no events."""
        hand = self.cache.get(hand_id)
        if hand is not None:
            return hand
        try:
            hand_stream.hand_stream_id(hand_id)
        except ValueError:
            await abort(context, grpc.StatusCode.NOT_FOUND, "UNKNOWN_HAND", f"no hand {hand_id!r}")
        read, cursor = await hand_stream.read(self.bus, hand_id)
        if not read:
            await abort(context, grpc.StatusCode.NOT_FOUND, "UNKNOWN_HAND", f"no hand {hand_id!r}")
        state = replay(codec.hand_events(r.event for r in read))
        hand = LiveHand(state, cursor)
        log.info("hand_loaded", version=cursor.version, phase=state.phase.value)
        if state.phase is not Phase.ENDED:
            self.cache.put(hand_id, hand)
        return hand

    async def _decide(
        self, hand: LiveHand, command: Command, context: Context
    ) -> list[Event] | Rejection:
        try:
            return decide(hand.state, command, hand.seed)
        except SeedRequired:
            if hand.seed is not None:
                raise  # the seed we hold does not match the commitment: a bug, INTERNAL
        hand.seed = await self._seed(hand.state.hand_id, context)
        return decide(hand.state, command, hand.seed)

    async def _seed(self, hand_id: str, context: Context) -> bytes:
        try:
            response = await self.dealer.GetSeed(dealer_pb2.GetSeedRequest(hand_id=hand_id))
        except grpc.aio.AioRpcError as exc:
            log.error("seed_unavailable", code=exc.code().name, details=exc.details())
            await context.abort(
                grpc.StatusCode.UNAVAILABLE,
                f"the dealer cannot give this hand's seed now: {exc.details()}",
            )
            raise  # pragma: no cover - abort raises
        seed: bytes = response.seed
        return seed

    def _advance(
        self, hand_id: str, hand: LiveHand, cursor: hand_stream.HandCursor, events: list[Event]
    ) -> None:
        state = hand.state
        for event in events:
            state = evolve(state, event)
        hand.state, hand.cursor = state, cursor
        if state.phase is Phase.ENDED:
            self.cache.drop(hand_id)  # nothing left to decide but refusals
        else:
            self.cache.put(hand_id, hand)


class _Aborted(Exception):
    def __init__(self, outcome: rules_pb2.DecideOutcome) -> None:
        super().__init__(outcome.message)
        self.outcome = outcome


class _CapturedAbort:
    """Stands in for the servicer context of one command of a batch: what ``abort``
    would have ended the call with becomes that command's outcome instead."""

    async def abort_with_status(self, status: grpc.Status) -> NoReturn:
        reason = ""
        for key, value in status.trailing_metadata or ():
            if key == GRPC_DETAILS_KEY and isinstance(value, bytes):
                for detail in status_pb2.Status.FromString(value).details:
                    info = error_details_pb2.ErrorInfo()
                    if detail.Unpack(info):
                        reason = info.reason
        raise _Aborted(
            rules_pb2.DecideOutcome(
                code=status.code.value[0], reason=reason, message=status.details
            )
        )

    async def abort(self, code: grpc.StatusCode, details: str = "") -> NoReturn:
        raise _Aborted(rules_pb2.DecideOutcome(code=code.value[0], message=details))


async def _command(request: rules_pb2.DecideRequest, context: Context) -> codec.SeatCommand:
    try:
        return codec.command_from_pb(request.seat, request)
    except codec.MalformedCards as exc:
        await abort(context, grpc.StatusCode.INVALID_ARGUMENT, "MALFORMED_CARDS", str(exc))
    except codec.CodecError as exc:
        await abort(context, grpc.StatusCode.INVALID_ARGUMENT, "INVALID_ARGUMENT", str(exc))


def public_state(hand_id: str, hand: LiveHand) -> rules_pb2.GetPublicStateResponse:
    """What everyone at the table may know: no seat's cards, only their counts."""
    state = hand.state
    response = rules_pb2.GetPublicStateResponse(
        hand_id=hand_id,
        phase=_PHASES[state.phase],
        base=state.base,
        card_counts=[len(cards) for cards in state.cards],
        wild=[codec.rank_to_pb(rank) for rank in state.wild],
        multiplier=codec.multiplier_to_pb(state.multiplier),
        version=hand.cursor.version,
        seats=[codec.seat_to_pb(seat) for seat in state.seats],
        disconnected=sorted(state.disconnected),
    )
    if state.phase is not Phase.NOT_STARTED:
        response.rules.CopyFrom(codec.ruleset_to_pb(state.rules))
    if state.turn != NO_ONE:
        response.turn = state.turn
    if state.landlord is not None:
        response.landlord = state.landlord
    if state.trick is not None:
        response.trick.CopyFrom(codec.event_to_pb(state.trick))
    return response
