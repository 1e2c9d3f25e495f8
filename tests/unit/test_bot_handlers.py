"""The bot service's application layer with fake ports (no server, no NATS): moves
batched per round, autoplay's answer to each kind of refusal, the Suggest/GetStats
use cases; and the gRPC adapter's mapping of answers to refusals."""

from __future__ import annotations

import asyncio
import dataclasses
import random
from collections.abc import Iterable, Sequence
from typing import Any

import grpc
import pytest
from ddz.application.errors import Kind, Reason, Refusal
from ddz.application.hand_fold import HandFold
from ddz.domain.hand import (
    Bid,
    Command,
    Hand,
    Phase,
    PlayerView,
    Rejection,
    SeatInfo,
    StartHand,
    view_for,
)
from ddz.domain.players import GreedyPlayer
from ddz.domain.ruleset import CLASSIC
from ddz.domain.settlement import RoomSettings
from ddz.v1 import envelope_pb2, rules_pb2

from services.bot.adapters.clients import RulesClient
from services.bot.use_cases import autoplay as autoplay_module
from services.bot.use_cases.autoplay import AutoPlay
from services.bot.use_cases.batcher import DecideBatcher
from services.bot.use_cases.handlers import GetStats, Suggest
from services.bot.use_cases.ports import Move, Outcome

BOTS = (SeatInfo("bot-0", is_bot=True), SeatInfo("bot-1", is_bot=True),
        SeatInfo("bot-2", is_bot=True))  # fmt: skip


def dealt(hand_id: str = "h1", seats: tuple[SeatInfo, SeatInfo, SeatInfo] = BOTS) -> HandFold:
    """A freshly dealt hand, as the feed would hold it after its first events."""
    hand = Hand()
    result = hand.execute(StartHand(hand_id, CLASSIC, RoomSettings(), seats, bytes([7]) * 32))
    assert not isinstance(result, Rejection)
    return HandFold(hand_id, state=hand.state, version=len(hand.events))


def move(hand_id: str, seat: int = 0) -> Move:
    return Move(hand_id, seat, Bid.pass_(seat), expected_version=seat, request_id=hand_id)


def accepted(version: int = 0) -> rules_pb2.DecideResponse:
    return rules_pb2.DecideResponse(accepted=True, version=version)


class FakeRules:
    """The ``Rules`` port: answers from a script (one outcome per move, in order),
    else accepts; records every batch it was sent."""

    def __init__(self, *script: Outcome | Refusal) -> None:
        self.script = list(script)
        self.batches: list[list[Move]] = []
        self.fail_call: Refusal | None = None

    @property
    def moves(self) -> list[Move]:
        return [m for batch in self.batches for m in batch]

    async def decide_batch(self, moves: Sequence[Move]) -> Sequence[Outcome]:
        self.batches.append(list(moves))
        await asyncio.sleep(0.01)
        if self.fail_call is not None:
            raise self.fail_call
        return [self.script.pop(0) if self.script else accepted(m.seat) for m in moves]


class FakeHands:
    """The ``Hands`` port: a dict of folds; ``load`` brings a hand one version on, as
    when the bus delivers the event a conflict was about."""

    def __init__(self, *folds: HandFold) -> None:
        self.hands = {fold.hand_id: fold for fold in folds}
        self.learned: list[tuple[str, int]] = []
        self.loads: list[str] = []
        self.held: list[str] = []
        self.released: list[str] = []

    def get(self, hand_id: str) -> HandFold | None:
        return self.hands.get(hand_id)

    async def learn(self, hand_id: str, envelopes: Iterable[envelope_pb2.EventEnvelope]) -> None:
        self.learned.append((hand_id, len(list(envelopes))))

    def hold(self, hand_id: str) -> None:
        self.held.append(hand_id)

    async def release(self, hand_id: str) -> None:
        self.released.append(hand_id)

    async def load(self, hand_id: str) -> HandFold | None:
        self.loads.append(hand_id)
        fold = self.hands[hand_id]
        fold.version += 1  # the state stays on the same turn: a rejection was recorded
        return fold


def greedy() -> GreedyPlayer:
    return GreedyPlayer(random.Random(1))


async def until(condition: Any, timeout: float = 3.0) -> None:
    async with asyncio.timeout(timeout):
        while not condition():
            await asyncio.sleep(0.005)


