"""gRPC between the services is mutual TLS, and every RPC authorizes its caller by the
identity in its certificate (``ddz.access.rights``), against the whole suite over a
real nats-server (the ``suite`` fixture: every service started as its process starts
it, with the data dir's CA and certificates, as ``ddz up`` makes them).

Refused: a plaintext call, a call with no client certificate or with one from another
CA (each at the handshake: UNAVAILABLE to the client), a server that is not the service
dialled, and every identity calling an RPC its row does not give it
(PERMISSION_DENIED, reason PERMISSION_DENIED) -- the RPCs read from the protos, so a new
RPC is tested as soon as it has a row. The table service takes a TLS player without a
client certificate (bearer tokens decide there). ``DDZ_INSECURE`` is plaintext and says
so in the service's log. A server takes no more calls at once than
``DDZ_MAX_CONCURRENT_RPCS``.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import os
import pkgutil
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from ddz import v1
from ddz.access.identity import peer_identity
from ddz.access.rights import CONSOLE, PLAYER_FACING, RIGHTS
from ddz.access.tokens import player_token
from ddz.adapters.rpc.bearer import bearer_channel, bearer_metadata
from ddz.adapters.rpc.grpc_client import channel_credentials, error_reason, make_channel
from ddz.adapters.rpc.grpc_server import RunningServer, start_server
from ddz.adapters.runtime.nats_server import NatsServer, free_port
from ddz.adapters.runtime.probes import SERVING, health_status
from ddz.adapters.security.certs import IDENTITIES, ensure_certificates
from ddz.config import Settings
from ddz.config.security import OPERATOR
from ddz.v1 import envelope_pb2, recorder_pb2, recorder_pb2_grpc, table_pb2, table_pb2_grpc
from google.protobuf import message_factory
from google.protobuf.descriptor import MethodDescriptor
from grpc_health.v1 import health_pb2, health_pb2_grpc
from suite_kit import EVERY_SERVICE, Suite

INTERNAL = tuple(name for name in EVERY_SERVICE if name not in PLAYER_FACING)
SERVES: dict[str, tuple[str, ...]] = {
    "dealer": ("ddz.v1.DealerService",),
    "rules": ("ddz.v1.RulesService",),
    "bot": ("ddz.v1.BotService",),
    "settlement": ("ddz.v1.SettlementService",),
    "recorder": ("ddz.v1.RecorderService", "ddz.v1.AuditService", "ddz.v1.DeskService"),
    "table": ("ddz.v1.TableService",),
}
"""Which service of the suite serves which gRPC services (the test dials each there)."""
STRANGER = "intruder"
"""A certificate of the suite's own CA for a name that is no service's: it gets in
(health answers it) and may call nothing else."""


def proto_methods() -> dict[str, MethodDescriptor]:
    """Every RPC of the ddz.v1 protos by ``package.Service/Method``."""
    methods: dict[str, MethodDescriptor] = {}
    for module in pkgutil.iter_modules(v1.__path__):
        if module.name.endswith("_pb2"):
            file = importlib.import_module(f"ddz.v1.{module.name}").DESCRIPTOR
            for service in file.services_by_name.values():
                for method in service.methods:
                    methods[f"{service.full_name}/{method.name}"] = method
    return methods


def host_of(method: str) -> str:
    service = method.split("/")[0]
    return next(name for name, served in SERVES.items() if service in served)


def test_every_rpc_of_the_protos_has_a_row_and_every_row_an_rpc() -> None:
    from grpc_health.v1 import health_pb2 as health
    from grpc_reflection.v1alpha import reflection_pb2

    known = set(proto_methods())
    for file in (health.DESCRIPTOR, reflection_pb2.DESCRIPTOR):
        for service in file.services_by_name.values():
            known |= {f"{service.full_name}/{method.name}" for method in service.methods}
    assert known - RIGHTS.keys() == set(), "give these a row in ddz.access.rights.RIGHTS"
    assert RIGHTS.keys() - known == set(), "RIGHTS names RPCs the protos do not have"
    assert all(right.why for right in RIGHTS.values())
    assert set(SERVES) == set(EVERY_SERVICE)


def credentials(files_dir: Path, identity: str | None, ca_dir: Path) -> grpc.ChannelCredentials:
    """TLS trusting ``ca_dir``'s CA, presenting ``files_dir``'s ``identity`` (None: no cert)."""
    ca = (ca_dir / "tls" / "ca.crt").read_bytes()
    if identity is None:
        return grpc.ssl_channel_credentials(root_certificates=ca)
    return grpc.ssl_channel_credentials(
        root_certificates=ca,
        private_key=(files_dir / "tls" / f"{identity}.key").read_bytes(),
        certificate_chain=(files_dir / "tls" / f"{identity}.crt").read_bytes(),
    )


async def health_code(channel: grpc.aio.Channel, timeout: float = 10) -> grpc.StatusCode:
    try:
        await health_pb2_grpc.HealthStub(channel).Check(
            health_pb2.HealthCheckRequest(), timeout=timeout
        )
    except grpc.aio.AioRpcError as error:
        return error.code()
    return grpc.StatusCode.OK


async def test_plaintext_calls_to_every_service_are_refused(suite: Suite) -> None:
    for name in EVERY_SERVICE:
        async with grpc.aio.insecure_channel(suite.settings.network.address(name)) as channel:
            assert await health_code(channel) is grpc.StatusCode.UNAVAILABLE, name


async def test_no_client_certificate_or_one_of_another_ca_is_refused_at_the_handshake(
    suite: Suite, tmp_path: Path
) -> None:
    data_dir = suite.settings.data_dir
    rogue = tmp_path / "rogue"
    ensure_certificates(rogue)  # a CA of its own: the same names, signed by someone else
    for name in INTERNAL:
        address = suite.settings.network.address(name)
        for what, creds in {
            "no certificate": credentials(data_dir, None, data_dir),
            "another CA's operator": credentials(rogue, "operator", data_dir),
            "another CA's own name": credentials(rogue, name, data_dir),
        }.items():
            async with grpc.aio.secure_channel(address, creds) as channel:
                assert await health_code(channel) is grpc.StatusCode.UNAVAILABLE, (name, what)
        # The same call with a certificate of the suite's CA gets in.
        async with grpc.aio.secure_channel(
            address, credentials(data_dir, "operator", data_dir)
        ) as channel:
            assert await health_code(channel) is grpc.StatusCode.OK, name


async def test_a_server_that_is_not_the_service_dialled_is_refused(suite: Suite) -> None:
    """Every certificate names 127.0.0.1: a client dialling the rules by name checks
    that the server's certificate is the rules' own."""
    misdirected = suite.settings.with_addresses(rules=suite.settings.network.address("dealer"))
    async with make_channel(misdirected.calling, "rules") as channel:
        # The suite's channels wait for a server (waitForReady): for one they can trust.
        assert await health_code(channel, timeout=2) is grpc.StatusCode.DEADLINE_EXCEEDED
    async with make_channel(suite.settings.calling, "rules") as channel:
        assert await health_code(channel) is grpc.StatusCode.OK


@pytest.fixture
async def channels(suite: Suite) -> AsyncIterator[dict[tuple[str, str], grpc.aio.Channel]]:
    """A channel to every internal service as every identity (and the stranger)."""
    ensure_certificates(suite.settings.data_dir, [STRANGER])
    opened = {
        (name, identity): make_channel(suite.settings.as_identity(identity).calling, name)
        for name in INTERNAL
        for identity in (*IDENTITIES, STRANGER)
    }
    try:
        yield opened
    finally:
        for channel in opened.values():
            await channel.close()


async def call(channel: grpc.aio.Channel, method: str, descriptor: MethodDescriptor) -> Any:
    request = message_factory.GetMessageClass(descriptor.input_type)()
    response = message_factory.GetMessageClass(descriptor.output_type)
    rpc = channel.unary_unary(
        f"/{method}",
        request_serializer=lambda message: message.SerializeToString(),
        response_deserializer=response.FromString,
    )
    return await rpc(request, timeout=30)


async def test_every_identity_is_refused_every_rpc_it_has_no_right_to(
    suite: Suite, channels: dict[tuple[str, str], grpc.aio.Channel]
) -> None:
    denied: list[tuple[str, str]] = []
    let_in: list[tuple[str, str]] = []
    for method, descriptor in sorted(proto_methods().items()):
        right = RIGHTS[method]
        name = host_of(method)
        if right.anyone:
            continue  # the table's calls: its bearer tokens decide (test_seat_auth.py)
        assert not descriptor.server_streaming, "a restricted stream: test it here too"
        for identity in (*IDENTITIES, STRANGER):
            try:
                await call(channels[name, identity], method, descriptor)
                code, reason = grpc.StatusCode.OK, None
            except grpc.aio.AioRpcError as error:
                code, reason = error.code(), error_reason(error)
            if right.allows(identity):
                assert code is not grpc.StatusCode.PERMISSION_DENIED, (identity, method)
                let_in.append((identity, method))
            else:
                assert (code, reason) == (grpc.StatusCode.PERMISSION_DENIED,
                                          "PERMISSION_DENIED"), (identity, method)  # fmt: skip
                denied.append((identity, method))
    assert ("operator", "ddz.v1.DealerService/GetSeed") in denied
    assert ("table", "ddz.v1.DealerService/Deal") in let_in
    assert ("bot", "ddz.v1.AuditService/AuditAll") in denied
    # the desk reads hands and verdicts, and nothing that acts or reads seeds
    assert ("console", "ddz.v1.AuditService/AuditHand") in let_in
    assert ("console", "ddz.v1.DeskService/LogAccess") in let_in
    assert ("operator", "ddz.v1.DeskService/LogAccess") in denied
    assert ("console", "ddz.v1.DealerService/GetSeed") in denied
    assert ("console", "ddz.v1.RulesService/Decide") in denied
    assert ("console", "ddz.v1.RecorderService/ReadAll") in denied
    assert all(identity != STRANGER for identity, _ in let_in)


async def test_health_answers_any_identity_of_the_ca(
    suite: Suite, channels: dict[tuple[str, str], grpc.aio.Channel]
) -> None:
    for (name, identity), channel in channels.items():
        assert await health_code(channel) is grpc.StatusCode.OK, (name, identity)


async def test_the_table_takes_a_tls_player_without_a_client_certificate(suite: Suite) -> None:
    settings = suite.settings
    ca_only = grpc.ssl_channel_credentials((settings.data_dir / "tls" / "ca.crt").read_bytes())
    async with grpc.aio.secure_channel(settings.network.address("table"), ca_only) as channel:
        assert await health_code(channel) is grpc.StatusCode.OK
        stub = table_pb2_grpc.TableServiceStub(channel)  # type: ignore[no-untyped-call]
        with pytest.raises(grpc.aio.AioRpcError) as anonymous:
            await stub.OpenTable(table_pb2.OpenTableRequest(variant="classic"), timeout=10)
        assert anonymous.value.code() is grpc.StatusCode.UNAUTHENTICATED  # a token decides
    # A player's own channel (ddz play): the CA and a token, no certificate of its own.
    player = settings.as_identity("a-player-without-files")
    async with bearer_channel(player.calling, player_token(settings.keys, "pat")) as channel:
        rooms = await table_pb2_grpc.TableServiceStub(channel).ListRooms(  # type: ignore[no-untyped-call]
            table_pb2.ListRoomsRequest()
        )
    assert rooms.rooms
    async with grpc.aio.insecure_channel(settings.network.address("table")) as plain:
        assert await health_code(plain) is grpc.StatusCode.UNAVAILABLE


async def test_a_call_that_names_its_own_token_is_that_token_s_on_a_bearer_channel(
    suite: Suite,
) -> None:
    # A seated player's session: one channel carrying the seat token, the lobby's calls
    # naming the player's own. Here the channel carries ann's token; pat's call names pat's.
    settings = suite.settings
    player = settings.as_identity("a-player-without-files")
    leave_as_pat = table_pb2.LeaveRoomRequest(player_id="pat")
    async with bearer_channel(player.calling, player_token(settings.keys, "ann")) as channel:
        stub = table_pb2_grpc.TableServiceStub(channel)  # type: ignore[no-untyped-call]
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await stub.LeaveRoom(leave_as_pat)
        assert refused.value.code() is grpc.StatusCode.PERMISSION_DENIED  # ann's token
        named = bearer_metadata(player_token(settings.keys, "pat"))
        with pytest.raises(grpc.aio.AioRpcError) as as_pat:
            await stub.LeaveRoom(leave_as_pat, metadata=named)
    # Past the token's check, as pat: pat is in no room to leave.
    assert as_pat.value.code() is grpc.StatusCode.FAILED_PRECONDITION
    assert as_pat.value.details() == "pat is not in a room"


def test_insecure_mode_serves_plaintext_and_says_so(
    nats_server: NatsServer, tmp_path: Path
) -> None:
    port = free_port("127.0.0.1")
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("DDZ_")},
        "DDZ_DATA_DIR": str(tmp_path),  # no certificates at all: none needed
        "DDZ_NATS_URL": nats_server.url,
        "DDZ_SETTLEMENT_PORT": str(port),
        "DDZ_LOG_FORMAT": "json",
        "DDZ_INSECURE": "1",
    }
    settings = Settings.from_env(env)
    process = subprocess.Popen(
        [sys.executable, "-m", "services.settlement"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while process.poll() is None and time.monotonic() < deadline:
            if health_status(f"127.0.0.1:{port}", 1.0, settings=settings.calling) == SERVING:
                break
            time.sleep(0.1)
        else:
            if process.poll() is not None:  # it ended: say how, in its own words
                raise AssertionError(
                    f"the insecure settlement service exited {process.returncode} "
                    f"before answering: {process.communicate()[1].decode()[-2000:]}"
                )
            raise AssertionError("the insecure settlement service never answered")
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    lines = [json.loads(line) for line in stderr.decode().splitlines() if line.startswith("{")]
    warnings = [line for line in lines if line["event"] == "insecure_grpc"]
    assert warnings and warnings[0]["level"] == "warning"
    assert "DDZ_INSECURE" in warnings[0]["warning"]
    assert [line["tls"] for line in lines if line["event"] == "listening"] == ["off"]
    assert not (tmp_path / "tls").exists()


async def test_without_its_certificate_a_service_does_not_start(
    nats_server: NatsServer, tmp_path: Path
) -> None:
    """A data dir nobody prepared: one line naming the missing file and ``ddz init``."""
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("DDZ_")},
        "DDZ_DATA_DIR": str(tmp_path),
        "DDZ_NATS_URL": nats_server.url,
        "DDZ_SETTLEMENT_PORT": str(free_port("127.0.0.1")),
    }
    done = subprocess.run(
        [sys.executable, "-m", "services.settlement"], env=env, capture_output=True, timeout=60
    )
    assert done.returncode == 2
    last = done.stderr.decode().strip().splitlines()[-1]
    assert str(tmp_path / "tls" / "settlement.key") in last and "ddz init" in last
    assert channel_credentials(Settings.from_env({**env, "DDZ_INSECURE": "1"}).calling) is None


async def recorder_server(servicer: Any, settings: Settings) -> RunningServer:
    """A recorder server of the suite's (TLS, rights) serving ``servicer``, on a free port."""
    return await start_server(
        "recorder",
        lambda server: recorder_pb2_grpc.add_RecorderServiceServicer_to_server(servicer, server),
        ["ddz.v1.RecorderService"],
        settings.calling,
        port=0,
    )


