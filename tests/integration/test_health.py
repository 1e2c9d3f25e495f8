"""Health that tells the truth, and services that come through NATS and database restarts.

A service's gRPC health (for "" and each of its service names) is NOT_SERVING while its
NATS connection is down, its database does not answer or one of its consumer loops is
down, and SERVING again once all of them work (``ddz.adapters.telemetry.health``). The services
here run in this process on a nats-server of the test's own, which the test kills
(SIGKILL) and starts again on the same port, with its store or without it; the
database outage is a TCP proxy in front of the test's PostgreSQL that the test cuts and
restores (the database server itself is shared and never touched).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import grpc
import pytest
import sqlalchemy as sa
import structlog
from ddz.adapters.messaging.bus import EventBus
from ddz.adapters.messaging.subjects import subject_for
from ddz.adapters.rpc.grpc_client import make_channel
from ddz.adapters.runtime.nats_server import NatsServer, start_nats_server
from ddz.adapters.runtime.service_runner import RunningService, start_services
from ddz.adapters.security.event_signing import EventSigner, ensure_signer
from ddz.adapters.telemetry import metrics
from ddz.adapters.telemetry.health import HealthWatch
from ddz.config import Settings
from ddz.config.security import OPERATOR
from ddz.entrypoints.running_suite import FIRST_ASK, SUITE_PATIENCE, answering_suite
from ddz.v1 import (
    dealer_pb2_grpc,
    envelope_pb2,
    recorder_pb2,
    recorder_pb2_grpc,
    settlement_pb2,
    settlement_pb2_grpc,
)
from deal_kit import assigned
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_health.v1._async import HealthServicer
from suite_kit import eventually, suite_settings

SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING
WAIT = 30.0  # seconds any change may take on a loaded machine (health rounds are 1 s)


# --- the health model alone ------------------------------------------------------------


def serving(service: str) -> float | None:
    return metrics.REGISTRY.get_sample_value("ddz_serving", {"service": service})


def nats_sample(name: str, service: str) -> float:
    return metrics.REGISTRY.get_sample_value(name, {"service": service}) or 0.0


async def test_the_status_follows_the_checks_with_one_log_line_per_change() -> None:
    servicer = HealthServicer()
    up = {"nats": True, "database": True}
    checks = {name: (lambda name=name: up[name]) for name in up}
    watch = HealthWatch("recorder", ["ddz.v1.RecorderService"], checks, servicer, interval=3600)

    async def status(name: str = "") -> int:
        request = health_pb2.HealthCheckRequest(service=name)
        reply = await servicer.Check(request, None)
        return int(reply.status)

    with structlog.testing.capture_logs() as logs:
        await watch.start()
        assert await status() == await status("ddz.v1.RecorderService") == SERVING
        assert serving("recorder") == 1  # ddz_serving: what DdzServiceNotServing reads
        up["nats"] = False
        await watch.update()
        await watch.update()  # no change, no line
        assert await status() == await status("ddz.v1.RecorderService") == NOT_SERVING
        assert serving("recorder") == 0
        up["database"] = False
        await watch.update()
        up["nats"] = up["database"] = True
        await watch.update()
        assert await status() == SERVING
        assert serving("recorder") == 1
        await watch.stop()
    lines = [(line["event"], line.get("down")) for line in logs]
    assert lines == [
        ("not_serving", ["nats"]),
        ("not_serving", ["database", "nats"]),
        ("serving", None),
    ]


async def test_a_role_is_serving_while_its_check_holds_and_the_service_serves() -> None:
    servicer = HealthServicer()
    up, active = {"nats": True}, {"now": False}
    watch = HealthWatch(
        "table", ["ddz.v1.TableService"], {"nats": lambda: up["nats"]}, servicer,
        roles={"ddz.v1.TableService.active": lambda: active["now"]}, interval=3600,
    )  # fmt: skip

    async def status(name: str) -> int:
        reply = await servicer.Check(health_pb2.HealthCheckRequest(service=name), None)
        return int(reply.status)

    await watch.start()
    role = "ddz.v1.TableService.active"
    assert (await status(""), await status(role)) == (SERVING, NOT_SERVING)  # a standby
    active["now"] = True
    await watch.update()
    assert await status(role) == SERVING
    up["nats"] = False  # a role is not served by a service that does not serve
    await watch.update()
    assert (await status(""), await status(role)) == (NOT_SERVING, NOT_SERVING)
    up["nats"] = True
    await watch.update()
    assert await status(role) == SERVING
    await watch.stop()


async def test_a_check_that_raises_or_hangs_counts_as_down() -> None:
    def raises() -> bool:
        raise RuntimeError("no answer")

    async def hangs() -> bool:
        await asyncio.Event().wait()
        return True

    watch = HealthWatch(
        "dealer", [], {"raises": raises, "hangs": hangs}, HealthServicer(), probe_timeout=0.05
    )
    assert await watch.update() == {"raises", "hangs"}


# --- a nats-server of the test's own ------------------------------------------------------


@dataclass
class OwnNats:
    """A nats-server this test kills and starts again on the same port."""

    root: Path
    server: NatsServer
    restarts: int = 0

    @property
    def url(self) -> str:
        return self.server.url

    def kill(self) -> None:
        self.server.process.kill()
        self.server.process.wait()

    def start(self, *, keep_store: bool = True) -> None:
        """Again on the same port; without its store: a server that lost everything."""
        self.restarts += 1
        store = self.server.store_dir if keep_store else self.root / f"store-{self.restarts}"
        self.server = start_nats_server(
            store, port=self.server.port, log_file=self.root / f"nats-{self.restarts}.log"
        )


@pytest.fixture
def own_nats(tmp_path: Path) -> Iterator[OwnNats]:
    root = tmp_path / "nats"
    nats = OwnNats(root, start_nats_server(root / "store", port=0))
    try:
        yield nats
    finally:
        nats.server.stop()


@dataclass
class Services:
    """Services started for one test, and channels to them."""

    settings: Settings
    running: dict[str, RunningService]
    channels: dict[str, grpc.aio.Channel] = field(default_factory=dict)

    def channel(self, name: str, identity: str = OPERATOR) -> grpc.aio.Channel:
        """A channel to ``name`` as ``identity`` (its certificate: rights are by caller)."""
        key = f"{identity}@{name}"
        if key not in self.channels:
            self.channels[key] = make_channel(self.settings.as_identity(identity).calling, name)
        return self.channels[key]

    async def statuses(self, name: str) -> set[int]:
        """The health status of "" and each of ``name``'s services."""
        health = health_pb2_grpc.HealthStub(self.channel(name))
        names = ("", *self.running[name].service.full_names)
        replies = [
            await health.Check(health_pb2.HealthCheckRequest(service=n), timeout=5) for n in names
        ]
        return {reply.status for reply in replies}

    async def wait_until(self, status: int, *names: str) -> None:
        async def reached() -> bool:
            return all([await self.statuses(name) == {status} for name in names])

        await eventually(reached, timeout=WAIT, every=0.2)

    async def close(self) -> None:
        for channel in self.channels.values():
            await channel.close()
        for service in reversed(self.running.values()):
            await service.stop(0.1)


