"""The rules' use cases (services/rules/use_cases/handlers.py) on fake ports: a hand log in
memory that checks the writer's position as JetStream would, and a seed source that
counts its callers. No server, no NATS."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pytest
from ddz.application.errors import Kind, Reason, Refusal
from ddz.domain.cards import parse_ranks
from ddz.domain.hand import (
    Bid,
    CommandRejected,
    Event,
    HandState,
    Phase,
    Play,
    Recorded,
    RejectReason,
    StartHand,
    decide,
)
from ddz.domain.hand.events import BidMade, MoveBy, Redealt
from ddz.domain.ruleset import CLASSIC
from ddz.domain.settlement import RoomSettings
from ddz.v1 import envelope_pb2
from hand_kit import SEATS, SEED, rigged

from services.rules.use_cases.cache import HandCache, KeyedLocks
from services.rules.use_cases.handlers import Rules

HAND = "h1"
PRODUCER = "rules@test"


@dataclass(frozen=True)
class At:
    version: int


class FakeHandLog:
    """Streams in memory; an append must start where the stream ends (single writer)."""

    def __init__(self) -> None:
        self.streams: dict[str, list[Recorded]] = {}
        self.reads = 0
        self.appends: list[tuple[str, str, str]] = []  # (causation, correlation, producer)

    async def read(self, hand_id: str) -> tuple[Sequence[Recorded], At]:
        self.reads += 1
        recorded = list(self.streams.get(hand_id, ()))
        return recorded, At(len(recorded))

    async def append(
        self,
        hand_id: str,
        after: At,
        recorded: Sequence[Recorded],
        *,
        causation_id: str,
        correlation_id: str,
        producer: str,
    ) -> tuple[At, list[envelope_pb2.EventEnvelope]]:
        stream = self.streams.setdefault(hand_id, [])
        if after.version != len(stream):
            raise Refusal.conflict(f"stream at {len(stream)}, writer at {after.version}")
        self.appends.append((causation_id, correlation_id, producer))
        public = []
        for event in recorded:
            stream.append(event)
            if not event.HIDDEN:
                public.append(
                    envelope_pb2.EventEnvelope(type=event.TYPE, stream_version=len(stream))
                )
        return At(len(stream)), public


class FakeSeeds:
    def __init__(self, seed: bytes = SEED, refusal: Refusal | None = None) -> None:
        self._seed = seed
        self.refusal = refusal
        self.asked: list[str] = []

    async def seed(self, hand_id: str) -> bytes:
        self.asked.append(hand_id)
        if self.refusal is not None:
            raise self.refusal
        return self._seed


def dealt(first_bidder: int = 0) -> list[Event]:
    """The first events of a classic hand, as the dealer records them."""
    start = StartHand(HAND, CLASSIC, RoomSettings(), SEATS, SEED, first_bidder=first_bidder)
    decision = decide(HandState(), start, SEED)
    assert isinstance(decision, list)
    return decision


@pytest.fixture
def hands() -> FakeHandLog:
    log = FakeHandLog()
    log.streams[HAND] = list(dealt())
    return log


@pytest.fixture
def seeds() -> FakeSeeds:
    return FakeSeeds()


@pytest.fixture
def rules(hands: FakeHandLog, seeds: FakeSeeds) -> Rules[At]:
    return Rules(hands, seeds, HandCache(10), KeyedLocks(), PRODUCER)


async def refusal_of(call: object) -> Refusal:
    with pytest.raises(Refusal) as caught:
        await call  # type: ignore[misc]
    return caught.value


async def test_an_accepted_command_is_recorded_and_advances_the_version(
    rules: Rules[At], hands: FakeHandLog
) -> None:
    start = len(hands.streams[HAND])
    decided = await rules.decide(HAND, Bid.call(0, 1), None, "req-1")
    assert (decided.accepted, decided.reason, decided.message) == (True, "", "")
    assert decided.version == start + 1
    assert [(e.type, e.stream_version) for e in decided.events] == [("bid_made", start + 1)]
    assert hands.streams[HAND][start:] == [BidMade(0, Bid.call(0, 1).action, 1, MoveBy.PLAYER)]
    assert hands.appends == [("req-1", HAND, PRODUCER)]
    # The next command decides on the cached hand, from the new version.
    second = await rules.decide(HAND, Bid.pass_(1), start + 1, "req-2")
    assert second.accepted and second.version == start + 2
    assert hands.reads == 1
    state, version = await rules.public_state(HAND)
    assert (state.turn, version) == (2, start + 2)


async def test_a_rules_refusal_is_answered_and_recorded_and_changes_nothing(
    rules: Rules[At], hands: FakeHandLog
) -> None:
    before, start = await rules.public_state(HAND)
    decided = await rules.decide(HAND, Bid.call(1, 1), None, "req-7")  # seat 0 bids first
    assert (decided.accepted, decided.reason) == (False, RejectReason.NOT_YOUR_TURN.value)
    assert decided.message
    assert decided.version == start + 1
    assert [e.type for e in decided.events] == [CommandRejected.TYPE]
    assert hands.streams[HAND][-1] == CommandRejected(
        Bid.call(1, 1), RejectReason.NOT_YOUR_TURN, decided.message, "req-7"
    )
    after, version = await rules.public_state(HAND)
    assert after == before and version == start + 1  # recorded, never folded


async def test_a_stale_expected_version_is_a_conflict_with_the_current_version(
    rules: Rules[At], hands: FakeHandLog
) -> None:
    start = len(hands.streams[HAND])
    refusal = await refusal_of(rules.decide(HAND, Bid.call(0, 1), start - 1, "req"))
    assert (refusal.kind, refusal.reason) == (Kind.CONFLICT, Reason.VERSION_CONFLICT)
    assert dict(refusal.metadata) == {"version": str(start)}
    assert len(hands.streams[HAND]) == start and hands.appends == []
    assert (await rules.decide(HAND, Bid.call(0, 1), start, "req")).accepted


async def test_a_stale_copy_is_read_again_and_the_command_decided_on_the_log(
    rules: Rules[At], hands: FakeHandLog
) -> None:
    """Another instance extended the hand behind this one's back: the append is refused,
    the hand read again, the command decided on what the log says; never a conflict."""
    await rules.public_state(HAND)  # cached now
    assert rules.cache.get(HAND) is not None
    hands.streams[HAND].append(BidMade(0, Bid.call(0, 1).action, 1))  # the other writer
    legal = await rules.decide(HAND, Bid.call(1, 2), None, "req")  # seat 1 is on turn now
    assert legal.accepted and hands.reads == 2 and rules.counts.stale == 1
    hands.streams[HAND].append(BidMade(2, Bid.pass_(2).action, 2))
    late = await rules.decide(HAND, Bid.call(2, 3), None, "req")  # seat 2 has bid already
    assert (late.accepted, late.reason) == (False, RejectReason.NOT_YOUR_TURN.value)
    assert hands.reads == 3 and rules.counts.stale == 2


async def test_a_caller_ahead_of_the_cached_copy_is_not_refused(
    rules: Rules[At], hands: FakeHandLog
) -> None:
    """A bot that saw the other instance's event sends its version: ours is read again."""
    await rules.public_state(HAND)
    hands.streams[HAND].append(BidMade(0, Bid.call(0, 1).action, 1))
    at = len(hands.streams[HAND])
    decided = await rules.decide(HAND, Bid.call(1, 2), at, "req")
    assert decided.accepted and decided.version == at + 1 and rules.counts.stale == 1


