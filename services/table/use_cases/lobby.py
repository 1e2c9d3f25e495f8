"""Matchmaking (RULES.md §11): one queue per room, and where every player is.

``enqueue`` puts a player in a room's queue; every three queued players are taken out
together and seated at a new table at once; when the oldest queued player has waited
the room's ``bot_fill_wait``, everyone still queued (one or two players) is seated and
bots take the empty seats. A player is in at most one place at a time -- joining,
queued in one room, or seated at one table -- so nobody is seated twice.

Every change of the queues and places happens in one synchronous step (no ``await``
inside), so concurrent joiners on the event loop can never be taken twice or lost.
Seating a group is the caller's ``seat_group(room, tickets)``: it must open the table
and record each player's seat (``lobby.sit``) before returning the coroutine that deals
the first hand and resolves each ticket's ``seated`` future (and ``forget``s the
tickets once the table is on its stream).

Queued tickets are kept in the ``RoomQueueLog`` (``store``; none in the unit tests)
from the moment they are queued until their player is seated or leaves, so a restarted
service queues them again (``requeue``) with the time they first joined (Unix seconds:
the bot fill wait goes on counting across the restart). A ticket nobody's JoinRoom
waits for (the service restarted, or the call was cut) keeps its place: joining the
room again waits on it (``attend``); one whose call ended while the service ran is
taken out ``REJOIN_GRACE`` seconds later unless its player is back by then.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

import structlog
from ddz.application.room_tickets import QueuedTicket
from ddz.application.tasks import cancel_and_wait

from .ports import RoomQueueLog
from .rooms import Room, Rooms

log = structlog.get_logger("ddz.table.lobby")

TABLE_SIZE = 3
REJOIN_GRACE = 10.0
"""Seconds a queued player whose JoinRoom call ended keeps their place (a cut
connection: the client joins again at once)."""
TICKET_TTL_FLOOR = 60.0
TICKET_TTL_WAITS = 3
"""A kept ticket lives a few of its room's bot fill waits, at least a minute: long
enough for a restart, short enough that a ticket nobody comes back for goes."""


def ticket_ttl(room: Room) -> float:
    return max(TICKET_TTL_FLOOR, TICKET_TTL_WAITS * room.bot_fill_wait)


@dataclass(frozen=True, slots=True)
class Seat:
    """Where a seated player sits."""

    table_id: str
    seat: int


class LeftQueue(Exception):
    """The player left the queue before being seated."""


@dataclass(eq=False)
class Ticket:
    player_id: str
    room_id: str
    balance: int | None  # checked against the room's minimum; bean rooms deal with it
    joined: float  # Unix seconds
    attended: bool = True  # a JoinRoom call waits on it
    seated: asyncio.Future[Seat] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )


SeatGroup = Callable[[Room, list[Ticket]], Coroutine[Any, Any, None]]


class Lobby:
    def __init__(
        self,
        rooms: Rooms,
        seat_group: SeatGroup,
        clock: Callable[[], float] = time.time,
        store: RoomQueueLog | None = None,
    ) -> None:
        self.rooms = rooms
        self.seat_group = seat_group
        self.clock = clock  # wall clock: a ticket's joined time outlives the process
        self.store = store
        self.queues: dict[str, list[Ticket]] = {room.room_id: [] for room in rooms.rooms}
        self.places: dict[str, str | Seat] = {}  # player -> room id (joining, queued) | Seat
        self._fillers: dict[str, asyncio.Task[None]] = {}
        self._seatings: set[asyncio.Task[None]] = set()
        self._expiries: dict[str, asyncio.TimerHandle] = {}  # player -> their place's end

    # -- where players are -------------------------------------------------------------

    def place_of(self, player_id: str) -> str | Seat | None:
        return self.places.get(player_id)

    def reserve(self, player_id: str, room_id: str) -> bool:
        """Mark the player as joining ``room_id``; False if they are somewhere already."""
        if player_id in self.places:
            return False
        self.places[player_id] = room_id
        return True

    def release(self, player_id: str) -> None:
        self.places.pop(player_id, None)

    def sit(self, player_id: str, seat: Seat) -> None:
        self.places[player_id] = seat

    def queued(self, room_id: str) -> int:
        return len(self.queues.get(room_id, ()))

    # -- the queues ----------------------------------------------------------------------

    def enqueue(self, room: Room, player_id: str, balance: int | None) -> Ticket:
        """Queue a reserved player; seat a group at once if this makes three."""
        if self.places.get(player_id) != room.room_id:
            raise LeftQueue(f"{player_id} is not joining room {room.room_id}")
        ticket = Ticket(player_id, room.room_id, balance, self.clock())
        if self.store is not None:
            saved = QueuedTicket(room.room_id, player_id, ticket.joined, balance)
            self.store.keep(saved, ticket_ttl(room))
        self.queues[room.room_id].append(ticket)
        self._settle(room)
        return ticket

    def requeue(self, room: Room, saved: QueuedTicket) -> Ticket | None:
        """Queue a kept ticket again (a restart), in joined order, its player away until
        they join again; None when the player is placed already (seated at a table the
        restart brought back: the ticket is stale)."""
        if saved.player_id in self.places:
            return None
        self.places[saved.player_id] = room.room_id
        ticket = Ticket(saved.player_id, room.room_id, saved.balance, saved.joined,
                        attended=False)  # fmt: skip
        queue = self.queues[room.room_id]
        later = [n for n, queued in enumerate(queue) if queued.joined > ticket.joined]
        queue.insert(later[0] if later else len(queue), ticket)
        self._settle(room)
        return ticket

    def _settle(self, room: Room) -> None:
        """Seat the first three queued if there are, and wait for the rest to fill."""
        queue = self.queues[room.room_id]
        while len(queue) >= TABLE_SIZE:
            group = queue[:TABLE_SIZE]
            del queue[:TABLE_SIZE]
            self._seat(room, group)
        if queue and room.room_id not in self._fillers:
            task = asyncio.create_task(self._fill(room), name=f"fill:{room.room_id}")
            self._fillers[room.room_id] = task

    def attend(self, player_id: str, room_id: str) -> Ticket | None:
        """The player's ticket in ``room_id`` if nobody's call waits on it (theirs was
        cut, or the service restarted): their JoinRoom waits on it now."""
        for ticket in self.queues.get(room_id, ()):
            if ticket.player_id == player_id and not ticket.attended:
                ticket.attended = True
                expiry = self._expiries.pop(player_id, None)
                if expiry is not None:
                    expiry.cancel()
                return ticket
        return None

    def detach(self, ticket: Ticket) -> None:
        """The JoinRoom call waiting on ``ticket`` ended: the ticket keeps its place
        ``REJOIN_GRACE`` seconds for the player to join again."""
        if ticket.seated.done() or ticket not in self.queues.get(ticket.room_id, ()):
            return
        ticket.attended = False

        def expire() -> None:
            self._expiries.pop(ticket.player_id, None)
            if not ticket.attended and ticket in self.queues.get(ticket.room_id, ()):
                self.dequeue(ticket.player_id)

        loop = asyncio.get_running_loop()
        self._expiries[ticket.player_id] = loop.call_later(REJOIN_GRACE, expire)

    def dequeue(self, player_id: str) -> bool:
        """Take a queued player out (they left, or did not come back for their place)."""
        for queue in self.queues.values():
            for ticket in queue:
                if ticket.player_id == player_id:
                    queue.remove(ticket)
                    if self.places.get(player_id) == ticket.room_id:
                        del self.places[player_id]
                    self.forget([ticket])
                    if not ticket.seated.done():
                        ticket.seated.set_exception(LeftQueue(f"{player_id} left the queue"))
                        ticket.seated.exception()  # retrieved: the caller may be gone
                    return True
        return False

    def forget(self, tickets: list[Ticket]) -> None:
        """The tickets are done with (seated at a table on its stream, or out)."""
        for ticket in tickets:
            expiry = self._expiries.pop(ticket.player_id, None)
            if expiry is not None:
                expiry.cancel()
            if self.store is not None:
                self.store.drop(ticket.room_id, ticket.player_id)

    async def _fill(self, room: Room) -> None:
        """Seat whoever is queued, with bots, once the oldest has waited long enough."""
        try:
            queue = self.queues[room.room_id]
            while queue:
                delay = queue[0].joined + room.bot_fill_wait - self.clock()
                if delay > 0:
                    await asyncio.sleep(delay)
                    continue  # the queue may have changed meanwhile: look again
                group = list(queue)
                queue.clear()
                log.info("bots_fill", room=room.room_id, players=len(group))
                self._seat(room, group)
        finally:
            self._fillers.pop(room.room_id, None)

    def _seat(self, room: Room, group: list[Ticket]) -> None:
        coroutine = self.seat_group(room, group)
        task = asyncio.create_task(coroutine, name=f"seat:{room.room_id}")
        self._seatings.add(task)
        task.add_done_callback(self._seatings.discard)

    async def close(self) -> None:
        """Stop (the store keeps every ticket still queued: the next start seats them)."""
        for expiry in self._expiries.values():
            expiry.cancel()
        self._expiries.clear()
        with contextlib.suppress(Exception):  # logged where they ended
            await cancel_and_wait([*self._fillers.values(), *self._seatings])
        for queue in self.queues.values():
            for ticket in queue:
                if not ticket.seated.done():
                    ticket.seated.set_exception(LeftQueue("the table service is stopping"))
                    ticket.seated.exception()
            queue.clear()
