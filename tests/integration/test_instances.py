"""Several instances of one service on one bus and one store (real nats-server, SQLite).

- ``Lease`` (NATS KV): one holder at a time; a standby takes over once a holder that
  vanished (its connection cut) has let the TTL run out, never while the old holder
  still counts itself as holder; a clean stop hands the lease on at once.
- recorder: one active writer, standbys answering reads; the writer's connection cut
  mid-run (in this process), or the writer a process killed with SIGKILL, a standby takes
  over, and every event is stored exactly once.
- settlement: two instances share the durable consumer; every hand applied once, each
  instance applied some, balances read the same on both.
- bot: a second instance takes half the partitions and replays no history; both play,
  no move ever races another (no VERSION_CONFLICT); the first one cut off mid-play, the
  second takes its partitions and every hand finishes.
- dealer: two instances on one seed table; hands dealt by either end (their seeds
  revealed through the other); one hand id asked of both at once is dealt once.
"""

from __future__ import annotations

import asyncio
import random
import signal
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import grpc
import nats.js.errors
import pytest
from audit_kit import PLAYERS, deal_request, play_hands
from ddz.adapters import codec
from ddz.adapters.messaging.bus import EventBus
from ddz.adapters.messaging.lease import BUCKET, Lease
from ddz.adapters.messaging.subjects import ALL_SUBJECTS, parse_subject, subject_for
from ddz.adapters.runtime.nats_server import NatsServer
from ddz.adapters.store import create_store
from ddz.audit.sample import Mischief
from ddz.v1 import (
    hand_events_pb2,
    recorder_pb2,
    recorder_pb2_grpc,
    settlement_pb2,
    settlement_pb2_grpc,
)
from deal_kit import assigned
from grpc_health.v1 import health_pb2, health_pb2_grpc
from suite_kit import CORE, Suite, consumers_idle, eventually, running_suite, suite_settings

from services.recorder.app import writer_lease
from services.recorder.consumer import StoreConsumer
from services.recorder.handlers import STORED

TTL = 2.0


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


async def cut(bus: EventBus) -> None:
    """The instance's connection gone at once, without a goodbye (as a killed process's)."""
    bus.closing = True
    await bus.nc.close()


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


# --- the recorder: one writer, standbys ---------------------------------------------------


def instances(suite: Suite, name: str) -> list[Any]:
    """The apps of every instance of ``name`` the suite started, the first one first."""
    return [suite.running[name].service, *(s.service for s in suite._others if s.name == name)]


def when(check: Callable[[], bool]) -> Callable[[], Awaitable[bool]]:
    """``check`` as a probe for ``eventually``."""

    async def probe() -> bool:
        return check()

    return probe


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
    settings = replace(suite_settings(tmp_path, nats_server.url), lease_ttl=TTL)
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
    in_store = await asyncio.to_thread(stored_events, suite.settings.database_url)
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


# --- settlement: instances share the durable consumer -------------------------------------


@pytest.fixture
async def core(bus: EventBus, nats_server: NatsServer, tmp_path: Path) -> AsyncIterator[Suite]:
    settings = suite_settings(tmp_path, nats_server.url)
    async with running_suite(CORE, settings, bus) as suite:
        yield suite


async def balances(channel: grpc.aio.Channel) -> dict[str, tuple[int, int]]:
    stub = settlement_pb2_grpc.SettlementServiceStub(channel)
    found = {}
    for player in PLAYERS:
        answer = await stub.GetBalance(settlement_pb2.GetBalanceRequest(player_id=player))
        found[player] = (answer.balance, answer.hands)
    return found


async def test_two_settlement_instances_share_the_hands_and_agree_on_balances(
    core: Suite,
) -> None:
    suite = core
    second_channel = await suite.start_another("settlement")
    played = await play_hands(suite, "classic", 12, seed=7, odds=Mischief(refuse=0), concurrency=4)
    await eventually(lambda: consumers_idle(suite.bus, "settlement"), timeout=60.0)

    applied = [app.consumer.apply.applied for app in instances(suite, "settlement")]
    assert sum(applied) == len(played)  # each hand applied once, by one instance
    assert all(count > 0 for count in applied), applied  # and both had a share
    # Balances are the store's projection: read the same on either instance.
    first, second = await balances(suite.channel("settlement")), await balances(second_channel)
    assert first == second
    assert sum(hands for _balance, hands in first.values()) == 3 * len(played)


