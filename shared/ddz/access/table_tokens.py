"""The table's ``Tokens`` port (``callers.Tokens``) on ``tokens``: reads the tokens
players, seats and operators send, and signs the seat tokens a room hands out.

It holds the seat key and the login's public keys, never the login's private key: the
table can mint seat tokens, never a player or operator token. Seat tokens last ``ttl``
seconds (``DDZ_SEAT_TOKEN_TTL``); their holders refresh them (RefreshSeatToken).

A person's client sends the same token on every call of a hand (a move, a hint, the
stream), so a token verified once is remembered by its exact text until it expires
(``VerifiedTokens``): the signature is checked once per token, not once per call.
Expiry is still checked on every call, against the token's own ``exp``, so an expired
token is refused at the same moment as without the memory; a token that never verified
is never remembered. Whatever else refuses a valid token (a seat its player has left,
a table closed) is the gate's, checked on every call after this."""

from __future__ import annotations

import time
from collections.abc import Callable

from ddz.access.callers import Caller, SeatPass
from ddz.access.tokens import (
    SEAT_TOKEN_TTL,
    TokenError,
    TokenKeys,
    new_claims,
    sign,
    verify,
)

VERIFIED_TOKENS = 8192
"""Verified tokens remembered at most: about two a seated person (their player and seat
tokens) for a few thousand people; the oldest remembered is forgotten first."""


class VerifiedTokens:
    """Callers of tokens verified before, by the token's exact text, with their expiry.

    Bounded (``size``); an entry past its expiry is refused and dropped when looked up.
    ``generation`` is what the verification depended on besides the token (the login's
    public keys as last read): when it changes, everything remembered is forgotten, so a
    withdrawn login key refuses its tokens as soon as it would have without the memory."""

    def __init__(
        self, size: int = VERIFIED_TOKENS, clock: Callable[[], float] | None = None
    ) -> None:
        if size < 1:
            raise ValueError("remember at least one token")
        self.size = size
        self.clock = clock or (lambda: time.time())  # the clock ``verify`` reads
        self._callers: dict[str, tuple[Caller, int]] = {}
        self._generation: object = None

    def __len__(self) -> int:
        return len(self._callers)

    def get(self, token: str, generation: object) -> Caller | None:
        """The caller of a token verified before (None: not remembered); ``TokenError``
        when it has expired since, as ``verify`` says it."""
        if generation is not self._generation:
            self._callers.clear()
            self._generation = generation
            return None
        known = self._callers.get(token)
        if known is None:
            return None
        caller, expires = known
        if expires <= self.clock():  # as ``verify`` compares it
            del self._callers[token]
            raise TokenError("token expired")
        return caller

    def put(self, token: str, caller: Caller, expires: int, generation: object) -> None:
        if generation is not self._generation:
            self._callers.clear()
            self._generation = generation
        callers = self._callers
        if token not in callers and len(callers) >= self.size:
            del callers[next(iter(callers))]  # the oldest remembered (insertion order)
        callers[token] = (caller, expires)


class SignedTokens:
    def __init__(
        self, keys: TokenKeys, table_key: bytes | None = None, ttl: float = SEAT_TOKEN_TTL,
        verified: VerifiedTokens | None = None,
    ) -> None:  # fmt: skip
        if table_key is not None and table_key != keys.seat:
            raise ValueError("seat tokens are signed with the seat key they are checked with")
        if not ttl > 0:
            raise ValueError("a seat token needs a positive lifetime")
        self.keys = keys
        self.ttl = ttl
        self.verified = VerifiedTokens() if verified is None else verified

    def caller(self, token: str) -> Caller:
        # The login's key set is a new object each time its file is read again.
        generation = self.keys.login.keys
        known = self.verified.get(token, generation)
        if known is not None:
            return known
        claims = verify(token, self.keys)  # TokenError (a ValueError) says why not
        caller = Caller(claims.kind, claims.player, claims.table, claims.seat)
        # Read again after verifying: a key file re-read meanwhile starts a new generation.
        self.verified.put(token, caller, claims.expires, self.keys.login.keys)
        return caller

    def seat_pass(self, player_id: str, table_id: str, seat: int) -> SeatPass:
        claims = new_claims("seat", player_id, self.ttl, table=table_id, seat=seat)
        return SeatPass(sign(claims, self.keys.seat), claims.expires)
