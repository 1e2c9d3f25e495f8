"""The bot's ``DecideBatcher``: moves ready together go in one ``DecideBatch`` call,
each gets its own answer or error, and an older rules service gets one ``Decide`` each."""

from __future__ import annotations

import asyncio
from typing import Any

import grpc
import pytest
from ddz.v1 import rules_pb2

from services.bot.batcher import DecideBatcher, DecideError


class _Unimplemented(grpc.aio.AioRpcError):  # type: ignore[misc]
    def __init__(self) -> None:
        super().__init__(
            grpc.StatusCode.UNIMPLEMENTED, grpc.aio.Metadata(), grpc.aio.Metadata(), "no"
        )


class FakeRules:
    """Answers ``version = seat``; hand "bad" gets ABORTED/VERSION_CONFLICT."""

    def __init__(self, batched: bool = True) -> None:
        self.batched = batched
        self.batches: list[list[str]] = []
        self.singles: list[str] = []

    async def DecideBatch(self, request: Any, timeout: float) -> Any:
        if not self.batched:
            raise _Unimplemented()
        self.batches.append([c.hand_id for c in request.commands])
        await asyncio.sleep(0.01)
        outcomes = []
        for command in request.commands:
            if command.hand_id == "bad":
                outcomes.append(
                    rules_pb2.DecideOutcome(
                        code=grpc.StatusCode.ABORTED.value[0],
                        reason="VERSION_CONFLICT",
                        message="stale",
                    )
                )
            else:
                response = rules_pb2.DecideResponse(accepted=True, version=command.seat)
                outcomes.append(rules_pb2.DecideOutcome(response=response))
        return rules_pb2.DecideBatchResponse(outcomes=outcomes)

    async def Decide(self, request: Any, timeout: float) -> Any:
        self.singles.append(request.hand_id)
        return rules_pb2.DecideResponse(accepted=True, version=request.seat)


def _request(hand_id: str, seat: int) -> rules_pb2.DecideRequest:
    return rules_pb2.DecideRequest(hand_id=hand_id, seat=seat)


async def test_moves_ready_together_share_calls_and_get_their_own_answers() -> None:
    rules = FakeRules()
    batcher = DecideBatcher(rules, timeout=1.0, max_in_flight=1)  # type: ignore[arg-type]
    answers = await asyncio.gather(*(batcher.decide(_request(f"h{i}", i)) for i in range(6)))
    assert [a.version for a in answers] == list(range(6))
    # The first goes alone at once; the rest queued meanwhile and go in one call.
    assert rules.batches == [["h0"], ["h1", "h2", "h3", "h4", "h5"]]


async def test_a_moves_error_is_raised_for_that_move_only() -> None:
    batcher = DecideBatcher(FakeRules(), timeout=1.0)  # type: ignore[arg-type]
    good, bad = await asyncio.gather(
        batcher.decide(_request("h1", 2)),
        batcher.decide(_request("bad", 1)),
        return_exceptions=True,
    )
    assert isinstance(good, rules_pb2.DecideResponse) and good.version == 2
    assert isinstance(bad, DecideError)
    assert (bad.code(), bad.reason, bad.details()) == (
        grpc.StatusCode.ABORTED,
        "VERSION_CONFLICT",
        "stale",
    )


async def test_a_rules_service_without_decide_batch_gets_one_decide_per_move() -> None:
    rules = FakeRules(batched=False)
    batcher = DecideBatcher(rules, timeout=1.0)  # type: ignore[arg-type]
    answers = await asyncio.gather(*(batcher.decide(_request(f"h{i}", i)) for i in range(3)))
    assert [a.version for a in answers] == [0, 1, 2]
    assert sorted(rules.singles) == ["h0", "h1", "h2"]
    assert not batcher.batched
    await batcher.decide(_request("h9", 9))
    assert rules.singles[-1] == "h9"


@pytest.mark.parametrize("size", [1, 3])
async def test_batches_never_exceed_max_batch(size: int) -> None:
    rules = FakeRules()
    batcher = DecideBatcher(rules, timeout=1.0, max_batch=size)  # type: ignore[arg-type]
    await asyncio.gather(*(batcher.decide(_request(f"h{i}", i)) for i in range(7)))
    assert max(len(b) for b in rules.batches) <= size
    assert sorted(h for b in rules.batches for h in b) == sorted(f"h{i}" for i in range(7))
