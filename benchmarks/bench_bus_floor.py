#!/usr/bin/env python3
"""The floor of the messaging cost per hand: the bus alone, and a bare gRPC call.

    .venv/bin/python benchmarks/bench_bus_floor.py [--hands 300] [--events-per-hand 59]
        [--consumers 4] [--publishers 1] [--concurrency 8] [--batch 64] [--raw] [--json]
    .venv/bin/python benchmarks/bench_bus_floor.py --suite-mix [--hands 300]
        [--events-per-hand 59] [--publishers 1] [--concurrency 8] [--json]
    .venv/bin/python benchmarks/bench_bus_floor.py --grpc [--calls 10000] [--concurrency 8]
        [--calls-per-hand 16.4] [--json]

Why: a target of 100 hands/s for ``ddz bench e2e`` on a 2-core machine is at most
2000 ms of CPU per second / 100 = 20 ms of CPU per hand summed over every process. The
suite spends 55-60 ms on an idle machine (greedy bots; docs/BENCHMARKS.md). This script
answers what a hand costs before any of the services' own work: what does
moving a hand's events through JetStream (and its moves through gRPC) cost with no game
logic and no database at all? If that floor alone is near 20 ms, the target is out of
reach with this architecture in Python, whatever the services do.

Bus run (default): a private ``nats-server -js`` on a random loopback port in a temp
dir, the project's stream (``EventBus.ensure_stream``: file storage, 120 s duplicate
window). ``--publishers`` processes publish ``--hands`` hands of ``--events-per-hand``
events of 200 bytes, like the rules service: each hand its own stream id, subject
``ddz.v1.hand.<bucket>.<hand_id>.<EventType>``, events in order, each with ``Nats-Msg-Id`` and
``Nats-Expected-Last-Subject-Sequence`` (over the hand's filter, as ``hand_stream``
sets it), each publish ack awaited before the next; ``--concurrency`` hands in flight at
once per publisher (tables). ``--consumers`` processes each follow every hand event with
their own durable pull consumer and a handler that does nothing but count; every message
is acked. By default both sides go through ``ddz.adapters.messaging.bus.EventBus`` (``publish``,
``subscribe_durable``), so the figure is that of our bus code; ``--raw`` does the same
with bare nats-py (``js.publish`` with the same headers, ``js.pull_subscribe`` +
``fetch`` + ``msg.ack()``) to show how much is the library and how much our adapter.

Suite mix (``--suite-mix``): the consumers the services really run, each in its own
process, configured by the project's own code with handlers that only count:

- ``table`` and ``bot``: ``HandFeed.follow`` itself (a subclass whose ``handle_data``
  counts): a durable pull consumer on ``ddz.v1.>`` (public and internal events),
  ``DeliverPolicy.ALL``, explicit acks, pull requests kept open ahead of the reader
  (``StreamingPull``), one ack per message once applied;
- ``settlement``: ``SettlementConsumer.start`` itself (``handle`` counts): a durable pull
  consumer of ``ddz.v1.hand.*.*.hand_settled`` only (one message a hand) through
  ``EventBus.subscribe_durable`` (batch 64, one explicit ack per message). The real
  handler's ``get_last_msg`` for the hand's ``HandStarted`` (one JetStream request a hand)
  and its database write are left out;
- ``recorder``: ``StoreConsumer.start`` and its pull loop itself (``_handle`` counts and
  acks every message, as the real one does after its store write): a durable pull consumer
  of ``ddz.v1.>``, fetch batch 256, a 20 ms pause after a fetch that did not fill a batch.

The publisher stands for the rules service (and the dealer, which publishes each hand's
first two events): a hand is the event types of a typical classic hand played by greedy
bots (``hand_started``, ``cards_dealt`` on ``ddz.v1.internal.hand.<bucket>.<id>.cards_dealt``, three
``bid_made``, ``landlord_chosen``, alternating ``play_made``/``passed``, then the last
decision's ``play_made``, ``hand_ended``, ``hand_settled``, ``seed_revealed``), each
``--events-per-hand`` long with the envelope size of its type, published one at a time
awaiting each ack through ``hand_stream``'s own ``_publish_checked`` (``Nats-Msg-Id``, and
``Nats-Expected-Last-Subject-Sequence`` over the public or the internal filter of the
hand, the hand's two cursors kept as ``HandCursor`` keeps them); ``--concurrency`` hands
at once, as ``DecideBatch`` overlaps the hands of different tables.

gRPC run (``--grpc``): a ``grpc.aio`` server process with one unary method answering
~100 bytes with ~100 bytes (raw bytes, no protobuf, no interceptor, no logging) and a
client process with ``--concurrency`` callers awaiting ``--calls`` calls in all; the
per-hand figure multiplies by ``--calls-per-hand`` (59 events / ~3.6 moves per
DecideBatch call). WatchHand stream messages are not counted.

What is counted: user + system CPU of every process taking part (``/proc/<pid>/stat``,
all threads), from the moment all are connected and ready (imports, connections and
consumer creation excluded) until the last consumer has handled and acked the last
message (or the last call returned); the wall time over the same span.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import queue
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import nats
import nats.errors
from ddz.adapters.messaging.bus import EventBus
from ddz.adapters.messaging.delivery import Delivery
from ddz.adapters.messaging.subjects import (
    category_filter,
    stream_filter,
    stream_id_for,
    subject_for,
)
from ddz.adapters.runtime.nats_server import start_nats_server
from ddz.entrypoints.bench_cmd import cpu_seconds  # user + system, all threads, /proc
from nats.js.api import ConsumerConfig, DeliverPolicy

STREAM = "DDZ"  # ddz.adapters.messaging.subjects.STREAM_NAME
HAND_FILTER = category_filter("hand")
EVENT_TYPES = ("HandStarted", "BidPlaced", "CardsPlayed", "Passed", "HandSettled")
PAYLOAD = bytes(range(200))  # an envelope's size; its content does not matter to NATS
GRPC_METHOD = "/ddz.bench.Floor/Call"
GRPC_REQUEST = bytes(100)
GRPC_REPLY = bytes(100)
MARK = "@floor"  # starts a protocol line of a child (anything else it prints is passed on)
CORES = 2  # the target machine
TARGET_HANDS_PER_S = 100
PUBLISH_TIMEOUT = 5.0  # as hand_stream.publish
READY_TIMEOUT = 30.0
RUN_TIMEOUT = 120.0


# -- CPU accounting ---------------------------------------------------------------------


@dataclass
class Child:
    """A role of this script in its own process; speaks one line at a time."""

    name: str
    process: subprocess.Popen[str]
    lines: queue.Queue[str]

    @classmethod
    def spawn(cls, name: str, role: str, **options: object) -> Child:
        """This script with ``--role role --option value...``."""
        command = [sys.executable, __file__, "--role", role]
        for option, value in options.items():
            command += [f"--{option.replace('_', '-')}", str(value)]
        process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1
        )
        lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=cls._read, args=(process, lines), daemon=True).start()
        return cls(name, process, lines)

    @staticmethod
    def _read(process: subprocess.Popen[str], lines: queue.Queue[str]) -> None:
        assert process.stdout is not None
        for line in process.stdout:
            if line.startswith(MARK):
                lines.put(line[len(MARK) :].strip())
            else:  # a log line of a library: not ours to interpret
                sys.stderr.write(line)
        lines.put("")  # EOF: the child is gone

    @property
    def pid(self) -> int:
        return self.process.pid

    def expect(self, word: str, timeout: float) -> list[str]:
        """Wait for the child's line starting with ``word``; its other words."""
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            raise SystemExit(
                f"bench_bus_floor: {self.name} said nothing for {timeout:g}s"
            ) from None
        parts = line.split()
        if not parts or parts[0] != word:
            code = self.process.poll()
            raise SystemExit(f"bench_bus_floor: {self.name}: {line!r} (exit code {code})")
        return parts[1:]

    def send(self, line: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()

    def stop(self) -> None:
        """Close its stdin (the signal to disconnect and exit) and wait for it."""
        if self.process.stdin is not None and not self.process.stdin.closed:
            self.process.stdin.close()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


@dataclass
class Measured:
    """CPU seconds of each process over the measured span, and the span's wall time."""

    cpu: dict[str, float]
    wall: float


def measure(
    processes: dict[str, int], start: Callable[[], object], wait_done: Callable[[], object]
) -> Measured:
    before = {name: cpu_seconds(pid) for name, pid in processes.items()}
    started = time.perf_counter()
    start()
    wait_done()
    wall = time.perf_counter() - started
    after = {name: cpu_seconds(pid) for name, pid in processes.items()}
    return Measured({name: after[name] - before[name] for name in processes}, wall)


# -- child side: line protocol on stdin/stdout -----------------------------------------


def say(*words: object) -> None:
    print(MARK, *words, flush=True)


async def next_line() -> str:
    """The next line of stdin ("" at EOF), read in a thread that blocks without CPU."""
    return await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)