class Held(recorder_pb2_grpc.RecorderServiceServicer):
    """Holds every ReadStream until released, saying when one has arrived."""

    def __init__(self) -> None:
        self.arrived = asyncio.Event()
        self.release = asyncio.Event()

    async def ReadStream(self, request: Any, context: Any) -> recorder_pb2.ReadStreamResponse:
        self.arrived.set()
        await self.release.wait()
        return recorder_pb2.ReadStreamResponse()


async def test_calls_beyond_the_servers_concurrency_limit_are_refused(tmp_path: Path) -> None:
    ensure_certificates(tmp_path)
    settings = Settings.from_env({"DDZ_DATA_DIR": str(tmp_path), "DDZ_MAX_CONCURRENT_RPCS": "1"})
    held = Held()
    running = await recorder_server(held, settings)
    try:
        async with make_channel(settings.calling, target=f"127.0.0.1:{running.port}") as channel:
            stub = recorder_pb2_grpc.RecorderServiceStub(channel)  # type: ignore[no-untyped-call]
            first = asyncio.ensure_future(stub.ReadStream(recorder_pb2.ReadStreamRequest()))
            await asyncio.wait_for(held.arrived.wait(), 30)
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await stub.ReadStream(recorder_pb2.ReadStreamRequest())
            assert refused.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
            held.release.set()
            await first  # the call in flight was served
            await stub.ReadStream(recorder_pb2.ReadStreamRequest())  # and the next one is
    finally:
        await running.stop(0)


