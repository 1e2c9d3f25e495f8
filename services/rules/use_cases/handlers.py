"""The rules' use cases: decide a seat's command on a hand, tell a hand's public state.

Per hand, commands run one at a time (``KeyedLocks``) against the cached state; a
cache miss rebuilds the hand from its log. The rules themselves live in
``ddz.domain.hand.decide`` only: this module loads, decides, records.

- a rule's refusal (not your turn, does not beat, ...) is an answer, not an error:
  ``accepted = False`` with the domain's reason, and a ``CommandRejected`` is recorded.
- an unknown hand is ``Refusal`` NOT_FOUND/UNKNOWN_HAND; nothing is recorded.
- ``expected_version`` did not hold: ``Refusal`` CONFLICT/VERSION_CONFLICT, with the
  version the hand is at. Never because of this instance's own copy: a cached hand
  behind the caller's version is read again from the log before it is compared.
- another writer extended the hand since this instance cached it (the hand moved to
  another instance and back, see docs/ARCHITECTURE.md "Rules instances"): the append
  is refused, the hand read again from the log and the command decided once more on
  what the log says. Refused again (two writers at once): CONFLICT/VERSION_CONFLICT.
  After any failed append the cached hand is dropped.
- no seed to be had from the dealer: ``Refusal`` UNAVAILABLE.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Generic

import structlog
from ddz.application.errors import Kind, Reason, Refusal
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


@dataclass
class Counts:
    """What this instance did since it started (tests and operators compare instances)."""

    decided: int = 0  # commands decided and recorded (accepted or refused by the rules)
    loaded: int = 0  # hands read from the log (not in the cache)
    stale: int = 0  # of those, read again because another instance had extended them


class StaleHand(Exception):
    """The append was refused: the log has events our copy of the hand has not."""

    def __init__(self, refusal: Refusal) -> None:
        super().__init__(refusal.message)
        self.refusal = refusal


class Rules(Generic[P]):
    """Decides the commands of the hands it is asked about. Another instance deciding the
    same hand at the same time loses at publish: the hand never forks, and the loser
    decides again on the winner's state."""

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
        self.counts = Counts()

    async def decide(
        self,
        hand_id: str,
        command: SeatCommand,
        expected_version: int | None,
        request_id: str,
    ) -> Decided:
        async with self.locks.hold(hand_id):
            hand, cached = await self._load(hand_id)
            if cached and expected_version is not None and expected_version > hand.cursor.version:
                hand = await self._reload(hand_id)  # the caller has seen more than our copy
            try:
                return await self._decide_and_record(
                    hand_id, hand, command, expected_version, request_id
                )
            except StaleHand:
                pass
            # Another instance extended the hand since we read it: decide once more on
            # the log's state, as if the command had come here first.
            hand = await self._reload(hand_id)
            try:
                return await self._decide_and_record(
                    hand_id, hand, command, expected_version, request_id
                )
            except StaleHand as stale:
                raise stale.refusal from None  # another writer beside us, right now

    async def _decide_and_record(
        self,
        hand_id: str,
        hand: LiveHand[P],
        command: SeatCommand,
        expected_version: int | None,
        request_id: str,
    ) -> Decided:
        """Check the version, decide, record; ``StaleHand`` when the log had moved on."""
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
        except Refusal as refusal:
            self.cache.drop(hand_id)  # a conflict, or part of the decision may be out
            if refusal.kind is Kind.CONFLICT:
                raise StaleHand(refusal) from None
            raise
        except BaseException:
            self.cache.drop(hand_id)  # part of the decision may be out: rebuild from the log
            raise
        self._advance(hand_id, hand, cursor, hand_events(recorded))
        self.counts.decided += 1
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
            hand, _ = await self._load(hand_id)
        return hand.state, hand.cursor.version

    # -- the steps --------------------------------------------------------------------

    async def _load(self, hand_id: str) -> tuple[LiveHand[P], bool]:
        """The cached hand (and True), or rebuilt from its log (and False);
        UNKNOWN_HAND when it has no events."""
        hand = self.cache.get(hand_id)
        if hand is not None:
            return hand, True
        recorded, cursor = await self.hands.read(hand_id)
        if not recorded:
            raise Refusal.not_found(Reason.UNKNOWN_HAND, f"no hand {hand_id!r}")
        state = replay(hand_events(recorded))
        hand = LiveHand(state, cursor)
        self.counts.loaded += 1
        log.info("hand_loaded", version=cursor.version, phase=state.phase.value)
        if state.phase is not Phase.ENDED:
            self.cache.put(hand_id, hand)
        return hand, False

    async def _reload(self, hand_id: str) -> LiveHand[P]:
        """Our copy of the hand is behind its log: drop it, read the log again."""
        self.cache.drop(hand_id)
        self.counts.stale += 1
        log.info("hand_stale")  # the hand's commands reached another instance meanwhile
        hand, _ = await self._load(hand_id)
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