async def until_eof() -> None:
    while await next_line():
        pass


# -- bus: the project's adapter --------------------------------------------------------


async def adapter_publisher(url: str, hand_ids: list[str], events: int, concurrency: int) -> None:
    bus = await EventBus.connect(url, name="floor-publisher")

    async def publish_hand(hand_id: str) -> None:
        stream_id = stream_id_for("hand", hand_id)
        hand_filter = stream_filter(stream_id)
        last = 0
        for n in range(events):
            subject = subject_for(stream_id, EVENT_TYPES[n % len(EVENT_TYPES)])
            published = await bus.publish(
                subject,
                PAYLOAD,
                str(uuid.uuid4()),
                last,
                expected_subject=hand_filter,
                timeout=PUBLISH_TIMEOUT,
            )
            last = published.seq

    await run_publisher(hand_ids, concurrency, publish_hand)
    await bus.close()


async def adapter_consumer(url: str, durable: str, expected: int, batch: int) -> None:
    bus = await EventBus.connect(url, name=durable)
    handled = 0
    finished = asyncio.Event()

    async def handler(delivery: Delivery) -> None:  # the ack is the adapter's
        nonlocal handled
        handled += 1
        if handled == expected:
            finished.set()

    await bus.subscribe_durable(durable, HAND_FILTER, handler, batch=batch)
    say("ready")
    await finished.wait()
    await asyncio.sleep(0)  # let the fetch loop send the last ack
    await bus.nc.flush()  # every ack is on the server
    say("done", handled)
    await until_eof()
    await bus.close()


