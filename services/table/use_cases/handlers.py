"""The table service's use cases, wired together from their ports.

Each job has its module: ``dealing`` (tables and their hands), ``joining`` (rooms),
``moves`` (a seat's moves and the service's own commands for a seat), ``watching``
(views, streams, hints); ``floor`` finds tables and hands, the seat gate
(``ddz.access.seat_gate.Gate``) says who may do what, ``seating`` and ``presence`` keep
rooms and streams. Everything refused is a ``Refusal``; nothing here knows gRPC
(``servicer`` translates, ``clients`` and ``ddz.access.table_tokens`` implement the
ports, ``app`` wires).
"""

from __future__ import annotations

import asyncio
import contextlib

import structlog
from ddz.access.callers import Tokens
from ddz.access.seat_gate import Gate
from ddz.application.errors import Refusal
from ddz.application.hand_fold import HandFold
from ddz.application.tasks import cancel_and_wait
from ddz.domain.table import HandAssigned

from .clock import Timing
from .dealing import Dealing
from .evidence import HandEvidence
from .floor import Floor
from .joining import Joining
from .limits import Limits, RateLimits, StreamSlots
from .lobby import Seat
from .moves import Moves
from .ports import (
    Bot,
    Dealer,
    EvidenceFile,
    EvidenceFiles,
    Hands,
    RoomQueueLog,
    Rules,
    Settlement,
)
from .presence import Presence
from .rooms import Rooms
from .seating import Seating
from .tables import Table, Tables
from .watching import Watching

log = structlog.get_logger("ddz.table")


class _NoEvidence:
    """A table wired without the recorder (unit tests of other use cases)."""

    async def evidence(self, hand_id: str) -> EvidenceFile:
        raise Refusal.unavailable("this table service has no evidence files")


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
        limits: Limits | None = None,
        keep_closed: float | None = None,
        turn_seconds: float | None = None,
        auto_play_seconds: float = 3.0,
        auto_play_after: int = 2,
        reconnect_grace: float = 0.0,
        evidence: EvidenceFiles | None = None,
    ) -> None:
        # A closed table is forgotten this long after its last hand is over: meanwhile
        # the others at it are told why it closed (NextHand, GetTable). Default: as long
        # as NextHand waits for them (the ready wait).
        self.keep_closed = ready_wait if keep_closed is None else keep_closed
        self.limits = limits or Limits(RateLimits({}), StreamSlots(4))  # {}: none limited
        self.floor = Floor(tables, hands)
        self.rooms = rooms
        self.default_turn_seconds = ready_wait if turn_seconds is None else turn_seconds
        self.timing = Timing(self.turn_seconds, auto_play_seconds, auto_play_after)
        self.gate = Gate(tokens, tables)
        self.dealing = Dealing(self.floor, dealer, self.gate)
        self.moves = Moves(self.floor, rules, self.gate, self.limits.calls, self.timing)
        self.seating = Seating(
            rooms, tables, deal=self._deal, escape=self.moves.escape,
            hand_over=self.dealing.hand_over, ready_wait=ready_wait,
        )  # fmt: skip
        self.presence = Presence(
            on_drop=self.moves.dropped, on_back=self.moves.back, grace=reconnect_grace
        )
        self.joining = Joining(
            rooms, self.seating, self.floor, self.dealing, self.gate, settlement, tokens,
            self.limits.calls,
        )  # fmt: skip
        self.watching = Watching(
            self.floor, self.moves, self.gate, self.presence, bot, self.limits.streams
        )
        self.evidence = HandEvidence(self.floor, self.gate, evidence or _NoEvidence())
        self._evictions: dict[str, asyncio.Task[None]] = {}
        self._deals: dict[str, asyncio.Task[None]] = {}
        tables.on_closed = self.table_closed

    async def _deal(self, table: Table) -> tuple[str, int | None]:
        """A room table's next hand (the caller holds ``table.lock``)."""
        started = await self.dealing.deal(table)
        return started.hand_id, started.first_bidder

    def finish_deal(self, table: Table, assigned: HandAssigned) -> None:
        """Ask again for the deal of a restored table's last hand, which the bus does
        not hold (``Dealing.finish``): in the background, so that a take-over does not
        wait on the dealer."""
        hand_id = assigned.hand_id
        if hand_id in self._deals:
            return

        async def finish() -> None:
            try:
                await self.dealing.finish(table, assigned)
            except Exception:
                log.exception("hand_deal_not_finished", table_id=table.table_id, hand_id=hand_id)

        task = asyncio.ensure_future(finish())
        self._deals[hand_id] = task
        task.add_done_callback(lambda _t: self._deals.pop(hand_id, None))

    async def restore_queues(self, store: RoomQueueLog) -> int:
        """At start, once the open tables are back: keep the rooms' queues in ``store``
        (their KV bucket) from now on, and queue again whoever it holds
        (``Seating.restore_queues``). A store out of reach leaves the queues in memory
        only (as before), said once."""
        try:
            await store.open()
            return await self.seating.restore_queues(store)
        except Exception:
            log.exception("queues_not_restored", then="room queues kept in memory only")
            return 0

    def turn_seconds(self, hand_id: str) -> float:
        """A turn's seconds in this hand: its room's ``turn_seconds``, else the default
        (``DDZ_TURN_TIMEOUT``; also for tables an operator opened)."""
        table = self.floor.tables.table_of(hand_id)
        room = self.rooms.get(table.room_id) if table is not None and table.room_id else None
        if room is not None and room.turn_seconds is not None:
            return room.turn_seconds
        return self.default_turn_seconds

    def hand_changed(self, fold: HandFold) -> None:
        """The feed's news (from the app): an ended hand needs no presence any more,
        and a closed table whose last hand it was is done."""
        if fold.over:
            self.presence.hand_over(fold.hand_id)
            table = self.floor.tables.table_of(fold.hand_id)
            if table is not None and table.closed and table.last_hand_id == fold.hand_id:
                self.table_closed(table)

    # -- forgetting what is done -----------------------------------------------------------

    def table_closed(self, table: Table) -> None:
        """The table deals no more hands: forget it ``keep_closed`` s after its last
        hand is over and its events are written (``_evict``), so nothing of a closed
        table stays in memory."""
        if table.table_id not in self._evictions:
            task = asyncio.ensure_future(self._evict(table))
            self._evictions[table.table_id] = task
            task.add_done_callback(lambda _t: self._evictions.pop(table.table_id, None))

    async def _evict(self, table: Table) -> None:
        tables = self.floor.tables
        try:
            with contextlib.suppress(Exception):  # a failed write is logged by the registry
                await tables.recorded(table)
            if tables.get(table.table_id) is not table or not await self.dealing.hand_over(table):
                return  # the hand in play ends later: hand_changed comes back here
            await asyncio.sleep(self.keep_closed)
            with contextlib.suppress(Exception):
                await tables.recorded(table)
            if not tables.evict(table):
                return
        except Exception:
            log.exception("table_not_evicted", table_id=table.table_id)
            return
        lobby = self.seating.lobby
        for number, seat in enumerate(table.seats):
            if lobby.place_of(seat.player_id) == Seat(table.table_id, number):
                lobby.release(seat.player_id)
        for hand_id in table.hand_ids:
            self.presence.hand_over(hand_id)
            self.floor.hands.forget(hand_id)
        log.info("table_evicted", table_id=table.table_id, hands=len(table.hand_ids))

    async def close(self) -> None:
        await cancel_and_wait([*self._evictions.values(), *self._deals.values()])
        await self.presence.close()
        await self.seating.close()
