"""Riding out a JetStream stream's leader election: one policy for a write the bus does
not answer.

On a cluster a stream (or a KV bucket's stream) answers writes through its RAFT leader.
When the leader's node dies or is cut off, the stream has no leader for a while: a
follower waits 4 to 9 s for a lost leader before it campaigns, and a campaign takes up
to 0.8 s more (nats-server ``server/raft.go``). Meanwhile a write gets no answer: "no
responders" at once (``NoStreamResponseError``), a 503 from the JetStream API, or a
timeout when the request went to a node that is gone.

``until_answered`` asks again after each unanswered attempt, waiting a little longer
each time (from ``FIRST_RETRY`` doubling to ``UNANSWERED_RETRY``) until its deadline;
``RIDE_OUT`` is the deadline of a write that must outlast an election. Whether asking
again is safe is the caller's to make sure of: every write it retries carries what
makes a repeat harmless (the same ``Nats-Msg-Id``, or the expected sequence that a
repeat of a stored write fails, whereupon the caller finds its own write stored).
The lease (``ddz.adapters.messaging.lease``) renews on the same timing.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

import nats.errors
import nats.js.errors

T = TypeVar("T")

ELECTION = 10.0
"""Seconds a JetStream stream may go without a leader after its leader's node died: a
follower waits 4 to 9 s for a lost leader before it campaigns, and a campaign takes up
to 0.8 s more (nats-server ``server/raft.go``)."""
RIDE_OUT = 2 * ELECTION
"""Seconds a write that must outlast an election keeps asking: a whole election, begun
just as the write was, plus the client's reconnection to another node and the new
leader catching up, with room to spare. Shorter than a caller's patience for a
restarting service (``ddz.loadgen.driver.PATIENCE``)."""
FIRST_RETRY = 0.05
"""Seconds before the first retry (a lost answer on a healthy stream is retried soon)."""
UNANSWERED_RETRY = 0.5
"""Seconds at most between attempts while they get no answer: the first attempt a new
stream leader can answer is made soon after it is elected."""

UNANSWERED: tuple[type[Exception], ...] = (
    TimeoutError,
    nats.errors.TimeoutError,
    nats.errors.NoRespondersError,
    nats.js.errors.NoStreamResponseError,
    nats.js.errors.ServiceUnavailableError,
)
"""What a request that got no answer from the stream raises (no leader, no responder, a
503 from the JetStream API, or no reply in time)."""


async def until_answered(
    call: Callable[[float], Awaitable[T]],
    *,
    until: float,
    timeout: float,
    attempts: int | None = None,
) -> T:
    """``call(seconds)`` (``seconds``: how long this attempt may wait for its answer, at
    most ``timeout``), again after each ``UNANSWERED`` error while ``time.monotonic()``
    is before ``until`` (and, given ``attempts``, at most that many times in all). The
    first attempt is always made. The last error is raised when time runs out; any
    other error at once."""
    pause = FIRST_RETRY
    attempt = 0
    while True:
        attempt += 1
        left = until - time.monotonic()
        try:
            return await call(max(min(timeout, left), FIRST_RETRY))
        except UNANSWERED:
            left = until - time.monotonic()
            if left <= pause or (attempts is not None and attempt >= attempts):
                raise
        await asyncio.sleep(pause)
        pause = min(pause * 2, UNANSWERED_RETRY)