# -- bus: bare nats-py -----------------------------------------------------------------


async def raw_publisher(url: str, hand_ids: list[str], events: int, concurrency: int) -> None:
    nc = await nats.connect(url, name="floor-publisher")
    js = nc.jetstream()

    async def publish_hand(hand_id: str) -> None:
        hand_filter = stream_filter(f"hand-{hand_id}")
        last = 0
        for n in range(events):
            headers = {
                "Nats-Msg-Id": str(uuid.uuid4()),
                "Nats-Expected-Last-Subject-Sequence": str(last),
                "Nats-Expected-Last-Subject-Sequence-Subject": hand_filter,
            }
            subject = subject_for(f"hand-{hand_id}", EVENT_TYPES[n % len(EVENT_TYPES)])
            ack = await js.publish(
                subject, PAYLOAD, timeout=PUBLISH_TIMEOUT, stream=STREAM, headers=headers
            )
            last = ack.seq

    await run_publisher(hand_ids, concurrency, publish_hand)
    await nc.close()


async def raw_consumer(url: str, durable: str, expected: int, batch: int) -> None:
    nc = await nats.connect(url, name=durable)
    js = nc.jetstream()
    # The consumer configuration EventBus.subscribe_durable uses by default.
    config = ConsumerConfig(
        deliver_policy=DeliverPolicy.ALL, max_deliver=5, ack_wait=30.0, max_ack_pending=1000
    )
    pull = await js.pull_subscribe(HAND_FILTER, durable=durable, stream=STREAM, config=config)
    say("ready")
    handled = 0
    while handled < expected:
        try:
            messages = await pull.fetch(batch, timeout=5.0)
        except nats.errors.TimeoutError:
            continue
        for msg in messages:
            await msg.ack()
            handled += 1
    await nc.flush()
    say("done", handled)
    await until_eof()
    await nc.close()


# -- bus: the services' consumer mix (--suite-mix) -------------------------------------

# Envelope bytes of each event type: the mean of ``codec.envelope_and_bytes`` over 50
# classic hands of greedy self-play (263 B a hand's event on average).
SUITE_EVENT_SIZES = {
    "hand_started": 542,
    "cards_dealt": 637,
    "bid_made": 244,
    "redealt": 307,
    "landlord_chosen": 284,
    "play_made": 262,
    "passed": 238,
    "hand_ended": 368,
    "hand_settled": 340,
    "seed_revealed": 316,
}
SUITE_MIN_EVENTS = 10  # the fixed head (6 events) and tail (4) of a hand
SUITE_MEAN_SIZE = 263
SUITE_FEEDS = ("table", "bot")  # services.table.app.NAME, services.bot.app.NAME


