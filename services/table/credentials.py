"""The ``Tokens`` port on ``ddz.adapters.tokens``: reads the tokens players, seats and
operators send, and signs the seat tokens a room hands out."""

from __future__ import annotations

from collections.abc import Mapping

from ddz.adapters.tokens import SEAT_TOKEN_TTL, Kind, new_claims, sign, verify

from .ports import Caller, SeatPass


class SignedTokens:
    def __init__(self, keys: Mapping[Kind, bytes], table_key: bytes) -> None:
        self.keys = dict(keys)
        self.table_key = table_key

    def caller(self, token: str) -> Caller:
        claims = verify(token, self.keys)  # TokenError (a ValueError) says why not
        return Caller(claims.kind, claims.player, claims.table, claims.seat)

    def seat_pass(self, player_id: str, table_id: str, seat: int) -> SeatPass:
        claims = new_claims("seat", player_id, SEAT_TOKEN_TTL, table=table_id, seat=seat)
        return SeatPass(sign(claims, self.table_key), claims.expires)
