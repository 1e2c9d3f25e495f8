"""The bot's moves to the rules service, many hands per call (``DecideBatch``).

The bot plays every bot seat of every table: at any moment several hands have a move
ready. A gRPC call costs far more CPU than deciding a move (both sides, in Python), so
moves that become ready while a call is in flight wait for it and then go together in
the next ``DecideBatch`` call: one call per round instead of one per move. With
one hand in play nothing waits (a lone move goes at once).

Each move still gets its own answer, or its own error, raised as ``DecideError`` with
the status Decide would have ended the call with, so the caller handles them exactly
as before. A rules service without ``DecideBatch`` (UNIMPLEMENTED) is answered one
``Decide`` per move from then on.
"""

from __future__ import annotations

import asyncio
import contextlib

import grpc
from ddz.v1 import rules_pb2, rules_pb2_grpc

MAX_BATCH = 64
"""Moves per call at most (far below the message size limit)."""
MAX_IN_FLIGHT = 2
"""Calls in flight at once: a second one starts while the first is being decided, so
a move never waits for more than one call ahead of it."""


class DecideError(Exception):
    """One move's error status, shaped like ``grpc.aio.AioRpcError`` where the bot
    looks at it (``code()``, ``details()``, ``reason``)."""

    def __init__(self, code: grpc.StatusCode, reason: str, message: str) -> None:
        super().__init__(message)
        self._code = code
        self.reason = reason or None
        self._details = message

    def code(self) -> grpc.StatusCode:
        return self._code

    def details(self) -> str:
        return self._details


_CODES = {code.value[0]: code for code in grpc.StatusCode}
_Waiting = tuple[rules_pb2.DecideRequest, "asyncio.Future[rules_pb2.DecideResponse]"]


class DecideBatcher:
    def __init__(
        self,
        rules: rules_pb2_grpc.RulesServiceStub,
        timeout: float,
        *,
        max_batch: int = MAX_BATCH,
        max_in_flight: int = MAX_IN_FLIGHT,
    ) -> None:
        self.rules = rules
        self.timeout = timeout
        self.max_batch = max_batch
        self.max_in_flight = max_in_flight
        self.calls = 0  # DecideBatch/Decide calls made
        self.batched = True
        self._waiting: list[_Waiting] = []
        self._in_flight: set[asyncio.Task[None]] = set()

    async def decide(self, request: rules_pb2.DecideRequest) -> rules_pb2.DecideResponse:
        """The rules' answer to one move; ``grpc.aio.AioRpcError`` when the call
        failed, ``DecideError`` when this move was answered with an error."""
        if not self.batched:
            self.calls += 1
            answer: rules_pb2.DecideResponse = await self.rules.Decide(
                request, timeout=self.timeout
            )
            return answer
        future: asyncio.Future[rules_pb2.DecideResponse] = (
            asyncio.get_running_loop().create_future()
        )
        self._waiting.append((request, future))
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

    async def _call(
        self,
        batch: list[_Waiting],
    ) -> None:
        self.calls += 1
        try:
            answer: rules_pb2.DecideBatchResponse = await self.rules.DecideBatch(
                rules_pb2.DecideBatchRequest(commands=[request for request, _ in batch]),
                timeout=self.timeout,
            )
        except grpc.aio.AioRpcError as exc:
            if exc.code() is grpc.StatusCode.UNIMPLEMENTED:
                self.batched = False  # an older rules service: one Decide per move
                for request, future in batch:
                    _chain(future, asyncio.ensure_future(self.decide(request)))
                return
            for _, future in batch:
                if not future.done():
                    future.set_exception(exc)
            return
        except BaseException as exc:
            for _, future in batch:
                if not future.done():
                    future.set_exception(exc)
            raise
        if len(answer.outcomes) != len(batch):
            message = f"{len(answer.outcomes)} outcomes for {len(batch)} moves"
            error = DecideError(grpc.StatusCode.INTERNAL, "", message)
            for _, future in batch:
                if not future.done():
                    future.set_exception(error)
            return
        for (_, future), outcome in zip(batch, answer.outcomes, strict=True):
            if future.done():
                continue  # the waiting move was cancelled
            if outcome.HasField("response"):
                future.set_result(outcome.response)
            else:
                code = _CODES.get(outcome.code, grpc.StatusCode.UNKNOWN)
                future.set_exception(DecideError(code, outcome.reason, outcome.message))

    async def close(self) -> None:
        for task in list(self._in_flight):
            task.cancel()
        for task in list(self._in_flight):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        for _, future in self._waiting:
            future.cancel()
        self._waiting.clear()


def _chain(
    future: asyncio.Future[rules_pb2.DecideResponse],
    source: asyncio.Future[rules_pb2.DecideResponse],
) -> None:
    def copy(done: asyncio.Future[rules_pb2.DecideResponse]) -> None:
        if future.done():
            return
        if done.cancelled():
            future.cancel()
        elif (exc := done.exception()) is not None:
            future.set_exception(exc)
        else:
            future.set_result(done.result())

    source.add_done_callback(copy)
