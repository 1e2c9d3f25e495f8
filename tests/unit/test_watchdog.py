"""The bot's hand-stall watchdog, on fake time and fakes of its ports: which hands it
finds stalled, what each gets, and that it acts once per stall period."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence

import pytest
from ddz.application.errors import Refusal
from ddz.application.hand_fold import HandFold
from ddz.domain.hand import Disconnect, Hand, Phase, Rejection, SeatInfo, StartHand, TimeOut
from ddz.domain.ruleset import CLASSIC
from ddz.domain.settlement import RoomSettings
from ddz.v1 import envelope_pb2, rules_pb2

from services.bot.use_cases.ports import BotMetrics, Move
from services.bot.use_cases.watchdog import Remedy, Stall, Watchdog, person_on_turn, remedy_for

STALL_AFTER = 25.0  # the turn timeout and the margin
PERSON_FIRST = (SeatInfo("ann"), SeatInfo("bot-1", is_bot=True), SeatInfo("bot-2", is_bot=True))


def fold_of(hand_id: str, *commands: object, seats: Sequence[SeatInfo] = PERSON_FIRST) -> HandFold:
    """A hand dealt with seat 0 to bid first, then ``commands``, as the feed folds it."""
    hand = Hand()
    start = StartHand(hand_id, CLASSIC, RoomSettings(), tuple(seats), bytes(32), first_bidder=0)
    for command in (start, *commands):
        assert not isinstance(hand.execute(command), Rejection), command  # type: ignore[arg-type]
    return HandFold(hand_id, state=hand.state, version=len(hand.events))


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class FakeHands:
    def __init__(self, folds: Iterable[HandFold]) -> None:
        self.hands = {fold.hand_id: fold for fold in folds}
        self.loaded: list[str] = []
        self.learned: list[tuple[str, int]] = []

    def get(self, hand_id: str) -> HandFold | None:
        return self.hands.get(hand_id)

    async def learn(self, hand_id: str, envelopes: Iterable[envelope_pb2.EventEnvelope]) -> None:
        self.learned.append((hand_id, len(list(envelopes))))

    async def load(self, hand_id: str) -> HandFold | None:
        self.loaded.append(hand_id)
        return self.hands.get(hand_id)


class FakeRules:
    def __init__(self, answer: rules_pb2.DecideResponse | Refusal | None = None) -> None:
        self.answer = answer or rules_pb2.DecideResponse(
            accepted=True, events=[envelope_pb2.EventEnvelope()]
        )
        self.moves: list[Move] = []

    async def decide(self, move: Move) -> rules_pb2.DecideResponse:
        self.moves.append(move)
        if isinstance(self.answer, Refusal):
            raise self.answer
        return self.answer


def watchdog(
    *folds: HandFold, rules: FakeRules | None = None, metrics: BotMetrics | None = None
) -> tuple[Watchdog, Clock, FakeHands, FakeRules, list[str]]:
    clock, hands, rules, woken = Clock(), FakeHands(folds), rules or FakeRules(), []
    dog = Watchdog(
        hands, rules, woken.append, stall_after=STALL_AFTER, clock=clock, metrics=metrics
    )
    for fold in folds:
        dog.seen(fold)
    return dog, clock, hands, rules, woken


def test_what_a_stalled_hand_gets() -> None:
    waiting_on_ann = fold_of("h")
    assert person_on_turn(waiting_on_ann.state) == 0
    assert remedy_for(waiting_on_ann.state) == (Remedy.TIME_OUT, 0)
    # Ann dropped: the bot plays her seat, so a stall there is the bot's to look at again.
    dropped = fold_of("h", Disconnect(0))
    assert person_on_turn(dropped.state) is None
    assert remedy_for(dropped.state) == (Remedy.RELOAD, None)
    bots_only = fold_of("h", seats=[SeatInfo(f"bot-{i}", is_bot=True) for i in range(3)])
    assert remedy_for(bots_only.state) == (Remedy.RELOAD, None)
    assert remedy_for(HandFold("none").state) is None  # not dealt: nothing to watch


def test_a_person_on_turn_is_timed_out_once_the_stall_time_has_passed() -> None:
    """The backstop times the turn out as the table's clock would (the bot moves once
    for the person): never a disconnect, so never an escapee (RULE_DECISIONS §10.2)."""
    fold = fold_of("h")
    dog, clock, hands, rules, _woken = watchdog(fold)
    clock.now += STALL_AFTER - 0.01
    assert dog.stalled() == []
    clock.now += 0.01
    assert dog.stalled() == [Stall("h", Remedy.TIME_OUT, fold.version, 0)]

    assert asyncio.run(dog.check()) == [Stall("h", Remedy.TIME_OUT, fold.version, 0)]
    (move,) = rules.moves
    assert (move.hand_id, move.seat) == ("h", 0)
    assert isinstance(move.command, TimeOut) and move.command.seat == 0
    assert move.command.turn_seconds == STALL_AFTER and move.command.auto_play_after == 2
    assert move.expected_version == fold.version  # a no-op if the hand moved meanwhile
    assert hands.learned == [("h", 1)]  # the answer's events go to the feed at once
    assert dog.remedies[Remedy.TIME_OUT] == 1


def test_each_stall_is_acted_on_once_per_stall_period() -> None:
    dog, clock, _hands, rules, _woken = watchdog(fold_of("h"))
    clock.now += STALL_AFTER
    asyncio.run(dog.check())
    clock.now += STALL_AFTER / 2
    assert asyncio.run(dog.check()) == []
    clock.now += STALL_AFTER / 2
    assert len(asyncio.run(dog.check())) == 1  # the hand still has not moved: again
    assert len(rules.moves) == 2


def test_any_change_of_the_hand_restarts_its_stall_time() -> None:
    fold = fold_of("h")
    dog, clock, _hands, _rules, _woken = watchdog(fold)
    for _ in range(5):
        clock.now += STALL_AFTER - 1
        dog.seen(fold)  # an event came (a move, a refused command, a view...)
        assert dog.stalled() == []
    clock.now += STALL_AFTER
    assert [s.hand_id for s in dog.stalled()] == ["h"]


def test_a_hand_waiting_on_the_bot_is_read_again_and_looked_at() -> None:
    dropped = fold_of("h", Disconnect(0))
    dog, clock, hands, rules, woken = watchdog(dropped)
    clock.now += STALL_AFTER
    assert asyncio.run(dog.check()) == [Stall("h", Remedy.RELOAD, dropped.version)]
    assert hands.loaded == ["h"] and woken == ["h"]
    assert rules.moves == []


@pytest.mark.parametrize(
    "refusal", [Refusal.conflict("the hand moved"), Refusal.unavailable("down")]
)
def test_a_refused_disconnect_is_let_go(refusal: Refusal) -> None:
    """CONFLICT: the hand moved after the watchdog looked (the person acted at the last
    moment), which is what ``expected_version`` is for; anything else is logged and tried
    again a stall period later."""
    dog, clock, hands, rules, _woken = watchdog(fold_of("h"), rules=FakeRules(refusal))
    clock.now += STALL_AFTER
    asyncio.run(dog.check())
    assert len(rules.moves) == 1 and hands.learned == []
    clock.now += STALL_AFTER
    asyncio.run(dog.check())
    assert len(rules.moves) == 2


def test_hands_over_or_no_longer_followed_are_forgotten() -> None:
    ended = fold_of("ended")
    gone = fold_of("gone")
    dog, clock, hands, _rules, _woken = watchdog(ended, gone, fold_of("live"))
    ended.state = Hand().state  # as if it were over: no longer in play
    assert ended.state.phase is not Phase.BIDDING
    del hands.hands["gone"]
    clock.now += STALL_AFTER
    assert [s.hand_id for s in dog.stalled()] == ["live"]
    assert dog.stalled() == [Stall("live", Remedy.TIME_OUT, hands.hands["live"].version, 0)]
    dog.seen(ended)  # an ended hand's last event: not watched
    clock.now += STALL_AFTER
    assert [s.hand_id for s in dog.stalled()] == ["live"]


def test_the_stalled_count_keeps_a_remedied_hand_until_an_event_comes() -> None:
    """``ddz_hands_stalled``: a remedy restarts the watchdog's own stall time, not the
    count an operator is alerted on; an event, or the hand's end, does."""
    moving, stuck = fold_of("moving"), fold_of("stuck")
    dog, clock, hands, _rules, _woken = watchdog(moving, stuck)
    clock.now += STALL_AFTER - 1
    assert dog.stalled_count() == 0
    dog.seen(moving)
    clock.now += 1
    assert dog.stalled_count() == 1  # "stuck" only
    asyncio.run(dog.check())  # remedied...
    assert dog.stalled_count() == 1  # ...and still no event
    clock.now += STALL_AFTER
    assert dog.stalled_count() == 2
    dog.seen(stuck)
    assert dog.stalled_count() == 1
    del hands.hands["moving"]  # no longer followed: forgotten at the next look
    dog.stalled()
    assert dog.stalled_count() == 0


def test_a_running_watchdog_is_what_the_metric_reads() -> None:
    from ddz.adapters.telemetry import metrics

    def exported() -> float | None:
        return metrics.REGISTRY.get_sample_value("ddz_hands_stalled")

    dog, clock, _hands, _rules, _woken = watchdog(fold_of("h"), metrics=metrics)
    clock.now += STALL_AFTER

    async def run() -> None:
        dog.every = 3600.0  # no check meanwhile: the hand stays stalled
        dog.start()
        assert exported() == 1
        await dog.close()
        assert exported() == 0

    asyncio.run(run())
