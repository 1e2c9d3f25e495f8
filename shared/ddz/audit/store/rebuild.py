"""``ddz rebuild``: the settlement projection (balances) rebuilt from events alone.

A player's balance is the sum of their seats' deltas over every ``HandSettled`` in the
store, and ``hands`` the number of settled hands they sat in -- what the settlement
service's projection (``ddz.adapters.service_db.balances``) must hold; both add up a
hand by ``ddz.domain.ledger.per_player``. The players of a hand are the seats of its
``HandStarted``. ``rebuild_balances`` is the pure fold; ``settled_hands`` reads only
those two event types from the store; ``live_balances`` reads the live projection.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from ddz.adapters import codec
from ddz.adapters.service_db.balances import BalanceProjection
from ddz.adapters.service_db.schema import balances
from ddz.adapters.store.schema import events
from ddz.domain.balances import Balance
from ddz.domain.hand.events import HandSettled, HandStarted
from ddz.domain.ledger import Ledger, per_player

HAND_PREFIX = "hand-"


@dataclass(frozen=True, slots=True)
class Settled:
    stream_id: str
    players: tuple[str, ...]
    ledger: Ledger


@dataclass(frozen=True, slots=True)
class Difference:
    player_id: str
    rebuilt: Balance | None  # None: no settled hand in the events
    live: Balance | None  # None: not in the live table

    def to_json(self) -> dict[str, Any]:
        return {
            "player_id": self.player_id,
            "rebuilt": None if self.rebuilt is None else self.rebuilt.balance,
            "live": None if self.live is None else self.live.balance,
            "rebuilt_hands": None if self.rebuilt is None else self.rebuilt.hands,
            "live_hands": None if self.live is None else self.live.hands,
        }


class NoProjection(LookupError):
    """The database has no settlement projection table."""


def rebuild_balances(settled: Iterable[Settled]) -> dict[str, Balance]:
    """Every player's balance and settled-hand count, from the hands' ledgers."""
    totals: dict[str, tuple[int, int]] = {}
    for hand in settled:
        for player, delta in per_player(hand.players, hand.ledger.deltas).items():
            balance, hands = totals.get(player, (0, 0))
            totals[player] = (balance + delta, hands + 1)
    return {player: Balance(player, b, h) for player, (b, h) in totals.items()}


def compare(rebuilt: dict[str, Balance], live: dict[str, Balance]) -> list[Difference]:
    """Every player whose rebuilt balance or hand count differs from the live one."""
    return [
        Difference(player, rebuilt.get(player), live.get(player))
        for player in sorted(set(rebuilt) | set(live))
        if rebuilt.get(player) != live.get(player)
    ]


def settled_hands(engine: Engine) -> Iterator[Settled]:
    """Every hand's ``HandSettled`` with its players, in the order they were stored."""
    query = (
        sa.select(events.c.stream_id, events.c.type, events.c.type_version, events.c.payload)
        .where(
            events.c.type.in_([HandStarted.TYPE, HandSettled.TYPE]),
            events.c.stream_id.like(HAND_PREFIX + "%"),
        )
        .order_by(events.c.position)
    )
    players: dict[str, tuple[str, ...]] = {}
    with engine.connect() as conn:
        for stream_id, type_, type_version, payload in conn.execute(query):
            event = codec.decode_event(type_, type_version, bytes(payload))
            if isinstance(event, HandStarted):
                players[stream_id] = tuple(seat.player_id for seat in event.seats)
            elif isinstance(event, HandSettled):
                if stream_id not in players:
                    raise codec.CodecError(f"{stream_id}: hand_settled without hand_started")
                yield Settled(stream_id, players[stream_id], event.ledger)


def live_balances(engine: Engine) -> dict[str, Balance]:
    """The settlement service's projection of balances."""
    if not sa.inspect(engine).has_table(balances.name):
        raise NoProjection("the database has no settlement projection (table balances)")
    return BalanceProjection(engine).all_balances()
