"""Rooms (RULES.md §11) as players use them: list them, join one (a seat at a new table,
or back to the seat held), leave, and ask for the table's next hand. Who may join or
leave for whom is decided here; queues and tables are ``seating.Seating``'s."""

from __future__ import annotations

from dataclasses import dataclass

import structlog
from ddz.access.callers import Caller, SeatPass, Tokens
from ddz.access.seat_gate import Gate
from ddz.application.errors import Reason, Refusal
from ddz.domain.ruleset import Scoring

from .dealing import Dealing, Shown
from .floor import Floor
from .limits import RateLimits
from .lobby import Seat
from .ports import Settlement
from .rooms import Room, Rooms
from .seating import Left, Seating
from .tables import Table, check_id

log = structlog.get_logger("ddz.table")

BOT_PREFIX = "bot-"  # seats the rooms fill with bots are named so; people may not be


@dataclass(frozen=True, slots=True)
class RoomShown:
    room: Room
    queued: int
    tables: int


@dataclass(frozen=True, slots=True)
class Joined:
    room: Room
    table: Shown
    seat: int
    seat_pass: SeatPass
    balance: int | None  # None: the room checks none
    rejoined: bool


@dataclass(frozen=True, slots=True)
class Refreshed:
    table_id: str
    seat: int
    seat_pass: SeatPass