def suite_hand() -> Callable[[int], list[tuple[str, bool]]]:
    """``events -> [(type, hidden)...]``: the shape of a typical hand of ``events`` events."""
    from ddz.domain.hand import events as e

    head = [e.HandStarted, e.CardsDealt, e.BidMade, e.BidMade, e.BidMade, e.LandlordChosen]
    tail = [e.PlayMade, e.HandEnded, e.HandSettled, e.SeedRevealed]
    middle = (e.PlayMade, e.Passed)

    def shape(events: int) -> list[tuple[str, bool]]:
        kinds = [*head, *(middle[n % 2] for n in range(events - len(head) - len(tail))), *tail]
        return [(kind.TYPE, bool(kind.HIDDEN)) for kind in kinds]

    return shape


async def suite_publisher(url: str, hand_ids: list[str], events: int, concurrency: int) -> None:
    from ddz.adapters.codec import new_event_id
    from ddz.adapters.messaging import hand_stream

    from services.settlement.consumer import FILTER as SETTLED_FILTER

    shape = suite_hand()(events)
    payloads = {kind: bytes(size) for kind, size in SUITE_EVENT_SIZES.items()}
    bus = await EventBus.connect(url, name="floor-publisher")

    async def publish_hand(hand_id: str) -> None:
        stream_id = hand_stream.hand_stream_id(hand_id)
        cursor = hand_stream.HandCursor()
        for kind, hidden in shape:
            subject = subject_for(stream_id, kind, internal=hidden)
            seq = await hand_stream._publish_checked(
                bus,
                subject,
                payloads[kind],
                new_event_id(),
                cursor.internal_seq if hidden else cursor.public_seq,
                stream_filter(stream_id, internal=hidden),
                PUBLISH_TIMEOUT,
            )
            cursor = cursor.after(hidden, seq)

    settled = [kind for kind, _ in shape if SETTLED_FILTER.endswith("." + kind)]
    assert len(settled) == 1, "settlement must see exactly one event a hand"
    await run_publisher(hand_ids, concurrency, publish_hand)
    await bus.close()


async def suite_feed(url: str, durable: str, expected: int) -> None:
    """The table's or the bot's consumer: ``HandFeed.follow``, its handler counting."""
    from ddz.adapters.messaging.hand_feed import HandFeed

    finished = asyncio.Event()

    class CountingFeed(HandFeed):
        handled = 0

        async def handle_data(self, data: bytes) -> None:
            self.handled += 1
            if self.handled == expected:
                finished.set()

    bus = await EventBus.connect(url, name=durable)
    feed = CountingFeed(bus, keep_ended=0)
    await feed.follow(durable)
    say("ready")
    await finished.wait()
    await asyncio.sleep(0)  # the fetch loop acks the last message as its handler returns
    await bus.nc.flush()
    say("done", feed.handled)
    await until_eof()
    await feed.close()
    await bus.close()


async def suite_settlement(url: str, expected: int) -> None:
    """Settlement's consumer: ``SettlementConsumer.start``, its handler counting."""
    from services.settlement.consumer import SettlementConsumer

    finished = asyncio.Event()

    class CountingSettlement(SettlementConsumer):
        handled = 0

        async def handle(self, delivery: Delivery) -> None:  # acked by the fetch loop
            self.handled += 1
            if self.handled == expected:
                finished.set()

    bus = await EventBus.connect(url, name="settlement")
    consumer = CountingSettlement(bus, None)  # type: ignore[arg-type]  # no database
    await consumer.start()
    say("ready")
    await finished.wait()
    await asyncio.sleep(0)  # let the fetch loop send the last ack
    await bus.nc.flush()
    say("done", consumer.handled)
    await until_eof()
    await bus.close()


async def suite_recorder(url: str, expected: int) -> None:
    """The recorder's consumer: ``StoreConsumer`` and its pull loop, storing nothing."""
    from nats.aio.msg import Msg

    from services.recorder.consumer import StoreConsumer

    finished = asyncio.Event()

    class CountingRecorder(StoreConsumer):
        handled = 0

        async def _handle(self, messages: list[Msg]) -> None:
            for msg in messages:  # the real one acks each message after its store write
                await msg.ack()
            self.handled += len(messages)
            if self.handled >= expected:
                finished.set()

    bus = await EventBus.connect(url, name="recorder")
    recorder = CountingRecorder(bus, None)  # type: ignore[arg-type]  # no store
    await recorder.start()
    say("ready")
    await finished.wait()
    await bus.nc.flush()
    say("done", recorder.handled)
    await until_eof()
    await recorder.stop()
    await bus.close()


