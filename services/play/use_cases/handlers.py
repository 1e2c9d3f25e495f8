"""The web front's one use case: a browser's call becomes the table's call, as the
caller's own (``Relay``). What goes on is the caller's token, their deadline (bounded)
and a request id; nothing else of the browser's headers, and nothing of this front's.
The table then decides everything: who may act, what the rules allow, the clocks.

``Guests`` is the other: on a local suite whose operator turned it on
(``DDZ_PLAY_GUESTS``), the page may ask for a player token of a fresh name."""

from __future__ import annotations

import secrets
import time
import uuid
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from ddz.application.errors import Kind, Reason, Refusal

REQUEST_ID = "x-request-id"
"""The header a request's id travels in (the suite's gRPC servers log it)."""
PASSED_ON = ("authorization",)
"""The browser's headers the table reads: its bearer token, and nothing else."""


@dataclass(frozen=True, slots=True)
class Relay:
    """How long a forwarded call may take: ``unary_deadline`` seconds when the browser
    asks none (long enough for the calls that wait by design: JoinRoom for the bot fill,
    NextHand for the other people), at most ``longest`` whatever it asks; a stream
    asked with no deadline has none (a hand is followed to its end)."""

    unary_deadline: float = 120.0
    longest: float = 3600.0

    def deadline(self, asked_ms: float | None, *, stream: bool) -> float | None:
        if asked_ms is None:
            return None if stream else self.unary_deadline
        return max(0.0, min(asked_ms / 1000.0, self.longest))

    @staticmethod
    def metadata(headers: Mapping[str, str]) -> list[tuple[str, str]]:
        """The table call's metadata from the browser's headers: its token, and its
        request id (a new one when it sent none; at most 64 characters)."""
        sent = [(name, value) for name in PASSED_ON if (value := headers.get(name, ""))]
        request_id = headers.get(REQUEST_ID, "")[:64] or uuid.uuid4().hex
        return [*sent, (REQUEST_ID, request_id)]


GUEST_TTL = 2 * 3600.0
"""Seconds a guest's player token lasts."""


class Guests:
    """Player tokens of fresh names (``guest-<8 hex>``), at most ``per_minute`` a minute
    for the whole front (a guest token is a free seat: not to be handed out in bulk).
    ``sign(player_id, ttl)`` is the login's own signature (``ddz token player``'s)."""

    def __init__(
        self, sign: Callable[[str, float], str], *, per_minute: int = 30,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:  # fmt: skip
        self.sign = sign
        self.per_minute = per_minute
        self.clock = clock
        self.given: deque[float] = deque()

    def token(self) -> tuple[str, str]:
        """A new guest's name and player token."""
        now = self.clock()
        while self.given and self.given[0] <= now - 60.0:
            self.given.popleft()
        if len(self.given) >= self.per_minute:
            raise Refusal(Kind.EXHAUSTED, Reason.RATE_LIMITED,
                          "too many guests at once: try again in a minute")  # fmt: skip
        self.given.append(now)
        name = f"guest-{secrets.token_hex(4)}"
        return name, self.sign(name, GUEST_TTL)
