"""The shared gRPC server and client helpers (health, reflection, deadlines,
rich errors with a reason, request-bound JSON logs, graceful shutdown), exercised with
a tiny RecorderService over a real SQLite store."""

from __future__ import annotations

import asyncio
import dataclasses
import io
import json
import os
import signal
import subprocess
import sys
import textwrap
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import nats.js.errors
import pytest
import structlog
from ddz.adapters.rpc.grpc_client import channel_credentials, error_info, error_reason, make_channel
from ddz.adapters.rpc.grpc_server import RunningServer, full_service_name, serve, start_server
from ddz.adapters.security.certs import ensure_certificates
from ddz.adapters.store import SqlEventStore, create_store
from ddz.adapters.telemetry.logging import configure_logging
from ddz.application.errors import Kind, Reason, Refusal
from ddz.config import Settings
from ddz.v1 import recorder_pb2, recorder_pb2_grpc
from ddz.v1.envelope_pb2 import EventEnvelope
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

RECORDER = full_service_name(recorder_pb2, "RecorderService")


class TinyRecorder(recorder_pb2_grpc.RecorderServiceServicer):
    """Just enough of a recorder to exercise the helpers; ``slow``, ``boom`` and
    ``election`` stream ids make it sleep, fail unexpectedly, or fail as a call to a
    stream without a leader does."""

    def __init__(self, store: SqlEventStore) -> None:
        self.store = store

    async def ReadStream(self, request: Any, context: Any) -> recorder_pb2.ReadStreamResponse:
        if request.stream_id == "slow":
            await asyncio.sleep(1.0)
        if request.stream_id == "boom":
            raise RuntimeError("secret internals")
        if request.stream_id == "election":  # what a publish meets while a stream has no leader
            raise nats.js.errors.NoStreamResponseError()
        events = await asyncio.to_thread(
            self.store.read_stream, request.stream_id, request.after_version
        )
        if not events:
            raise Refusal(
                Kind.NOT_FOUND,
                Reason.UNKNOWN_STREAM,
                f"no events for stream {request.stream_id!r}",
                stream_id=request.stream_id,
            )
        return recorder_pb2.ReadStreamResponse(events=[event.to_proto() for event in events])

    async def ReadAll(self, request: Any, context: Any) -> recorder_pb2.ReadAllResponse:
        events = await asyncio.to_thread(
            self.store.read_all, request.after_position, request.limit or 1000
        )
        return recorder_pb2.ReadAllResponse(
            events=[event.to_proto() for event in events],
            max_position=await asyncio.to_thread(self.store.max_position),
        )


def tls(settings: Settings) -> grpc.ChannelCredentials:
    credentials = channel_credentials(settings.calling)
    assert credentials is not None
    return credentials


def envelope(stream_id: str, version: int) -> bytes:
    return EventEnvelope(
        event_id=str(uuid.uuid4()), stream_id=stream_id, stream_version=version, type="T"
    ).SerializeToString()


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    ensure_certificates(tmp_path)  # TLS as everywhere: the CA and certificates, as ddz up
    return Settings.from_env(
        {
            "DDZ_DATA_DIR": str(tmp_path),
            "DDZ_HOST": "127.0.0.1",
            "DDZ_RPC_TIMEOUT": "5",
            "DDZ_LOG_LEVEL": "DEBUG",
        }
    )


@pytest.fixture
def sqlite_store(tmp_path: Path) -> AsyncIterator[SqlEventStore]:
    store = create_store(f"sqlite:///{tmp_path / 'events.sqlite3'}", upgrade=True)
    store.append("hand-1", 0, [envelope("hand-1", 1), envelope("hand-1", 2)])
    yield store  # type: ignore[misc]
    store.close()


@pytest.fixture
async def server(settings: Settings, sqlite_store: SqlEventStore) -> AsyncIterator[RunningServer]:
    def add(server: grpc.aio.Server) -> None:
        recorder_pb2_grpc.add_RecorderServiceServicer_to_server(TinyRecorder(sqlite_store), server)

    running = await start_server("recorder", add, [RECORDER], settings.calling, port=0)
    yield running
    await running.stop(0)


@pytest.fixture
async def channel(settings: Settings, server: RunningServer) -> AsyncIterator[grpc.aio.Channel]:
    async with make_channel(settings.calling, target=f"127.0.0.1:{server.port}") as chan:
        yield chan


async def test_health_reports_serving(channel: grpc.aio.Channel) -> None:
    health = health_pb2_grpc.HealthStub(channel)
    for name in ("", RECORDER):
        reply = await health.Check(health_pb2.HealthCheckRequest(service=name))
        assert reply.status == health_pb2.HealthCheckResponse.SERVING
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await health.Check(health_pb2.HealthCheckRequest(service="ddz.v1.NoSuchService"))
    assert caught.value.code() == grpc.StatusCode.NOT_FOUND


