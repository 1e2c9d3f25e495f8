"""Invariants of settlement (RULES.md §10) over thousands of random outcomes per scheme.

- §10: the players' changes plus the system's take sum to zero, and every figure is the
  sum of its ledger lines; the system only ever takes, so winners never receive more than
  the losers paid;
- §9: the multiplier is the product of its factors;
- §10.1: landlord ±2·bm, farmers ∓bm;
- §10.2: the winners (or losers) together move at most the cap; the rake is each
  winner's capped gain times the ratio, rounded down; the penalty goes to the system;
- §10.3: no bean balance goes below zero; a winner receives at most their own balance at
  hand start; fees at most A each.

Each scheme is checked twice: by hypothesis (which shrinks a failure to a small case) and
by a seeded sweep of many more outcomes, which is far cheaper per outcome.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from fractions import Fraction

import pytest
from ddz.domain.multipliers import Factor, MultiplierBreakdown, Side
from ddz.domain.ruleset import Scoring
from ddz.domain.settlement import HandOutcome, Ledger, RoomSettings, settle
from hypothesis import given, settings
from hypothesis import strategies as st

HYPOTHESIS = settings(max_examples=300, deadline=None)
SWEEP = 10000  # seeded random outcomes per scheme
REASONS = ("initial", "grab", "show_cards", "bomb", "sky_bomb", "rocket", "spring")
SEATS = (0, 1, 2)


# --- the invariants ----------------------------------------------------------------------


def lines_of(ledger: Ledger, seat: int | None, *reasons: str) -> int:
    return sum(
        ln.amount
        for ln in ledger.lines
        if ln.seat == seat and (not reasons or ln.reason in reasons)
    )


def check_common(hand: HandOutcome, ledger: Ledger) -> None:
    # §10: nothing is created or lost.
    assert sum(ledger.deltas) + ledger.system == 0
    # Every figure is the sum of its lines; lines are whole and never zero.
    for seat in SEATS:
        assert ledger.deltas[seat] == lines_of(ledger, seat)
    assert ledger.system == lines_of(ledger, None)
    assert all(isinstance(ln.amount, int) and ln.amount != 0 for ln in ledger.lines)
    # §9: the multiplier is the product of its factors.
    product = 1
    for factor in hand.multiplier.factors:
        product *= factor.factor
    assert hand.multiplier.total == product == ledger.multiplier
    # The system only takes (rake, fees, penalties, rounding): winners together never
    # receive more than losers together paid.
    assert ledger.system >= 0
    assert sum(d for d in ledger.deltas if d > 0) <= -sum(d for d in ledger.deltas if d < 0)


def check_classic(hand: HandOutcome, ledger: Ledger) -> None:
    bm = hand.base * math.prod(f.factor for f in hand.multiplier.factors)
    sign = 1 if hand.winner == Side.LANDLORD else -1
    for seat in SEATS:
        assert ledger.deltas[seat] == sign * (2 * bm if seat == hand.landlord else -bm)
    assert ledger.system == 0


def check_ct(hand: HandOutcome, ledger: Ledger) -> None:
    penalty = 0 if hand.escapee is None else hand.room.escape_penalty * hand.initial_multiplier
    # Points moved between players, before rake and penalty.
    moved = [lines_of(ledger, s, "win", "loss", "cap") for s in SEATS]
    assert sum(moved) == 0
    if hand.room.cap is not None:
        assert sum(m for m in moved if m > 0) <= hand.room.cap
    for seat in SEATS:
        rake = -lines_of(ledger, seat, "rake")
        assert rake == (math.floor(moved[seat] * hand.room.rake) if moved[seat] > 0 else 0)
        if seat != hand.escapee:
            assert lines_of(ledger, seat, "escape_penalty") == 0
    assert ledger.system == penalty + lines_of(ledger, None, "rake")


def check_beans(hand: HandOutcome, ledger: Ledger) -> None:
    assert lines_of(ledger, None, "fee") <= 3 * hand.room.fee
    # What each seat received (+) or paid (-), fees aside.
    transfers = [ledger.deltas[s] - lines_of(ledger, s, "fee") for s in SEATS]
    assert sum(t for t in transfers if t > 0) <= -sum(t for t in transfers if t < 0)
    if hand.balances is not None:
        for seat in SEATS:
            # §10.3: nobody's balance goes below 0 ...
            assert hand.balances[seat] + ledger.deltas[seat] >= 0
            # ... and a winner receives at most their own balance at hand start.
            assert transfers[seat] <= hand.balances[seat]
    if hand.escapee is not None:
        # §10.3: the escapee pays, the others share; nobody else pays a penalty.
        assert transfers[hand.escapee] <= 0
        assert all(transfers[s] >= 0 for s in SEATS if s != hand.escapee)


CHECKS: dict[Scoring, Callable[[HandOutcome, Ledger], None]] = {
    Scoring.POINTS: check_classic,
    Scoring.CT_POINTS: check_ct,
    Scoring.BEANS: check_beans,
}


def check(hand: HandOutcome) -> None:
    ledger = settle(hand)
    check_common(hand, ledger)
    CHECKS[hand.scoring](hand, ledger)


# --- hypothesis ----------------------------------------------------------------------------

factors = st.lists(st.tuples(st.sampled_from(REASONS), st.integers(1, 5)), max_size=10).map(
    lambda fs: MultiplierBreakdown(tuple(Factor(reason, n) for reason, n in fs))
)
rooms = st.builds(
    RoomSettings,
    initial_multiplier=st.integers(1, 5),
    rake=st.integers(0, 50).map(lambda n: Fraction(n, 100)),
    cap=st.none() | st.integers(0, 5000),
    coefficient=st.integers(0, 2000),
    fee=st.integers(0, 300),
    wildcard_coefficient=st.sampled_from([Fraction(1, 4), Fraction(1, 2), Fraction(1)]),
    hand_cap=st.integers(0, 20000),
    escape_penalty=st.integers(0, 20),
)
# Small balances make the limits bite often; large ones let whole transfers through.
balance = st.integers(0, 300) | st.integers(0, 10**7)


@st.composite
def outcomes(draw: st.DrawFn, scoring: Scoring) -> HandOutcome:
    escapee = draw(st.none() | st.integers(0, 2))
    multiplier = draw(factors)
    bean_escape = scoring == Scoring.BEANS and escapee is not None
    winner = None if bean_escape else draw(st.sampled_from(Side))
    escape_multiplier = None
    if bean_escape and draw(st.booleans()):
        escape_multiplier = MultiplierBreakdown(multiplier.factors + draw(factors).factors)
    return HandOutcome(
        scoring=scoring,
        room=draw(rooms),
        landlord=draw(st.integers(0, 2)),
        base=draw(st.integers(1, 3)),
        multiplier=multiplier,
        winner=winner,
        wildcard_room=draw(st.booleans()),
        balances=draw(st.none() | st.tuples(balance, balance, balance)),
        escapee=escapee,
        escape_multiplier=escape_multiplier,
    )


@HYPOTHESIS
@given(outcomes(Scoring.POINTS))
def test_section_10_1_classic_invariants(hand: HandOutcome) -> None:
    check(hand)


@HYPOTHESIS
@given(outcomes(Scoring.CT_POINTS))
def test_section_10_2_ct_invariants(hand: HandOutcome) -> None:
    check(hand)


@HYPOTHESIS
@given(outcomes(Scoring.BEANS))
def test_section_10_3_bean_invariants(hand: HandOutcome) -> None:
    check(hand)


# --- the seeded sweep ------------------------------------------------------------------------


def random_outcome(rng: random.Random, scoring: Scoring) -> HandOutcome:
    def breakdown() -> MultiplierBreakdown:
        n = rng.randint(0, 10)
        return MultiplierBreakdown(
            tuple(Factor(rng.choice(REASONS), rng.randint(1, 5)) for _ in range(n))
        )

    def a_balance() -> int:
        return rng.randint(0, 300) if rng.random() < 0.5 else rng.randint(0, 10**7)

    escapee = rng.choice((None, None, 0, 1, 2))
    multiplier = breakdown()
    bean_escape = scoring == Scoring.BEANS and escapee is not None
    escape_multiplier = None
    if bean_escape and rng.random() < 0.5:
        escape_multiplier = MultiplierBreakdown(multiplier.factors + breakdown().factors)
    room = RoomSettings(
        initial_multiplier=rng.randint(1, 5),
        rake=Fraction(rng.randint(0, 50), 100),
        cap=rng.choice((None, rng.randint(0, 5000))),
        coefficient=rng.randint(0, 2000),
        fee=rng.randint(0, 300),
        wildcard_coefficient=rng.choice((Fraction(1, 4), Fraction(1, 2), Fraction(1))),
        hand_cap=rng.randint(0, 20000),
        escape_penalty=rng.randint(0, 20),
    )
    balances = None
    if rng.random() < 0.8:
        balances = (a_balance(), a_balance(), a_balance())
    return HandOutcome(
        scoring=scoring,
        room=room,
        landlord=rng.randint(0, 2),
        base=rng.randint(1, 3),
        multiplier=multiplier,
        winner=None if bean_escape else rng.choice(tuple(Side)),
        wildcard_room=rng.random() < 0.5,
        balances=balances,
        escapee=escapee,
        escape_multiplier=escape_multiplier,
    )


@pytest.mark.parametrize("scoring", list(Scoring))
def test_section_10_invariants_over_a_seeded_sweep(scoring: Scoring) -> None:
    rng = random.Random(f"settlement-{scoring.value}")
    for _ in range(SWEEP):
        hand = random_outcome(rng, scoring)
        try:
            check(hand)
        except AssertionError:
            pytest.fail(f"invariant broken for {hand!r}")