# -- bus: shared by all ----------------------------------------------------------------


async def run_publisher(
    hand_ids: list[str], concurrency: int, publish_hand: Callable[[str], Awaitable[None]]
) -> None:
    """``ready``, wait for ``go``, publish every hand with ``concurrency`` tables, ``done``."""
    say("ready")
    if (await next_line()).strip() != "go":
        return
    pending = list(reversed(hand_ids))

    async def table() -> None:
        while pending:
            await publish_hand(pending.pop())

    await asyncio.gather(*(table() for _ in range(concurrency)))
    say("done", len(hand_ids))
    await until_eof()


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


# -- gRPC ------------------------------------------------------------------------------


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


# -- report ----------------------------------------------------------------------------


def summarise(measured: Measured, *, units: int, units_per_hand: float) -> dict[str, Any]:
    """Per process: CPU ms per unit (event or call) and per hand; the 2-core bound."""
    per_process = {
        name: {
            "cpu_s": round(cpu, 3),
            "ms_per_unit": round(cpu * 1000 / units, 4),
            "ms_per_hand": round(cpu * 1000 / units * units_per_hand, 3),
        }
        for name, cpu in measured.cpu.items()
    }
    cpu_total = sum(measured.cpu.values())
    ms_per_unit = cpu_total * 1000 / units
    ms_per_hand = ms_per_unit * units_per_hand
    return {
        "wall_s": round(measured.wall, 3),
        "units_per_s": round(units / measured.wall, 1),
        "hands_per_s_measured": round(units / units_per_hand / measured.wall, 1),
        "cpu_s_total": round(cpu_total, 3),
        "cores_busy": round(cpu_total / measured.wall, 2),
        "processes": per_process,
        "cpu_ms_per_unit": round(ms_per_unit, 4),
        "cpu_ms_per_hand": round(ms_per_hand, 3),
        "hands_per_s_bound_2_cores": round(CORES * 1000 / ms_per_hand, 1),
    }


def print_report(result: dict[str, Any]) -> None:
    grpc_mode = result["mode"] == "grpc"
    unit = "call" if grpc_mode else "event"
    if grpc_mode:
        print(
            f"gRPC floor: {result['calls']} unary grpc.aio calls (100 B each way), "
            f"{result['concurrency']} concurrent callers, "
            f"{result['calls_per_hand']:g} calls per hand"
        )
    elif result["mode"] == "bus-suite-mix":
        internal = sum(hidden for _, hidden in suite_hand()(result["events_per_hand"]))
        print(
            f"bus floor (the services' consumer mix): {result['hands']} hands x "
            f"{result['events_per_hand']} events ({internal} internal) = {result['events']} "
            f"events of ~{SUITE_MEAN_SIZE} B, {result['publishers']} publisher(s) x "
            f"{result['concurrency']} hands at once, each publish awaited; consumers: "
            "table + bot (HandFeed pull, ack each), "
            "settlement (pull, hand_settled only, batch 64, ack each), "
            "recorder (pull, batch 256, 20 ms linger, ack each)"
        )
    else:
        how = "bare nats-py" if result["mode"] == "bus-raw" else "ddz EventBus adapter"
        print(
            f"bus floor ({how}): {result['hands']} hands x {result['events_per_hand']} "
            f"events = {result['events']} events of {len(PAYLOAD)} B, "
            f"{result['publishers']} publisher(s) x {result['concurrency']} hands at once, "
            f"{result['consumers']} pull consumers (fetch batch {result['batch']})"
        )
    print(
        f"wall {result['wall_s']:.2f} s: {result['units_per_s']:,.0f} {unit}s/s "
        f"({result['hands_per_s_measured']:.1f} hands/s), CPU {result['cpu_s_total']:.2f} s "
        f"= {result['cores_busy']:.2f} cores busy"
    )
    print(f"{'process':<14}{'CPU s':>8}{f'ms/{unit}':>11}{'ms/hand':>10}")
    for name, row in result["processes"].items():
        print(
            f"{name:<14}{row['cpu_s']:>8.2f}{row['ms_per_unit']:>11.4f}{row['ms_per_hand']:>10.2f}"
        )
    print(
        f"{'total':<14}{result['cpu_s_total']:>8.2f}{result['cpu_ms_per_unit']:>11.4f}"
        f"{result['cpu_ms_per_hand']:>10.2f}"
    )
    budget = CORES * 1000 / TARGET_HANDS_PER_S
    print(
        f"upper bound on {CORES} cores: {CORES * 1000} / {result['cpu_ms_per_hand']:.2f} "
        f"= {result['hands_per_s_bound_2_cores']:.0f} hands/s "
        f"(the {TARGET_HANDS_PER_S} hands/s target allows {budget:g} ms per hand)"
    )
    if not grpc_mode:
        states = result["consumer_states"]
        pending = sum(state["ack_pending"] for state in states.values())
        redelivered = sum(state["redelivered"] for state in states.values())
        if result["mode"] == "bus-suite-mix":
            delivered = ", ".join(
                f"{durable} {state['messages']}/{result['consumer_expected'][durable]}"
                for durable, state in states.items()
            )
            print(
                f"server check: messages delivered {delivered}; "
                f"{pending} acks pending, {redelivered} redeliveries"
            )
        else:
            delivered = min(state["delivered"] for state in states.values())
            print(
                f"server check: each consumer delivered {delivered}/{result['events']}, "
                f"{pending} acks pending, {redelivered} redeliveries"
            )