async def test_two_writers_at_once_is_a_conflict_after_one_more_try(
    hands: FakeHandLog, seeds: FakeSeeds
) -> None:
    """The log moves on again while we decide a second time: CONFLICT, nothing recorded."""

    class Busy(FakeHandLog):
        async def read(self, hand_id: str) -> tuple[Sequence[Recorded], At]:
            recorded, at = await super().read(hand_id)
            self.streams[hand_id].append(CommandRejected(Bid.pass_(2), RejectReason.NOT_YOUR_TURN,
                                                         "", "other"))  # fmt: skip
            return recorded, at

    busy = Busy()
    busy.streams[HAND] = list(hands.streams[HAND])
    rules = Rules(busy, seeds, HandCache(10), KeyedLocks(), PRODUCER)
    refusal = await refusal_of(rules.decide(HAND, Bid.call(0, 1), None, "req"))
    assert (refusal.kind, refusal.reason) == (Kind.CONFLICT, Reason.VERSION_CONFLICT)
    assert busy.reads == 2 and busy.appends == [] and rules.cache.get(HAND) is None


async def test_the_seed_is_asked_for_once_when_a_command_needs_it(
    rules: Rules[At], hands: FakeHandLog, seeds: FakeSeeds
) -> None:
    for _ in range(2):  # everyone passes twice: two re-deals, each from the seed
        for seat in (0, 1, 2):
            assert (await rules.decide(HAND, Bid.pass_(seat), None, "req")).accepted
    assert seeds.asked == [HAND]
    redeals = [e for e in hands.streams[HAND] if isinstance(e, Redealt)]
    assert [r.round for r in redeals] == [1, 2]


async def test_no_seed_from_the_dealer_is_unavailable_and_records_nothing(
    hands: FakeHandLog,
) -> None:
    seeds = FakeSeeds(refusal=Refusal.not_found(Reason.UNKNOWN_HAND, "dealer: no hand"))
    rules = Rules(hands, seeds, HandCache(10), KeyedLocks(), PRODUCER)
    await rules.decide(HAND, Bid.pass_(0), None, "req")
    await rules.decide(HAND, Bid.pass_(1), None, "req")
    start = len(hands.streams[HAND])
    refusal = await refusal_of(rules.decide(HAND, Bid.pass_(2), None, "req"))
    assert refusal.kind is Kind.UNAVAILABLE
    assert "dealer: no hand" in refusal.message
    assert len(hands.streams[HAND]) == start


@pytest.mark.parametrize("hand_id", ["never-dealt", ""])
async def test_an_unknown_hand_is_not_found(
    rules: Rules[At], hands: FakeHandLog, hand_id: str
) -> None:
    for call in (rules.decide(hand_id, Bid.pass_(0), None, "req"), rules.public_state(hand_id)):
        refusal = await refusal_of(call)
        assert (refusal.kind, refusal.reason) == (Kind.NOT_FOUND, Reason.UNKNOWN_HAND)
    assert hand_id not in hands.streams or not hands.streams[hand_id]
    assert rules.cache.get(hand_id) is None


async def test_an_ended_hand_is_not_kept(hands: FakeHandLog, seeds: FakeSeeds) -> None:
    rules = Rules(hands, seeds, HandCache(10), KeyedLocks(), PRODUCER)
    hands.streams[HAND] = list(rigged(CLASSIC, ["3", "44", "55"], landlord=0).events)
    decided = await rules.decide(HAND, Play(0, parse_ranks("3")), None, "req")
    assert decided.accepted and seeds.asked == ["rigged"]  # the end reveals the seed
    assert rules.cache.get(HAND) is None
    state, version = await rules.public_state(HAND)  # rebuilt, answered, not kept
    assert state.phase is Phase.ENDED and version == decided.version
    assert rules.cache.get(HAND) is None and hands.reads == 2
