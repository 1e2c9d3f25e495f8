"""Hands played THROUGH the services for the audit tests.

Dealer, rules, recorder and settlement run in this process on a real nats-server and a
real database (the ``core_suite`` fixture), each started exactly as its process starts
it. Hands are dealt by ``DealerService.Deal`` and played by random players whose every
bid and play goes through ``RulesService.Decide``; some commands are mischief
(``ddz.audit.store.sample.nuisance``: out of turn, cards not held, passes when leading ...),
seats drop and come back, and in bean rooms seats escape. The players see only their
own seat's view; the hidden deal comes from the bus's internal events, as the bot
service reads it.
"""

from __future__ import annotations

import asyncio
import random
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction

from ddz.adapters import codec
from ddz.adapters.messaging.bus import EventBus
from ddz.adapters.messaging.hand_stream import hand_stream_id
from ddz.adapters.messaging.subjects import subject_for
from ddz.audit.store.sample import Mischief, mischief
from ddz.config import Settings
from ddz.domain.hand import (
    CommandRejected,
    Disconnect,
    Escape,
    HandState,
    Phase,
    SeatInfo,
    evolve,
    view_for,
)
from ddz.domain.hand.events import CardsDealt, Redealt
from ddz.domain.players import RandomPlayer
from ddz.domain.ruleset import Scoring, ruleset_for
from ddz.domain.settlement import RoomSettings
from ddz.v1 import (
    dealer_pb2,
    envelope_pb2,
    rules_pb2,
)
from deal_kit import assigned
from suite_kit import Suite, consumers_idle, eventually

PLAYERS = ("alice", "bob", "carol", "dave", "erin")


# --- one hand -------------------------------------------------------------------------------


def room_for(variant: str, rng: random.Random) -> RoomSettings:
    """A room of the variant's kind, varied so settlement meets caps, rakes and fees."""
    scoring = ruleset_for(variant).scoring
    if scoring is Scoring.CT_POINTS:
        return RoomSettings(rake=Fraction(rng.choice((0, 1, 1)), 20), cap=rng.choice((None, 24)))
    if scoring is Scoring.BEANS:
        return RoomSettings(
            initial_multiplier=rng.choice((1, 2)),
            coefficient=rng.choice((1, 100)),
            fee=rng.choice((0, 5)),
        )
    return RoomSettings()


async def deal_request(
    bus: EventBus, settings: Settings, hand_id: str, variant: str, rng: random.Random
) -> dealer_pb2.DealRequest:
    """A varied hand of the variant, assigned at a table of its own (``deal_kit``)."""
    players = rng.sample(PLAYERS, 3)
    seats = [SeatInfo(p, is_bot=rng.random() < 0.3) for p in players]
    room = room_for(variant, rng)
    client_seeds = [rng.randbytes(8) for _ in range(rng.randrange(3))]
    first_bidder = rng.randrange(3) if rng.random() < 0.5 else None
    balances = None
    if ruleset_for(variant).scoring is Scoring.BEANS and rng.random() < 0.5:
        balances = (rng.randrange(0, 3000), rng.randrange(0, 3000), rng.randrange(0, 3000))
    shown = [rng.randrange(3)] if ruleset_for(variant).show_cards and rng.random() < 0.1 else []
    return await assigned(
        bus, settings, hand_id, variant, room=room, seats=seats, first_bidder=first_bidder,
        balances=balances, client_seeds=client_seeds, show_before_deal=shown,
    )  # fmt: skip


@dataclass
class Played:
    hand_id: str
    variant: str
    commands: int = 0
    refused: int = 0
    disconnects: int = 0
    escaped: bool = False
    redeals: int = 0


async def with_hidden_deal(
    bus: EventBus, hand_id: str, state: HandState, public: Sequence[envelope_pb2.EventEnvelope]
) -> HandState:
    """``state`` advanced by the public events of one answer plus the hidden deal among
    them: the deal is read from the bus's internal subject (as the bot service reads
    it), by its exact subject: JetStream keeps the last message per subject indexed,
    while scanning a hand's wildcard subject grows with the whole stream."""
    msg = await bus.js.get_last_msg(
        bus.stream, subject_for(hand_stream_id(hand_id), CardsDealt.TYPE, internal=True)
    )
    hidden, dealt = codec.decode_envelope(msg.data)
    ordered = sorted([*public, hidden], key=lambda envelope: envelope.stream_version)
    for envelope in ordered:
        event = (
            dealt if envelope is hidden else codec.decode_envelope(envelope.SerializeToString())[1]
        )
        if not isinstance(event, CommandRejected):
            state = evolve(state, event)
    return state


async def play_hand(
    suite: Suite,
    variant: str,
    rng: random.Random,
    odds: Mischief,
    max_commands: int = 3000,
    stop_after: int | None = None,
) -> Played:
    """Deal and play one hand to its end (or only ``stop_after`` commands)."""
    hand_id = f"{variant}-{uuid.uuid4().hex[:12]}"
    played = Played(hand_id, variant)
    dealt = await suite.dealer.Deal(
        await deal_request(suite.bus, suite.settings, hand_id, variant, rng)
    )
    state = await with_hidden_deal(suite.bus, hand_id, HandState(), dealt.events)
    player = RandomPlayer(rng)
    rules = suite.rules
    for _ in range(max_commands):
        if state.phase is Phase.ENDED or played.commands == stop_after:
            return played
        command = mischief(state, rng, odds) or player.act(view_for(state, state.turn))
        request = rules_pb2.DecideRequest(hand_id=hand_id, seat=command.seat)
        codec.set_command(request, command)
        response = await rules.Decide(request)
        played.commands += 1
        if not response.accepted:
            played.refused += 1
            continue
        played.disconnects += isinstance(command, Disconnect)
        played.escaped |= isinstance(command, Escape) and state.rules.scoring is Scoring.BEANS
        if any(e.type == Redealt.TYPE for e in response.events):
            played.redeals += 1  # the new round's cards are hidden: from the bus
            state = await with_hidden_deal(suite.bus, hand_id, state, response.events)
            continue
        for envelope in response.events:
            event = codec.decode_envelope(envelope.SerializeToString())[1]
            if not isinstance(event, CommandRejected):
                state = evolve(state, event)
    raise AssertionError(f"{hand_id} did not end in {max_commands} commands")


async def play_hands(
    suite: Suite,
    variant: str,
    hands: int,
    seed: int,
    odds: Mischief,
    concurrency: int = 12,
    on_hand: Callable[[Played], None] | None = None,
) -> list[Played]:
    """``hands`` hands of ``variant``, ``concurrency`` at a time, each from its own rng."""
    gate = asyncio.Semaphore(concurrency)

    async def one(index: int) -> Played:
        async with gate:
            played = await play_hand(
                suite, variant, random.Random(f"{seed}/{variant}/{index}"), odds
            )
            if on_hand is not None:
                on_hand(played)
            return played

    return list(await asyncio.gather(*(one(i) for i in range(hands))))


# --- waiting for the consumers ------------------------------------------------------------


async def settled(suite: Suite) -> None:
    """Once the recorder and settlement have consumed everything published."""
    idle = await eventually(
        lambda: consumers_idle(suite.bus, "recorder", "settlement"), timeout=120.0, every=0.1
    )
    assert idle