# -- entry point -----------------------------------------------------------------------


def child_main(args: argparse.Namespace) -> None:
    roles: dict[str, Callable[[], Coroutine[Any, Any, None]]] = {
        "adapter-consumer": lambda: adapter_consumer(
            args.url, args.durable, args.expected, args.batch
        ),
        "raw-consumer": lambda: raw_consumer(args.url, args.durable, args.expected, args.batch),
        "adapter-publisher": lambda: adapter_publisher(
            args.url, hand_ids(args.hands), args.events_per_hand, args.concurrency
        ),
        "raw-publisher": lambda: raw_publisher(
            args.url, hand_ids(args.hands), args.events_per_hand, args.concurrency
        ),
        "suite-publisher": lambda: suite_publisher(
            args.url, hand_ids(args.hands), args.events_per_hand, args.concurrency
        ),
        "suite-feed": lambda: suite_feed(args.url, args.durable, args.expected),
        "suite-settlement": lambda: suite_settlement(args.url, args.expected),
        "suite-recorder": lambda: suite_recorder(args.url, args.expected),
        "grpc-server": grpc_server,
        "grpc-client": lambda: grpc_client(args.port, args.calls, args.concurrency),
    }
    asyncio.run(roles[args.role]())


def hand_ids(count: int) -> list[str]:
    return [uuid.uuid4().hex for _ in range(count)]


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--raw", action="store_true", help="bare nats-py instead of EventBus")
    mode.add_argument(
        "--suite-mix",
        action="store_true",
        help="the services' consumers (table, bot, settlement, recorder) as they configure them",
    )
    mode.add_argument("--grpc", action="store_true", help="measure unary grpc.aio calls")
    parser.add_argument("--hands", type=int, default=300)
    parser.add_argument("--events-per-hand", type=int, default=59)
    parser.add_argument("--consumers", type=int, default=4)
    parser.add_argument("--publishers", type=int, default=1)
    parser.add_argument(
        "--concurrency",
        type=int,
        default=8,
        help="hands in flight per publisher / concurrent gRPC callers",
    )
    parser.add_argument("--batch", type=int, default=64, help="consumer fetch batch")
    parser.add_argument("--calls", type=int, default=10_000, help="gRPC calls (--grpc)")
    parser.add_argument(
        "--calls-per-hand",
        type=float,
        default=round(59 / 3.6, 1),
        help="DecideBatch calls per hand (--grpc)",
    )
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    # Internal: the role of a child process started by this script.
    parser.add_argument("--role", help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--durable", help=argparse.SUPPRESS)
    parser.add_argument("--expected", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    positive = ("hands", "events_per_hand", "consumers", "publishers", "concurrency", "batch")
    for name in (*positive, "calls"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    if args.publishers > args.hands:
        parser.error("--publishers must not exceed --hands")
    if args.suite_mix and args.events_per_hand < SUITE_MIN_EVENTS:
        parser.error(f"--suite-mix needs --events-per-hand of at least {SUITE_MIN_EVENTS}")
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.role:
        child_main(args)
        return
    if not Path("/proc/self/stat").exists():
        sys.exit("bench_bus_floor: error: needs /proc (Linux) to read each process's CPU time")
    result = run_grpc(args) if args.grpc else run_bus(args)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print_report(result)


if __name__ == "__main__":
    main()