# --- bot: hands shared by partition leases ------------------------------------------------

BOT_SEATS = [hand_events_pb2.SeatInfo(player_id=f"bot-{i}", is_bot=True) for i in range(3)]


@pytest.fixture
async def bots(bus: EventBus, nats_server: NatsServer, tmp_path: Path) -> AsyncIterator[Suite]:
    """The core services and one bot instance, the hands shared by 8 partitions."""
    settings = replace(
        suite_settings(tmp_path, nats_server.url),
        lease_ttl=TTL, bot_partitions=8, bot_player="greedy",
    )  # fmt: skip
    async with running_suite((*CORE, "bot"), settings, bus) as suite:
        yield suite


async def deal_bot_hands(suite: Suite, count: int) -> list[str]:
    hand_ids = []
    for _ in range(count):
        hand_id = "inst-" + uuid.uuid4().hex[:10]
        request = await assigned(suite.bus, suite.settings, hand_id, seats=BOT_SEATS)
        await suite.dealer.Deal(request)
        hand_ids.append(hand_id)
    return hand_ids


async def all_settled(suite: Suite, hand_ids: list[str]) -> None:
    stub = suite.settlement

    async def every_one() -> bool:
        for hand_id in hand_ids:
            try:
                await stub.GetLedger(settlement_pb2.GetLedgerRequest(hand_id=hand_id))
            except grpc.aio.AioRpcError as exc:
                if exc.code() is not grpc.StatusCode.NOT_FOUND:
                    raise
                return False
        return True

    await eventually(every_one, timeout=60.0, every=0.2)


async def delivered(bus: EventBus, durable: str) -> int:
    """Messages the server has sent the consumer ``durable`` so far."""
    info = await bus.js.consumer_info(bus.stream, durable)
    return int(info.delivered.consumer_seq or 0) if info.delivered else 0


async def events_on_bus(bus: EventBus, hand_ids: list[str]) -> int:
    """The events of these hands on the bus, public and internal."""
    info = await bus.js.stream_info(bus.stream, subjects_filter=ALL_SUBJECTS)
    streams = {f"hand-{hand_id}" for hand_id in hand_ids}
    subjects = info.state.subjects or {}
    return sum(n for subject, n in subjects.items() if parse_subject(subject).stream_id in streams)


def split(apps: list[Any]) -> bool:
    """Every instance holds some partitions, and every partition has one holder."""
    held = [app.partitions.held for app in apps]
    return all(held) and sorted(k for h in held for k in h) == list(range(8))


