"""Seats belong to their players: every call that acts for a seat or reads its cards is
checked against the caller's token (the ``Tokens`` port reads it).

- no token, or one that is malformed, signed with another key or expired:
  ``Refusal.unauthenticated`` (reason ``UNAUTHENTICATED``);
- a valid token that does not give the seat -- another seat's or another table's seat
  token, a player token of somebody else, a seat its player has left, a player or seat
  token on an operator-only call: ``Refusal.denied`` (reason ``PERMISSION_DENIED``).

Operator tokens may do everything (operators already hold the dealer and the store).
The token arrives as text (the servicer reads it from the call); None means none sent.
"""

from __future__ import annotations

from ddz.application.errors import Refusal
from ddz.application.hand_fold import HandFold

from .use_cases.ports import Caller, Tokens
from .use_cases.tables import Table, Tables

NO_TOKEN = "no token: send 'authorization: Bearer <token>'"


class Gate:
    def __init__(self, tokens: Tokens, tables: Tables) -> None:
        self.tokens = tokens
        self.tables = tables

    def caller(self, token: str | None) -> Caller:
        if token is None:
            raise Refusal.unauthenticated(NO_TOKEN)
        try:
            return self.tokens.caller(token)
        except ValueError as exc:
            raise Refusal.unauthenticated(f"invalid token: {exc}") from None

    def operator(self, token: str | None) -> Caller:
        caller = self.caller(token)
        if not caller.operator:
            raise Refusal.denied("only the operator may do this (an operator token)")
        return caller

    def seat(self, token: str | None, fold: HandFold, seat: int) -> Caller:
        """The caller, if they may act for ``seat`` of the hand and read its cards."""
        caller = self.caller(token)
        if caller.operator:
            return caller
        table = self.tables.table_of(fold.hand_id)
        if caller.kind == "seat" and (
            table is None or caller.table_id != table.table_id or caller.seat != seat
        ):
            raise Refusal.denied(f"this token is for seat {caller.seat} of table "
                                 f"{caller.table_id}, not seat {seat} of this hand")  # fmt: skip
        seats = fold.state.seats
        if seat >= len(seats) or seats[seat].is_bot or seats[seat].player_id != caller.player_id:
            raise Refusal.denied(f"seat {seat} of this hand is not {caller.player_id}'s")
        if table is not None and table.left.get(seat) == caller.player_id:
            raise Refusal.denied(f"{caller.player_id} has left table {table.table_id}")
        return caller

    def at_table(self, token: str | None, table: Table) -> tuple[Caller, int | None]:
        """The caller and the seat they hold at ``table`` (None for the operator)."""
        caller = self.caller(token)
        if caller.operator:
            return caller, None
        if caller.kind == "seat" and caller.table_id != table.table_id:
            raise Refusal.denied(f"this token is for table {caller.table_id}")
        if caller.player_id in table.left.values():
            raise Refusal.denied(f"{caller.player_id} has left table {table.table_id}")
        seat = table.seat_of(caller.player_id)
        if seat is None or (caller.kind == "seat" and seat != caller.seat):
            raise Refusal.denied(f"{caller.player_id} has no seat at table {table.table_id}")
        return caller, seat
