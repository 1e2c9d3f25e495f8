"""Sample hands recorded the way the services record them, for benchmarks, tests and demos.

``record_hand`` plays one hand in-process with the hand aggregate and writes each
decision's events to a ``EventStore`` as one append of envelopes (``codec.envelope_for``,
the bytes the rules service publishes), refused commands as ``CommandRejected`` events,
then signs the chain head as the recorder does at ``SeedRevealed``. ``nuisance`` makes
the commands a careless or hostile client sends (out of turn, a pass when leading,
cards not held, a play that does not beat, a bid not higher); the hand decides on them
like on any other command. No services are involved: hands played *through* the
services are the integration tests' job (tests/integration/test_audit.py).
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from ddz.adapters import codec
from ddz.adapters.store import EventStore
from ddz.adapters.store.contract import HeadSigner
from ddz.domain.cards import NUM_RANKS, Rank
from ddz.domain.hand import (
    Bid,
    BidAction,
    Command,
    CommandRejected,
    Disconnect,
    Escape,
    HandState,
    Pass,
    Phase,
    Play,
    Reconnect,
    Recorded,
    Rejection,
    SeatInfo,
    ShowCards,
    StartHand,
    decide,
    evolve,
    view_for,
)
from ddz.domain.players import RandomPlayer
from ddz.domain.ruleset import RuleSet, Scoring
from ddz.domain.settlement import RoomSettings

PRODUCER = "ddz.audit.sample"
SEATS = (SeatInfo("alice"), SeatInfo("bob"), SeatInfo("carol", is_bot=True))


@dataclass(frozen=True, slots=True)
class Mischief:
    """How often, per command, a hand sees something other than a good move."""

    refuse: float = 0.08  # a nuisance command (mostly refused)
    disconnect: float = 0.02  # a seat drops or comes back
    escape: float = 0.0  # a seat leaves for good (ends bean-room hands, §10.3)
    show: float = 0.05  # a seat shows its cards where the rules allow it (§6)


def nuisance(state: HandState, rng: random.Random) -> Command:
    """A command the rules will most likely refuse, for the seat on turn or another."""
    seat = state.turn if state.turn in (0, 1, 2) else rng.randrange(3)
    other = (seat + rng.choice((1, 2))) % 3
    held = state.counts[seat]
    lowest = next((r for r in range(NUM_RANKS) if held[r]), 0)
    single = tuple(1 if r == lowest else 0 for r in range(NUM_RANKS))
    if state.phase is Phase.BIDDING:
        bidding: list[Command] = [
            Bid(other, BidAction.CALL, 1),  # not your turn
            Play(seat, single),  # wrong phase
            Bid(seat, BidAction.CALL, 0) if rng.random() < 0.5 else Bid(seat, BidAction.GRAB),
            Pass(seat),  # wrong phase
        ]
        return rng.choice(bidding)
    missing = next((r for r in range(NUM_RANKS) if not held[r]), Rank.RED_JOKER)
    absent = tuple(1 if r == missing else 0 for r in range(NUM_RANKS))
    two_ranks = tuple(1 if r in (lowest, lowest + 1) else 0 for r in range(NUM_RANKS))
    options: list[Command] = [
        Pass(other) if rng.random() < 0.5 else Play(other, single),  # not your turn
        Play(seat, absent),  # cards not in hand
        Play(seat, single),  # does not beat (or a lead: then it is simply played)
        Bid(seat, BidAction.PASS),  # wrong phase
    ]
    if state.trick is None:
        options.append(Pass(seat))  # the leader cannot pass
    if all(held[r] for r in range(NUM_RANKS) if two_ranks[r]) and lowest + 1 < Rank.TWO:
        options.append(Play(seat, two_ranks))  # two singles: not a combination
    return rng.choice(options)


def mischief(state: HandState, rng: random.Random, odds: Mischief) -> Command | None:
    """A command other than a good move (None: play a good move this time)."""
    roll = rng.random()
    if roll < odds.refuse:
        return nuisance(state, rng)
    roll -= odds.refuse
    if roll < odds.disconnect:
        away = sorted(state.disconnected)
        if away and rng.random() < 0.6:
            return Reconnect(rng.choice(away))
        present = [s for s in range(3) if s not in state.disconnected]
        return Disconnect(rng.choice(present)) if present else None
    roll -= odds.disconnect
    if roll < odds.escape:
        return Escape(rng.randrange(3))
    roll -= odds.escape
    if roll < odds.show and state.rules.show_cards:
        return ShowCards(rng.randrange(3))
    return None


def record_hand(
    store: EventStore,
    rules: RuleSet,
    rng: random.Random,
    *,
    hand_id: str | None = None,
    room: RoomSettings | None = None,
    odds: Mischief = Mischief(),
    key: HeadSigner | bytes | None = None,
    key_id: str = "k1",
    balances: tuple[int, int, int] | None = None,
    client_seeds: Sequence[bytes] = (),
    first_bidder: int | None = None,
    seats: tuple[SeatInfo, SeatInfo, SeatInfo] = SEATS,
    max_commands: int = 2000,
) -> str:
    """Play and record one hand; returns its hand id. ``key``: sign the finished head
    (a ``HeadSigner`` such as the recorder's Ed25519 key, or HMAC key bytes named
    ``key_id``, as hands were signed before Ed25519)."""
    hand_id = hand_id or uuid.uuid4().hex
    stream_id = f"hand-{hand_id}"
    seed = rng.randbytes(32)
    if balances is None and rules.scoring is Scoring.BEANS and rng.random() < 0.5:
        balances = (rng.randrange(0, 50_000), rng.randrange(0, 50_000), rng.randrange(0, 50_000))
    start = StartHand(
        hand_id, rules, room or RoomSettings(), seats, seed,
        first_bidder=first_bidder, client_seeds=tuple(client_seeds), balances=balances,
    )  # fmt: skip
    state = HandState()
    version = 0
    player = RandomPlayer(rng)

    def write(recorded: Sequence[Recorded], causation: str) -> None:
        nonlocal version
        envelopes = [
            codec.envelope_for(stream_id, version + i + 1, event, causation, hand_id, PRODUCER)
            for i, event in enumerate(recorded)
        ]
        store.append(stream_id, version, envelopes)
        version += len(envelopes)

    command: Command = start
    for _ in range(max_commands):
        decision = decide(state, command, seed)
        request_id = uuid.uuid4().hex
        if isinstance(decision, Rejection):
            assert not isinstance(command, StartHand), decision
            write([CommandRejected(command, decision.code, decision.message, request_id)],
                  request_id)  # fmt: skip
        elif decision:
            write(decision, request_id)
            for event in decision:
                state = evolve(state, event)
        if state.phase is Phase.ENDED:
            break
        command = mischief(state, rng, odds) or player.act(view_for(state, state.turn))
    else:
        raise RuntimeError(f"hand {hand_id} did not end in {max_commands} commands")
    if key is not None:
        store.sign_head(stream_id, key, key_id)
    return hand_id