@contextlib.asynccontextmanager
async def services(names: tuple[str, ...], settings: Settings) -> AsyncIterator[Services]:
    running, settings = await start_services(names, settings)
    started = Services(settings, running)
    try:
        yield started
    finally:
        await started.close()


async def deal(started: Services, player: str = "alice") -> tuple[str, int]:
    """A new hand dealt; its id and how many events it has."""
    hand_id = "health-" + uuid.uuid4().hex[:8]
    dealer = dealer_pb2_grpc.DealerServiceStub(started.channel("dealer", "table"))  # type: ignore[no-untyped-call]
    bus = await EventBus.connect(started.settings.bus.nats_url, name="pytest")
    try:
        request = await assigned(bus, started.settings, hand_id, seats=(player, "bob", "carol"))
    finally:
        await bus.close()
    dealt = await dealer.Deal(request)
    return hand_id, dealt.version


async def stored(started: Services, stream_id: str) -> int:
    """How many events of ``stream_id`` the recorder has stored."""
    recorder = recorder_pb2_grpc.RecorderServiceStub(started.channel("recorder"))  # type: ignore[no-untyped-call]
    try:
        response = await recorder.ReadStream(recorder_pb2.ReadStreamRequest(stream_id=stream_id))
    except grpc.aio.AioRpcError as exc:
        if exc.code() is grpc.StatusCode.NOT_FOUND:
            return 0
        raise
    return len(response.events)


