"""The settlement of a hand written out: from base × each multiplier through the room's
figures (coefficient, wildcard factor, cap, rake, fee, escape penalty, balance limits)
to the ledger's own figures (RULES.md §10; ``ddz.domain.settlement`` is the rule).

    arithmetic = explain(outcome, recorded_ledger, names)
    arithmetic.lines()        # ["base 1 × multiplier ×16 (…) = 16", …, "seat 0 alice: … = +800"]

Each scheme has its writer (``WRITERS``, keyed by ``Scoring`` like settlement's
``SCHEMES``). The steps write out the figures ``ddz.domain.settlement`` works out (the
cap's unit, the rake, X, the stakes, the escape penalty, ...): this module only words
them, it works out none of its own. The totals are the recorded ledger's lines summed
per seat, so the account always ends in what was actually booked (that those lines are
the rule's is the ``settlement`` check's proof, not this module's).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from ddz.domain.ledger import Ledger
from ddz.domain.multipliers import MultiplierBreakdown, Side
from ddz.domain.ruleset import Scoring
from ddz.domain.settlement import (
    FARMER_SHARES,
    LANDLORD_SHARES,
    SEATS,
    TWO_SHARES,
    HandOutcome,
    bean_escape,
    bean_owed,
    bean_stake,
    bean_x,
    ct_escape_penalty,
    ct_unit,
    rake_on,
    share_of,
)


@dataclass(frozen=True, slots=True)
class Step:
    """One line of the arithmetic: what is computed (``label``), how (``text``), and the
    figure it comes to when there is one."""

    label: str
    text: str
    value: int | str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"label": self.label, "text": self.text, "value": self.value}


@dataclass(frozen=True, slots=True)
class SeatTotal:
    """What the ledger's lines come to for a seat (``seat`` None: the system)."""

    seat: int | None
    name: str
    parts: tuple[tuple[int, str], ...]  # (amount, reason), in ledger order
    total: int

    def text(self) -> str:
        parts = " ".join(f"{amount:+d} {reason}" for amount, reason in self.parts) or "nothing"
        return f"{self.name}: {parts} = {self.total:+d}"

    def to_json(self) -> dict[str, Any]:
        return {
            "seat": self.seat,
            "name": self.name,
            "parts": [{"amount": a, "reason": r} for a, r in self.parts],
            "total": self.total,
        }


@dataclass(frozen=True, slots=True)
class Arithmetic:
    scoring: str
    steps: tuple[Step, ...]
    totals: tuple[SeatTotal, ...]  # the three seats, then the system

    def lines(self) -> list[str]:
        return [f"{s.label}: {s.text}" for s in self.steps] + [t.text() for t in self.totals]

    def step(self, label: str) -> Step:
        return next(s for s in self.steps if s.label == label)

    def to_json(self) -> dict[str, Any]:
        return {
            "scoring": self.scoring,
            "steps": [s.to_json() for s in self.steps],
            "totals": [t.to_json() for t in self.totals],
        }


def _ratio(value: Fraction) -> str:
    return str(value.numerator) if value.denominator == 1 else f"{value}"


def _figure(value: Fraction) -> str:
    """An exact figure: ``12``, or ``12.5`` / ``25/3`` when not whole."""
    if value.denominator == 1:
        return str(value.numerator)
    decimal = float(value)
    return f"{decimal:g}" if Fraction(str(decimal)) == value else _ratio(value)


def _product(multiplier: MultiplierBreakdown) -> str:
    """``8 (initial ×1 · grab ×2 · bomb ×4)``."""
    if not multiplier.factors:
        return "1 (no factors)"
    factors = " · ".join(f"{f.reason} ×{f.factor}" for f in multiplier.factors)
    return f"{multiplier.total} ({factors})"


class _Account:
    def __init__(self, outcome: HandOutcome, names: Sequence[str]) -> None:
        self.outcome = outcome
        self.names = names
        self.steps: list[Step] = []

    def seat(self, seat: int) -> str:
        name = self.names[seat] if 0 <= seat < len(self.names) else ""
        return f"seat {seat} {name}".rstrip()

    def add(self, label: str, text: str, value: int | str | None = None) -> None:
        self.steps.append(Step(label, text, value))

    def bm(self) -> int:
        o = self.outcome
        self.add(
            "base × multiplier",
            f"{o.base} × {_product(o.multiplier)} = {o.bm}",
            o.bm,
        )
        return o.bm

    def winner(self) -> Side | None:
        o = self.outcome
        if o.winner is not None:
            self.add("winner", f"the {o.winner.value} (landlord {self.seat(o.landlord)})")
        return o.winner


