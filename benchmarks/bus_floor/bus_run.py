"""The bus run: a private nats-server with the project's stream, the consumer processes,
then the publishers; the CPU of every process from the first publish to the last ack,
and what the server says of each consumer afterwards."""

from __future__ import annotations

import argparse
import asyncio
import tempfile
from pathlib import Path
from typing import Any

import nats
import nats.errors
from ddz.adapters.messaging.bus import EventBus
from ddz.adapters.runtime.nats_server import start_nats_server

from bus_floor.bus_roles import STREAM
from bus_floor.protocol import READY_TIMEOUT, RUN_TIMEOUT, Child, measure
from bus_floor.report import summarise
from bus_floor.suite_roles import SUITE_FEEDS


async def create_stream(url: str) -> None:
    bus = await EventBus.connect(url, name="floor-setup")
    await bus.ensure_stream()
    await bus.close()


async def consumer_states(url: str, durables: list[str]) -> dict[str, dict[str, int]]:
    """What the server says of each consumer once done: delivered, ack pending, redelivered."""
    nc = await nats.connect(url, name="floor-check")
    js = nc.jetstream()
    states: dict[str, dict[str, int]] = {}
    for durable in durables:
        for _ in range(50):  # an ack may still be on its way into the consumer
            info = await js.consumer_info(STREAM, durable)
            if not info.num_ack_pending:
                break
            await asyncio.sleep(0.02)
        states[durable] = {
            "delivered": info.delivered.stream_seq or 0,
            "messages": info.delivered.consumer_seq or 0,
            "ack_pending": info.num_ack_pending or 0,
            "redelivered": info.num_redelivered or 0,
        }
    await nc.close()
    return states


def spawn_consumers(args: argparse.Namespace, url: str, total: int) -> dict[str, Child]:
    """Each consumer process by its durable name, not yet ready."""
    if args.suite_mix:
        children = {
            durable: Child.spawn(durable, "suite-feed", url=url, durable=durable, expected=total)
            for durable in SUITE_FEEDS
        }
        children["settlement"] = Child.spawn(
            "settlement", "suite-settlement", url=url, expected=args.hands
        )
        children["recorder"] = Child.spawn("recorder", "suite-recorder", url=url, expected=total)
        return children
    role = "raw" if args.raw else "adapter"
    return {
        durable: Child.spawn(
            durable, f"{role}-consumer", url=url, durable=durable, expected=total, batch=args.batch
        )
        for durable in (f"floor-{i}" for i in range(args.consumers))
    }


def bus_mode(args: argparse.Namespace) -> str:
    return "bus-suite-mix" if args.suite_mix else "bus-raw" if args.raw else "bus-adapter"


def run_bus(args: argparse.Namespace) -> dict[str, Any]:
    total = args.hands * args.events_per_hand
    role = "suite" if args.suite_mix else "raw" if args.raw else "adapter"
    with tempfile.TemporaryDirectory(prefix="ddz-bus-floor-") as tmp:
        server = start_nats_server(Path(tmp) / "jetstream", port=0)
        children: list[Child] = []
        try:
            asyncio.run(create_stream(server.url))
            by_durable = spawn_consumers(args, server.url, total)
            durables = list(by_durable)
            consumers = list(by_durable.values())
            children += consumers
            for child in consumers:  # consumers exist before the first publish
                child.expect("ready", READY_TIMEOUT)
            shares = [args.hands // args.publishers] * args.publishers
            shares[0] += args.hands - sum(shares)
            publishers = [
                Child.spawn(
                    f"publisher-{i}",
                    f"{role}-publisher",
                    url=server.url,
                    hands=share,
                    events_per_hand=args.events_per_hand,
                    concurrency=args.concurrency,
                )
                for i, share in enumerate(shares)
            ]
            children += publishers
            for child in publishers:
                child.expect("ready", READY_TIMEOUT)

            def start() -> None:
                for child in publishers:
                    child.send("go")

            def wait_done() -> None:
                for child in children:  # in any order: the last "done" ends the span
                    child.expect("done", RUN_TIMEOUT)

            pids = {child.name: child.pid for child in children}
            pids["nats-server"] = server.process.pid
            measured = measure(pids, start, wait_done)
            states = asyncio.run(consumer_states(server.url, durables))
        finally:
            for child in children:
                child.stop()
            server.stop()
    expected = {durable: total for durable in durables}
    if args.suite_mix:
        expected["settlement"] = args.hands
    return {
        "mode": bus_mode(args),
        "hands": args.hands,
        "events_per_hand": args.events_per_hand,
        "events": total,
        "consumers": len(durables),
        "publishers": args.publishers,
        "concurrency": args.concurrency,
        "batch": None if args.suite_mix else args.batch,
        "consumer_states": states,
        "consumer_expected": expected,
        **summarise(measured, units=total, units_per_hand=args.events_per_hand),
    }
