"""``election.until_answered``: the one policy of a write that rides out a stream's leader
election: asked again while unanswered, until its deadline or its attempts run out; any
other error at once."""

from __future__ import annotations

import itertools
import time

import nats.js.errors
import pytest
from ddz.adapters.messaging.election import FIRST_RETRY, UNANSWERED_RETRY, until_answered


class Stream:
    """A stream without a leader for its first ``silent`` attempts, then one that stores."""

    def __init__(self, silent: int, error: Exception | None = None) -> None:
        self.silent = silent
        self.error = error or nats.js.errors.NoStreamResponseError()
        self.asked: list[tuple[float, float]] = []  # (when, the seconds the attempt had)

    async def write(self, seconds: float) -> str:
        self.asked.append((time.monotonic(), seconds))
        if len(self.asked) <= self.silent:
            raise self.error
        return "stored"


async def test_a_write_is_asked_again_until_the_stream_answers() -> None:
    stream = Stream(silent=5)
    assert await until_answered(stream.write, until=time.monotonic() + 30, timeout=5) == "stored"
    assert len(stream.asked) == 6
    gaps = [b[0] - a[0] for a, b in itertools.pairwise(stream.asked)]
    # A pause never ends early: 0.05, 0.1, 0.2, 0.4 s, then the cap.
    least = [min(FIRST_RETRY * 2**i, UNANSWERED_RETRY) - 0.005 for i in range(len(gaps))]
    assert all(gap >= pause for gap, pause in zip(gaps, least, strict=True))
    assert all(seconds == 5 for _, seconds in stream.asked)


async def test_the_last_silence_is_raised_at_the_deadline() -> None:
    stream = Stream(silent=1000)
    began = time.monotonic()
    with pytest.raises(nats.js.errors.NoStreamResponseError):
        await until_answered(stream.write, until=began + 1.0, timeout=5)
    assert stream.asked
    assert all(seconds <= 1.0 for _, seconds in stream.asked)  # no attempt past the deadline


async def test_attempts_bound_the_retries_and_other_errors_pass_at_once() -> None:
    stream = Stream(silent=1000)
    with pytest.raises(nats.js.errors.NoStreamResponseError):
        await until_answered(stream.write, until=time.monotonic() + 30, timeout=5, attempts=3)
    assert len(stream.asked) == 3

    refused = Stream(silent=1000, error=nats.js.errors.BadRequestError())
    with pytest.raises(nats.js.errors.BadRequestError):
        await until_answered(refused.write, until=time.monotonic() + 30, timeout=5)
    assert len(refused.asked) == 1
