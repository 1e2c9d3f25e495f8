"""Several rules instances on one bus (real nats-server, SQLite, the services in this
process, one instance in a process of its own where it is killed).

- a hand served by two instances in turn: every legal command is accepted, whichever
  instance's copy of the hand is stale; none answers VERSION_CONFLICT of its own making.
- three instances behind the table and bot services (``DDZ_RULES_ADDR`` listing them,
  ``ddz.adapters.rpc.routing``): bots play hands at several tables; every instance decides a
  share, each hand on one instance only, and no move meets a conflict.
- one of three, a process of its own, killed (SIGKILL) mid-run: every hand finishes, the
  dead instance's hands are decided by the others.
- two bot instances sharing the hands by partition, two rules instances: each bot
  instance's hands go to one rules instance, so each of its ``DecideBatch`` calls is one
  call on the rules side (none split), and the calls per hand stay within a quarter of
  those of one bot instance and one rules instance playing the same hands (split
  batches made 2.4 times as many; kept whole, 1.01-1.11 times, by how many moves a
  loaded machine lets pile up behind a call in flight).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import urllib.request
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from typing import Any

from ddz.adapters import codec
from ddz.adapters.messaging import hand_stream
from ddz.adapters.messaging.bus import EventBus
from ddz.adapters.messaging.subjects import partition_of
from ddz.adapters.rpc.grpc_client import make_channel
from ddz.adapters.rpc.routing import rules_service, weight
from ddz.adapters.runtime.nats_server import NatsServer, free_port, start_nats_server
from ddz.adapters.runtime.probes import SERVING, health_status
from ddz.adapters.runtime.service_runner import RunningService, start_service, start_services
from ddz.adapters.runtime.stack_env import settings_env
from ddz.adapters.security.event_signing import event_keyring
from ddz.adapters.telemetry.metrics import REGISTRY
from ddz.bot.kinds import make_player
from ddz.config import Settings
from ddz.domain.hand import CommandRejected, Phase, hand_events, replay, view_for
from ddz.loadgen.driver import Driver, HandResult
from ddz.v1 import bot_pb2, bot_pb2_grpc, dealer_pb2_grpc, rules_pb2, rules_pb2_grpc
from deal_kit import assigned
from suite_kit import eventually, suite_settings

HOST = "127.0.0.1"


@dataclass
class Instances:
    """The suite with several rules instances: ``rules`` in this process (their use
    cases' ``counts``), ``targets`` every instance's address, ``settings`` dialling them
    all; ``process`` the one in a process of its own, if any, at ``targets[-1]``."""

    settings: Settings
    rules: list[RunningService]
    targets: list[str]
    process: subprocess.Popen[bytes] | None = None
    metrics_port: int = 0
    bots: list[Any] = field(default_factory=list)  # the bot apps, with ``front``

    def counts(self) -> list[Any]:
        return [instance.service.servicer.rules.counts for instance in self.rules]  # type: ignore[attr-defined]


@asynccontextmanager
async def instances(
    settings: Settings, *, rules: int, process: bool = False, front: bool = True
) -> AsyncIterator[Instances]:
    """The core services; ``rules`` rules instances in this process, and with ``process``
    one more as ``python -m services.rules``; with ``front`` the bot and table services,
    dialling every instance through ``DDZ_RULES_ADDR``."""
    async with contextlib.AsyncExitStack() as stack:
        running, settings = await start_services(("dealer", "recorder", "settlement"), settings)
        stopped = [*running.values()]
        stack.push_async_callback(stop_all, stopped)
        deciding = []
        for _ in range(rules):
            deciding.append(await start_service("rules", settings, port=0))
            stopped.append(deciding[-1])
        targets = [f"{HOST}:{instance.port}" for instance in deciding]
        suite = Instances(settings, deciding, targets)
        if process:
            suite.process, address, suite.metrics_port = await stack.enter_async_context(
                rules_process(settings)
            )
            targets.append(address)
        suite.settings = settings.with_addresses(rules=",".join(targets))
        if front:
            fronts, suite.settings = await start_services(("bot", "table"), suite.settings)
            stopped += fronts.values()
            suite.bots.append(fronts["bot"].service)
        yield suite


async def stop_all(services: list[RunningService]) -> None:
    for service in reversed(services):
        await service.stop(0.2)


def winner(targets: list[str], hand_id: str) -> str:
    """The instance of ``targets`` the routing gives ``hand_id`` while all are live."""
    return max(targets, key=lambda target: weight(target, hand_id))


async def bot_stats(settings: Settings) -> bot_pb2.GetStatsResponse:
    async with make_channel(settings.calling, "bot") as channel:
        stub = bot_pb2_grpc.BotServiceStub(channel)  # type: ignore[no-untyped-call]
        stats: bot_pb2.GetStatsResponse = await stub.GetStats(bot_pb2.GetStatsRequest())
        return stats


# -- a stale copy is read again --------------------------------------------------------


async def test_two_instances_serving_one_hand_in_turn_accept_every_legal_command(
    bus: EventBus, nats_server: NatsServer, tmp_path: Any
) -> None:
    """Commands of one hand alternate between two instances (as when the hand moves and
    moves back): each one's cached copy is behind the other's last event every time,
    with or without ``expected_version``; every legal command is accepted."""
    settings = suite_settings(tmp_path, nats_server.url)
    async with instances(settings, rules=2, front=False) as suite:
        as_bot = suite.settings.as_identity("bot")
        channels = [make_channel(as_bot.calling, "rules", target=t) for t in suite.targets]
        stubs = [rules_pb2_grpc.RulesServiceStub(c) for c in channels]  # type: ignore[no-untyped-call]
        keyring = event_keyring(suite.settings.keys)
        players = [make_player("greedy", seed) for seed in range(3)]
        hand_id = "turns-" + uuid.uuid4().hex[:8]
        async with make_channel(suite.settings.as_identity("table").calling, "dealer") as dealer:
            deal = dealer_pb2_grpc.DealerServiceStub(dealer)  # type: ignore[no-untyped-call]
            await deal.Deal(await assigned(bus, suite.settings, hand_id, "classic"))
        try:
            for step in range(400):
                read, cursor = await hand_stream.read(bus, hand_id, keyring=keyring)
                state = replay(hand_events(r.event for r in read))
                if state.phase is Phase.ENDED:
                    break
                command = players[state.turn].act(view_for(state, state.turn))
                request = rules_pb2.DecideRequest(hand_id=hand_id, seat=state.turn)
                codec.set_command(request, command)
                if step % 3:  # the bot's way; every third as the table sends a person's
                    request.expected_version = cursor.version
                answer = await stubs[step % 2].Decide(request)
                assert answer.accepted, (step, answer.reason, answer.message)
            else:
                raise AssertionError("the hand did not end")
        finally:
            for channel in channels:
                await channel.close()
        read, _ = await hand_stream.read(bus, hand_id, keyring=keyring)
        assert not [r for r in read if r.envelope.type == CommandRejected.TYPE]
        assert [r.envelope.stream_version for r in read] == list(range(1, len(read) + 1))
        first, second = suite.counts()
        assert first.decided and second.decided
        # From the third command on, each instance's copy was one decision behind.
        assert first.stale + second.stale == first.decided + second.decided - 2


# -- routing -----------------------------------------------------------------------------


async def test_three_instances_share_the_hands_each_hand_on_one_and_no_move_conflicts(
    bus: EventBus, nats_server: NatsServer, tmp_path: Any
) -> None:
    settings = suite_settings(tmp_path, nats_server.url)
    async with instances(settings, rules=3) as suite:
        async with Driver(suite.settings.calling, suite.settings.keys) as driver:
            results = await driver.play("classic", hands=36, tables=6)
        stats = await bot_stats(suite.settings)
    assert len(results) == 36 and all(r.landlord is not None for r in results)
    assert (stats.conflicts, stats.refused, stats.errors) == (0, 0, 0)
    counts = suite.counts()
    assert all(c.decided > 0 for c in counts), counts  # each instance decided a share
    assert sum(c.stale for c in counts) == 0  # no instance's copy was ever behind
    # Each hand was read from the log once, by one instance, and decided there to its end.
    assert sum(c.loaded for c in counts) == len(results)
    by_instance = {t: 0 for t in suite.targets}
    for result in results:
        by_instance[winner(suite.targets, result.hand_id)] += 1
    for instance, count in zip(suite.rules, counts, strict=True):
        assert count.loaded == by_instance[f"{HOST}:{instance.port}"]


# -- an instance killed ------------------------------------------------------------------


@asynccontextmanager
async def rules_process(
    settings: Settings,
) -> AsyncIterator[tuple[subprocess.Popen[bytes], str, int]]:
    """``python -m services.rules`` on a port of its own: the process, its address and
    its metrics port."""
    port, metrics_port = free_port(HOST), free_port(HOST)
    env = {k: v for k, v in os.environ.items() if not k.startswith("DDZ_")}
    env.update(settings_env(settings))
    env.update(DDZ_RULES_PORT=str(port), DDZ_RULES_METRICS_PORT=str(metrics_port))
    process = subprocess.Popen(
        [sys.executable, "-m", "services.rules"], env=env,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    address = f"{HOST}:{port}"
    try:
        for _ in range(600):
            status = await asyncio.to_thread(health_status, address, 1.0, settings=settings)
            if status == SERVING:
                break
            assert process.poll() is None, "the rules process exited"
            await asyncio.sleep(0.1)
        else:
            raise AssertionError("the rules process never served")
        yield process, address, metrics_port
    finally:
        if process.poll() is None:
            process.kill()
        process.wait()


def decided_ok(metrics_port: int) -> int:
    """The calls to the rules service that process answered OK (its Prometheus metrics)."""
    with urllib.request.urlopen(f"http://{HOST}:{metrics_port}/metrics", timeout=5) as page:
        text = page.read().decode()
    total = 0
    for line in text.splitlines():
        if line.startswith("ddz_rpc_handled_total{") and all(
            label in line for label in ('service="rules"', 'code="OK"', 'method="Decide')
        ):
            total += int(float(line.rsplit(" ", 1)[1]))
    return total


async def test_an_instance_killed_mid_run_its_hands_move_and_every_hand_finishes(
    bus: EventBus, nats_server: NatsServer, tmp_path: Any
) -> None:
    settings = suite_settings(tmp_path, nats_server.url)
    async with instances(settings, rules=2, process=True) as suite:
        assert suite.process is not None
        dead = suite.targets[-1]
        done: list[HandResult] = []
        enough = asyncio.Event()

        def finished(result: HandResult) -> None:
            done.append(result)
            if len(done) >= 12:
                enough.set()

        async with Driver(suite.settings.calling, suite.settings.keys) as driver:
            play = asyncio.create_task(driver.play("classic", hands=42, tables=6, on_hand=finished))
            await asyncio.wait_for(enough.wait(), 300)
            share = await asyncio.to_thread(decided_ok, suite.metrics_port)
            before = {r.hand_id for r in done}
            suite.process.send_signal(signal.SIGKILL)  # no goodbye: its connections reset
            await asyncio.to_thread(suite.process.wait)
            results = await asyncio.wait_for(play, 600)
    assert share > 0  # the killed instance had decided its share of the moves
    assert len(results) == 42 and all(r.landlord is not None for r in results)
    # Hands dealt after the kill that the dead instance would have decided: decided to
    # their end by the others.
    moved = [
        r for r in results if r.hand_id not in before and winner(suite.targets, r.hand_id) == dead
    ]
    assert moved


# -- a DNS name for the instances --------------------------------------------------------


async def test_a_dns_name_stands_for_every_address_it_resolves_to(
    bus: EventBus, nats_server: NatsServer, tmp_path: Any
) -> None:
    """``dns:///localhost:<port>``: the router dials each address the name resolves to
    (127.0.0.1, and ::1 where the machine has it, where nothing listens: that one is
    out), and the hand's calls are decided."""
    settings = suite_settings(tmp_path, nats_server.url)
    async with instances(settings, rules=1, front=False) as suite:
        port = suite.rules[0].port
        named = suite.settings.with_addresses(rules=f"dns:///localhost:{port}")
        rules = rules_service(named.calling)  # as the operator: GetPublicState is theirs
        try:
            router = rules.router

            async def resolved() -> bool:
                return f"{HOST}:{port}" in router.instances

            await eventually(resolved)
            assert set(router.instances) <= {f"{HOST}:{port}", f"[::1]:{port}"}
            hand_id = "dns-" + uuid.uuid4().hex[:8]
            async with make_channel(
                suite.settings.as_identity("table").calling, "dealer"
            ) as dealer:
                deal = dealer_pb2_grpc.DealerServiceStub(dealer)  # type: ignore[no-untyped-call]
                await deal.Deal(await assigned(bus, suite.settings, hand_id, "classic"))
            state = await rules.GetPublicState(rules_pb2.GetPublicStateRequest(hand_id=hand_id))
            assert state.version > 0
        finally:
            await rules.close()


# -- bot partitions and rules instances --------------------------------------------------

PARTITIONS = 8


def batch_calls() -> float:
    """``DecideBatch`` calls the rules instances of this process have answered so far."""
    return sum(
        sample.value
        for family in REGISTRY.collect()
        for sample in family.samples
        if sample.name == "ddz_rpc_handled_total"
        and sample.labels.get("service") == "rules"
        and sample.labels.get("method") == "DecideBatch"
    )


async def calls_per_hand(
    settings: Settings, *, scaled: bool, hands: int, tables: int
) -> tuple[float, list[Any], Instances]:
    """``DecideBatch`` calls per hand with one bot and one rules instance, or two of each
    (``scaled``): what the rules answered, per hand; the bot apps; the suite."""
    async with instances(settings, rules=2 if scaled else 1) as suite:
        bots = list(suite.bots)
        if scaled:
            other = await start_service("bot", suite.settings, port=0)
            try:
                bots.append(other.service)
                await eventually(lambda: shared(bots), timeout=30.0)
                return await _played(suite, bots, hands, tables)
            finally:
                await other.stop(0.2)
        return await _played(suite, bots, hands, tables)


async def shared(bots: list[Any]) -> bool:
    """Each bot instance holds the partitions ``k mod 2`` gives it, and only those."""
    held = sorted((app.partitions.held for app in bots), key=lambda h: min(h, default=-1))
    return held == [frozenset(range(i, PARTITIONS, 2)) for i in range(2)]


async def _played(
    suite: Instances, bots: list[Any], hands: int, tables: int
) -> tuple[float, list[Any], Instances]:
    async with Driver(suite.settings.calling, suite.settings.keys) as driver:
        await driver.play("classic", hands=tables, tables=tables)  # every table's path warm
        made = sum(app.autoplay.moves.calls for app in bots)
        answered = batch_calls()
        loaded = [c.loaded for c in suite.counts()]
        results = await driver.play("classic", hands=hands, tables=tables)
    assert len(results) == hands and all(r.landlord is not None for r in results)
    calls = batch_calls() - answered
    # Every call a bot instance made was one call on the rules side: none split.
    assert calls == sum(app.autoplay.moves.calls for app in bots) - made
    # Each rules instance read exactly the hands of its partitions (k mod 2 by address).
    by_home = sorted(suite.targets)
    for instance, count, before in zip(suite.rules, suite.counts(), loaded, strict=True):
        target = f"{HOST}:{instance.port}"
        own = [
            r for r in results
            if by_home[partition_of(r.hand_id, PARTITIONS) % len(by_home)] == target
        ]  # fmt: skip
        assert count.loaded - before == len(own)
    return calls / hands, bots, suite


async def test_two_bot_and_two_rules_instances_keep_the_calls_per_hand_of_one_of_each(
    bus: EventBus, nats_server: NatsServer, tmp_path: Any
) -> None:
    def settings_in(name: str, nats_url: str) -> Settings:
        (tmp_path / name).mkdir()
        settings = suite_settings(tmp_path / name, nats_url)
        return replace(
            settings,
            bus=replace(settings.bus, lease_ttl=2.0),
            bot=replace(settings.bot, bot_partitions=PARTITIONS, bot_player="greedy"),
        )

    one, _, _ = await calls_per_hand(
        settings_in("one", nats_server.url), scaled=False, hands=48, tables=8
    )
    # The second suite on a server of its own: nothing of the first to read back.
    second = start_nats_server(tmp_path / "nats", port=0)
    try:
        two, bots, _ = await calls_per_hand(
            settings_in("two", second.url), scaled=True, hands=48, tables=8
        )
    finally:
        second.stop()
    assert [app.autoplay.moves.max_in_flight for app in bots] == [1, 1]  # two, shared
    assert two <= 1.25 * one, (one, two)
