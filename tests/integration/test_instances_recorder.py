"""Several recorders on one bus and one store (real nats-server, SQLite): one active
writer, standbys answering reads; the writer's connection cut mid-run (in this process),
or the writer a process killed with SIGKILL, a standby takes over, and every event is
stored exactly once; a writer after a take-over binds the consumer as it was made.
"""

from __future__ import annotations

import asyncio
import signal
import uuid
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import grpc
import nats.js.errors
import pytest
from audit_kit import play_hands
from ddz.adapters import codec
from ddz.adapters.messaging.bus import EventBus
from ddz.adapters.messaging.lease import BUCKET
from ddz.adapters.messaging.subjects import ALL_SUBJECTS, subject_for
from ddz.adapters.runtime.nats_server import NatsServer
from ddz.adapters.store import create_store
from ddz.audit.store.sample import Mischief
from ddz.v1 import (
    recorder_pb2,
    recorder_pb2_grpc,
)
from grpc_health.v1 import health_pb2, health_pb2_grpc
from suite_kit import (
    CORE,
    TTL,
    Suite,
    consumers_idle,
    cut,
    eventually,
    instances,
    running_suite,
    suite_settings,
    when,
)

from services.recorder.adapters.consumer import StoreConsumer
from services.recorder.app import writer_lease
from services.recorder.use_cases.handlers import STORED


async def health(channel: grpc.aio.Channel) -> int:
    stub = health_pb2_grpc.HealthStub(channel)
    answer = await stub.Check(health_pb2.HealthCheckRequest(service=""))
    return int(answer.status)


async def bus_events(bus: EventBus) -> dict[str, list[int]]:
    """Every event on the bus, as stream id -> versions (read with an ephemeral consumer)."""
    info = await bus.js.stream_info(bus.stream)
    total = info.state.messages
    sub = await bus.js.pull_subscribe(ALL_SUBJECTS, stream=bus.stream)
    found: dict[str, list[int]] = {}
    seen = 0
    try:
        while seen < total:
            for msg in await sub.fetch(min(256, total - seen), timeout=5.0):
                envelope = codec.parse_envelope(msg.data)
                found.setdefault(envelope.stream_id, []).append(envelope.stream_version)
                seen += 1
                await msg.ack()
    finally:
        await sub.unsubscribe()
    return found


def stored_events(database_url: str) -> dict[str, list[int]]:
    store = create_store(database_url)
    try:
        found: dict[str, list[int]] = {}
        for event in store.read_all(0, 1_000_000):
            found.setdefault(event.stream_id, []).append(event.stream_version)
        return found
    finally:
        store.close()


@pytest.fixture
async def recorders(bus: EventBus, nats_server: NatsServer, tmp_path: Path) -> AsyncIterator[Suite]:
    """The core services with a second recorder (a standby) on the same store."""
    settings = suite_settings(tmp_path, nats_server.url)
    settings = replace(settings, bus=replace(settings.bus, lease_ttl=TTL))
    async with running_suite(CORE, settings, bus) as suite:
        yield suite


async def test_a_standby_recorder_takes_over_and_every_event_is_stored_once(
    recorders: Suite,
) -> None:
    suite = recorders
    standby_channel = await suite.start_another("recorder")
    first, standby = instances(suite, "recorder")
    assert first.active and not standby.active
    # The standby serves: healthy, and it answers reads from the store.
    assert await health(standby_channel) == health_pb2.HealthCheckResponse.SERVING
    played = await play_hands(suite, "classic", 3, seed=5, odds=Mischief(refuse=0))
    reads = recorder_pb2_grpc.RecorderServiceStub(standby_channel)
    stream_id = f"hand-{played[0].hand_id}"
    await eventually(lambda: stored_version(reads, stream_id))
    assert not standby.active and standby.consumer.stored == 0  # it consumed nothing

    # The writer vanishes mid-play (its NATS connection cut, as a killed process's).
    before = first.consumer.stored
    playing = asyncio.create_task(
        play_hands(suite, "laizi", 6, seed=6, odds=Mischief(refuse=0), concurrency=3)
    )
    await eventually(when(lambda: first.consumer.stored > before + 30), timeout=60.0)
    await cut(first.bus)
    played += await playing
    assert await eventually(when(lambda: standby.active), timeout=10 * TTL)
    assert not first.active

    await eventually(lambda: consumers_idle(suite.bus, "recorder"), timeout=60.0)
    on_bus = await bus_events(suite.bus)
    in_store = await asyncio.to_thread(stored_events, suite.settings.store.database_url)
    assert {f"hand-{p.hand_id}" for p in played} <= set(on_bus)
    # Every event once, each stream's versions 1..n in order, nothing missing.
    assert in_store == {stream: sorted(versions) for stream, versions in on_bus.items()}
    for versions in in_store.values():
        assert versions == list(range(1, len(versions) + 1))
    assert standby.consumer.stored > 0  # the standby wrote the rest


async def stored_version(reads: recorder_pb2_grpc.RecorderServiceStub, stream_id: str) -> int:
    try:
        answer = await reads.ReadStream(recorder_pb2.ReadStreamRequest(stream_id=stream_id))
    except grpc.aio.AioRpcError:
        return 0
    return len(answer.events)


