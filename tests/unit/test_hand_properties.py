"""Invariants over many random hands per variant (RULES.md §8-§10; the commit-reveal of the deal).

- every hand ends, is settled and reveals its seed;
- conservation: players' changes + the system's take = 0 (§10);
- bean rooms: no balance below zero, winners never receive more than losers paid;
- replay: folding the recorded events gives exactly the live final state;
- every accepted play was legal at that moment (``legal_moves``, bomb limits §7);
- the deal re-derives from the revealed seed (docs/SHUFFLE.md).

Random players also show cards, disconnect, reconnect and (in bean rooms) escape.
``DDZ_PROPERTY_HANDS`` scales the number of hands (default below: thousands of hands per variant).
"""

from __future__ import annotations

import os
import random
from fractions import Fraction

import pytest
from ddz.domain.cards import NUM_RANKS, card_counts, contains
from ddz.domain.hand import (
    Disconnect,
    Escape,
    Hand,
    HandState,
    Pass,
    Phase,
    Play,
    Reconnect,
    Rejection,
    SeatInfo,
    StartHand,
    evolve,
    replay,
    view_for,
)
from ddz.domain.hand.events import (
    CardsDealt,
    Event,
    HandEnded,
    HandSettled,
    HandStarted,
    LandlordChosen,
    PlayMade,
    SeedRevealed,
)
from ddz.domain.moves import legal_moves
from ddz.domain.players import RandomPlayer
from ddz.domain.ruleset import CLASSIC, CT, LAIZI, TIANDI, RuleSet, Scoring
from ddz.domain.settlement import RoomSettings
from ddz.domain.shuffle import canonical_deck, deal, master_seed
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

# Thousands of hands a variant, over a minute: started first in a parallel run.
pytestmark = pytest.mark.early

SCALE = float(os.environ.get("DDZ_PROPERTY_HANDS", "1"))
HANDS = {"classic": 2000, "ct": 2000, "laizi": 1000, "tiandi": 1000}
SEATS = (SeatInfo("a"), SeatInfo("b"), SeatInfo("c", is_bot=True))


def random_room(rules: RuleSet, rng: random.Random) -> RoomSettings:
    return RoomSettings(
        initial_multiplier=rng.choice([1, 1, 2, 3]),
        rake=Fraction(rng.choice([0, 1, 5]), 100),
        cap=rng.choice([None, 8, 50]),
        coefficient=rng.choice([1, 10, 1000]),
        fee=rng.choice([0, 5, 50]),
    )


def drive(rules: RuleSet, seed: int) -> tuple[Hand, tuple[int, int, int] | None]:
    """One random hand: random legal bids and plays, shows, drops, returns, escapes."""
    rng = random.Random(seed)
    players = [RandomPlayer(rng, show_rate=0.05) for _ in range(3)]
    beans = rules.scoring is Scoring.BEANS
    balances = tuple(rng.choice([0, 30, 500, 10**6]) for _ in range(3)) if beans else None
    hand = Hand()
    server_seed = rng.randbytes(32)
    clients = tuple(rng.randbytes(8) for _ in range(rng.randrange(3)))
    start = StartHand(
        f"p{seed}",
        rules,
        random_room(rules, rng),
        SEATS,
        server_seed,
        first_bidder=rng.choice([None, 0, 1, 2]),
        client_seeds=clients,
        balances=balances,  # type: ignore[arg-type]
    )
    assert not isinstance(hand.execute(start), Rejection)
    while hand.state.phase is not Phase.ENDED:
        roll = rng.random()
        if roll < 0.01:
            hand.execute(Disconnect(rng.randrange(3)))  # may be refused (already away)
        elif roll < 0.02:
            hand.execute(Reconnect(rng.randrange(3)))
        elif roll < 0.023:
            hand.execute(Escape(rng.randrange(3)))
        if hand.state.phase is Phase.ENDED:
            break
        seat = hand.state.turn
        result = hand.execute(players[seat].act(view_for(hand.state, seat)))
        assert not isinstance(result, Rejection), result
    return hand, balances  # type: ignore[return-value]