async def stored_all(started: Services, stream_id: str, count: int) -> bool:
    return await stored(started, stream_id) == count


THROUGH_NATS = ("dealer", "recorder", "settlement", "rules", "table")


async def test_health_follows_a_nats_restart_and_the_recorder_stores_across_it(
    own_nats: OwnNats, tmp_path: Path
) -> None:
    settings = suite_settings(tmp_path, own_nats.url)
    async with services(THROUGH_NATS, settings) as started:
        await started.wait_until(SERVING, *THROUGH_NATS)
        before, events = await deal(started)
        await eventually(lambda: stored_all(started, f"hand-{before}", events), timeout=WAIT)

        reconnects = nats_sample("ddz_nats_reconnects_total", "recorder")
        own_nats.kill()
        await started.wait_until(NOT_SERVING, *THROUGH_NATS)
        assert nats_sample("ddz_nats_connected", "recorder") == 0  # DdzNatsUnreachable
        # What needs only the database still answers: a balance.
        settlement = settlement_pb2_grpc.SettlementServiceStub(started.channel("settlement"))  # type: ignore[no-untyped-call]
        balance = await settlement.GetBalance(settlement_pb2.GetBalanceRequest(player_id="alice"))
        assert balance.player_id == "alice"

        own_nats.start(keep_store=True)
        await started.wait_until(SERVING, *THROUGH_NATS)
        assert nats_sample("ddz_nats_connected", "recorder") == 1
        assert nats_sample("ddz_nats_reconnects_total", "recorder") == reconnects + 1
        after, events_after = await deal(started)
        await eventually(lambda: stored_all(started, f"hand-{after}", events_after), timeout=WAIT)
        assert await stored(started, f"hand-{before}") == events


async def test_a_nats_server_that_lost_its_store_gets_the_stream_and_consumers_back(
    own_nats: OwnNats, tmp_path: Path
) -> None:
    settings = suite_settings(tmp_path, own_nats.url)
    async with services(THROUGH_NATS, settings) as started:
        await started.wait_until(SERVING, *THROUGH_NATS)
        own_nats.kill()
        await started.wait_until(NOT_SERVING, *THROUGH_NATS)
        own_nats.start(keep_store=False)
        await started.wait_until(SERVING, *THROUGH_NATS)
        hand_id, events = await deal(started)
        await eventually(lambda: stored_all(started, f"hand-{hand_id}", events), timeout=WAIT)
        bus = await EventBus.connect(own_nats.url, name="pytest")
        try:
            for durable in ("recorder", "settlement"):
                info = await bus.js.consumer_info(bus.stream, durable)
                assert info.config.durable_name == durable
        finally:
            await bus.close()


# --- the database going away ---------------------------------------------------------------


