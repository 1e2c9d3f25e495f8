"""Seats belong to their players: every call that acts for a seat or reads its cards is
checked against the caller's token (``ddz.adapters.tokens``).

- no token, or one that is malformed, signed with another key or expired:
  UNAUTHENTICATED (reason ``UNAUTHENTICATED``);
- a valid token that does not give the seat -- another seat's or another table's seat
  token, a player token of somebody else, a seat its player has left, a player or seat
  token on an operator-only call: PERMISSION_DENIED (reason ``PERMISSION_DENIED``).

Operator tokens may do everything (operators already hold the dealer and the store).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NoReturn, TypeAlias

import grpc
from ddz.adapters.grpc_server import abort
from ddz.adapters.hand_feed import HandFold
from ddz.adapters.tokens import Kind, TokenError, bearer, verify

from .tables import Table, Tables

Context: TypeAlias = grpc.aio.ServicerContext[Any, Any]


@dataclass(frozen=True, slots=True)
class Caller:
    kind: Kind
    player_id: str
    table_id: str = ""
    seat: int | None = None

    @property
    def operator(self) -> bool:
        return self.kind == "operator"


async def deny(context: Context, message: str) -> NoReturn:
    await abort(context, grpc.StatusCode.PERMISSION_DENIED, "PERMISSION_DENIED", message)


class Gate:
    def __init__(self, keys: Mapping[Kind, bytes], tables: Tables) -> None:
        self.keys = dict(keys)
        self.tables = tables

    async def caller(self, context: Context) -> Caller:
        token = bearer(context.invocation_metadata())
        if token is None:
            await abort(context, grpc.StatusCode.UNAUTHENTICATED, "UNAUTHENTICATED",
                        "no token: send 'authorization: Bearer <token>'")  # fmt: skip
        try:
            claims = verify(token, self.keys)
        except TokenError as exc:
            await abort(context, grpc.StatusCode.UNAUTHENTICATED, "UNAUTHENTICATED",
                        f"invalid token: {exc}")  # fmt: skip
        return Caller(claims.kind, claims.player, claims.table, claims.seat)

    async def operator(self, context: Context) -> Caller:
        caller = await self.caller(context)
        if not caller.operator:
            await deny(context, "only the operator may do this (an operator token)")
        return caller

    async def seat(self, context: Context, fold: HandFold, seat: int) -> Caller:
        """The caller, if they may act for ``seat`` of the hand and read its cards."""
        caller = await self.caller(context)
        if caller.operator:
            return caller
        table = self.tables.table_of(fold.hand_id)
        if caller.kind == "seat" and (
            table is None or caller.table_id != table.table_id or caller.seat != seat
        ):
            await deny(context, f"this token is for seat {caller.seat} of table "
                                f"{caller.table_id}, not seat {seat} of this hand")  # fmt: skip
        seats = fold.state.seats
        if seat >= len(seats) or seats[seat].is_bot or seats[seat].player_id != caller.player_id:
            await deny(context, f"seat {seat} of this hand is not {caller.player_id}'s")
        if table is not None and table.left.get(seat) == caller.player_id:
            await deny(context, f"{caller.player_id} has left table {table.table_id}")
        return caller

    async def at_table(self, context: Context, table: Table) -> tuple[Caller, int | None]:
        """The caller and the seat they hold at ``table`` (None for the operator)."""
        caller = await self.caller(context)
        if caller.operator:
            return caller, None
        if caller.kind == "seat" and caller.table_id != table.table_id:
            await deny(context, f"this token is for table {caller.table_id}")
        if caller.player_id in table.left.values():
            await deny(context, f"{caller.player_id} has left table {table.table_id}")
        seat = table.seat_of(caller.player_id)
        if seat is None or (caller.kind == "seat" and seat != caller.seat):
            await deny(context, f"{caller.player_id} has no seat at table {table.table_id}")
        return caller, seat
