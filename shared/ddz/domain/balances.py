"""A player's balance and a settled hand as the settlement projection keeps them: the
values its store (``ddz.adapters.service_db.balances``), its use cases and its codec
share."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Balance:
    player_id: str
    balance: int
    hands: int


@dataclass(frozen=True, slots=True)
class SettledHand:
    id: int
    hand_id: str
    event_id: str
    landlord: int
    base: int
    payload: bytes  # the HandSettled payload as published
    players: tuple[str, ...]
    deltas: tuple[int, ...]