async def test_bot_instances_share_the_hands_one_decision_per_turn(bots: Suite) -> None:
    suite = bots
    (first,) = instances(suite, "bot")
    assert first.partitions.held == frozenset(range(8))  # alone: every partition
    before = await deal_bot_hands(suite, 4)
    await all_settled(suite, before)

    # A second instance joins: the partitions are split, and it replays nothing.
    await suite.start_another("bot")
    first, second = instances(suite, "bot")
    await eventually(when(lambda: split([first, second])), timeout=30.0)
    info = await suite.bus.js.consumer_info(suite.bus.stream, second.durable)
    assert str(getattr(info.config.deliver_policy, "value", info.config.deliver_policy)) == "new"
    assert not set(before) & (set(second.feed.hands) | set(second.feed._ended))

    accepted = [app.autoplay.stats.accepted for app in (first, second)]
    sent = [await delivered(suite.bus, app.durable) for app in (first, second)]
    hands = await deal_bot_hands(suite, 12)
    await all_settled(suite, hands)
    stats = [app.autoplay.stats for app in (first, second)]
    assert all(s.accepted > a for s, a in zip(stats, accepted, strict=True))  # both played
    # Each is sent its own hands' events only (its consumer filters on its partitions'
    # subjects), and between them every event of every hand.
    events = await events_on_bus(suite.bus, hands)
    shares = [
        await delivered(suite.bus, app.durable) - n
        for app, n in zip((first, second), sent, strict=True)
    ]
    assert all(0 < share < events for share in shares), (shares, events)
    assert sum(shares) >= events, (shares, events)
    # One decision per bot turn: no move ever raced another for a version.
    assert [s.conflicts for s in stats] == [0, 0]
    assert [s.refused for s in stats] == [0, 0]

    # The first instance vanishes mid-play: the second takes its partitions and
    # finishes every hand, the first one's included.
    more = await deal_bot_hands(suite, 6)
    await cut(first.bus)
    await eventually(when(lambda: second.partitions.held == frozenset(range(8))),
                     timeout=10 * TTL)  # fmt: skip
    await all_settled(suite, more)


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
    settings = replace(suite_settings(tmp_path, nats_server.url), lease_ttl=TTL)
    async with running_suite(("dealer", "rules", "settlement"), settings, bus) as suite:
        env = {
            **suite.env(), "DDZ_RECORDER_PORT": "0", "DDZ_RECORDER_METRICS_PORT": "0",
            "DDZ_LEASE_TTL": str(int(TTL)), "PYTHONUNBUFFERED": "1",
        }  # fmt: skip
        with (tmp_path / "recorder.log").open("wb") as out:
            process = subprocess.Popen(
                [sys.executable, "-m", "services.recorder"], env=env, stdin=subprocess.DEVNULL,
                stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip
        try:
            name = writer_lease(settings.database_url)
            holder = await eventually(lambda: lease_holder(bus, name), timeout=60.0)
            assert f"-{process.pid}-" in holder  # the process writes
            await suite.start("recorder")  # in this process: the standby
            standby = suite.running["recorder"].service
            assert not standby.active

            playing = asyncio.create_task(
                play_hands(suite, "classic", 6, seed=8, odds=Mischief(refuse=0), concurrency=3)
            )
            url = suite.settings.database_url
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


# --- dealer: N instances on one seed table -------------------------------------------------


async def test_two_dealers_deal_and_either_serves_the_seeds(core: Suite) -> None:
    suite = core
    second = await suite.another("dealer")  # the suite's clients of the second dealer
    # Hands dealt by the second dealer, played to the end: their seeds are revealed by
    # the rules service through the first dealer (one seed table for both).
    played = await play_hands(second, "classic", 3, seed=9, odds=Mischief(refuse=0))
    played += await play_hands(suite, "classic", 3, seed=10, odds=Mischief(refuse=0))
    await eventually(lambda: consumers_idle(suite.bus, "recorder", "settlement"), timeout=60.0)
    for hand in played:
        answer = await suite.recorder.ReadStream(
            recorder_pb2.ReadStreamRequest(stream_id=f"hand-{hand.hand_id}")
        )
        assert codec.parse_envelope(answer.events[-1].envelope).type == "seed_revealed"

    # One hand id asked of both at once: dealt once, the other refused.
    hand_id = "twice-" + uuid.uuid4().hex[:10]
    request = await deal_request(suite.bus, suite.settings, hand_id, "classic", random.Random(3))
    stubs = [suite.dealer, second.dealer]
    answers = await asyncio.gather(*(stub.Deal(request) for stub in stubs), return_exceptions=True)
    refused = [a for a in answers if isinstance(a, grpc.aio.AioRpcError)]
    assert len(refused) == 1, answers
    assert refused[0].code() is grpc.StatusCode.ALREADY_EXISTS


class Holding:
    """A recorder's ``Record`` that stores nothing: ``ack`` says whether each fetched
    batch is STORED (acked) or held forever (a writer that dies holding its messages)."""

    def __init__(self, ack: bool) -> None:
        self.ack = ack
        self.stored = 0
        self.seen: list[bytes] = []

    async def __call__(self, arrived: list[bytes]) -> list[Any]:
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
