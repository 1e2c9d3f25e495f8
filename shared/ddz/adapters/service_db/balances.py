"""The settlement projection: balances and settled hands, from ``HandSettled`` events.

``apply_settled`` folds one event in one transaction, together with its event id in
``processed_events``: applying the same event twice (a redelivery, a duplicate, a
second instance) changes nothing. Balances start at 0 and are the sum of a player's
ledger deltas (``ddz.domain.ledger.per_player``: one player may hold two seats), and
``hands`` the number of settled hands they sat in. Shared by the settlement service and
``ddz rebuild`` (``ddz.audit.store.rebuild``), which folds the same deltas from the
store's events and reads this projection's balances to compare.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection, Engine

from ddz.adapters.service_db.schema import (
    balances,
    processed_events,
    settled_hands,
    settled_seats,
)
from ddz.domain.balances import Balance, SettledHand
from ddz.domain.hand.events import HandSettled
from ddz.domain.ledger import per_player

_BEGIN_OPTION = "ddz_sqlite_begin"  # honoured by engines from ddz.adapters.store.make_engine


class BalanceProjection:
    """Synchronous and thread-safe (call it through ``asyncio.to_thread``)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def apply_settled(
        self,
        event_id: str,
        hand_id: str,
        players: Sequence[str],
        settled: HandSettled,
        payload: bytes,
    ) -> bool:
        """Fold one HandSettled; False when this event id was already applied."""
        if len(players) != 3:
            raise ValueError(f"a hand has three players, got {len(players)}")
        deltas = settled.ledger.deltas
        with self._write() as conn:
            if conn.execute(
                sa.select(processed_events.c.event_id).where(
                    processed_events.c.event_id == event_id
                )
            ).first():
                return False
            conn.execute(sa.insert(processed_events), {"event_id": event_id})
            settled_id = conn.execute(
                sa.insert(settled_hands).returning(settled_hands.c.id),
                {
                    "hand_id": hand_id,
                    "event_id": event_id,
                    "landlord": settled.landlord,
                    "base": settled.base,
                    "payload": payload,
                },
            ).scalar_one()
            conn.execute(
                sa.insert(settled_seats),
                [
                    {"hand_id": hand_id, "seat": seat, "player_id": player,
                     "delta": delta, "settled_id": settled_id}
                    for seat, (player, delta) in enumerate(zip(players, deltas, strict=True))
                ],
            )  # fmt: skip
            conn.execute(
                _add_to_balance(conn.dialect.name),
                [
                    {"player_id": player, "balance": delta, "hands": 1}
                    for player, delta in per_player(players, deltas).items()
                ],
            )
        return True

    def balance(self, player_id: str) -> Balance:
        with self.engine.connect() as conn:
            row = conn.execute(
                sa.select(balances.c.balance, balances.c.hands).where(
                    balances.c.player_id == player_id
                )
            ).first()
        return Balance(player_id, *(row or (0, 0)))

    def all_balances(self) -> dict[str, Balance]:
        """Every player's balance and settled-hand count, by player id."""
        with self.engine.connect() as conn:
            rows = conn.execute(
                sa.select(balances.c.player_id, balances.c.balance, balances.c.hands)
            ).all()
        return {player: Balance(player, balance, hands) for player, balance, hands in rows}

    def settled_hand(self, hand_id: str) -> SettledHand | None:
        with self.engine.connect() as conn:
            row = conn.execute(
                sa.select(settled_hands).where(settled_hands.c.hand_id == hand_id)
            ).first()
            if row is None:
                return None
            return self._with_seats(conn, [row])[0]

    def player_hands(self, player_id: str, limit: int) -> list[SettledHand]:
        """The player's settled hands, newest first."""
        with self.engine.connect() as conn:
            ids = (
                sa.select(settled_seats.c.settled_id)
                .where(settled_seats.c.player_id == player_id)
                .order_by(settled_seats.c.settled_id.desc())
                .limit(limit)
                .scalar_subquery()
            )
            rows = conn.execute(
                sa.select(settled_hands)
                .where(settled_hands.c.id.in_(ids))
                .order_by(settled_hands.c.id.desc())
            ).all()
            return self._with_seats(conn, rows)

    @staticmethod
    def _with_seats(
        conn: Connection, rows: Sequence[sa.Row[tuple[object, ...]]]
    ) -> list[SettledHand]:
        hand_ids = [row.hand_id for row in rows]
        seats: dict[str, list[tuple[int, str, int]]] = {h: [] for h in hand_ids}
        for hand_id, seat, player, delta in conn.execute(
            sa.select(
                settled_seats.c.hand_id, settled_seats.c.seat,
                settled_seats.c.player_id, settled_seats.c.delta,
            ).where(settled_seats.c.hand_id.in_(hand_ids))
        ):  # fmt: skip
            seats[hand_id].append((seat, player, delta))
        out = []
        for row in rows:
            ordered = sorted(seats[row.hand_id])
            out.append(
                SettledHand(
                    id=row.id,
                    hand_id=row.hand_id,
                    event_id=row.event_id,
                    landlord=row.landlord,
                    base=row.base,
                    payload=bytes(row.payload),
                    players=tuple(player for _, player, _ in ordered),
                    deltas=tuple(delta for _, _, delta in ordered),
                )
            )
        return out

    @contextmanager
    def _write(self) -> Iterator[Connection]:
        """A transaction that takes SQLite's write lock at BEGIN (no upgrade deadlocks)."""
        with self.engine.connect() as conn:
            if conn.dialect.name == "sqlite":
                conn.execution_options(**{_BEGIN_OPTION: "BEGIN IMMEDIATE"})
            with conn.begin():
                yield conn


@functools.cache
def _add_to_balance(dialect: str) -> Any:
    """An upsert that adds each row's ``balance`` to the player's atomically (safe with
    concurrent writers); its rows are bound per call. Built once per dialect: building it
    cost more than running it, for each player of each settled hand."""
    insert: Any
    if dialect == "postgresql":
        insert = postgresql.insert(balances)
    elif dialect == "sqlite":
        insert = sqlite.insert(balances)
    else:  # pragma: no cover - the store supports these two only
        raise NotImplementedError(dialect)
    return insert.on_conflict_do_update(
        index_elements=[balances.c.player_id],
        set_={
            "balance": balances.c.balance + insert.excluded.balance,
            "hands": balances.c.hands + 1,
        },
    )
