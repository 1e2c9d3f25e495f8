"""Settlement (RULES.md §10): a finished hand's outcome -> a ledger of integer transfers.

Three schemes, chosen by data (``SCHEMES``, keyed by ``Scoring``), never by variant
name: classic points (§10.1), ct points with cap, rake and escape penalty (§10.2),
and beans with room coefficient, fee, balance limits and escapes (§10.3).

Every ledger is a list of lines (seat or system, signed amount, reason). A seat's
change is the sum of its lines, the system's take the sum of the system's lines,
and the lines of a ledger always sum to zero: nothing is created or lost. Where an
amount is not whole, each player's amount is rounded down and the system keeps the
remainder. The arithmetic choices that RULES.md leaves open are written down in
``docs/RULE_DECISIONS.md`` under "§10 Settlement".

This module is the one place that works a hand's money out. Its figures are public so
that whoever shows or checks a settlement reads them rather than working them out again:
``ct_unit``, ``rake_on`` and ``ct_escape_penalty`` (§10.2), ``bean_x``, ``bean_owed``,
``bean_stake`` and ``bean_escape`` (§10.3), and ``share_of`` (a winner's part of what
was paid). The ledger it writes, and a hand's deltas by player (what balances add up),
are ``ddz.domain.ledger``'s.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction

from ddz.domain.ledger import Book, Ledger
from ddz.domain.multipliers import MultiplierBreakdown, Side
from ddz.domain.ruleset import Scoring

SEATS = (0, 1, 2)
LANDLORD_SHARES = 2  # role coefficients (§10.1 2·bm vs bm; §10.3 "landlord 2, farmer 1")
FARMER_SHARES = 1


class SettlementError(ValueError):
    """An outcome that cannot be settled (e.g. an escapee that is not a seat)."""


@dataclass(frozen=True, slots=True)
class BeanEscapeRule:
    """§10.3 escape: below ``threshold`` (multiplier without the initial one) the
    escapee pays as if at ``*_floor``x, else ``*_scale`` times the actual amount."""

    threshold: int = 10
    landlord_floor: int = 20
    landlord_scale: int = 4
    farmer_floor: int = 10
    farmer_scale: int = 2


PER_PLAYER = "per_player"
"""§10.3 rounding: each loser pays their own X·N rounded down; the winners share what was
paid by role coefficient, each share rounded down; the odd bean goes to the system."""
TWO_SHARES = "two_shares"
"""§10.3 rounding of the hands recorded before ``bean_rounding`` existed: one farmer's
share is ``⌊X·N⌋`` of the farmer's X and the landlord moves exactly two of them, both
ways (so a landlord who loses an odd X·N pays one bean less than it). They replay and
audit as they were settled."""
BEAN_ROUNDINGS = (PER_PLAYER, TWO_SHARES)


@dataclass(frozen=True, slots=True)
class RoomSettings:
    """What a room fixes for settlement (§10, §11)."""

    initial_multiplier: int = 1
    rake: Fraction = Fraction(0)  # ct: ratio of each winner's capped gain
    cap: int | None = None  # ct: most the winners together / losers together move
    coefficient: int = 1  # beans: room coefficient N
    fee: int = 0  # beans: per-hand fee A
    wildcard_coefficient: Fraction = Fraction(1, 4)  # beans, wildcard rooms only
    hand_cap: int = 10000  # beans: X at most this (wildcard rooms)
    min_balance: int = 0  # to join (used by matchmaking)
    escape_penalty: int = 10  # ct: x initial multiplier
    bean_escape: BeanEscapeRule = field(default_factory=BeanEscapeRule)
    bean_rounding: str = PER_PLAYER  # beans: how an odd X·N is rounded (BEAN_ROUNDINGS)

    def __post_init__(self) -> None:
        # Ratios may come in as int/str/float from configuration; keep them exact.
        for name in ("rake", "wildcard_coefficient"):
            value = getattr(self, name)
            if not isinstance(value, Fraction):
                object.__setattr__(self, name, _fraction(value, name))
        _whole(self.initial_multiplier, "initial_multiplier", low=1)
        if not 0 <= self.rake <= 1:
            raise ValueError(f"rake must be a ratio from 0 to 1, got {self.rake}")
        if self.cap is not None:
            _whole(self.cap, "cap", low=0)
        _whole(self.coefficient, "coefficient", low=0)
        _whole(self.fee, "fee", low=0)
        if self.wildcard_coefficient <= 0:
            raise ValueError(
                f"wildcard_coefficient must be above 0, got {self.wildcard_coefficient}"
            )
        _whole(self.hand_cap, "hand_cap", low=0)
        _whole(self.min_balance, "min_balance", low=0)
        _whole(self.escape_penalty, "escape_penalty", low=0)
        if self.bean_rounding not in BEAN_ROUNDINGS:
            raise ValueError(
                f"bean_rounding must be one of {', '.join(BEAN_ROUNDINGS)}, "
                f"got {self.bean_rounding!r}"
            )


@dataclass(frozen=True, slots=True)
class HandOutcome:
    """Everything settlement needs to know about a finished hand."""

    scoring: Scoring  # from ruleset (a room may override)
    room: RoomSettings
    landlord: int  # seat 0..2
    base: int  # call score (1 in grab variants)
    multiplier: MultiplierBreakdown  # everything after base: initial, grabs, shows, bombs, spring
    winner: Side | None  # None when the hand ended by a bean-room escape before a winner
    wildcard_room: bool = False  # beans: apply wildcard_coefficient and hand_cap
    balances: tuple[int, int, int] | None = None  # beans: balances at hand start
    escapee: int | None = None  # ct: first to disconnect; beans: who left
    # beans: every bomb in all hands, played or not, at the escape (None: ``multiplier``)
    escape_multiplier: MultiplierBreakdown | None = None

    @property
    def farmers(self) -> tuple[int, int]:
        return (self.landlord + 1) % 3, (self.landlord + 2) % 3

    @property
    def bm(self) -> int:
        """§10: base x multiplier."""
        return self.base * self.multiplier.total

    @property
    def initial_multiplier(self) -> int:
        """The initial multiplier the hand was played at: the breakdown's "initial"
        factor when it has one, else the room's."""
        factors = [f.factor for f in self.multiplier.factors if f.reason == "initial"]
        return math.prod(factors) if factors else self.room.initial_multiplier