# -- the batcher ---------------------------------------------------------------------


async def test_moves_ready_together_share_calls_and_get_their_own_answers() -> None:
    rules = FakeRules()
    batcher = DecideBatcher(rules, max_in_flight=1)
    answers = await asyncio.gather(*(batcher.decide(move(f"h{i}", i % 3)) for i in range(6)))
    assert [a.version for a in answers] == [i % 3 for i in range(6)]
    # The first goes alone at once; the rest queued meanwhile and go in one call.
    assert [[m.hand_id for m in b] for b in rules.batches] == [
        ["h0"],
        ["h1", "h2", "h3", "h4", "h5"],
    ]
    assert batcher.calls == 2


async def test_a_moves_refusal_is_raised_for_that_move_only() -> None:
    stale = Refusal.conflict("stale")
    batcher = DecideBatcher(FakeRules(accepted(2), stale))
    good, bad = await asyncio.gather(
        batcher.decide(move("h1", 2)), batcher.decide(move("h2", 1)), return_exceptions=True
    )
    assert isinstance(good, rules_pb2.DecideResponse) and good.version == 2
    assert bad is stale


async def test_a_failed_call_refuses_every_move_it_carried() -> None:
    rules = FakeRules()
    rules.fail_call = Refusal.unavailable("rules: connection refused")
    batcher = DecideBatcher(rules, max_in_flight=1)
    results = await asyncio.gather(
        *(batcher.decide(move(f"h{i}")) for i in range(3)), return_exceptions=True
    )
    assert all(isinstance(r, Refusal) and r.kind is Kind.UNAVAILABLE for r in results)


@pytest.mark.parametrize("size", [1, 3])
async def test_batches_never_exceed_max_batch(size: int) -> None:
    rules = FakeRules()
    batcher = DecideBatcher(rules, max_batch=size)
    await asyncio.gather(*(batcher.decide(move(f"h{i}")) for i in range(7)))
    assert max(len(b) for b in rules.batches) <= size
    assert sorted(m.hand_id for m in rules.moves) == sorted(f"h{i}" for i in range(7))


async def test_an_answer_with_too_few_outcomes_refuses_the_batch_as_internal() -> None:
    class Short(FakeRules):
        async def decide_batch(self, moves: Sequence[Move]) -> Sequence[Outcome]:
            return []

    with pytest.raises(Refusal) as caught:
        await DecideBatcher(Short()).decide(move("h1"))
    assert caught.value.kind is Kind.INTERNAL


# -- autoplay ------------------------------------------------------------------------


