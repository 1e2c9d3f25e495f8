"""The channels' retry table (``grpc_client.REPEATS``): every RPC of the protos is
classified, and gRPC does what the table says -- a retried call is sent again after
UNAVAILABLE, a call sent once is not, and every call waits for a server that is not
up yet (``waitForReady``) within its deadline."""

from __future__ import annotations

import asyncio
import dataclasses
import importlib
import json
import pkgutil
from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest
from ddz import v1
from ddz.adapters.rpc.grpc_client import REPEATS, RETRY_POLICY, make_channel, service_config
from ddz.adapters.rpc.grpc_server import server_credentials
from ddz.adapters.runtime.nats_server import free_port
from ddz.adapters.security.certs import ensure_certificates
from ddz.config import Settings
from ddz.v1 import recorder_pb2, recorder_pb2_grpc, table_pb2, table_pb2_grpc
from grpc_health.v1 import health_pb2


def proto_methods() -> set[str]:
    """``package.Service/Method`` of every RPC the ddz.v1 protos define, and health's."""
    names: set[str] = set()
    files = [health_pb2.DESCRIPTOR]
    for module in pkgutil.iter_modules(v1.__path__):
        if module.name.endswith("_pb2"):
            files.append(importlib.import_module(f"ddz.v1.{module.name}").DESCRIPTOR)
    for file in files:
        for service in file.services_by_name.values():
            names |= {f"{service.full_name}/{method.name}" for method in service.methods}
    return names


def test_every_rpc_of_the_protos_is_classified() -> None:
    methods = proto_methods()
    assert "ddz.v1.TableService/WatchHand" in methods and "grpc.health.v1.Health/Check" in methods
    assert methods - REPEATS.keys() == set(), "classify these in grpc_client.REPEATS"
    assert REPEATS.keys() - methods == set(), "REPEATS names RPCs the protos do not have"
    assert all(repeat.why for repeat in REPEATS.values())


def test_the_service_config_retries_exactly_the_table_s_retried_calls() -> None:
    config = json.loads(service_config())
    retried, rest = config["methodConfig"]
    names = {f"{n['service']}/{n['method']}" for n in retried["name"]}
    assert names == {name for name, repeat in REPEATS.items() if repeat.retried}
    assert retried["retryPolicy"] == dict(RETRY_POLICY)
    assert retried["retryPolicy"]["retryableStatusCodes"] == ["UNAVAILABLE"]
    assert rest == {"name": [{}], "waitForReady": True}  # every other call: no retry
    assert retried["waitForReady"] is True
    # Reads are retried, a person's move never.
    assert REPEATS["ddz.v1.SettlementService/GetLedger"].retried
    assert not REPEATS["ddz.v1.TableService/Play"].retried
    assert not REPEATS["ddz.v1.RulesService/Decide"].retried


class Unavailable:
    """A server whose every call answers UNAVAILABLE, counting the attempts per method."""

    def __init__(self) -> None:
        self.attempts: dict[str, int] = {}

    def handler(self, method: str) -> grpc.RpcMethodHandler:
        async def answer(request: bytes, context: grpc.aio.ServicerContext[Any, Any]) -> bytes:
            self.attempts[method] = self.attempts.get(method, 0) + 1
            await context.abort(grpc.StatusCode.UNAVAILABLE, "restarting")
            return b""

        return grpc.unary_unary_rpc_method_handler(answer)


@pytest.fixture(scope="module")
def settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    """Over TLS, as every channel of the suite: a data dir with the CA and certificates."""
    data_dir = tmp_path_factory.mktemp("tls")
    ensure_certificates(data_dir)
    return Settings.from_env({"DDZ_DATA_DIR": str(data_dir), "DDZ_RPC_TIMEOUT": "30"})