# --- the recorder as a process, killed -----------------------------------------------------


async def lease_holder(bus: EventBus, name: str) -> str:
    """Who holds the lease ``name`` now ("" when nobody, or no bucket yet)."""
    try:
        kv = await bus.js.key_value(BUCKET)
        return (await kv.get(name)).value.decode()
    except nats.js.errors.NotFoundError:
        return ""


def stored_count(database_url: str) -> int:
    store = create_store(database_url)
    try:
        return store.max_position()
    finally:
        store.close()


async def test_a_recorder_process_killed_with_sigkill_is_replaced_by_its_standby(
    bus: EventBus, nats_server: NatsServer, tmp_path: Path
) -> None:
    settings = suite_settings(tmp_path, nats_server.url)
    settings = replace(settings, bus=replace(settings.bus, lease_ttl=TTL))
    async with running_suite(("dealer", "rules", "settlement"), settings, bus) as suite:
        process = suite.spawn(
            "recorder", tmp_path / "recorder.log", DDZ_RECORDER_PORT="0",
            DDZ_RECORDER_METRICS_PORT="0", DDZ_LEASE_TTL=str(int(TTL)),
        )  # fmt: skip
        try:
            name = writer_lease(settings.store.database_url)
            holder = await eventually(lambda: lease_holder(bus, name), timeout=60.0)
            assert f"-{process.pid}-" in holder  # the process writes
            await suite.start("recorder")  # in this process: the standby
            standby = suite.running["recorder"].service
            assert not standby.active

            playing = asyncio.create_task(
                play_hands(suite, "classic", 6, seed=8, odds=Mischief(refuse=0), concurrency=3)
            )
            url = suite.settings.store.database_url
            await eventually(
                lambda: asyncio.to_thread(lambda: stored_count(url) > 60), timeout=60.0
            )
            process.send_signal(signal.SIGKILL)
            process.wait(timeout=10)
            played = await playing
            await eventually(when(lambda: standby.active), timeout=10 * TTL)
            assert await lease_holder(bus, name) == standby.holder

            await eventually(lambda: consumers_idle(suite.bus, "recorder"), timeout=60.0)
            on_bus = await bus_events(suite.bus)
            in_store = await asyncio.to_thread(stored_events, url)
            assert {f"hand-{p.hand_id}" for p in played} <= set(on_bus)
            assert in_store == {stream: sorted(versions) for stream, versions in on_bus.items()}
            assert standby.consumer.stored > 0
        finally:
            if process.poll() is None:
                process.kill()
                process.wait(timeout=10)


class Holding:
    """A recorder's ``Record`` that stores nothing: ``ack`` says whether each fetched
    batch is STORED (acked) or held forever (a writer that dies holding its messages)."""

    def __init__(self, ack: bool) -> None:
        self.ack = ack
        self.stored = 0
        self.seen: list[bytes] = []

    async def __call__(self, arrived: list[bytes], trace_ids: Any = None) -> list[Any]:
        self.seen += arrived
        if not self.ack:
            await asyncio.Event().wait()
        self.stored += len(arrived)
        return [STORED] * len(arrived)


async def test_a_writer_after_a_take_over_binds_the_consumer_as_it_was_made(
    bus: EventBus,
) -> None:
    """A take-over makes the consumer again from the acknowledged floor; the next writer,
    with nothing held, binds that consumer as it is (a consumer's start cannot change)
    and goes on from there: every message once, none skipped."""

    async def publish(count: int) -> None:
        for _ in range(count):
            await bus.js.publish(subject_for(f"hand-h{uuid.uuid4().hex}", "test"), b"x")

    async def consumed(consumer: StoreConsumer, record: Holding, count: int) -> None:
        await eventually(lambda: asyncio.sleep(0, len(record.seen) >= count), timeout=30)

    first = Holding(ack=True)
    one = StoreConsumer(bus, first, idle_fetch_timeout=0.2)  # type: ignore[arg-type]
    await one.start(take_over=True)
    await publish(2)
    await consumed(one, first, 2)
    await one.stop()  # the floor is 2
    dying = Holding(ack=False)
    two = StoreConsumer(bus, dying, idle_fetch_timeout=0.2)  # type: ignore[arg-type]
    await publish(3)  # before it starts: its first fetch holds all three
    await two.start(take_over=True)
    await consumed(two, dying, 3)
    assert two._task is not None
    two._task.cancel()  # it dies holding 3 unacknowledged messages
    taker = Holding(ack=True)
    three = StoreConsumer(bus, taker, idle_fetch_timeout=0.2)  # type: ignore[arg-type]
    await three.start(take_over=True)  # made again from the floor: the 3 come at once
    await consumed(three, taker, 3)
    await three.stop()
    after = Holding(ack=True)
    four = StoreConsumer(bus, after, idle_fetch_timeout=0.2)  # type: ignore[arg-type]
    await four.start(take_over=True)  # nothing held: binds the consumer as it is now
    await publish(1)
    await consumed(four, after, 1)
    await four.stop()
    assert (len(first.seen), len(taker.seen), len(after.seen)) == (2, 3, 1)
