"""Sample hands recorded the way the services record them, for benchmarks, tests and demos.

``record_hand`` plays one hand in-process with the hand aggregate and writes each
decision's events to a ``EventStore`` as one append of envelopes, each signed by the
producer that makes it in the services (``event_signing.sealed_envelope``, the bytes the
dealer and the rules service publish: the deal by the dealer's key, every later decision
by the rules service's), refused commands as ``CommandRejected`` events, then signs the
chain head as the recorder does at ``SeedRevealed``. The producers' keys are the
caller's (``SampleKeys``): an audit of the hands needs their public keyring
(``SampleKeys.keyring``, or the file ``SampleKeys.publish`` writes for ``ddz audit``).
``nuisance`` makes the commands a careless or hostile client sends (out of turn, a pass
when leading, cards not held, a play that does not beat, a bid not higher); the hand
decides on them like on any other command. No services are involved: hands played *through* the
services are the integration tests' job (tests/integration/test_audit.py).
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from ddz.adapters.security.event_signing import (
    PRODUCERS,
    EventKeyring,
    EventSigner,
    may_sign,
    publish_key,
    sealed_envelope,
)
from ddz.adapters.store import EventStore
from ddz.application.event_store import HeadSigner
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
from ddz.v1 import envelope_pb2

PRODUCER = "ddz.audit.store.sample"
SEATS = (SeatInfo("alice"), SeatInfo("bob"), SeatInfo("carol", is_bot=True))


@dataclass(frozen=True, slots=True)
class SampleKeys:
    """The producers' signing keys sample hands are signed with (one per producer, made
    in this process and never written anywhere) and the keyring of their public halves.

        keys = SampleKeys.generate()
        record_hand(store, rules, rng, signers=keys, key=recorder)
        audit_hand(rows, Keyring(...).with_events(keys.keyring), signatures)
    """

    signers: Mapping[str, EventSigner] = field(repr=False)

    @classmethod
    def generate(cls) -> SampleKeys:
        return cls({p: EventSigner.of(p, Ed25519PrivateKey.generate()) for p in PRODUCERS})

    @property
    def keyring(self) -> EventKeyring:
        """What an auditor checks these hands' events with (public keys only)."""
        return EventKeyring(keys={s.key_id: s.public for s in self.signers.values()})

    def publish(self, path: Path) -> None:
        """Add the public keys to the keyring file at ``path`` (``DDZ_EVENT_KEYRING``, as
        the services do), for ``ddz audit`` in another process."""
        for signer in self.signers.values():
            publish_key(path, signer.key_id, signer.public)

    def signer_for(self, stream_id: str, event_type: str, producer: str) -> EventSigner:
        """``producer``'s key when it may sign the event, else that of one who may (as
        the services split the work: the dealer starts a hand, the rules service ends it)."""
        if may_sign(producer, stream_id, event_type):
            return self.signers[producer]
        allowed = [p for p in PRODUCERS if may_sign(p, stream_id, event_type)]
        if not allowed:
            raise ValueError(f"no producer may sign {event_type!r} on {stream_id!r}")
        return self.signers[allowed[0]]

    def seal(self, envelope: envelope_pb2.EventEnvelope, producer: str | None = None) -> bytes:
        """``envelope`` signed again: by ``producer``'s key as given (even one not allowed
        the event: a forger's choice), else by the producer that signed it before (the
        one its key id names) or one allowed to."""
        if producer is not None:
            return self.signers[producer].seal(envelope)
        before = envelope.producer_key_id.partition("-")[0]
        stream_id, event_type = envelope.stream_id, envelope.type
        return self.signer_for(stream_id, event_type, before or "rules").seal(envelope)


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
    signers: SampleKeys,
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
    """Play and record one hand; returns its hand id. ``signers``: the producers' keys
    every event is signed with. ``key``: sign the finished head (a ``HeadSigner`` such
    as the recorder's Ed25519 key, or HMAC key bytes named ``key_id``, as hands were
    signed before Ed25519)."""
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

    def write(recorded: Sequence[Recorded], causation: str, producer: str) -> None:
        nonlocal version
        envelopes = [
            sealed_envelope(
                signers.signer_for(stream_id, event.TYPE, producer), stream_id,
                version + i + 1, event, causation, hand_id, PRODUCER,
            )[1]
            for i, event in enumerate(recorded)
        ]  # fmt: skip
        store.append(stream_id, version, envelopes)
        version += len(envelopes)

    command: Command = start
    for _ in range(max_commands):
        decision = decide(state, command, seed)
        request_id = uuid.uuid4().hex
        producer = "dealer" if isinstance(command, StartHand) else "rules"
        if isinstance(decision, Rejection):
            assert not isinstance(command, StartHand), decision
            write([CommandRejected(command, decision.code, decision.message, request_id)],
                  request_id, producer)  # fmt: skip
        elif decision:
            write(decision, request_id, producer)
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
