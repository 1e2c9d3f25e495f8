"""The settlement written out (``ddz.audit.account.arithmetic``): each figure is worked out here
from RULES.md §10 by hand, and the account ends in the ledger ``settle()`` books."""

from __future__ import annotations

from fractions import Fraction

from ddz.audit.account.arithmetic import explain
from ddz.domain.multipliers import Factor, MultiplierBreakdown, Side
from ddz.domain.ruleset import Scoring
from ddz.domain.settlement import HandOutcome, RoomSettings, settle

NAMES = ("mei", "jun", "ling")


def _multiplier(*factors: tuple[str, int]) -> MultiplierBreakdown:
    return MultiplierBreakdown(tuple(Factor(reason, n) for reason, n in factors))


def _ends_in_the_ledger(outcome: HandOutcome) -> list[str]:
    ledger = settle(outcome)
    arithmetic = explain(outcome, ledger, NAMES)
    totals = {t.seat: t.total for t in arithmetic.totals}
    assert [totals[s] for s in range(3)] == list(ledger.deltas)
    assert totals[None] == ledger.system
    for total in arithmetic.totals:
        assert sum(amount for amount, _ in total.parts) == total.total
    return arithmetic.lines()


def test_ct_with_a_farmer_escaped_and_the_landlord_winning() -> None:
    """§10.2: bm = 3 × 1 = 3; the landlord +2·bm = 6 (under the cap 24), the escaped
    farmer pays it all and the penalty 10 × initial 1 besides: -16; the other farmer 0."""
    outcome = HandOutcome(
        Scoring.CT_POINTS, RoomSettings(cap=24), landlord=1, base=3,
        multiplier=_multiplier(("initial", 1)), winner=Side.LANDLORD, escapee=2,
    )  # fmt: skip
    lines = _ends_in_the_ledger(outcome)
    assert "base × multiplier: 3 × 1 (initial ×1) = 3" in lines
    assert "cap: 24: 2 × 3 = 6 is within it" in lines
    assert any(line.startswith("shares: landlord won and seat 2 ling escaped") for line in lines)
    assert "escape penalty: 10 × initial ×1 = 10, paid by seat 2 ling to the system" in lines
    assert lines[-4:] == [
        "seat 0 mei: nothing = +0",
        "seat 1 jun: +6 win = +6",
        "seat 2 ling: -6 loss -10 escape_penalty = -16",
        "system: +10 escape_penalty = +10",
    ]


def test_ct_over_its_cap_with_a_rake() -> None:
    """bm = 3 × 8 = 24; 2·bm = 48 > cap 24, so each share moves 24 // 2 = 12; the
    landlord's capped gain 24, raked 1/20 rounded down: 1."""
    outcome = HandOutcome(
        Scoring.CT_POINTS, RoomSettings(cap=24, rake=Fraction(1, 20)), landlord=0, base=3,
        multiplier=_multiplier(("initial", 1), ("bomb", 2), ("bomb", 4)), winner=Side.LANDLORD,
    )  # fmt: skip
    lines = _ends_in_the_ledger(outcome)
    assert "cap: 24: 2 × 24 = 48 is over it; each share moves 24 // 2 = 12" in lines
    assert "rake: 1/20 of each winner's capped gain, rounded down: ⌊24 × 1/20⌋ = 1" in lines
    assert lines[-4] == "seat 0 mei: +48 win -24 cap -1 rake = +23"


def test_a_bean_landlord_leaving_a_wildcard_room() -> None:
    """§10.3 escape: bombs held ×2 (without the initial) is under 10, so the landlord
    pays as if ×20 (× initial 1); X = 1 × 20 × 2 shares = 40, × 1/4 = 10, × coefficient
    100 = 1000, shared by the two farmers 1:1."""
    outcome = HandOutcome(
        Scoring.BEANS, RoomSettings(coefficient=100), landlord=0, base=1,
        multiplier=_multiplier(("initial", 1)), winner=None, wildcard_room=True, escapee=0,
        escape_multiplier=_multiplier(("initial", 1), ("bomb", 2)),
    )  # fmt: skip
    lines = _ends_in_the_ledger(outcome)
    assert any(line.startswith("escape: seat 0 mei left") and "2 < 10: as if ×20" in line
               for line in lines)  # fmt: skip
    assert "X: base 1 × multiplier ×20 × the escapee's shares 2 = 40" in lines
    assert "wildcard factor: 40 × 1/4 = 10" in lines
    assert any(line.startswith("room coefficient: ⌊10 × 100⌋ = 1000") for line in lines)
    assert lines[-4:-1] == [
        "seat 0 mei: -1000 escape_penalty = -1000",
        "seat 1 jun: +500 escape_share = +500",
        "seat 2 ling: +500 escape_share = +500",
    ]


def test_beans_within_the_losers_balance() -> None:
    """X = 1 × 4 × 2 = 8, coefficient 10: each farmer's share 40; the landlord lost but
    holds 50 after the fee 5 of 55: pays 50, the farmers get 25 each."""
    outcome = HandOutcome(
        Scoring.BEANS, RoomSettings(coefficient=10, fee=5), landlord=2, base=1,
        multiplier=_multiplier(("initial", 1), ("grab", 2), ("grab", 2)), winner=Side.FARMERS,
        balances=(1000, 1000, 55),
    )  # fmt: skip
    lines = _ends_in_the_ledger(outcome)
    assert any(line.endswith("the landlord's ⌊80⌋ = 80, a farmer's ⌊40⌋ = 40") for line in lines)
    assert any(line.startswith("balance limit: balances at the start 1000 / 1000 / 55")
               for line in lines)  # fmt: skip
    assert lines[-2] == "seat 2 ling: -80 loss +30 balance_limit -5 fee = -55"
