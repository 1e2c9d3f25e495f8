"""Counters and a latency histogram of the moves this instance sends (BotService.GetStats).

Fixed log-scale buckets (10% apart, 20 µs to ~2 min) keep recording O(log n) and the
answer small; a percentile read from them is exact to within one bucket (10%).
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

from ddz.v1 import bot_pb2

RATIO = 1.1
LOWEST_US = 20


def _bounds() -> tuple[int, ...]:
    bounds: list[int] = []
    value = float(LOWEST_US)
    while value < 120_000_000:
        bound = int(value)
        if not bounds or bound > bounds[-1]:
            bounds.append(bound)
        value *= RATIO
    return tuple(bounds)


BOUNDS_US = _bounds()


@dataclass
class MoveStats:
    accepted: int = 0
    refused: int = 0
    conflicts: int = 0
    errors: int = 0
    counts: list[int] = field(default_factory=lambda: [0] * (len(BOUNDS_US) + 1))

    def record_latency(self, seconds: float) -> None:
        self.counts[bisect.bisect_left(BOUNDS_US, seconds * 1_000_000)] += 1

    def to_pb(self, hands_in_play: int) -> bot_pb2.GetStatsResponse:
        buckets = [
            bot_pb2.LatencyBucket(le_us=bound, count=count)
            for bound, count in zip((*BOUNDS_US, 2**63 - 1), self.counts, strict=True)
            if count
        ]
        return bot_pb2.GetStatsResponse(
            accepted=self.accepted,
            refused=self.refused,
            conflicts=self.conflicts,
            errors=self.errors,
            latency=buckets,
            hands_in_play=hands_in_play,
        )