class Joining:
    def __init__(
        self, rooms: Rooms, seating: Seating, floor: Floor, dealing: Dealing, gate: Gate,
        settlement: Settlement, tokens: Tokens, limits: RateLimits | None = None,
    ) -> None:  # fmt: skip
        self.rooms = rooms
        self.seating = seating
        self.floor = floor
        self.dealing = dealing
        self.gate = gate
        self.settlement = settlement
        self.tokens = tokens
        self.limits = limits or RateLimits({})

    def list_rooms(self) -> list[RoomShown]:
        lobby, tables = self.seating.lobby, self.floor.tables
        return [
            RoomShown(room, lobby.queued(room.room_id), tables.in_room(room.room_id))
            for room in self.rooms.rooms
        ]

    async def join_room(self, token: str | None, room_id: str, asked: str) -> Joined:
        """Seat the player (``asked``: whom an operator joins) at a table of the room."""
        caller = self.gate.caller(token)
        player_id = self._who_joins(caller, asked)
        self.limits.spend("join", caller)
        room = self.rooms.get(room_id)
        if room is None:
            known = ", ".join(r.room_id for r in self.rooms.rooms)
            raise Refusal.not_found(Reason.UNKNOWN_ROOM, f"no room {room_id!r} (rooms: {known})")
        kept = self.seating.back_in_queue(player_id, room)
        if kept is not None:  # their call was cut (or the service restarted): same place
            seat = await self.seating.wait(kept)
            return self._joined(room, seat, player_id, kept.balance, rejoined=False)
        held = self.seating.seat_held(player_id, room)
        if held is not None and not await self.seating.release_if_done(player_id, held):
            return self._joined(room, held, player_id, None, rejoined=True)
        self.seating.reserve(player_id, room)
        lobby = self.seating.lobby
        try:
            balance = await self._balance(player_id, room)
        except BaseException:
            if lobby.place_of(player_id) == room.room_id:
                lobby.release(player_id)
            raise
        minimum = room.settings.min_balance
        if balance is not None and balance < minimum:
            lobby.release(player_id)
            raise Refusal.precondition(
                Reason.BALANCE_TOO_LOW,
                f"{player_id} has {balance}; room {room.room_id} needs at least {minimum} to join",
            )
        seat = await self.seating.join(room, player_id, balance)
        return self._joined(room, seat, player_id, balance, rejoined=False)

    def _who_joins(self, caller: Caller, asked: str) -> str:
        if caller.kind == "seat":
            raise Refusal.denied(
                "JoinRoom takes a player token (the operator's login), not a seat token"
            )
        if caller.operator and not asked:
            raise Refusal.invalid("an operator joins a room for a player: give player_id")
        player_id = asked if caller.operator else caller.player_id
        if asked and asked != player_id:
            raise Refusal.denied(f"this token is {player_id}'s, not {asked}'s")
        check_id("player id", player_id)
        if player_id.startswith(BOT_PREFIX):
            raise Refusal.invalid(f"player ids starting with {BOT_PREFIX!r} are the bots'")
        return player_id

    async def _balance(self, player_id: str, room: Room) -> int | None:
        """The player's balance for the room's minimum and for bean limits: the opening
        balance plus every settled ledger (None when the room needs neither)."""
        if room.settings.min_balance == 0 and room.rules.scoring is not Scoring.BEANS:
            return None
        return self.rooms.opening_balance + await self.settlement.balance(player_id)

    def _joined(
        self, room: Room, seat: Seat, player_id: str, balance: int | None, *, rejoined: bool
    ) -> Joined:
        table = self.floor.tables.get(seat.table_id)
        assert table is not None, "a seat held is at a table"
        seat_pass = self.tokens.seat_pass(player_id, table.table_id, seat.seat)
        log.info("player_seated", room=room.room_id, table_id=table.table_id, seat=seat.seat,
                 player=player_id, rejoined=rejoined)  # fmt: skip
        return Joined(room, self.dealing.shown(table), seat.seat, seat_pass, balance, rejoined)

    def refresh(self, token: str | None) -> Refreshed:
        """A new seat token for the seat the caller's seat token holds, while the seat
        is still theirs: the table is known here (open, or closed with its last hand in
        play) and they have not left it. What revokes a seat token is on the table's
        stream (``player_left``, ``table_closed``), so a restart revokes the same ones."""
        caller = self.gate.caller(token)
        if caller.kind != "seat" or caller.seat is None:
            raise Refusal.denied("RefreshSeatToken takes a seat token (a player token "
                                 "gets one from JoinRoom)")  # fmt: skip
        table = self.floor.tables.get(caller.table_id)
        if table is None:
            raise Refusal.denied(f"seat token revoked: table {caller.table_id} is closed")
        seat = caller.seat
        if not 0 <= seat < len(table.seats) or table.seats[seat].player_id != caller.player_id:
            raise Refusal.denied(f"seat {seat} of table {table.table_id} is not "
                                 f"{caller.player_id}'s")  # fmt: skip
        if table.left.get(seat) == caller.player_id:
            raise Refusal.denied(f"seat token revoked: {caller.player_id} has left table "
                                 f"{table.table_id}")  # fmt: skip
        self.limits.spend("join", caller)
        seat_pass = self.tokens.seat_pass(caller.player_id, table.table_id, seat)
        log.info("seat_token_refreshed", table_id=table.table_id, seat=seat,
                 player=caller.player_id)  # fmt: skip
        return Refreshed(table.table_id, seat, seat_pass)

    async def leave_room(self, token: str | None, room_id: str, asked: str) -> Left:
        """Take the player (``asked``: whom an operator takes out) out of the queue or off
        their table; a seat token leaves its own seat only."""
        caller = self.gate.caller(token)
        if caller.operator:
            if not asked:
                raise Refusal.invalid("an operator takes a player out: give player_id")
            player_id = asked
        else:
            player_id = caller.player_id
            if asked and asked != player_id:
                raise Refusal.denied(f"this token is {player_id}'s, not {asked}'s")
        only = None
        if caller.kind == "seat":
            only = Seat(caller.table_id, caller.seat or 0)
            table = self.floor.tables.get(caller.table_id)
            if table is not None and table.left.get(only.seat) == player_id:
                raise Refusal.denied(f"{player_id} has left table {table.table_id}")
        return await self.seating.leave(player_id, only=only, room_id=room_id)

    async def next_hand(self, token: str | None, table_id: str) -> tuple[str, int | None]:
        """The caller's seat is ready for the table's next hand (the operator: deal it
        now); (hand id, first bidder) once every person at the table is ready."""
        table: Table = self.floor.table(table_id)
        _caller, seat = self.gate.at_table(token, table)
        return await self.seating.next_hand(table, seat)
