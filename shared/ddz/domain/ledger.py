"""A settled hand's ledger (RULES.md §10): lines of integer transfers that always balance.

Every ledger is a list of lines (seat or system, signed amount, reason). A seat's change
is the sum of its lines, the system's take the sum of the system's lines, and the lines
always sum to zero: nothing is created or lost. ``ddz.domain.settlement`` writes ledgers
with a ``Book``; ``per_player`` is what a hand changes each player's balance by, the one
fold the settlement projection and ``ddz rebuild`` both add up.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class LedgerLine:
    seat: int | None  # None = the system
    amount: int
    reason: str  # "win", "loss", "rake", "fee", "escape_penalty", "cap", "balance_limit", ...
    detail: str = ""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"seat": self.seat, "amount": self.amount, "reason": self.reason}
        if self.detail:
            out["detail"] = self.detail
        return out


@dataclass(frozen=True, slots=True)
class Ledger:
    deltas: tuple[int, int, int]
    system: int
    multiplier: int
    lines: tuple[LedgerLine, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "deltas": list(self.deltas),
            "system": self.system,
            "multiplier": self.multiplier,
            "lines": [line.to_json() for line in self.lines],
        }


class Book:
    """Collects ledger lines; the ledger's figures are only ever sums of its lines."""

    def __init__(self) -> None:
        self.lines: list[LedgerLine] = []

    def add(self, seat: int | None, amount: int, reason: str, detail: str = "") -> None:
        if amount:
            self.lines.append(LedgerLine(seat, amount, reason, detail))

    def move(self, payer: int | None, payee: int | None, amount: int, reason: str) -> None:
        """One transfer, written as the two lines it makes."""
        self.add(payer, -amount, reason)
        self.add(payee, amount, reason)

    def ledger(self, multiplier: int) -> Ledger:
        deltas = [0, 0, 0]
        system = 0
        for line in self.lines:
            if line.seat is None:
                system += line.amount
            else:
                deltas[line.seat] += line.amount
        if sum(deltas) + system != 0:  # pragma: no cover - a bug, not bad input
            raise AssertionError(f"settlement does not balance: {deltas} + {system}")
        return Ledger((deltas[0], deltas[1], deltas[2]), system, multiplier, tuple(self.lines))


def per_player(players: Sequence[str], deltas: Sequence[int]) -> dict[str, int]:
    """A hand's deltas summed per player, in seat order (one player may hold two seats,
    e.g. in tests): what each player's balance changes by."""
    out: dict[str, int] = {}
    for player, delta in zip(players, deltas, strict=True):
        out[player] = out.get(player, 0) + delta
    return out