# --- helpers ---------------------------------------------------------------------------


def _whole(value: object, name: str, *, low: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ValueError(f"{name} must be a whole number >= {low}, got {value!r}")


def _fraction(value: object, name: str) -> Fraction:
    if isinstance(value, bool) or not isinstance(value, int | float | str | Fraction):
        raise ValueError(f"{name} must be a number or a ratio like '1/20', got {value!r}")
    try:
        # str() first so that a float such as 0.05 means exactly 1/20.
        return Fraction(str(value) if isinstance(value, float) else value)
    except (ValueError, ZeroDivisionError):
        raise ValueError(f"{name} must be a number or a ratio like '1/20', got {value!r}") from None


def _check(outcome: HandOutcome) -> None:
    def seat(value: object, name: str) -> None:
        if isinstance(value, bool) or value not in SEATS:
            raise SettlementError(f"{name} must be a seat 0, 1 or 2, got {value!r}")

    seat(outcome.landlord, "landlord")
    if outcome.escapee is not None:
        seat(outcome.escapee, "escapee")
    if isinstance(outcome.base, bool) or not isinstance(outcome.base, int) or outcome.base < 1:
        raise SettlementError(f"base must be a whole number >= 1, got {outcome.base!r}")
    if outcome.balances is not None:
        if len(outcome.balances) != 3:
            raise SettlementError(f"balances must be 3 numbers, got {outcome.balances!r}")
        for b in outcome.balances:
            if isinstance(b, bool) or not isinstance(b, int) or b < 0:
                raise SettlementError(f"balances must be whole numbers >= 0, got {b!r}")
    if outcome.winner is not None and not isinstance(outcome.winner, Side):
        raise SettlementError(f"winner must be 'landlord' or 'farmers', got {outcome.winner!r}")


def _need_winner(outcome: HandOutcome) -> Side:
    if outcome.winner is None:
        raise SettlementError(
            f"a {outcome.scoring.value} hand needs a winner: only a bean-room escape "
            "ends a hand without one (§10.3)"
        )
    return outcome.winner


# --- §10.1 classic ---------------------------------------------------------------------


def _settle_points(outcome: HandOutcome) -> Ledger:
    """§10.1: landlord ±2·bm, each farmer ∓bm. Classic has no escape rule: a player
    who drops is played for by the bot and settles like any other seat."""
    winner = _need_winner(outcome)
    book = Book()
    sign = 1 if winner == Side.LANDLORD else -1
    for seat in SEATS:
        shares = LANDLORD_SHARES if seat == outcome.landlord else -FARMER_SHARES
        amount = sign * shares * outcome.bm
        book.add(seat, amount, "win" if amount > 0 else "loss")
    return book.ledger(outcome.multiplier.total)


# --- §10.2 ct --------------------------------------------------------------------------


def ct_shares(outcome: HandOutcome, winner: Side) -> dict[int, int]:
    """How many bm each seat wins (+) or loses (-) in the four cases of §10.2."""
    landlord, escapee = outcome.landlord, outcome.escapee
    if winner == Side.FARMERS:
        # Farmers win: landlord -2, each farmer +1, whoever escaped (the escaped
        # farmer's "+2·bm" of the source is +bm, Decision of §10.2).
        return {seat: (-LANDLORD_SHARES if seat == landlord else FARMER_SHARES) for seat in SEATS}
    if escapee is not None and escapee != landlord:
        # Landlord wins, a farmer escaped: the escaped farmer pays the landlord's whole
        # 2·bm; the other farmer 0.
        return {
            seat: {landlord: LANDLORD_SHARES, escapee: -LANDLORD_SHARES}.get(seat, 0)
            for seat in SEATS
        }
    return {seat: (LANDLORD_SHARES if seat == landlord else -FARMER_SHARES) for seat in SEATS}


def ct_unit(outcome: HandOutcome) -> int:
    """§10.2: what one share moves once the cap is applied. The cap bounds the landlord's
    side (2 shares); each farmer moves half of it. An odd cap cannot be halved in whole
    points: the side moves cap - 1 (Decision)."""
    bm, cap = outcome.bm, outcome.room.cap
    return bm if cap is None or LANDLORD_SHARES * bm <= cap else cap // LANDLORD_SHARES


def rake_on(gain: int, room: RoomSettings) -> int:
    """§10.2: the rake on a winner's capped gain, rounded down: the winner keeps the
    fraction of a point."""
    return math.floor(gain * room.rake)


def ct_escape_penalty(outcome: HandOutcome) -> int:
    """§10.2: what the escapee pays the system, outside cap and rake."""
    return outcome.room.escape_penalty * outcome.initial_multiplier


def _settle_ct_points(outcome: HandOutcome) -> Ledger:
    """§10.2: the cap first, then the rake on each winner's capped gain, then the escape
    penalty (outside cap and rake)."""
    winner = _need_winner(outcome)
    book = Book()
    bm = outcome.bm
    unit = ct_unit(outcome)
    shares = ct_shares(outcome, winner)
    for seat, n in shares.items():
        book.add(seat, n * bm, "win" if n > 0 else "loss")
    for seat, n in shares.items():
        book.add(seat, n * (unit - bm), "cap")
    for seat, n in shares.items():
        if n > 0:
            book.move(seat, None, rake_on(n * unit, outcome.room), "rake")
    if outcome.escapee is not None:
        book.move(outcome.escapee, None, ct_escape_penalty(outcome), "escape_penalty")
    return book.ledger(outcome.multiplier.total)


# --- §10.3 beans -----------------------------------------------------------------------


def _role_shares(outcome: HandOutcome, seat: int) -> int:
    return LANDLORD_SHARES if seat == outcome.landlord else FARMER_SHARES


@dataclass(frozen=True, slots=True)
class BeanX:
    """§10.3 X, step by step: ``plain`` = base x multiplier x role coefficient; in a
    wildcard room ``factored`` = that x the wildcard coefficient (else None); ``value``:
    what X is, at most the hand cap in a wildcard room."""

    plain: Fraction
    factored: Fraction | None
    value: Fraction


def bean_x(outcome: HandOutcome, multiplier: int, shares: int) -> BeanX:
    """§10.3 X = base x multiplier x role coefficient; in a wildcard room x 0.25 and at
    most the hand cap. The cap bounds X *after* the role coefficient, as the source
    caps "the points a hand gives" (Decision)."""
    plain = Fraction(outcome.base * multiplier * shares)
    if not outcome.wildcard_room:
        return BeanX(plain, None, plain)
    factored = plain * outcome.room.wildcard_coefficient
    return BeanX(plain, factored, min(factored, Fraction(outcome.room.hand_cap)))


def share_of(total: int, weight: int, weights: int) -> int:
    """A winner's part of ``total``, by role coefficient (``weight`` of ``weights``),
    rounded down: the odd bean goes to the system (§10.3)."""
    return total * weight // weights


def _fees(outcome: HandOutcome) -> dict[int, int]:
    """Fee A from every player, as far as their balance at hand start goes. The fee
    comes first: a loser pays the winners out of what is left after it (Decision)."""
    fee, balances = outcome.room.fee, outcome.balances
    return {seat: fee if balances is None else min(fee, balances[seat]) for seat in SEATS}


def _charge_fees(book: Book, fees: Mapping[int, int]) -> None:
    for seat, fee in fees.items():
        book.move(seat, None, fee, "fee")


def _pay_and_share(
    outcome: HandOutcome,
    book: Book,
    nominal: Mapping[int, int],
    weights: Mapping[int, int],
    fees: Mapping[int, int],
    reasons: tuple[str, str],
    detail: str = "",
) -> None:
    """Losers pay ``nominal`` within their balance; winners share what was actually paid
    in proportion to ``weights``, each at most their own balance at hand start; what a
    winner's limit keeps goes back to the payers; rounding remainders to the system.

    Writes the nominal lines (``reasons``: payer's, payee's), then one ``balance_limit``
    line per player whose amount the limits changed, and the system's ``rounding``.
    ``detail`` annotates the payers' nominal lines.
    """
    balances = outcome.balances
    weight_total = sum(weights.values())
    paying = {
        s: n if balances is None else max(0, min(n, balances[s] - fees[s]))
        for s, n in nominal.items()
    }
    paid_total = sum(paying.values())
    due = {s: share_of(paid_total, w, weight_total) for s, w in weights.items()}
    received = {s: d if balances is None else min(d, balances[s]) for s, d in due.items()}
    kept = sum(due.values()) - sum(received.values())
    refunds = {s: kept * p // paid_total if paid_total else 0 for s, p in paying.items()}
    paid = {s: paying[s] - refunds[s] for s in paying}
    rounding = paid_total - sum(received.values()) - sum(refunds.values())

    # What would have moved without any balance limit, for the nominal lines.
    nominal_total = sum(nominal.values())
    nominal_due = {s: share_of(nominal_total, w, weight_total) for s, w in weights.items()}
    payer_reason, payee_reason = reasons
    for s, n in nominal.items():
        book.add(s, -n, payer_reason, detail)
    for s, n in nominal_due.items():
        book.add(s, n, payee_reason)
    for s in nominal:
        book.add(s, nominal[s] - paid[s], "balance_limit")
    for s in weights:
        book.add(s, received[s] - nominal_due[s], "balance_limit")
    book.add(None, rounding, "rounding")


def bean_owed(outcome: HandOutcome, shares: int) -> Fraction:
    """X·N of a player of ``shares`` role coefficients, exactly, before rounding. X is
    the landlord's X over two per share, so the wildcard room's cap bounds the landlord's
    X whatever the role (Decision)."""
    landlord_x = bean_x(outcome, outcome.multiplier.total, LANDLORD_SHARES).value
    return shares * landlord_x / LANDLORD_SHARES * outcome.room.coefficient


def bean_stake(outcome: HandOutcome, shares: int) -> int:
    """What a loser of ``shares`` role coefficients pays in a bean hand before fee and
    limits: X·N rounded down for that player (``PER_PLAYER``), or that many farmer's
    shares of ``⌊X·N⌋`` each (``TWO_SHARES``, hands recorded before the setting)."""
    if outcome.room.bean_rounding == TWO_SHARES:
        return shares * math.floor(bean_owed(outcome, FARMER_SHARES))
    return math.floor(bean_owed(outcome, shares))


def _settle_beans(outcome: HandOutcome) -> Ledger:
    """§10.3: each loser pays X·N + A, each winner receives X·N - A, within balances."""
    if outcome.escapee is not None:
        return _settle_bean_escape(outcome, outcome.escapee)
    winner = _need_winner(outcome)
    book = Book()
    fees = _fees(outcome)
    landlord, farmers = outcome.landlord, outcome.farmers
    if winner == Side.LANDLORD:
        nominal = {f: bean_stake(outcome, FARMER_SHARES) for f in farmers}
        weights = {landlord: LANDLORD_SHARES}
    else:
        nominal = {landlord: bean_stake(outcome, LANDLORD_SHARES)}
        weights = {f: FARMER_SHARES for f in farmers}
    _pay_and_share(outcome, book, nominal, weights, fees, ("loss", "win"))
    _charge_fees(book, fees)
    return book.ledger(outcome.multiplier.total)


@dataclass(frozen=True, slots=True)
class BeanEscape:
    """§10.3 escape, figure by figure: the multiplier with every bomb held
    (``at_escape``), without the initial one (``played``); below the rule's
    ``threshold`` the escapee pays as if at ``as_if``x, else ``scale`` times the actual;
    that times the initial multiplier is ``multiplier``; X at it for the escapee's role
    ``shares``, and the ``penalty`` ⌊X·N⌋ the two others share."""

    at_escape: MultiplierBreakdown
    played: int
    threshold: int
    floored: bool  # played < threshold: as if at the floor
    as_if: int
    scale: int
    multiplier: int
    shares: int
    x: BeanX
    penalty: int

    @property
    def detail(self) -> str:
        """The ledger line's note on the escapee's penalty."""
        if self.floored:
            return (
                f"multiplier {self.played} (without initial) < {self.threshold}: "
                f"as if {self.as_if}x"
            )
        return (
            f"multiplier {self.played} (without initial) >= {self.threshold}: {self.scale}x actual"
        )


def bean_escape(outcome: HandOutcome, escapee: int) -> BeanEscape:
    """§10.3 escape: the escapee's penalty at the multiplier of every bomb in all hands
    (played or not)."""
    rule = outcome.room.bean_escape
    at_escape = outcome.escape_multiplier
    if at_escape is None:
        at_escape = outcome.multiplier
    played = at_escape.without("initial").total
    as_if, scale = (
        (rule.landlord_floor, rule.landlord_scale)
        if escapee == outcome.landlord
        else (rule.farmer_floor, rule.farmer_scale)
    )
    floored = played < rule.threshold
    multiplier = outcome.initial_multiplier * (as_if if floored else played * scale)
    shares = _role_shares(outcome, escapee)
    x = bean_x(outcome, multiplier, shares)
    penalty = math.floor(x.value * outcome.room.coefficient)
    return BeanEscape(
        at_escape, played, rule.threshold, floored, as_if, scale, multiplier, shares, x, penalty
    )


def _settle_bean_escape(outcome: HandOutcome, escapee: int) -> Ledger:
    """§10.3 escape: the hand ends; the escapee pays a penalty at the multiplier of every
    bomb in all hands (played or not), shared by the two others as if they had won."""
    if outcome.winner is not None:
        raise SettlementError(
            "a bean-room escape ends the hand (§10.3): give no winner with an escapee"
        )
    escape = bean_escape(outcome, escapee)
    book = Book()
    fees = _fees(outcome)
    weights = {s: _role_shares(outcome, s) for s in SEATS if s != escapee}
    _pay_and_share(
        outcome,
        book,
        {escapee: escape.penalty},
        weights,
        fees,
        ("escape_penalty", "escape_share"),
        escape.detail,
    )
    _charge_fees(book, fees)
    return book.ledger(outcome.multiplier.total)


# --- the scheme table -------------------------------------------------------------------

Scheme = Callable[[HandOutcome], Ledger]

SCHEMES: Mapping[Scoring, Scheme] = {
    Scoring.POINTS: _settle_points,
    Scoring.CT_POINTS: _settle_ct_points,
    Scoring.BEANS: _settle_beans,
}


def settle(outcome: HandOutcome) -> Ledger:
    """The ledger of a finished hand (§10), by the outcome's scoring scheme."""
    _check(outcome)
    try:
        scheme = SCHEMES[Scoring(outcome.scoring)]
    except (KeyError, ValueError):
        raise SettlementError(f"unknown scoring {outcome.scoring!r}") from None
    return scheme(outcome)
