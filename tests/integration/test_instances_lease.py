"""``Lease`` (NATS KV) shared by several instances of one service on one bus (real
nats-server): one holder at a time; a standby takes over once a holder that vanished (its
connection cut) has let the TTL run out, never while the old holder still counts itself
as holder; a clean stop hands the lease on at once.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator

import pytest
from ddz.adapters.messaging.bus import EventBus
from ddz.adapters.messaging.lease import Lease
from ddz.adapters.runtime.nats_server import NatsServer
from suite_kit import TTL, cut


@pytest.fixture
async def buses(nats_server: NatsServer) -> AsyncIterator[list[EventBus]]:
    """Separate connections, one per instance (cutting one leaves the others)."""
    opened: list[EventBus] = []

    async def close_all() -> None:
        for bus in opened:
            await bus.close()

    for index in range(2):
        opened.append(await EventBus.connect(nats_server.url, name=f"instance-{index}"))
    try:
        yield opened
    finally:
        await close_all()


async def test_one_holder_and_a_standby_takes_over_once_the_holder_is_gone(
    buses: list[EventBus],
) -> None:
    name = f"test-{uuid.uuid4().hex[:8]}"
    seen_when_taken: list[bool] = []
    first = Lease(buses[0], name, "first", service="test", ttl=TTL)
    second = Lease(
        buses[1], name, "second", service="test", ttl=TTL,
        on_taken=lambda: seen_when_taken.append(first.held),
    )  # fmt: skip
    await first.start()
    await second.start()
    try:
        assert first.held and not second.held
        await asyncio.sleep(3 * first.interval)  # renewed a few times, still one holder
        assert first.held and not second.held

        await cut(buses[0])
        assert await second.wait_held(timeout=10 * TTL)
        # The old holder had stopped counting itself as holder before the standby took over.
        assert seen_when_taken == [False]
        assert not first.held
    finally:
        await second.stop()
        await first.stop()


async def test_a_clean_stop_hands_the_lease_on_at_once(buses: list[EventBus]) -> None:
    name = f"test-{uuid.uuid4().hex[:8]}"
    lost: list[str] = []
    first = Lease(buses[0], name, "first", service="test", ttl=60.0)
    second = Lease(buses[1], name, "second", service="test", ttl=60.0,
                   on_lost=lambda: lost.append("second"))  # fmt: skip
    await first.start()
    await second.start()
    try:
        assert first.held and not second.held
        await first.stop()
        # Well inside the 60 s TTL: the release, not the expiry, handed it on.
        assert await second.wait_held(timeout=5 * second.interval)
        assert not first.held and lost == []
    finally:
        await second.stop()


async def test_a_lease_given_up_is_not_held_when_its_holder_stops_acting(
    buses: list[EventBus],
) -> None:
    """A holder that no longer wants its lease (a bot instance handing a partition to a
    newcomer) stops acting before anyone else may take it, and while it does, its lease
    already reads not held: what it drops for the lease (the partition's hands) is
    judged by ``held``."""
    name = f"test-{uuid.uuid4().hex[:8]}"
    wanted = True
    seen: list[tuple[bool, bool]] = []  # (ours held, the other's held) as on_lost runs
    other = Lease(buses[1], name, "other", service="test", ttl=60.0)

    async def lost() -> None:
        seen.append((first.held, other.held))

    first = Lease(buses[0], name, "first", service="test", ttl=60.0, on_lost=lost,
                  want=lambda: wanted)  # fmt: skip
    await first.start()
    await other.start()
    try:
        assert first.held and not other.held
        wanted = False
        assert await other.wait_held(timeout=5 * first.interval)  # released, not expired
        assert seen == [(False, False)] and not first.held
    finally:
        await other.stop()
        await first.stop()


async def test_a_holder_that_cannot_renew_stops_before_its_lease_can_expire(
    buses: list[EventBus],
) -> None:
    name = f"test-{uuid.uuid4().hex[:8]}"
    events: list[str] = []
    lease = Lease(buses[0], name, "only", service="test", ttl=TTL,
                  on_taken=lambda: events.append("taken"),
                  on_lost=lambda: events.append("lost"))  # fmt: skip
    await lease.start()
    try:
        assert lease.held and events == ["taken"]
        await cut(buses[0])
        while lease.running and events == ["taken"]:
            await asyncio.sleep(0.05)
        assert events == ["taken", "lost"]
        assert not lease.held
    finally:
        await lease.stop()