async def test_reflection_lists_and_describes_the_service(channel: grpc.aio.Channel) -> None:
    stub = reflection_pb2_grpc.ServerReflectionStub(channel)
    requests = [
        reflection_pb2.ServerReflectionRequest(list_services=""),
        reflection_pb2.ServerReflectionRequest(file_containing_symbol=RECORDER),
    ]
    replies = [reply async for reply in stub.ServerReflectionInfo(iter(requests), timeout=5)]
    names = {service.name for service in replies[0].list_services_response.service}
    assert {RECORDER, "grpc.health.v1.Health"} <= names
    assert replies[1].file_descriptor_response.file_descriptor_proto  # grpcurl can describe it


async def test_a_call_returns_the_stored_bytes(
    channel: grpc.aio.Channel, sqlite_store: SqlEventStore
) -> None:
    stub = recorder_pb2_grpc.RecorderServiceStub(channel)
    reply = await stub.ReadStream(recorder_pb2.ReadStreamRequest(stream_id="hand-1"))
    assert [event.envelope for event in reply.events] == [
        event.envelope for event in sqlite_store.read_stream("hand-1")
    ]
    assert [event.position for event in reply.events] == [1, 2]


async def test_a_refusal_carries_a_reason_the_client_can_read(channel: grpc.aio.Channel) -> None:
    stub = recorder_pb2_grpc.RecorderServiceStub(channel)
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await stub.ReadStream(recorder_pb2.ReadStreamRequest(stream_id="hand-404"))
    assert caught.value.code() == grpc.StatusCode.NOT_FOUND
    assert caught.value.details() == "no events for stream 'hand-404'"
    assert error_reason(caught.value) == "UNKNOWN_STREAM"
    info = error_info(caught.value)
    assert info is not None
    assert (info.domain, dict(info.metadata)) == ("ddz.v1", {"stream_id": "hand-404"})


async def test_oversized_request_is_refused_and_the_server_keeps_serving(
    settings: Settings, server: RunningServer, channel: grpc.aio.Channel
) -> None:
    # A raw channel: ours would refuse to send it before it leaves the client.
    raw_channel = grpc.aio.secure_channel(f"127.0.0.1:{server.port}", tls(settings))
    async with raw_channel as raw:
        stub = recorder_pb2_grpc.RecorderServiceStub(raw)
        huge = recorder_pb2.ReadStreamRequest(stream_id="x" * (2 * 1024 * 1024))
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await stub.ReadStream(huge, timeout=5)
    assert caught.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    reply = await recorder_pb2_grpc.RecorderServiceStub(channel).ReadAll(
        recorder_pb2.ReadAllRequest()
    )
    assert reply.max_position == 2


async def test_unexpected_error_is_internal_without_leaking_details(
    channel: grpc.aio.Channel,
) -> None:
    stub = recorder_pb2_grpc.RecorderServiceStub(channel)
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await stub.ReadStream(recorder_pb2.ReadStreamRequest(stream_id="boom"))
    assert caught.value.code() == grpc.StatusCode.INTERNAL
    assert "secret" not in (caught.value.details() or "")
    assert error_reason(caught.value) is None
    assert (await stub.ReadStream(recorder_pb2.ReadStreamRequest(stream_id="hand-1"))).events


async def test_a_bus_that_did_not_answer_is_unavailable_not_internal(
    channel: grpc.aio.Channel,
) -> None:
    stub = recorder_pb2_grpc.RecorderServiceStub(channel)
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await stub.ReadStream(recorder_pb2.ReadStreamRequest(stream_id="election"))
    assert caught.value.code() == grpc.StatusCode.UNAVAILABLE
    assert "the event bus did not answer" in (caught.value.details() or "")


async def test_every_call_gets_the_default_deadline(
    settings: Settings, server: RunningServer
) -> None:
    hurried = dataclasses.replace(settings, rpc=dataclasses.replace(settings.rpc, rpc_timeout=0.2))
    async with make_channel(hurried.calling, target=f"127.0.0.1:{server.port}") as chan:
        stub = recorder_pb2_grpc.RecorderServiceStub(chan)
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await stub.ReadStream(recorder_pb2.ReadStreamRequest(stream_id="slow"))
        assert caught.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
        # An explicit timeout wins over the default.
        with pytest.raises(grpc.aio.AioRpcError):
            await stub.ReadStream(recorder_pb2.ReadStreamRequest(stream_id="hand-404"), timeout=3)


