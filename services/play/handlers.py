"""The web front's one use case: a browser's call becomes the table's call, as the
caller's own (``Relay``). What goes on is the caller's token, their deadline (bounded)
and a request id; nothing else of the browser's headers, and nothing of this front's.
The table then decides everything: who may act, what the rules allow, the clocks."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass

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
