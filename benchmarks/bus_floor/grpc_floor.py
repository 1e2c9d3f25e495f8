"""The gRPC run (``--grpc``): a bare ``grpc.aio`` server process answering one unary
method, a client process calling it, and the CPU of both over the calls."""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

import grpc

from bus_floor.protocol import READY_TIMEOUT, RUN_TIMEOUT, Child, measure, next_line, say, until_eof
from bus_floor.report import summarise

GRPC_METHOD = "/ddz.bench.Floor/Call"
GRPC_REQUEST = bytes(100)
GRPC_REPLY = bytes(100)


async def grpc_server() -> None:
    async def call(request: bytes, context: grpc.aio.ServicerContext[bytes, bytes]) -> bytes:
        return GRPC_REPLY

    handler = grpc.method_handlers_generic_handler(
        "ddz.bench.Floor", {"Call": grpc.unary_unary_rpc_method_handler(call)}
    )
    server = grpc.aio.server()
    server.add_generic_rpc_handlers((handler,))
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    say("ready", port)
    await until_eof()
    await server.stop(0)


async def grpc_client(port: int, calls: int, concurrency: int) -> None:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        call = channel.unary_unary(GRPC_METHOD)  # bytes in, bytes out
        for _ in range(20):  # connect, warm up
            await call(GRPC_REQUEST, timeout=5.0)
        say("ready")
        if (await next_line()).strip() != "go":
            return
        shares = [calls // concurrency + (i < calls % concurrency) for i in range(concurrency)]

        async def caller(count: int) -> None:
            for _ in range(count):
                await call(GRPC_REQUEST, timeout=5.0)

        await asyncio.gather(*(caller(count) for count in shares))
        say("done", calls)
        await until_eof()


def run_grpc(args: argparse.Namespace) -> dict[str, Any]:
    children: list[Child] = []
    try:
        server = Child.spawn("grpc-server", "grpc-server")
        children.append(server)
        (port,) = server.expect("ready", READY_TIMEOUT)
        client = Child.spawn(
            "grpc-client", "grpc-client", port=port, calls=args.calls, concurrency=args.concurrency
        )
        children.append(client)
        client.expect("ready", READY_TIMEOUT)
        measured = measure(
            {"grpc-client": client.pid, "grpc-server": server.pid},
            lambda: client.send("go"),
            lambda: client.expect("done", RUN_TIMEOUT),
        )
    finally:
        for child in reversed(children):
            child.stop()
    return {
        "mode": "grpc",
        "calls": args.calls,
        "concurrency": args.concurrency,
        "calls_per_hand": args.calls_per_hand,
        **summarise(measured, units=args.calls, units_per_hand=args.calls_per_hand),
    }