async def test_logs_are_json_lines_bound_to_request_and_stream(
    settings: Settings, channel: grpc.aio.Channel
) -> None:
    sink = io.StringIO()
    configure_logging(settings.telemetry, service="recorder", stream=sink)
    try:
        stub = recorder_pb2_grpc.RecorderServiceStub(channel)
        await stub.ReadStream(
            recorder_pb2.ReadStreamRequest(stream_id="hand-1"),
            metadata=[("x-request-id", "req-42")],
        )
        structlog.contextvars.bind_contextvars(request_id="req-77")  # the caller's own request
        with pytest.raises(grpc.aio.AioRpcError):
            await stub.ReadStream(recorder_pb2.ReadStreamRequest(stream_id="hand-404"))
        # The server writes a call's line once the call has ended, which may be after the
        # caller has its answer: wait (bounded) for both lines before the sink is swapped.
        for _ in range(100):
            if sink.getvalue().count('"event": "rpc"') >= 2:
                break
            await asyncio.sleep(0.05)
    finally:
        structlog.contextvars.clear_contextvars()
        configure_logging(settings.telemetry, service="pytest", stream=io.StringIO())
    lines = [json.loads(line) for line in sink.getvalue().splitlines()]
    calls = [line for line in lines if line["event"] == "rpc"]
    assert [
        (c["request_id"], c["rpc"], c["stream_id"], c["code"], c["service"]) for c in calls
    ] == [
        ("req-42", "ReadStream", "hand-1", "OK", "recorder"),
        ("req-77", "ReadStream", "hand-404", "NOT_FOUND", "recorder"),
    ]
    assert calls[1]["reason"] == "UNKNOWN_STREAM"
    assert all(line["level"] and line["timestamp"].endswith("Z") for line in lines)


async def test_graceful_stop_finishes_calls_in_flight(
    settings: Settings, sqlite_store: SqlEventStore
) -> None:
    stop = asyncio.Event()
    started: asyncio.Queue[RunningServer] = asyncio.Queue()

    def add(server: grpc.aio.Server) -> None:
        recorder_pb2_grpc.add_RecorderServiceServicer_to_server(TinyRecorder(sqlite_store), server)

    serving = asyncio.create_task(
        serve(
            "recorder",
            add,
            [RECORDER],
            settings.calling,
            0,
            stop=stop,
            grace=5,
            on_started=started.put_nowait,
        )
    )
    running = await asyncio.wait_for(started.get(), 10)
    async with make_channel(settings.calling, target=f"127.0.0.1:{running.port}") as chan:
        stub = recorder_pb2_grpc.RecorderServiceStub(chan)
        in_flight = asyncio.ensure_future(
            stub.ReadStream(recorder_pb2.ReadStreamRequest(stream_id="slow"))
        )
        await asyncio.sleep(0.3)
        stop.set()
        await asyncio.sleep(0.2)
        # No new calls once stopping (asked on a raw channel: ours wait for the server).
        async with grpc.aio.secure_channel(f"127.0.0.1:{running.port}", tls(settings)) as raw:
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await recorder_pb2_grpc.RecorderServiceStub(raw).ReadStream(
                    recorder_pb2.ReadStreamRequest(stream_id="hand-1"), timeout=1
                )
        assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
        with pytest.raises(grpc.aio.AioRpcError) as missing:
            await in_flight  # finished normally (then found nothing for "slow")
        assert missing.value.code() == grpc.StatusCode.NOT_FOUND
    await asyncio.wait_for(serving, 10)


SIGTERM_SCRIPT = textwrap.dedent(
    """
    import asyncio, sys
    from ddz.adapters.rpc.grpc_server import serve
    from ddz.adapters.telemetry.logging import configure_logging
    from ddz.config import Settings

    settings = Settings.from_env()
    configure_logging(settings.telemetry, service="tiny")
    asyncio.run(serve("tiny", lambda server: None, [], settings.calling, 0,
                      on_started=lambda running: print(running.port, flush=True)))
    """
)


def test_sigterm_stops_the_process_cleanly(tmp_path: Path) -> None:
    ensure_certificates(tmp_path, ["tiny"])
    env = {**os.environ, "DDZ_DATA_DIR": str(tmp_path), "DDZ_LOG_FORMAT": "json"}
    process = subprocess.Popen(
        [sys.executable, "-c", SIGTERM_SCRIPT],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        port = int(process.stdout.readline())
        assert port > 0
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=20)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, stderr
    events = [json.loads(line)["event"] for line in stderr.splitlines()]
    assert events == ["listening", "stopping", "stopped"]


async def test_a_taken_port_is_an_error_not_a_shared_port(
    settings: Settings, server: RunningServer
) -> None:
    with pytest.raises(OSError, match="cannot listen"):
        await start_server("recorder", lambda _: None, [], settings.calling, port=server.port)