def check_hand(hand: Hand, balances: tuple[int, int, int] | None) -> None:
    events = hand.events
    state = HandState()
    for event in events:
        if isinstance(event, PlayMade):
            check_play_was_legal(state, event)
        state = evolve(state, event)
    assert state == hand.state  # replay, step by step
    assert replay(events) == hand.state
    # every hand ends, is settled, and reveals its seed
    assert hand.state.phase is Phase.ENDED
    assert isinstance(events[-2], HandSettled) and isinstance(events[-1], SeedRevealed)
    ledger = events[-2].ledger
    assert sum(ledger.deltas) + ledger.system == 0  # §10 conservation
    if balances is not None:
        assert all(b + d >= 0 for b, d in zip(balances, ledger.deltas, strict=True))
        paid = -sum(d for d in ledger.deltas if d < 0)
        received = sum(d for d in ledger.deltas if d > 0)
        assert received <= paid
    check_deal(events)


def check_play_was_legal(state: HandState, made: PlayMade) -> None:
    assert state.phase is Phase.PLAYING and state.turn == made.seat
    played = card_counts(made.cards)
    assert set(made.cards) <= set(state.cards[made.seat])
    assert contains(state.counts[made.seat], played)
    over = state.trick.reading if state.trick else None
    moves = legal_moves(state.counts[made.seat], state.rules, state.wild_set, over)
    # One of the legal moves is this play, read the same way (cards compared first: a
    # wildcard hand has thousands of moves, few with these cards).
    key = made.reading.key()
    assert any(m.cards == played and m.reading.key() == key for m in moves), made
    limit = state.bomb_limits[made.seat]
    if made.reading.is_bomb and limit is not None:
        assert state.bombs_made[made.seat] < limit


def check_deal(events: list[Event]) -> None:
    started = events[0]
    assert isinstance(started, HandStarted)
    seed = bytes.fromhex(events[-1].seed)  # type: ignore[union-attr]
    master = master_seed(seed, [bytes.fromhex(c) for c in started.client_seeds])
    for dealt in (e for e in events if isinstance(e, CardsDealt)):
        again = deal(started.rules, master, dealt.round)
        assert (dealt.hands, dealt.bottom, dealt.golden_card) == (
            again.hands,
            again.bottom,
            again.golden_card,
        )
    # the cards of the last round are all somewhere: in a hand, played, or still the
    # bottom (a bean-room escape can end the hand before there is a landlord)
    last = max(i for i, e in enumerate(events) if isinstance(e, CardsDealt))
    this_round = events[last:]
    played = [c for e in this_round if isinstance(e, PlayMade) for c in e.cards]
    ended = next(e for e in this_round if isinstance(e, HandEnded))
    held = [c for hand in ended.final_hands for c in hand]
    if not any(isinstance(e, LandlordChosen) for e in this_round):
        held += list(events[last].bottom)  # type: ignore[union-attr]
    assert sorted(played + held) == sorted(canonical_deck(started.rules))


@pytest.mark.parametrize("rules", [CLASSIC, CT, LAIZI, TIANDI], ids=lambda r: r.name)
def test_random_hands_keep_every_invariant(rules: RuleSet) -> None:
    hands = max(1, int(HANDS[rules.name] * SCALE))
    for seed in range(hands):
        hand, balances = drive(rules, seed)
        check_hand(hand, balances)


# --- hypothesis: random and malformed commands never break a hand -------------------------


def junk_play(rng: random.Random, state: HandState) -> Play:
    """A random subset of a random seat's cards (often illegal)."""
    seat = rng.randrange(3)
    counts = [rng.randint(0, n) if rng.random() < 0.3 else 0 for n in state.counts[seat]]
    return Play(seat, tuple(counts[:NUM_RANKS]))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**32 - 1),
    rules=st.sampled_from([CLASSIC, CT, LAIZI, TIANDI]),
)
def test_rejections_change_nothing_and_hands_still_end(seed: int, rules: RuleSet) -> None:
    rng = random.Random(seed)
    players = [RandomPlayer(rng) for _ in range(3)]
    hand = Hand()
    hand.execute(StartHand("hyp", rules, RoomSettings(), SEATS, rng.randbytes(32)))
    while hand.state.phase is not Phase.ENDED:
        if rng.random() < 0.3:
            before = (hand.state, len(hand.events))
            junk = rng.choice([junk_play(rng, hand.state), Pass(rng.randrange(3))])
            result = hand.execute(junk)
            if isinstance(result, Rejection):
                assert (hand.state, len(hand.events)) == before
            continue
        seat = hand.state.turn
        command = players[seat].act(view_for(hand.state, seat))
        assert not isinstance(hand.execute(command), Rejection)
    check_hand(hand, None)
