"""The bot's moves to the rules service, many hands per call (``Rules.decide_batch``).

The bot plays every bot seat of every table: at any moment several hands have a move
ready. A call to the rules costs far more CPU than deciding a move (both sides, in
Python), so moves that become ready while a call is in flight wait for it and then go
together in the next call: one call per round instead of one per move. With one hand
in play nothing waits (a lone move goes at once).

Each move still gets its own answer, or its own ``Refusal`` (raised for that move
only), so the caller handles them exactly as one call per move.
"""

from __future__ import annotations

import asyncio
import contextlib

from ddz.application.errors import Kind, Reason, Refusal
from ddz.application.tasks import cancel_and_wait
from ddz.v1 import rules_pb2

from .ports import Move, Rules

MAX_BATCH = 64
"""Moves per call at most (far below the message size limit)."""
MAX_IN_FLIGHT = 2
"""Calls in flight at once, the suite's bot instances together: a second one starts
while the first is being decided, so a move never waits for more than one call ahead of
it."""


def in_flight_of(members: int) -> int:
    """The calls in flight of one of ``members`` bot instances: ``MAX_IN_FLIGHT``
    shared, one at least. Moves gather while calls are in flight, so the suite's calls
    a second follow the calls in flight of all its instances together: two instances
    keeping two each would make about twice the calls, each half as full (docs/
    BENCHMARKS.md, "Batches kept whole").
    """
    return max(1, MAX_IN_FLIGHT // max(1, members))


_Waiting = tuple[Move, "asyncio.Future[rules_pb2.DecideResponse]"]


class DecideBatcher:
    def __init__(
        self, rules: Rules, *, max_batch: int = MAX_BATCH, max_in_flight: int = MAX_IN_FLIGHT
    ) -> None:
        self.rules = rules
        self.max_batch = max_batch
        self.max_in_flight = max_in_flight
        self.calls = 0  # decide_batch calls made
        self._waiting: list[_Waiting] = []
        self._in_flight: set[asyncio.Task[None]] = set()

    async def decide(self, move: Move) -> rules_pb2.DecideResponse:
        """The rules' answer to one move; ``Refusal`` when it was not decided."""
        future: asyncio.Future[rules_pb2.DecideResponse] = (
            asyncio.get_running_loop().create_future()
        )
        self._waiting.append((move, future))
        self._start_calls()
        return await future

    def _start_calls(self) -> None:
        while self._waiting and len(self._in_flight) < self.max_in_flight:
            batch, self._waiting = (
                self._waiting[: self.max_batch],
                self._waiting[self.max_batch :],
            )
            task = asyncio.create_task(self._call(batch))
            self._in_flight.add(task)
            task.add_done_callback(self._call_done)

    def _call_done(self, task: asyncio.Task[None]) -> None:
        self._in_flight.discard(task)
        self._start_calls()  # what queued up meanwhile goes now, together

    async def _call(self, batch: list[_Waiting]) -> None:
        self.calls += 1
        try:
            outcomes = await self.rules.decide_batch([move for move, _ in batch])
        except Refusal as refusal:
            _fail(batch, refusal)
            return
        except BaseException as exc:
            _fail(batch, exc)
            raise
        if len(outcomes) != len(batch):
            message = f"rules: {len(outcomes)} outcomes for {len(batch)} moves"
            _fail(batch, Refusal(Kind.INTERNAL, Reason.REASON_UNSPECIFIED, message))
            return
        for (_, future), outcome in zip(batch, outcomes, strict=True):
            if future.done():
                continue  # the waiting move was cancelled
            if isinstance(outcome, Refusal):
                future.set_exception(outcome)
            else:
                future.set_result(outcome)

    async def close(self) -> None:
        with contextlib.suppress(Exception):  # each caller has its own answer
            await cancel_and_wait(list(self._in_flight))
        for _, future in self._waiting:
            future.cancel()
        self._waiting.clear()


def _fail(batch: list[_Waiting], error: BaseException) -> None:
    for _, future in batch:
        if not future.done():
            future.set_exception(error)