@pytest.fixture
def quick(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(autoplay_module, "RETRY_DELAYS", (0.0, 0.0))
    monkeypatch.setattr(autoplay_module, "RECHECK_AFTER", 0.01)


async def play(rules: FakeRules, hands: FakeHands, hand_id: str, calls: int) -> AutoPlay:
    auto = AutoPlay(rules, greedy())
    auto.attach(hands)
    auto.kick(hand_id)
    await until(lambda: len(rules.moves) >= calls and not auto._tasks)
    return auto


async def test_autoplay_sends_the_move_again_when_the_rules_are_unavailable(quick: None) -> None:
    fold = dealt()
    rules = FakeRules(
        Refusal.unavailable("rules: down"), Refusal(Kind.TIMEOUT, "REASON_UNSPECIFIED", "slow")
    )
    hands = FakeHands(fold)
    auto = await play(rules, hands, "h1", calls=3)
    first, second, third = rules.moves
    assert first == second == third  # the same move, the same request id: decided once
    assert first.seat == fold.state.turn and first.expected_version == fold.version
    assert (auto.stats.errors, auto.stats.accepted, auto.stats.conflicts) == (2, 1, 0)
    assert hands.learned == [("h1", 0)]  # the answer's events folded at once
    await auto.close()


async def test_autoplay_decides_again_on_the_new_version_after_a_conflict(quick: None) -> None:
    fold = dealt()
    version = fold.version
    rules = FakeRules(Refusal.conflict("stale"))
    hands = FakeHands(fold)
    auto = await play(rules, hands, "h1", calls=2)
    stale, fresh = rules.moves
    assert (stale.expected_version, fresh.expected_version) == (version, version + 1)
    assert stale.request_id != fresh.request_id  # a new decision, not a resend
    assert hands.loads == ["h1"]  # nothing came: the hand was read from the bus again
    assert (auto.stats.conflicts, auto.stats.accepted, auto.stats.errors) == (1, 1, 0)
    await auto.close()


async def test_autoplay_gives_up_a_move_the_rules_cannot_decide(quick: None) -> None:
    rules = FakeRules(Refusal.not_found(Reason.UNKNOWN_HAND, "rules: no hand 'h1'"))
    auto = await play(rules, FakeHands(dealt()), "h1", calls=1)
    await asyncio.sleep(0.05)
    assert len(rules.moves) == 1  # never retried: it would fail the same way
    assert (auto.stats.errors, auto.stats.accepted) == (1, 0)
    await auto.close()


async def test_autoplay_falls_back_once_then_waits_when_refused(quick: None) -> None:
    refused = rules_pb2.DecideResponse(accepted=False, reason="does_not_beat")
    fold = dealt()
    rules = FakeRules(refused, refused)

    class Caller:
        def act(self, view: PlayerView) -> Command:
            return Bid.call(view.seat, 3)  # not the fallback (a pass)

    auto = AutoPlay(rules, Caller())
    auto.attach(FakeHands(fold))
    auto.kick("h1")
    await until(lambda: len(rules.moves) >= 2 and not auto._tasks)
    bid, fallback = (m.command for m in rules.moves)
    # the bot's moves say they are the bot's (by_bot), the fallback too
    assert bid == dataclasses.replace(Bid.call(fold.state.turn, 3), by_bot=True)
    assert fallback == dataclasses.replace(Bid.pass_(fold.state.turn), by_bot=True)
    assert auto.stats.refused == 2
    auto.kick("h1")  # refused twice at this version: it does not try again
    await until(lambda: not auto._tasks)
    assert len(rules.moves) == 2
    await auto.close()


async def test_autoplay_leaves_a_persons_turn_alone(quick: None) -> None:
    people = (SeatInfo("p0"), SeatInfo("p1"), SeatInfo("p2"))
    rules = FakeRules()
    auto = AutoPlay(rules, greedy())
    auto.attach(FakeHands(dealt(seats=people)))
    auto.kick("h1")
    await until(lambda: not auto._tasks)
    assert rules.moves == []
    await auto.close()


# -- Suggest and GetStats ------------------------------------------------------------


def lookup(*folds: HandFold) -> Any:
    known = {fold.hand_id: fold for fold in folds}

    async def find(hand_id: str) -> HandFold | None:
        return known.get(hand_id)

    return find


async def refusal_of(call: Any) -> Refusal:
    with pytest.raises(Refusal) as caught:
        await call
    return caught.value


async def test_suggest_gives_a_legal_move_for_the_seat_on_turn() -> None:
    fold = dealt()
    suggest = Suggest(lookup(fold), greedy())
    turn = fold.state.turn
    suggestion = await suggest("h1", turn, min_version=0, wait=0.1)
    assert suggestion.version == fold.version
    assert suggestion.command in view_for(fold.state, turn).legal_bids()


async def test_suggest_refuses_with_the_reason_decide_would_give() -> None:
    fold = dealt()
    suggest = Suggest(lookup(fold), greedy())
    other = (fold.state.turn + 1) % 3
    cases = [
        (suggest("nope", 0, 0, 0.1), Kind.NOT_FOUND, Reason.UNKNOWN_HAND),
        (suggest("h1", 3, 0, 0.1), Kind.INVALID, Reason.UNKNOWN_SEAT),
        (suggest("h1", other, 0, 0.1), Kind.PRECONDITION, Reason.NOT_YOUR_TURN),
    ]
    for call, kind, reason in cases:
        refusal = await refusal_of(call)
        assert (refusal.kind, refusal.reason) == (kind, reason), refusal
    assert "no hand 'nope'" in (await refusal_of(suggest("nope", 0, 0, 0.1))).message


async def test_suggest_waits_for_min_version_then_answers_on_what_it_has() -> None:
    fold = dealt()
    suggest = Suggest(lookup(fold), greedy())
    started = asyncio.get_running_loop().time()
    suggestion = await suggest("h1", fold.state.turn, fold.version + 5, wait=0.05)
    assert asyncio.get_running_loop().time() - started >= 0.04
    assert suggestion.version == fold.version


async def test_suggest_refuses_an_ended_hand_as_wrong_phase() -> None:
    from dataclasses import replace

    fold = dealt()
    fold.state = replace(fold.state, phase=Phase.ENDED)
    refusal = await refusal_of(Suggest(lookup(fold), greedy())("h1", 0, 0, 0.1))
    assert (refusal.kind, refusal.reason) == (Kind.PRECONDITION, Reason.WRONG_PHASE)


async def test_get_stats_reports_this_instances_moves_and_hands(quick: None) -> None:
    rules = FakeRules()
    hands = FakeHands(dealt())
    auto = await play(rules, hands, "h1", calls=1)
    stats = GetStats(auto, "greedy")()
    assert (stats.player, stats.hands_in_play, stats.moves.accepted) == ("greedy", 1, 1)
    assert sum(stats.moves.counts) == 1  # one latency recorded
    await auto.close()


# -- the gRPC adapter ----------------------------------------------------------------


class _Failed(grpc.aio.AioRpcError):  # type: ignore[misc]
    def __init__(self, code: grpc.StatusCode, details: str = "no") -> None:
        super().__init__(code, grpc.aio.Metadata(), grpc.aio.Metadata(), details)


class FakeStub:
    """``RulesServiceStub``: DecideBatch answers a status outcome for hand "bad"."""

    def __init__(self, batch_error: grpc.StatusCode | None = None) -> None:
        self.batch_error = batch_error
        self.singles: list[str] = []

    async def DecideBatch(self, request: Any, timeout: float) -> Any:
        if self.batch_error is not None:
            raise _Failed(self.batch_error)
        outcomes = []
        for command in request.commands:
            if command.hand_id == "bad":
                outcomes.append(rules_pb2.DecideOutcome(
                    code=grpc.StatusCode.ABORTED.value[0], reason="VERSION_CONFLICT",
                    message="stale"))  # fmt: skip
            else:
                outcomes.append(rules_pb2.DecideOutcome(response=accepted(command.seat)))
        return rules_pb2.DecideBatchResponse(outcomes=outcomes)

    async def Decide(self, request: Any, timeout: float) -> Any:
        self.singles.append(request.hand_id)
        if request.hand_id == "down":
            raise _Failed(grpc.StatusCode.UNAVAILABLE, "connection refused")
        return accepted(request.seat)


async def test_the_client_maps_a_status_outcome_to_its_refusal() -> None:
    client = RulesClient(FakeStub(), timeout=1.0)  # type: ignore[arg-type]
    good, bad = await client.decide_batch([move("h1", 2), move("bad", 1)])
    assert isinstance(good, rules_pb2.DecideResponse) and good.version == 2
    assert isinstance(bad, Refusal)
    assert (bad.kind, bad.reason, bad.message) == (Kind.CONFLICT, Reason.VERSION_CONFLICT, "stale")


async def test_the_client_turns_a_failed_call_into_a_refusal() -> None:
    client = RulesClient(FakeStub(grpc.StatusCode.DEADLINE_EXCEEDED), timeout=1.0)  # type: ignore[arg-type]
    refusal = await refusal_of(client.decide_batch([move("h1")]))
    assert refusal.kind is Kind.TIMEOUT and refusal.message.startswith("rules: ")


async def test_a_rules_service_without_decide_batch_gets_one_decide_per_move() -> None:
    stub = FakeStub(grpc.StatusCode.UNIMPLEMENTED)
    client = RulesClient(stub, timeout=1.0)  # type: ignore[arg-type]
    outcomes = await client.decide_batch([move("h0", 0), move("down", 1), move("h2", 2)])
    assert isinstance(outcomes[0], rules_pb2.DecideResponse) and outcomes[0].version == 0
    assert isinstance(outcomes[1], Refusal) and outcomes[1].kind is Kind.UNAVAILABLE
    assert sorted(stub.singles) == ["down", "h0", "h2"] and not client.batched
    await client.decide_batch([move("h9", 0)])
    assert stub.singles[-1] == "h9"  # from then on without trying DecideBatch again
