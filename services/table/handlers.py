"""The table service's use cases, wired together from their ports.

Each job has its module: ``dealing`` (tables and their hands), ``joining`` (rooms),
``moves`` (a seat's moves and the service's own commands for a seat), ``watching``
(views, streams, hints); ``floor`` finds tables and hands, ``auth.Gate`` says who may
do what, ``seating`` and ``presence`` keep rooms and streams. Everything refused is a
``Refusal``; nothing here knows gRPC (``servicer`` translates, ``clients`` and
``credentials`` implement the ports, ``app`` wires).
"""

from __future__ import annotations

from ddz.adapters.hand_feed import HandFold

from .auth import Gate
from .dealing import Dealing
from .floor import Floor
from .joining import Joining
from .moves import Moves
from .ports import Bot, Dealer, Hands, Rules, Settlement, Tokens
from .presence import Presence
from .rooms import Rooms
from .seating import Seating
from .tables import Table, Tables
from .watching import Watching


class TableHandlers:
    def __init__(
        self,
        *,
        tables: Tables,
        hands: Hands,
        rooms: Rooms,
        dealer: Dealer,
        rules: Rules,
        bot: Bot,
        settlement: Settlement,
        tokens: Tokens,
        ready_wait: float,
    ) -> None:
        self.floor = Floor(tables, hands)
        self.gate = Gate(tokens, tables)
        self.dealing = Dealing(self.floor, dealer, self.gate)
        self.moves = Moves(self.floor, rules, self.gate)
        self.seating = Seating(
            rooms, tables, deal=self._deal, escape=self.moves.escape,
            hand_over=self.dealing.hand_over, ready_wait=ready_wait,
        )  # fmt: skip
        self.presence = Presence(on_drop=self.moves.dropped, on_back=self.moves.back)
        self.joining = Joining(
            rooms, self.seating, self.floor, self.dealing, self.gate, settlement, tokens
        )
        self.watching = Watching(self.floor, self.moves, self.gate, self.presence, bot)

    async def _deal(self, table: Table) -> tuple[str, int | None]:
        """A room table's next hand (the caller holds ``table.lock``)."""
        started = await self.dealing.deal(table)
        return started.hand_id, started.first_bidder

    async def disconnect(self, hand_id: str, seat: int, expected_version: int) -> None:
        """The turn clock's action: the seat missed its turn; the bot takes over."""
        await self.moves.disconnect(hand_id, seat, expected_version)

    def hand_changed(self, fold: HandFold) -> None:
        """The feed's news (from the app): an ended hand needs no presence any more."""
        if fold.over:
            self.presence.hand_over(fold.hand_id)

    async def close(self) -> None:
        await self.presence.close()
        await self.seating.close()