# --- §10.1 classic ----------------------------------------------------------------------


def _points(account: _Account) -> None:
    bm = account.bm()
    winner = account.winner()
    sign = 1 if winner == Side.LANDLORD else -1
    account.add(
        "landlord",
        f"{LANDLORD_SHARES} × {bm} = {LANDLORD_SHARES * bm} ({'won' if sign > 0 else 'lost'})",
        sign * LANDLORD_SHARES * bm,
    )
    account.add("each farmer", f"{FARMER_SHARES} × {bm} = {bm}", -sign * bm)


# --- §10.2 ct ---------------------------------------------------------------------------


def _ct(account: _Account) -> None:
    o, room = account.outcome, account.outcome.room
    bm = account.bm()
    winner = account.winner()
    side = LANDLORD_SHARES * bm
    unit = ct_unit(o)
    if room.cap is None:
        account.add("cap", f"none: each share moves bm = {bm}", unit)
    elif unit == bm:
        account.add("cap", f"{room.cap}: {LANDLORD_SHARES} × {bm} = {side} is within it", unit)
    else:
        account.add(
            "cap",
            f"{room.cap}: {LANDLORD_SHARES} × {bm} = {side} is over it; each share moves "
            f"{room.cap} // {LANDLORD_SHARES} = {unit}",
            unit,
        )
    escapee = o.escapee
    if winner == Side.LANDLORD and escapee is not None and escapee != o.landlord:
        account.add(
            "shares",
            f"landlord won and {account.seat(escapee)} escaped: the escapee pays the "
            f"landlord's {LANDLORD_SHARES} shares = {LANDLORD_SHARES * unit}, the other "
            "farmer nothing",
        )
    else:
        account.add(
            "shares",
            f"landlord {LANDLORD_SHARES} × {unit} = {LANDLORD_SHARES * unit}, each farmer "
            f"{FARMER_SHARES} × {unit} = {unit}",
        )
    if room.rake:
        winning = LANDLORD_SHARES if winner == Side.LANDLORD else FARMER_SHARES
        rake = rake_on(winning * unit, room)
        account.add(
            "rake",
            f"{_ratio(room.rake)} of each winner's capped gain, rounded down: "
            f"⌊{winning * unit} × {_ratio(room.rake)}⌋ = {rake}",
            rake,
        )
    else:
        account.add("rake", "none", 0)
    if escapee is not None:
        penalty = ct_escape_penalty(o)
        account.add(
            "escape penalty",
            f"{room.escape_penalty} × initial ×{o.initial_multiplier} = {penalty}, paid by "
            f"{account.seat(escapee)} to the system",
            penalty,
        )


# --- §10.3 beans ------------------------------------------------------------------------


def _bean_x(account: _Account, multiplier: int, shares: int, what: str) -> Fraction:
    """X = base × multiplier × role shares, then the wildcard factor and the hand cap."""
    o, room = account.outcome, account.outcome.room
    x = bean_x(o, multiplier, shares)
    account.add(
        "X",
        f"base {o.base} × multiplier ×{multiplier} × {what} {shares} = {_figure(x.plain)}",
        _figure(x.plain),
    )
    if x.factored is not None:
        factored = x.factored
        account.add(
            "wildcard factor",
            f"{_figure(x.plain)} × {_ratio(room.wildcard_coefficient)} = {_figure(factored)}",
            _figure(factored),
        )
        within = "within it" if x.value == factored else f"capped to {room.hand_cap}"
        account.add(
            "hand cap", f"{room.hand_cap}: {_figure(factored)} is {within}", _figure(x.value)
        )
    return x.value


def _fee_and_limits(account: _Account) -> None:
    o, room = account.outcome, account.outcome.room
    if room.fee:
        account.add(
            "fee",
            f"{room.fee} from every player (at most what they hold at the start)",
            room.fee,
        )
    if o.balances is not None:
        balances = " / ".join(str(b) for b in o.balances)
        account.add(
            "balance limit",
            f"balances at the start {balances}: a loser pays at most what is left after "
            "the fee, a winner receives at most their own balance",
        )


