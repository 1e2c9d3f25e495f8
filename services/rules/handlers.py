"""The rules' use cases: decide a seat's command on a hand, tell a hand's public state.

Per hand, commands run one at a time (``KeyedLocks``) against the cached state; a
cache miss rebuilds the hand from its log. The rules themselves live in
``ddz.domain.hand.decide`` only: this module loads, decides, records.

- a rule's refusal (not your turn, does not beat, ...) is an answer, not an error:
  ``accepted = False`` with the domain's reason, and a ``CommandRejected`` is recorded.
- an unknown hand is ``Refusal`` NOT_FOUND/UNKNOWN_HAND; nothing is recorded.
- another writer got there first, or ``expected_version`` did not hold: ``Refusal``
  CONFLICT/VERSION_CONFLICT; after a failed append the cached hand is dropped and
  rebuilt from the log on the next call.
- no seed to be had from the dealer: ``Refusal`` UNAVAILABLE.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Generic

import structlog
from ddz.application.errors import Reason, Refusal
from ddz.domain.hand import (
    CommandRejected,
    Event,
    HandState,
    Phase,
    Recorded,
    Rejection,
    SeatCommand,
    SeedRequired,
    decide,
    evolve,
    hand_events,
    replay,
)
from ddz.v1 import envelope_pb2

from .cache import HandCache, KeyedLocks, LiveHand
from .ports import HandLog, P, SeedSource

log = structlog.get_logger("ddz.rules")


@dataclass(frozen=True, slots=True)
class Decided:
    """A command decided: accepted, or refused by the rules (``reason`` is then the
    domain's ``RejectReason`` value); either way recorded, the stream now at
    ``version``, and ``events`` the public envelopes of what was recorded."""

    accepted: bool
    reason: str
    message: str
    version: int
    events: Sequence[envelope_pb2.EventEnvelope]


class Rules(Generic[P]):
    """Decides the commands of the hands it is asked about. Another instance deciding the
    same hand at the same time loses at publish (a CONFLICT): the hand never forks."""

    def __init__(
        self,
        hands: HandLog[P],
        seeds: SeedSource,
        cache: HandCache[P],
        locks: KeyedLocks,
        producer: str,
    ) -> None:
        self.hands = hands
        self.seeds = seeds
        self.cache = cache
        self.locks = locks
        self.producer = producer

    async def decide(
        self,
        hand_id: str,
        command: SeatCommand,
        expected_version: int | None,
        request_id: str,
    ) -> Decided:
        async with self.locks.hold(hand_id):
            hand = await self._load(hand_id)
            version = hand.cursor.version
            if expected_version is not None and expected_version != version:
                raise Refusal.conflict(
                    f"hand {hand_id} is at version {version}, not {expected_version}",
                    version=str(version),
                )
            decision = await self._decide(hand, command)
            refused: Rejection | None = None
            recorded: list[Recorded]
            if isinstance(decision, Rejection):
                refused = decision
                recorded = [CommandRejected(command, refused.code, refused.message, request_id)]
            else:
                recorded = list(decision)
            try:
                cursor, public = await self.hands.append(
                    hand_id, hand.cursor, recorded,
                    causation_id=request_id, correlation_id=hand_id, producer=self.producer,
                )  # fmt: skip
            except BaseException:
                # A conflict, or part of the decision may be out: rebuild from the log.
                self.cache.drop(hand_id)
                raise
            self._advance(hand_id, hand, cursor, hand_events(recorded))
        return Decided(
            accepted=refused is None,
            reason=refused.code.value if refused else "",
            message=refused.message if refused else "",
            version=cursor.version,
            events=public,
        )

    async def public_state(self, hand_id: str) -> tuple[HandState, int]:
        """The hand's state and its stream's version (the caller shows only what
        everyone at the table may know)."""
        async with self.locks.hold(hand_id):
            hand = await self._load(hand_id)
        return hand.state, hand.cursor.version

    # -- the steps --------------------------------------------------------------------

    async def _load(self, hand_id: str) -> LiveHand[P]:
        """The cached hand, or rebuilt from its log; UNKNOWN_HAND when it has no events."""
        hand = self.cache.get(hand_id)
        if hand is not None:
            return hand
        recorded, cursor = await self.hands.read(hand_id)
        if not recorded:
            raise Refusal.not_found(Reason.UNKNOWN_HAND, f"no hand {hand_id!r}")
        state = replay(hand_events(recorded))
        hand = LiveHand(state, cursor)
        log.info("hand_loaded", version=cursor.version, phase=state.phase.value)
        if state.phase is not Phase.ENDED:
            self.cache.put(hand_id, hand)
        return hand

    async def _decide(self, hand: LiveHand[P], command: SeatCommand) -> list[Event] | Rejection:
        try:
            return decide(hand.state, command, hand.seed)
        except SeedRequired:
            if hand.seed is not None:
                raise  # the seed we hold does not match the commitment: a bug, INTERNAL
        hand.seed = await self._seed(hand.state.hand_id)
        return decide(hand.state, command, hand.seed)

    async def _seed(self, hand_id: str) -> bytes:
        try:
            return await self.seeds.seed(hand_id)
        except Refusal as refusal:
            log.error("seed_unavailable", kind=refusal.kind.name, details=refusal.message)
            raise Refusal.unavailable(
                f"the dealer cannot give this hand's seed now: {refusal.message}"
            ) from None

    def _advance(self, hand_id: str, hand: LiveHand[P], cursor: P, events: list[Event]) -> None:
        state = hand.state
        for event in events:
            state = evolve(state, event)
        hand.state, hand.cursor = state, cursor
        if state.phase is Phase.ENDED:
            self.cache.drop(hand_id)  # nothing left to decide but refusals
        else:
            self.cache.put(hand_id, hand)