class Callers(recorder_pb2_grpc.RecorderServiceServicer):
    """Says who each ReadStream and ReadAll caller is, as the server's rights saw it."""

    def __init__(self) -> None:
        self.seen: list[str | None] = []

    async def ReadStream(self, request: Any, context: Any) -> recorder_pb2.ReadStreamResponse:
        self.seen.append(peer_identity(context))
        await asyncio.sleep(0)  # the other connection's calls run in between
        named = (peer_identity(context) or "").encode()  # the caller, back in the answer
        return recorder_pb2.ReadStreamResponse(events=[envelope_pb2.StoredEvent(envelope=named)])

    async def ReadAll(self, request: Any, context: Any) -> recorder_pb2.ReadAllResponse:
        return recorder_pb2.ReadAllResponse()


async def test_two_callers_on_one_server_keep_their_own_identities_and_rights(
    tmp_path: Path,
) -> None:
    """The identity is read per call from the call's own connection (its parse kept per
    certificate): the console and the operator calling one server at once, each on its
    own connection and on fresh ones, each is itself, and the console is still refused
    what only the operator may call (``RecorderService.ReadAll``)."""
    ensure_certificates(tmp_path)
    settings = Settings.from_env({"DDZ_DATA_DIR": str(tmp_path)})
    callers = Callers()
    running = await recorder_server(callers, settings)
    target = f"127.0.0.1:{running.port}"

    async def calls(identity: str) -> list[str]:
        async with make_channel(settings.as_identity(identity).calling, target=target) as channel:
            stub = recorder_pb2_grpc.RecorderServiceStub(channel)  # type: ignore[no-untyped-call]
            named = []
            for _ in range(20):
                answer = await stub.ReadStream(recorder_pb2.ReadStreamRequest(stream_id="x"))
                named.append(answer.events[0].envelope.decode())
                try:
                    await stub.ReadAll(recorder_pb2.ReadAllRequest())
                except grpc.aio.AioRpcError as refused:
                    assert refused.code() is grpc.StatusCode.PERMISSION_DENIED
                    assert error_reason(refused) == "PERMISSION_DENIED"
                    named.append("refused ReadAll")
                else:
                    named.append("ReadAll")
            return named

    try:
        for _ in range(2):  # again on new connections, perhaps from the same ports
            console, operator = await asyncio.gather(calls(CONSOLE), calls(OPERATOR))
            assert console == [CONSOLE, "refused ReadAll"] * 20
            assert operator == [OPERATOR, "ReadAll"] * 20
    finally:
        await running.stop(0)
    assert sorted(set(callers.seen), key=str) == sorted([CONSOLE, OPERATOR])


