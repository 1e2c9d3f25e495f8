"""The bus on a three-node JetStream cluster on loopback (``start_nats_cluster``).

- A stream created with three replicas has three; a service that starts later asking
  for one (or for other limits) lowers nothing an operator set.
- A client given every node's URL keeps publishing and reading after the node it was
  connected to is killed (SIGKILL).
- The core services (``DDZ_NATS_URL`` = the three nodes, ``DDZ_STREAM_REPLICAS=3``)
  play hands to their end and settle them.
- A table's write made as the node leading its stream dies waits for the new leader
  and lands once.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import replace
from pathlib import Path

import nats.errors
import nats.js.errors
import pytest
from audit_kit import play_hands, settled
from ddz.adapters.messaging.bus import EventBus
from ddz.adapters.messaging.lease import BUCKET, Lease
from ddz.adapters.messaging.server import MSG_ID
from ddz.adapters.messaging.subjects import ALL_SUBJECTS, stream_filter, subject_for
from ddz.adapters.messaging.table_stream import JetStreamTableLog, table_stream_id
from ddz.adapters.runtime.nats_server import NatsCluster, start_nats_cluster
from ddz.application.table_history import TableCursor
from ddz.audit.store.sample import Mischief
from ddz.domain.hand import SeatInfo
from ddz.domain.ruleset import CLASSIC
from ddz.domain.settlement import RoomSettings
from ddz.domain.table import SeatReady, TableOpened
from nats.js.api import StreamConfig
from signing_kit import KEYRING, TABLE
from suite_kit import CORE, eventually, running_suite, suite_settings
from table_kit import settled_ledger

CLUSTER_WAIT = 30.0  # seconds the cluster may take to place a stream or elect a leader


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[NatsCluster]:
    with start_nats_cluster(tmp_path / "cluster", 3) as nodes:
        yield nodes


@pytest.fixture
async def cluster_bus(cluster: NatsCluster) -> AsyncIterator[EventBus]:
    bus = await EventBus.connect(cluster.url, name="pytest", stream=f"T{uuid.uuid4().hex[:8]}")
    try:
        yield bus
    finally:
        await bus.close()


async def ensured(bus: EventBus, **options: object) -> bool:
    """``ensure_stream`` once the cluster can place the stream (it may still be settling)."""
    try:
        await bus.ensure_stream(**options)  # type: ignore[arg-type]
    except (nats.errors.Error, TimeoutError):
        return False
    return True


async def test_a_stream_is_created_with_three_replicas_and_never_scaled_down(
    cluster_bus: EventBus,
) -> None:
    bus = cluster_bus
    assert await eventually(lambda: ensured(bus, replicas=3, max_age=7 * 24 * 3600.0),
                            timeout=CLUSTER_WAIT)  # fmt: skip
    info = await bus.js.stream_info(bus.stream)
    assert info.config.num_replicas == 3
    assert info.cluster is not None and len(info.cluster.replicas or []) == 2
    # An operator shortens the retention and lengthens the duplicate window by hand.
    await bus.js.update_stream(replace(info.config, max_age=3600.0, duplicate_window=300.0))

    await bus.ensure_stream(replicas=1, max_age=None, duplicate_window=120.0)
    after = (await bus.js.stream_info(bus.stream)).config
    assert after.num_replicas == 3
    assert after.max_age == 3600.0
    assert after.duplicate_window == 300.0
    assert after.allow_atomic
    assert after.subjects == [ALL_SUBJECTS]


async def test_an_existing_stream_gets_what_correctness_needs(cluster_bus: EventBus) -> None:
    """A stream made by hand without our subjects, with a short duplicate window and
    without atomic batches: those are raised, its replicas and limits kept."""
    bus = cluster_bus
    mine = StreamConfig(
        name=bus.stream, subjects=["other.>"], num_replicas=3, duplicate_window=5.0,
        max_msgs=1_000_000,
    )  # fmt: skip

    async def made() -> bool:
        try:
            await bus.js.add_stream(mine)
        except (nats.errors.Error, TimeoutError):
            return False
        return True

    assert await eventually(made, timeout=CLUSTER_WAIT)
    await bus.ensure_stream(replicas=1, duplicate_window=120.0)
    after = (await bus.js.stream_info(bus.stream)).config
    assert after.subjects == ["other.>", ALL_SUBJECTS]
    assert after.duplicate_window == 120.0
    assert after.allow_atomic
    assert (after.num_replicas, after.max_msgs) == (3, 1_000_000)
    assert await bus.atomic_batches()


async def test_a_client_of_every_node_survives_the_death_of_its_node(
    cluster: NatsCluster, cluster_bus: EventBus
) -> None:
    bus = cluster_bus
    assert await eventually(lambda: ensured(bus, replicas=3), timeout=CLUSTER_WAIT)
    subject = subject_for("table-t1", "noted")
    first = await bus.publish(subject, b"before", "e-before", timeout=10)

    connected = bus.nc.connected_url
    assert connected is not None
    victim = next(node for node in cluster.nodes if node.port == connected.port)
    os.kill(victim.process.pid, signal.SIGKILL)
    victim.process.wait()

    async def published() -> int:
        try:
            ack = await bus.publish(subject, b"after", "e-after", timeout=5)
        except (nats.errors.Error, TimeoutError):
            return 0
        return ack.seq

    seq = await eventually(published, timeout=CLUSTER_WAIT, every=0.2)
    assert bus.nc.connected_url is not None and bus.nc.connected_url.port != victim.port
    assert seq > first.seq

    async def read_back() -> list[bytes]:
        try:
            messages = [await bus.js.get_msg(bus.stream, s) for s in (first.seq, seq)]
        except (nats.errors.Error, TimeoutError):
            return []
        return [m.data or b"" for m in messages]

    assert await eventually(read_back, timeout=CLUSTER_WAIT, every=0.2) == [b"before", b"after"]

    # The node comes back where it was and catches up: three current replicas again.
    cluster.restart(cluster.nodes.index(victim))

    async def whole_again() -> bool:
        info = await bus.js.stream_info(bus.stream)
        peers = info.cluster.replicas if info.cluster is not None else None
        return bool(peers) and len(peers or []) == 2 and all(p.current for p in peers or [])

    assert await eventually(whole_again, timeout=CLUSTER_WAIT, every=0.2)


async def test_the_core_services_play_hands_on_the_cluster(
    cluster: NatsCluster, cluster_bus: EventBus, tmp_path: Path
) -> None:
    """The services create the ``DDZ`` stream themselves, with three replicas."""
    # First the cluster is able to place a stream of three (a probe of its own).
    assert await eventually(lambda: ensured(cluster_bus, replicas=3), timeout=CLUSTER_WAIT)
    await cluster_bus.js.delete_stream(cluster_bus.stream)  # its subjects are DDZ's
    settings = suite_settings(tmp_path, cluster.url)
    settings = replace(settings, bus=replace(settings.bus, stream_replicas=3))
    bus = await EventBus.connect(cluster.url, name="pytest")
    try:
        async with running_suite(CORE, settings, bus) as suite:
            info = await bus.js.stream_info(bus.stream)
            assert info.config.num_replicas == 3
            played = await play_hands(suite, "classic", 3, seed=11, odds=Mischief(refuse=0))
            await settled(suite)
            for hand in played:
                ledger = await settled_ledger(suite, hand.hand_id)
                assert ledger.hand_id == hand.hand_id
    finally:
        await bus.close()


async def test_a_lease_outlives_the_election_of_its_buckets_leader(
    cluster: NatsCluster, cluster_bus: EventBus
) -> None:
    """The node leading the lease bucket's stream killed at the worst moment (just before
    the holder's next renewal): the holder counts itself holder all through the election
    of a new leader, its renewals land again on it, and the standby never takes over. A
    lease of the default TTL (what an operator runs) outlives nats-server's longest
    election (a follower waits 4-9 s for a lost leader before it campaigns)."""
    assert await eventually(lambda: ensured(cluster_bus, replicas=3), timeout=CLUSTER_WAIT)
    buses = [await EventBus.connect(cluster.url, name=f"instance-{i}") for i in range(2)]
    name = f"test-{uuid.uuid4().hex[:8]}"
    lost: list[str] = []
    holder = Lease(buses[0], name, "holder", service="test", replicas=3,
                   on_lost=lambda: lost.append("holder"))  # fmt: skip
    standby = Lease(buses[1], name, "standby", service="test", replicas=3,
                    on_taken=lambda: lost.append("standby took it"))  # fmt: skip
    try:
        assert await eventually(lambda: started(holder), timeout=CLUSTER_WAIT)
        assert await holder.wait_held(CLUSTER_WAIT)
        await standby.start()
        assert not standby.held

        info = await cluster_bus.js.stream_info(f"KV_{BUCKET}")
        assert info.cluster is not None and info.cluster.leader
        leader = next(n for n, c in zip(cluster.nodes, cluster.configs, strict=True)
                      if f'server_name: "{info.cluster.leader}"' in c.read_text())  # fmt: skip
        renewed = holder.held_until
        while holder.held_until == renewed:  # a renewal lands: the next is one interval off
            await asyncio.sleep(0.01)
        await asyncio.sleep(holder.interval * 0.9)
        until = holder.held_until
        os.kill(leader.process.pid, signal.SIGKILL)
        killed = time.monotonic()
        leader.process.wait()

        # Held without a break until a renewal lands on the new leader (or it let go).
        while holder.held_until == until:
            await asyncio.sleep(0.02)
        gap = time.monotonic() - killed
        assert holder.held, f"the holder let go {gap:.1f} s after the leader died"
        print(f"renewed on the new leader {gap:.1f} s after the old one died")
        await asyncio.sleep(holder.interval * 2)  # and renewing goes on
        assert holder.held and not standby.held and lost == []
    finally:
        for lease in (standby, holder):
            await lease.stop()
        for bus in buses:
            await bus.close()


async def started(lease: Lease) -> bool:
    """``lease.start()`` once the cluster can place its bucket (it may still be settling)."""
    try:
        await lease.start()
    except (nats.errors.Error, TimeoutError):
        return False
    return True


def leader_of(cluster: NatsCluster, server_name: str) -> int:
    """The index of the node named ``server_name`` (a stream's leader, as its info says)."""
    return next(i for i, config in enumerate(cluster.configs)
                if f'server_name: "{server_name}"' in config.read_text())  # fmt: skip


async def test_a_table_write_waits_out_the_election_of_its_streams_leader_and_lands_once(
    cluster: NatsCluster, cluster_bus: EventBus
) -> None:
    """The node leading the stream is killed and at once the table writes: the stream
    has no leader for 4-9 s (its followers wait that long before they campaign), every
    attempt meanwhile goes unanswered; the write is asked again until the new leader
    takes it, and the table's stream holds each event once, in order."""
    assert await eventually(lambda: ensured(cluster_bus, replicas=3), timeout=CLUSTER_WAIT)
    writer = await EventBus.connect(cluster.url, name="table", stream=cluster_bus.stream)
    table_log = JetStreamTableLog(writer, keyring=KEYRING, signer=TABLE, timeout=2.0)
    seats = (SeatInfo("ann"), SeatInfo("bea"), SeatInfo("cai"))
    try:
        opened = TableOpened("t-election", CLASSIC, RoomSettings(), seats)
        cursor = await table_log.append("t-election", TableCursor(), [opened])

        info = await cluster_bus.js.stream_info(cluster_bus.stream)
        assert info.cluster is not None and info.cluster.leader
        victim = cluster.nodes[leader_of(cluster, info.cluster.leader)]
        os.kill(victim.process.pid, signal.SIGKILL)
        killed = time.monotonic()
        ready = SeatReady(1, 1, 0.0)
        after = await table_log.append("t-election", cursor, [ready])
        waited = time.monotonic() - killed
        victim.process.wait()
        print(f"the table's write landed {waited:.1f} s after the stream's leader died")

        assert after == TableCursor(2, after.seq) and after.seq > cursor.seq
        history = await table_log.read("t-election")
        assert history is not None and history.cursor == after
        assert history.state.seats == seats
        stored = [await writer.js.get_msg(writer.stream, seq) for seq in (cursor.seq, after.seq)]
        ids = [(m.headers or {}).get(MSG_ID) for m in stored]
        assert len(set(ids)) == 2
        subjects = await writer.js.stream_info(
            writer.stream, subjects_filter=stream_filter(table_stream_id("t-election"))
        )
        assert sum((subjects.state.subjects or {}).values()) == 2
    finally:
        await writer.close()
