"""``ddz play``'s client rides through a restart of the table service
(``ddz.client.session.through_cuts``): a JoinRoom or NextHand cut on the way is made
again once the service answers, a lost answer may be found, and a service that does not
come back is given up on in one line."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import cast

import grpc
import pytest
from ddz.client import session
from ddz.client.session import Unreachable, through_cuts


def failed(code: grpc.StatusCode, details: str = "") -> grpc.aio.AioRpcError:
    return grpc.aio.AioRpcError(code, grpc.aio.Metadata(), grpc.aio.Metadata(), details=details)


class Channel:
    """A channel whose server answers again at once, or never (``down``)."""

    def __init__(self, down: bool = False) -> None:
        self.down = down
        self.waits = 0

    async def channel_ready(self) -> None:
        self.waits += 1
        if self.down:
            await asyncio.Event().wait()


def up(channel: Channel) -> grpc.aio.Channel:
    return cast(grpc.aio.Channel, channel)


def answers(*outcomes: grpc.aio.AioRpcError | str) -> Callable[[], Awaitable[str]]:
    """A call failing or answering as ``outcomes`` say, one per attempt."""
    left = list(outcomes)

    async def call() -> str:
        outcome = left.pop(0)
        if isinstance(outcome, grpc.aio.AioRpcError):
            raise outcome
        return outcome

    return call


@pytest.fixture(autouse=True)
def quick(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(session, "AGAIN_PAUSE", (0.01, 0.02))


async def test_a_cut_call_is_made_again_once_the_service_answers() -> None:
    channel, cuts = Channel(), list[grpc.StatusCode]()
    unavailable = failed(grpc.StatusCode.UNAVAILABLE, "Socket closed")
    call = answers(unavailable, unavailable, "seated")
    assert await through_cuts(call, "joining", up(channel), on_cut=cuts.append) == "seated"
    assert cuts == [grpc.StatusCode.UNAVAILABLE] * 2 and channel.waits == 2


async def test_a_refusal_stands_and_after_a_cut_only_the_named_ones_are_asked_again() -> None:
    exists = failed(grpc.StatusCode.ALREADY_EXISTS, "ann is already waiting")
    with pytest.raises(grpc.aio.AioRpcError) as first:
        await through_cuts(answers(exists), "joining", up(Channel()), after_cut=(exists.code(),))
    assert first.value.code() is grpc.StatusCode.ALREADY_EXISTS
    call = answers(failed(grpc.StatusCode.UNAVAILABLE), exists, "seated")
    got = await through_cuts(call, "joining", up(Channel()), after_cut=(exists.code(),))
    assert got == "seated"
    denied = failed(grpc.StatusCode.PERMISSION_DENIED, "not yours")
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await through_cuts(answers(failed(grpc.StatusCode.UNAVAILABLE), denied), "x", up(Channel()))
    assert refused.value.code() is grpc.StatusCode.PERMISSION_DENIED


async def test_an_answer_lost_with_the_cut_is_found() -> None:
    in_play = failed(grpc.StatusCode.FAILED_PRECONDITION, "hand h2 is still in play")

    async def dealt(exc: grpc.aio.AioRpcError) -> str | None:
        return "h2" if exc.code() is grpc.StatusCode.FAILED_PRECONDITION else None

    call = answers(failed(grpc.StatusCode.UNAVAILABLE), in_play)
    assert await through_cuts(call, "the next hand", up(Channel()), found=dealt) == "h2"
    with pytest.raises(grpc.aio.AioRpcError):  # no cut: the refusal is the answer
        await through_cuts(answers(in_play), "the next hand", up(Channel()), found=dealt)


async def test_a_service_that_does_not_come_back_is_given_up_on_in_one_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(session, "RESUME_PATIENCE", 0.2)
    call = answers(failed(grpc.StatusCode.UNAVAILABLE, "Connection refused"))
    with pytest.raises(Unreachable) as gone:
        await through_cuts(call, "joining room classic", up(Channel(down=True)))
    message = str(gone.value)
    assert message.startswith("joining room classic: the table service did not answer again")
    assert "\n" not in message
