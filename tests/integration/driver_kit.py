"""Whole hands driven through the core services (the ``core_suite`` fixture) by calling
``RulesService.Decide`` with moves chosen from the acting seat's ``PlayerView`` (the
seat's own cards come from the hand's internal events, as the bot service reads them),
and what the recorder stored of them.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import Any

import grpc
from ddz.adapters import codec
from ddz.adapters.messaging import hand_stream
from ddz.adapters.security.event_signing import event_keyring
from ddz.domain.hand import (
    Command,
    HandState,
    Pass,
    Phase,
    evolve,
    hand_events,
    replay,
    view_for,
)
from ddz.domain.hand.events import Redealt
from ddz.domain.players import play_of
from ddz.v1 import (
    dealer_pb2,
    recorder_pb2,
    rules_pb2,
)
from deal_kit import assigned
from suite_kit import Suite

PLAYERS = ("alice", "bob", "carol")


async def deal_request(
    suite: Suite, hand_id: str, variant: str, **fields: Any
) -> dealer_pb2.DealRequest:
    """The hand assigned at a table of its own, as the table service assigns it."""
    return await assigned(suite.bus, suite.settings, hand_id, variant, seats=PLAYERS, **fields)


def decide_request(hand_id: str, command: Command, **fields: Any) -> rules_pb2.DecideRequest:
    request = rules_pb2.DecideRequest(hand_id=hand_id, seat=command.seat, **fields)
    codec.set_command(request, command)
    return request


async def full_state(suite: Suite, hand_id: str) -> HandState:
    """The hand with every seat's cards, from the bus (as a bot reads it)."""
    read, _ = await hand_stream.read(suite.bus, hand_id, keyring=event_keyring(suite.settings.keys))
    return replay(hand_events(r.event for r in read))


def choose(state: HandState, rng: random.Random) -> Command:
    """A legal command for the seat to act, from that seat's view only."""
    view = view_for(state, state.turn)
    if view.phase is Phase.BIDDING:
        return rng.choice(view.legal_bids())
    moves = view.legal_moves()
    if view.can_pass and (not moves or rng.random() < 0.3):
        return Pass(view.seat)
    return play_of(view.seat, rng.choice(moves))


@dataclass
class Driver:
    """Plays one hand through the services, one legal command at a time."""

    suite: Suite
    hand_id: str
    rng: random.Random
    state: HandState = field(default_factory=HandState)
    dealt: dealer_pb2.DealResponse | None = None
    responses: list[rules_pb2.DecideResponse] = field(default_factory=list)

    async def deal(self, variant: str) -> None:
        self.dealt = await self.suite.dealer.Deal(
            await deal_request(self.suite, self.hand_id, variant)
        )
        self.state = await full_state(self.suite, self.hand_id)

    async def step(self) -> None:
        command = choose(self.state, self.rng)
        response = await self.suite.rules.Decide(
            decide_request(self.hand_id, command, request_id=uuid.uuid4().hex)
        )
        assert response.accepted, (command, response.reason, response.message)
        self.responses.append(response)
        events = [codec.decode_envelope(e.SerializeToString())[1] for e in response.events]
        if any(isinstance(e, Redealt) for e in events):
            self.state = await full_state(self.suite, self.hand_id)  # the new deal is internal
            return
        for event in hand_events(events):
            self.state = evolve(self.state, event)

    async def play(self, steps: int = 500) -> None:
        for _ in range(steps):
            if self.state.phase is Phase.ENDED:
                return
            await self.step()
        if steps == 500:
            raise AssertionError("the hand did not end in 500 commands")


async def play_hand(suite: Suite, variant: str, hand_id: str, seed: int) -> Driver:
    driver = Driver(suite, hand_id, random.Random(seed))
    await driver.deal(variant)
    await driver.play()
    return driver


async def stored_stream(suite: Suite, hand_id: str) -> list[Any]:
    response = await suite.recorder.ReadStream(
        recorder_pb2.ReadStreamRequest(stream_id=f"hand-{hand_id}")
    )
    return list(response.events)


async def _if_length(coro: Awaitable[list[Any]], n: int) -> list[Any] | None:
    try:
        events = await coro
    except grpc.aio.AioRpcError:
        return None
    return events if len(events) == n else None
