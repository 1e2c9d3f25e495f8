"""The ``Tokens`` port on ``ddz.adapters.security.tokens``: reads the tokens players, seats and
operators send, and signs the seat tokens a room hands out.

It holds the seat key and the login's public keys, never the login's private key: the
table can mint seat tokens, never a player or operator token. Seat tokens last ``ttl``
seconds (``DDZ_SEAT_TOKEN_TTL``); their holders refresh them (RefreshSeatToken)."""

from __future__ import annotations

from ddz.adapters.security.tokens import SEAT_TOKEN_TTL, TokenKeys, new_claims, sign, verify

from .use_cases.ports import Caller, SeatPass


class SignedTokens:
    def __init__(
        self, keys: TokenKeys, table_key: bytes | None = None, ttl: float = SEAT_TOKEN_TTL
    ) -> None:
        if table_key is not None and table_key != keys.seat:
            raise ValueError("seat tokens are signed with the seat key they are checked with")
        if not ttl > 0:
            raise ValueError("a seat token needs a positive lifetime")
        self.keys = keys
        self.ttl = ttl

    def caller(self, token: str) -> Caller:
        claims = verify(token, self.keys)  # TokenError (a ValueError) says why not
        return Caller(claims.kind, claims.player, claims.table, claims.seat)

    def seat_pass(self, player_id: str, table_id: str, seat: int) -> SeatPass:
        claims = new_claims("seat", player_id, self.ttl, table=table_id, seat=seat)
        return SeatPass(sign(claims, self.keys.seat), claims.expires)
