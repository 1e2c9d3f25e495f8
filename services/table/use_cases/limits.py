"""Abuse limits on what players ask of the table service: how often (a token bucket per
player and kind of call) and how many streams at once (per seat).

Each kind of call a player makes has its bucket (``LIMITED``): ``join`` for the calls
that hand out seat tokens (JoinRoom, RefreshSeatToken), ``move`` for the calls that go
on to another service for a seat (Bid, ShowCards, Play, Pass to the rules; Suggest and
Hint to the bot). A bucket holds at most ``burst`` calls and refills at ``rate`` per
second; a call that finds it empty is refused RESOURCE_EXHAUSTED (``RATE_LIMITED``),
saying when to try again. The defaults are far above what a person at a table does.

Operators are not limited: an operator token may already do everything (open tables,
deal, act for any seat), so a limit would protect nothing, and the project's own tools
that play fast -- ``ddz simulate``, ``ddz bench e2e``, the driver -- use one.

Memory: a bucket that has refilled is the same as none, so full buckets are swept; a
seat's stream count is dropped when its last stream closes.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal

from ddz.access.callers import Caller
from ddz.application.errors import Kind, Reason, Refusal
from ddz.config.game import TableSettings

Limited = Literal["join", "move"]
SWEEP_EVERY = 1024
"""Calls between two sweeps of the buckets that have refilled."""


@dataclass(frozen=True, slots=True)
class Rate:
    per_second: float
    burst: int


def rates(settings: TableSettings) -> Mapping[Limited, Rate]:
    """Each limited kind of call and its rate (``DDZ_JOIN_*``, ``DDZ_MOVE_*``)."""
    return MappingProxyType({
        "join": Rate(settings.join_rate, settings.join_burst),
        "move": Rate(settings.move_rate, settings.move_burst),
    })  # fmt: skip


LIMITED: Mapping[str, Limited] = MappingProxyType({
    "JoinRoom": "join", "RefreshSeatToken": "join",
    "Bid": "move", "ShowCards": "move", "Play": "move", "Pass": "move",
    "Suggest": "move", "Hint": "move", "Resume": "move",
})  # fmt: skip
"""The RPCs a player's bucket limits, by kind (documentation and a test read it)."""


class TokenBucket:
    """``burst`` calls at once, refilled at ``rate`` per second (monotonic clock)."""

    __slots__ = ("rate", "stamp", "tokens")

    def __init__(self, rate: Rate, now: float) -> None:
        self.rate = rate
        self.tokens = float(rate.burst)
        self.stamp = now

    def refill(self, now: float) -> float:
        elapsed = max(0.0, now - self.stamp)
        self.tokens = min(float(self.rate.burst), self.tokens + elapsed * self.rate.per_second)
        self.stamp = now
        return self.tokens

    def take(self, now: float) -> float:
        """0.0 when a call may go now (one token spent), else the seconds until one may."""
        if self.refill(now) >= 1.0:
            self.tokens -= 1.0
            return 0.0
        return (1.0 - self.tokens) / self.rate.per_second

    def full(self, now: float) -> bool:
        return self.refill(now) >= self.rate.burst


class RateLimits:
    def __init__(
        self, limits: Mapping[Limited, Rate], clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.limits = limits
        self.clock = clock
        self.buckets: dict[tuple[Limited, str], TokenBucket] = {}
        self._calls = 0

    def spend(self, kind: Limited, caller: Caller) -> None:
        """One call of ``kind`` by ``caller``; a ``Refusal`` (RATE_LIMITED) if too soon.
        A kind without a rate is not limited."""
        rate = self.limits.get(kind)
        if caller.operator or rate is None:
            return
        now = self.clock()
        self._calls += 1
        if self._calls % SWEEP_EVERY == 0:
            self.sweep(now)
        key = (kind, caller.player_id)
        bucket = self.buckets.get(key)
        if bucket is None:
            bucket = self.buckets[key] = TokenBucket(rate, now)
        wait = bucket.take(now)
        if wait:
            raise Refusal(
                Kind.EXHAUSTED, Reason.RATE_LIMITED,
                f"too many {kind} calls of {caller.player_id} (at most {rate.burst} at once, "
                f"{rate.per_second:g} a second): try again in {wait:.2f} s",
                retry_after_s=f"{wait:.3f}",
            )  # fmt: skip

    def sweep(self, now: float | None = None) -> None:
        """Forget the buckets that have refilled (the same as no bucket)."""
        at = self.clock() if now is None else now
        for key in [k for k, bucket in self.buckets.items() if bucket.full(at)]:
            del self.buckets[key]


SeatKey = tuple[str, int]  # (hand id, seat)


class StreamSlots:
    """At most ``per_seat`` WatchHand streams of players open at once on one seat of a
    hand (an operator's streams are not counted)."""

    def __init__(self, per_seat: int) -> None:
        self.per_seat = per_seat
        self.open: Counter[SeatKey] = Counter()

    def take(self, hand_id: str, seat: int) -> None:
        key = (hand_id, seat)
        if self.open[key] >= self.per_seat:
            raise Refusal(
                Kind.EXHAUSTED, Reason.TOO_MANY_STREAMS,
                f"seat {seat} of this hand has {self.per_seat} streams open already "
                "(the most it may): close one first",
            )  # fmt: skip
        self.open[key] += 1

    def give_back(self, hand_id: str, seat: int) -> None:
        key = (hand_id, seat)
        self.open[key] -= 1
        if self.open[key] <= 0:
            del self.open[key]


@dataclass(frozen=True, slots=True)
class Limits:
    """The table service's limits, as its use cases use them."""

    calls: RateLimits
    streams: StreamSlots

    @classmethod
    def of(cls, settings: TableSettings) -> Limits:
        return cls(RateLimits(rates(settings)), StreamSlots(settings.seat_streams))
