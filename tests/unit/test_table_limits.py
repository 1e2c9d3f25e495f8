"""The table service's abuse limits in themselves (``services.table.use_cases.limits``), on a
clock the test moves: a bucket's burst, its refill, the sweep of refilled buckets, and
a seat's stream slots."""

from __future__ import annotations

import pytest
from ddz.access.callers import Caller
from ddz.application.errors import Kind, Reason, Refusal
from ddz.v1 import table_pb2

from services.table.use_cases.limits import LIMITED, Rate, RateLimits, StreamSlots

ANN = Caller("player", "ann")
ANN_SEAT = Caller("seat", "ann", "t1", 0)
BEN = Caller("player", "ben")
OPERATOR = Caller("operator", "operator")


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def limited(limits: RateLimits, caller: Caller) -> Refusal | None:
    try:
        limits.spend("move", caller)
    except Refusal as refusal:
        return refusal
    return None


def test_a_bucket_allows_its_burst_then_refills_at_its_rate() -> None:
    clock = Clock()
    limits = RateLimits({"move": Rate(per_second=2.0, burst=3)}, clock)
    assert [limited(limits, ANN) for _ in range(3)] == [None, None, None]
    refusal = limited(limits, ANN_SEAT)  # the player's bucket, whichever token
    assert refusal is not None
    assert (refusal.kind, refusal.reason) == (Kind.EXHAUSTED, Reason.RATE_LIMITED)
    assert refusal.metadata["retry_after_s"] == "0.500"
    assert limited(limits, BEN) is None  # each player has their own
    clock.now += 0.5  # one call's worth
    assert limited(limits, ANN) is None
    assert limited(limits, ANN) is not None
    clock.now += 60  # refilled to the burst, never beyond
    assert [limited(limits, ANN) for _ in range(4)].count(None) == 3


def test_operators_and_kinds_without_a_rate_are_not_limited() -> None:
    limits = RateLimits({"move": Rate(1.0, 1)}, Clock())
    assert all(limited(limits, OPERATOR) is None for _ in range(100))
    for _ in range(100):
        limits.spend("join", ANN)  # no rate for joins here


def test_refilled_buckets_are_swept() -> None:
    clock = Clock()
    limits = RateLimits({"move": Rate(1.0, 5)}, clock)
    for n in range(50):
        limits.spend("move", Caller("player", f"p{n}"))
    assert len(limits.buckets) == 50
    clock.now += 2.0
    limits.sweep()
    assert limits.buckets == {}


def test_a_seat_has_so_many_stream_slots() -> None:
    slots = StreamSlots(2)
    slots.take("h1", 0)
    slots.take("h1", 0)
    with pytest.raises(Refusal) as caught:
        slots.take("h1", 0)
    assert (caught.value.kind, caught.value.reason) == (Kind.EXHAUSTED, Reason.TOO_MANY_STREAMS)
    slots.take("h1", 1)  # another seat has its own
    slots.give_back("h1", 0)
    slots.take("h1", 0)
    for seat in (0, 0, 1):
        slots.give_back("h1", seat)
    assert not slots.open


def test_the_limited_calls_are_rpcs_of_the_table_service() -> None:
    rpcs = table_pb2.DESCRIPTOR.services_by_name["TableService"].methods_by_name
    assert set(LIMITED) <= set(rpcs)
    assert {"JoinRoom", "RefreshSeatToken", "Bid", "ShowCards", "Play", "Pass"} <= set(LIMITED)