def _beans(account: _Account) -> None:
    o, room = account.outcome, account.outcome.room
    if o.escapee is not None:
        _bean_escape(account, o.escapee)
        return
    account.bm()
    account.winner()
    x = _bean_x(account, o.multiplier.total, LANDLORD_SHARES, "landlord's shares")
    landlord_beans = bean_owed(o, LANDLORD_SHARES)
    farmer_beans = bean_owed(o, FARMER_SHARES)
    landlord_stake = bean_stake(o, LANDLORD_SHARES)
    farmer_stake = bean_stake(o, FARMER_SHARES)
    if room.bean_rounding == TWO_SHARES:
        rounded = (
            "two_shares rounding (recorded before per_player): a farmer's "
            f"⌊{_figure(farmer_beans)}⌋ = {farmer_stake}, "
            f"the landlord's {LANDLORD_SHARES} × {farmer_stake} = {landlord_stake}"
        )
    else:
        rounded = (
            f"each player's X·N rounded down: the landlord's ⌊{_figure(landlord_beans)}⌋ = "
            f"{landlord_stake}, a farmer's ⌊{_figure(farmer_beans)}⌋ = {farmer_stake}"
        )
    account.add(
        "room coefficient",
        f"X·N: the landlord {_figure(x)} × {room.coefficient} = {_figure(landlord_beans)}, "
        f"a farmer {_figure(x / LANDLORD_SHARES)} × {room.coefficient} = "
        f"{_figure(farmer_beans)}; {rounded}",
        landlord_stake,
    )
    if o.winner == Side.LANDLORD:
        paid = len(o.farmers) * farmer_stake  # what the two farmers paid
        account.add(
            "transfer",
            f"each farmer pays {farmer_stake}; the landlord receives what they paid, {paid}",
        )
    else:
        # the two farmers share it by their role coefficients (1:1), each rounded down
        share = share_of(landlord_stake, FARMER_SHARES, 2 * FARMER_SHARES)
        odd = landlord_stake - 2 * share
        account.add(
            "transfer",
            f"the landlord pays {landlord_stake}; each farmer receives {share}"
            + (f"; the odd {odd} to the system (rounding)" if odd else ""),
        )
    _fee_and_limits(account)


def _bean_escape(account: _Account, escapee: int) -> None:
    o, room = account.outcome, account.outcome.room
    escape = bean_escape(o, escapee)
    played, threshold = escape.played, escape.threshold
    if escape.floored:
        why = f"{played} < {threshold}: as if ×{escape.as_if}"
    else:
        why = f"{played} ≥ {threshold}: {escape.scale} × {played}"
    account.add(
        "escape",
        f"{account.seat(escapee)} left; multiplier with every bomb held "
        f"×{_product(escape.at_escape)}, without the initial {why}; × initial "
        f"×{o.initial_multiplier} = ×{escape.multiplier}",
        escape.multiplier,
    )
    x = _bean_x(account, escape.multiplier, escape.shares, "the escapee's shares")
    account.add(
        "room coefficient",
        f"⌊{_figure(x)} × {room.coefficient}⌋ = {escape.penalty}, shared by the two others "
        "as if they had won",
        escape.penalty,
    )
    _fee_and_limits(account)


WRITERS: Mapping[Scoring, Callable[[_Account], None]] = {
    Scoring.POINTS: _points,
    Scoring.CT_POINTS: _ct,
    Scoring.BEANS: _beans,
}


def totals(ledger: Ledger, names: Sequence[str] = ()) -> tuple[SeatTotal, ...]:
    """The recorded ledger's lines summed per seat and for the system."""
    out = []
    for seat in (*SEATS, None):
        parts = tuple((line.amount, line.reason) for line in ledger.lines if line.seat == seat)
        if seat is None:
            name, total = "system", ledger.system
        else:
            label = names[seat] if seat < len(names) else ""
            name, total = f"seat {seat} {label}".rstrip(), ledger.deltas[seat]
        out.append(SeatTotal(seat, name, parts, total))
    return tuple(out)


def explain(outcome: HandOutcome, ledger: Ledger, names: Sequence[str] = ()) -> Arithmetic:
    """The settlement of ``outcome`` written out, ending in ``ledger``'s figures."""
    account = _Account(outcome, names)
    WRITERS[Scoring(outcome.scoring)](account)
    return Arithmetic(outcome.scoring.value, tuple(account.steps), totals(ledger, names))