async def serve(
    port: int, handlers: dict[str, dict[str, grpc.RpcMethodHandler]], settings: Settings
) -> grpc.aio.Server:
    server = grpc.aio.server()
    for service, methods in handlers.items():
        server.add_generic_rpc_handlers([grpc.method_handlers_generic_handler(service, methods)])
    server.add_secure_port(f"127.0.0.1:{port}", server_credentials(settings.tls, "recorder"))
    await server.start()
    return server


@pytest.fixture
async def unavailable(settings: Settings) -> AsyncIterator[tuple[Unavailable, str]]:
    port = free_port("127.0.0.1")
    answers = Unavailable()
    server = await serve(port, {
        "ddz.v1.RecorderService": {"ReadAll": answers.handler("ReadAll")},
        "ddz.v1.TableService": {"Play": answers.handler("Play")},
    }, settings)  # fmt: skip
    yield answers, f"127.0.0.1:{port}"
    await server.stop(0)


async def test_a_read_is_sent_again_after_unavailable(
    unavailable: tuple[Unavailable, str], settings: Settings
) -> None:
    answers, target = unavailable
    async with make_channel(settings.calling, target=target) as channel:
        stub = recorder_pb2_grpc.RecorderServiceStub(channel)  # type: ignore[no-untyped-call]
        with pytest.raises(grpc.aio.AioRpcError) as failed:
            await stub.ReadAll(recorder_pb2.ReadAllRequest())
    assert failed.value.code() is grpc.StatusCode.UNAVAILABLE
    assert answers.attempts["ReadAll"] == RETRY_POLICY["maxAttempts"]


async def test_a_move_is_sent_once(
    unavailable: tuple[Unavailable, str], settings: Settings
) -> None:
    answers, target = unavailable
    async with make_channel(settings.calling, target=target) as channel:
        stub = table_pb2_grpc.TableServiceStub(channel)  # type: ignore[no-untyped-call]
        with pytest.raises(grpc.aio.AioRpcError) as failed:
            await stub.Play(table_pb2.PlayRequest(hand_id="h", cards="3"))
    assert failed.value.code() is grpc.StatusCode.UNAVAILABLE
    assert answers.attempts["Play"] == 1


async def test_a_call_waits_for_a_server_that_comes_up_within_its_deadline(
    settings: Settings,
) -> None:
    """Even a call that is never sent twice: it waits, unsent, for the server."""
    port = free_port("127.0.0.1")
    served: list[bytes] = []

    async def play(request: bytes, context: grpc.aio.ServicerContext[Any, Any]) -> bytes:
        served.append(request)
        answer: bytes = table_pb2.PlayResponse().SerializeToString()
        return answer

    async with make_channel(settings.calling, target=f"127.0.0.1:{port}") as channel:
        stub = table_pb2_grpc.TableServiceStub(channel)  # type: ignore[no-untyped-call]
        call = asyncio.ensure_future(stub.Play(table_pb2.PlayRequest(hand_id="h", cards="3")))
        await asyncio.sleep(0.5)  # the call is made while nothing listens
        assert not call.done()
        handler = grpc.unary_unary_rpc_method_handler(play)
        server = await serve(port, {"ddz.v1.TableService": {"Play": handler}}, settings)
        try:
            await asyncio.wait_for(call, 30)
        finally:
            await server.stop(0)
    assert len(served) == 1


async def test_the_default_deadline_bounds_the_wait_for_a_server_that_never_comes(
    settings: Settings,
) -> None:
    port = free_port("127.0.0.1")
    hurried = dataclasses.replace(settings, rpc=dataclasses.replace(settings.rpc, rpc_timeout=0.5))
    async with make_channel(hurried.calling, target=f"127.0.0.1:{port}") as channel:
        stub = recorder_pb2_grpc.RecorderServiceStub(channel)  # type: ignore[no-untyped-call]
        with pytest.raises(grpc.aio.AioRpcError) as failed:
            await stub.ReadAll(recorder_pb2.ReadAllRequest())
    assert failed.value.code() is grpc.StatusCode.DEADLINE_EXCEEDED
