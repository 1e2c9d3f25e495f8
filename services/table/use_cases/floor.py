"""The tables and the hands played at them, as the use cases look them up: a table or
hand the caller names that does not exist is a ``Refusal`` here, once for every call."""

from __future__ import annotations

from collections.abc import Iterable

from ddz.application.errors import Reason, Refusal
from ddz.application.hand_fold import HandFold
from ddz.domain import ids
from ddz.domain.hand.state import SEATS

from .ports import Envelope, Hands
from .tables import Table, Tables


class Floor:
    def __init__(self, tables: Tables, hands: Hands) -> None:
        self.tables = tables
        self.hands = hands

    def table(self, table_id: str) -> Table:
        table = self.tables.get(table_id)
        if table is None:
            raise Refusal.not_found(Reason.UNKNOWN_TABLE, f"no table {table_id!r}")
        return table

    async def hand(self, hand_id: str) -> HandFold:
        fold = self.hands.get(hand_id)
        if fold is None:
            if not ids.is_hand_id(hand_id):
                raise Refusal.invalid(f"{hand_id!r} is not a hand id", Reason.UNKNOWN_HAND)
            fold = await self.hands.load(hand_id)
        if fold is None and await self._dealt_meanwhile(hand_id):
            fold = self.hands.get(hand_id) or await self.hands.load(hand_id)
        if fold is None:
            raise Refusal.not_found(Reason.UNKNOWN_HAND, f"no hand {hand_id!r}")
        return fold

    async def _dealt_meanwhile(self, hand_id: str) -> bool:
        """Whether a table's last hand, known by its id (``GetTable``) while its deal
        is under way, may be dealt now: its deal holds the table's lock, so once the
        lock is free the deal is over, dealt or withdrawn."""
        table = self.tables.table_of(hand_id)
        if table is None or table.last_hand_id != hand_id or not table.lock.locked():
            return False
        async with table.lock:
            return True

    async def last_hand(self, table: Table) -> HandFold | None:
        """The table's last hand (None: it has none, or the bus does not have it)."""
        last = table.last_hand_id
        if last is None:
            return None
        return self.hands.get(last) or await self.hands.load(last)

    def hand_in_play(self, table: Table) -> str:
        """The table's hand in play ("" when its last hand is over or it has none)."""
        last = table.last_hand_id
        fold = self.hands.get(last) if last is not None else None
        return last if last is not None and (fold is None or not fold.over) else ""

    def table_id_of(self, hand_id: str) -> str:
        table = self.tables.table_of(hand_id)
        return table.table_id if table is not None else ""

    async def learn(self, hand_id: str, envelopes: Iterable[Envelope]) -> None:
        """Fold the events a call returned now (the consumer's copies come later and
        are ignored as duplicates), so the caller's view already includes them."""
        await self.hands.learn(
            hand_id, [e for e in envelopes if e.stream_id.partition("-")[2] == hand_id]
        )


def check_seat(seat: int) -> None:
    if seat not in SEATS:
        raise Refusal.invalid(f"no seat {seat} (seats are 0, 1, 2)", Reason.UNKNOWN_SEAT)