class Proxy:
    """A TCP proxy on loopback to ``upstream``; ``cut`` drops every connection and stops
    listening (the database is gone), ``restore`` listens on the same port again."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self.port = 0
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.StreamWriter] = set()

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", self.port)
        self.port = self._server.sockets[0].getsockname()[1]

    async def cut(self) -> None:
        assert self._server is not None
        self._server.close()
        for writer in list(self._connections):
            writer.transport.abort()
        self._connections.clear()
        self._server = None

    async def restore(self) -> None:
        await self.start()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.upstream)
        except OSError:
            writer.transport.abort()
            return
        pair = {writer, up_writer}
        self._connections |= pair
        await asyncio.gather(
            self._pipe(reader, up_writer), self._pipe(up_reader, writer), return_exceptions=True
        )
        self._connections -= pair

    @staticmethod
    async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        finally:
            writer.transport.abort()


def envelope(stream_id: str, version: int, signer: EventSigner) -> tuple[str, bytes, str]:
    """A subject, envelope bytes and event id of ``stream_id``'s ``version``-th event,
    signed by ``signer`` (the recorder stores nothing its producer did not sign)."""
    event_id = str(uuid.uuid4())
    data = signer.seal(
        envelope_pb2.EventEnvelope(
            event_id=event_id, stream_id=stream_id, stream_version=version, type="note"
        )
    )
    return subject_for(stream_id, "note"), data, event_id


ON_THE_DATABASE = ("recorder", "settlement")


# PostgreSQL only (when DDZ_TEST_DATABASE_URL is set, as in CI): a SQLite file cannot be
# taken away from a process that has it open, even by making it unreadable (we run as root).
@pytest.mark.parametrize(
    "database_url",
    [pytest.param("postgres", marks=pytest.mark.postgres)]
    if os.environ.get("DDZ_TEST_DATABASE_URL", "").strip()
    else [],
    indirect=True,
)
async def test_a_database_outage_is_not_serving_and_what_came_meanwhile_is_stored(
    bus: EventBus, nats_server: NatsServer, database_url: str, tmp_path: Path
) -> None:
    real = sa.make_url(database_url)
    proxy = Proxy((real.host or "localhost", real.port or 5432))
    await proxy.start()
    through = real.set(host="127.0.0.1", port=proxy.port).render_as_string(hide_password=False)
    settings = suite_settings(tmp_path, nats_server.url, database_url=through)
    try:
        async with services(ON_THE_DATABASE, settings) as started:
            await started.wait_until(SERVING, *ON_THE_DATABASE)
            stream_id = f"table-note{uuid.uuid4().hex[:8]}"  # a table's: the table key signs
            table = ensure_signer(settings.keys, "table")
            await bus.publish(*envelope(stream_id, 1, table))
            await eventually(lambda: stored_all(started, stream_id, 1), timeout=WAIT)

            await proxy.cut()
            await started.wait_until(NOT_SERVING, *ON_THE_DATABASE)
            for version in (2, 3):  # nak'ed and retried while the database is away
                await bus.publish(*envelope(stream_id, version, table))

            await proxy.restore()
            await started.wait_until(SERVING, *ON_THE_DATABASE)
            await eventually(lambda: stored_all(started, stream_id, 3), timeout=WAIT)
    finally:
        await proxy.cut()


async def test_a_tool_waits_for_a_suite_of_its_data_dir_that_does_not_serve_yet(
    own_nats: OwnNats, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Services started one by one (no ``stack.json``, as on separate hosts) whose NATS
    is gone answer NOT_SERVING: a tool of their data dir waits for them rather than
    starting a suite of its own, and uses them once they serve again."""
    settings = suite_settings(tmp_path, own_nats.url)
    async with services(THROUGH_NATS, settings) as started:
        await started.wait_until(SERVING, "table")
        own_nats.kill()
        await started.wait_until(NOT_SERVING, "table")
        capsys.readouterr()
        finding = asyncio.create_task(asyncio.to_thread(answering_suite, started.settings))
        await asyncio.sleep(2 * FIRST_ASK)
        assert not finding.done()  # it waits: the table answered, NOT_SERVING
        own_nats.start(keep_store=True)
        found = await asyncio.wait_for(finding, SUITE_PATIENCE)
        assert found is not None and found.network.address(
            "table"
        ) == started.settings.network.address("table")
        said = capsys.readouterr().err
        assert f"ddz: the suite of {settings.data_dir} does not serve yet" in said, said


async def test_a_tool_finds_no_suite_at_once_where_nothing_listens(tmp_path: Path) -> None:
    """Nothing at the table's address and no ``stack.json``: no suite, without waiting
    (the tool then starts its own)."""
    with socket.socket() as free:  # a port nothing listens on
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    settings = suite_settings(tmp_path, "nats://127.0.0.1:1").with_addresses(
        table=f"127.0.0.1:{port}"
    )
    began = time.monotonic()
    assert await asyncio.to_thread(answering_suite, settings) is None
    assert time.monotonic() - began < SUITE_PATIENCE
