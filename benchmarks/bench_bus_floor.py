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
import sys
import uuid
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

from bus_floor.bus_roles import adapter_consumer, adapter_publisher, raw_consumer, raw_publisher
from bus_floor.bus_run import run_bus
from bus_floor.grpc_floor import grpc_client, grpc_server, run_grpc
from bus_floor.report import print_report
from bus_floor.suite_roles import (
    SUITE_MIN_EVENTS,
    suite_feed,
    suite_publisher,
    suite_recorder,
    suite_settlement,
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