async def test_a_probe_port_answers_health_in_plaintext_and_nothing_else(tmp_path: Path) -> None:
    """``DDZ_<NAME>_PROBE_PORT``: health for Kubernetes' native gRPC probes, which cannot
    speak TLS; the service itself stays mutual TLS only."""
    ensure_certificates(tmp_path)
    probe_port = free_port("127.0.0.1")
    settings = Settings.from_env(
        {"DDZ_DATA_DIR": str(tmp_path), "DDZ_RECORDER_PROBE_PORT": str(probe_port)}
    )
    running = await start_server(
        "recorder",
        lambda server: recorder_pb2_grpc.add_RecorderServiceServicer_to_server(Held(), server),
        ["ddz.v1.RecorderService"],
        settings.calling,
        port=0,
    )
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{probe_port}") as plain:
            health = health_pb2_grpc.HealthStub(plain)  # type: ignore[no-untyped-call]
            answer = await health.Check(health_pb2.HealthCheckRequest(), timeout=10)
            assert answer.status == SERVING
            recorder = recorder_pb2_grpc.RecorderServiceStub(plain)  # type: ignore[no-untyped-call]
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await recorder.ReadStream(recorder_pb2.ReadStreamRequest(), timeout=10)
            assert refused.value.code() is grpc.StatusCode.UNIMPLEMENTED
        async with grpc.aio.insecure_channel(f"127.0.0.1:{running.port}") as plain:
            health = health_pb2_grpc.HealthStub(plain)  # type: ignore[no-untyped-call]
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await health.Check(health_pb2.HealthCheckRequest(), timeout=5)
            assert refused.value.code() is grpc.StatusCode.UNAVAILABLE
        await running.health.enter_graceful_shutdown()  # stopping: the probe says so too
        async with grpc.aio.insecure_channel(f"127.0.0.1:{probe_port}") as plain:
            health = health_pb2_grpc.HealthStub(plain)  # type: ignore[no-untyped-call]
            answer = await health.Check(health_pb2.HealthCheckRequest(), timeout=10)
            assert answer.status == health_pb2.HealthCheckResponse.NOT_SERVING
    finally:
        await running.stop(0)
