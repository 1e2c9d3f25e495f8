"""In-memory stand-ins for the table service's ports (the dealer, the rules, the bot,
settlement, tokens, the hand feed), for the unit tests of its use cases."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Iterable

from ddz.access.callers import Caller, SeatPass
from ddz.application.errors import Kind, Reason, Refusal
from ddz.application.hand_fold import HandFold
from ddz.domain.hand import (
    HandState,
    Phase,
    SeatCommand,
    SeatInfo,
)
from ddz.v1 import envelope_pb2, table_pb2

from services.table.use_cases.ports import DealOrder, Dealt, Decision


def in_play(hand_id: str, seats: tuple[SeatInfo, ...], phase: Phase = Phase.PLAYING) -> HandFold:
    state = dataclasses.replace(HandState(), hand_id=hand_id, seats=seats, phase=phase)
    return HandFold(hand_id, state=state, version=3)


class FakeHands:
    def __init__(self) -> None:
        self.folds: dict[str, HandFold] = {}
        self.learned: list[str] = []

    def get(self, hand_id: str) -> HandFold | None:
        return self.folds.get(hand_id)

    def forget(self, hand_id: str) -> None:
        fold = self.folds.get(hand_id)
        if fold is not None and fold.over:
            del self.folds[hand_id]

    async def load(self, hand_id: str) -> HandFold | None:
        return self.folds.get(hand_id)

    async def learn(self, hand_id: str, envelopes: Iterable[envelope_pb2.EventEnvelope]) -> None:
        self.learned.append(hand_id)


class FakeDealer:
    def __init__(self, hands: FakeHands) -> None:
        self.hands = hands
        self.orders: list[DealOrder] = []
        self.lose_answers = 0  # the next deals whose answers are lost on the way back
        self.still_dealing = 0  # then: repeats refused while the first is being dealt
        self.refusal: Refusal | None = None  # every deal refused so, nothing dealt
        self.gate: asyncio.Event | None = None  # set: the deal goes on
        self.stalled = 0  # the next deals that time out before anything is dealt
        self.cancels: list[DealOrder] = []
        self.lose_cancels = 0  # the next cancels whose answers are lost
        self.called_off: set[str] = set()  # hands the dealer never deals

    async def deal(self, order: DealOrder) -> Dealt:
        self.orders.append(order)
        if self.gate is not None:
            await self.gate.wait()
        if self.refusal is not None:
            raise self.refusal
        if self.stalled:  # a dealer that holds the request: it may deal it later
            self.stalled -= 1
            raise Refusal(Kind.TIMEOUT, Reason.REASON_UNSPECIFIED, "dealer: Deadline Exceeded")
        return self.dealt(order)

    def dealt(self, order: DealOrder) -> Dealt:
        if order.hand_id in self.called_off:
            raise Refusal.precondition(Reason.UNKNOWN_HAND, f"hand {order.hand_id} called off")
        self.hands.folds[order.hand_id] = in_play(order.hand_id, order.seats, Phase.BIDDING)
        if self.lose_answers:
            self.lose_answers -= 1
            raise Refusal(Kind.TIMEOUT, Reason.REASON_UNSPECIFIED, "dealer: Deadline Exceeded")
        if self.still_dealing:  # the first attempt has not finished at the dealer
            self.still_dealing -= 1
            raise Refusal(Kind.EXISTS, Reason.VERSION_CONFLICT, "hand was dealt before")
        return Dealt("c0ffee", 3, [])

    async def cancel(self, order: DealOrder) -> Dealt | None:
        """As the dealer: a hand dealt stays dealt (answered with it), any other is
        never dealt from now on."""
        self.cancels.append(order)
        if order.hand_id not in self.hands.folds:
            self.called_off.add(order.hand_id)
        if self.lose_cancels:
            self.lose_cancels -= 1
            raise Refusal(Kind.UNAVAILABLE, Reason.REASON_UNSPECIFIED, "dealer: unavailable")
        if order.hand_id in self.called_off:
            return None
        return Dealt("c0ffee", 3, [])


class FakeRules:
    def __init__(self) -> None:
        self.answer = Decision(True, "", "", 4, [])
        self.sent: list[tuple[str, SeatCommand]] = []

    async def decide(
        self, hand_id: str, command: SeatCommand, *, request_id: str,
        expected_version: int | None = None,
    ) -> Decision:  # fmt: skip
        self.sent.append((hand_id, command))
        return self.answer


class FakeBot:
    async def suggest(self, hand_id: str, seat: int, min_version: int) -> table_pb2.SuggestedMove:
        return table_pb2.SuggestedMove(text="pass")


class FakeSettlement:
    def __init__(self) -> None:
        self.balances: dict[str, int] = {}

    async def balance(self, player_id: str) -> int:
        return self.balances.get(player_id, 0)


class FakeTokens:
    def caller(self, token: str) -> Caller:
        if token == "op":
            return Caller("operator", "operator")
        kind, _, rest = token.partition("-")
        if kind == "p" and rest:
            return Caller("player", rest)
        if kind == "s":
            player, table_id, seat = rest.split("-")
            return Caller("seat", player, table_id, int(seat))
        raise ValueError("not a test token")

    def seat_pass(self, player_id: str, table_id: str, seat: int) -> SeatPass:
        return SeatPass(f"s-{player_id}-{table_id}-{seat}", 12345)
