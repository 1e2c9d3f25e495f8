"""``ddz bench e2e``: bots at T tables at once through the local stack (``ddz bench
crowd``, people at human pace, is ``crowd_cmd``'s).

    ddz bench e2e [--tables T] [--hands N] [--variant V] [--json] [--profile DIR]
                  [--scale NAME=N[,NAME=N...]] [--nats-cluster N]

What is measured, and where:

* **hands/s, events/s**: hands dealt and played to the end by the bot service, divided
  by the time from the first deal until the recorder has stored every event of every
  hand (``ReadAll``'s max position) -- "with every event stored".
* **play latency p50/p99**: from a play's submission to its acceptance, measured where
  plays are submitted: in the bot service, around each ``RulesService.Decide`` call
  (``BotService.GetStats`` histogram, read before and after the run; 10% buckets).
  The rules service answers after every event of the move is in JetStream.
* **in-process self-play**: the same number of hands of the same variant with the same
  player (``ddz.player_kinds``) in this process (``ddz.domain.selfplay.play_hand``): what
  the rules cost without the distribution. The ratio shows what the distribution costs.

Uses the suite at the ``DDZ_*`` addresses (or the stack running from the data dir) if
one answers, else starts a stack for the run, with ``--scale`` and ``--nats-cluster`` as
``ddz up`` takes them: then the services' CPU time per hand is reported too (each
service's instances summed; ``nats-server``: every node), and ``--profile DIR`` writes a
cProfile of each service there.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ddz.adapters.rpc.grpc_client import ask, make_channel
from ddz.adapters.runtime.stack import Stack
from ddz.adapters.telemetry.metrics import calls_handled
from ddz.bot.kinds import make_player
from ddz.config import Settings
from ddz.domain.ruleset import ruleset_for
from ddz.domain.selfplay import hand_seed, play_hand, run_seed
from ddz.domain.settlement import RoomSettings
from ddz.entrypoints import crowd_cmd
from ddz.entrypoints.arguments import check_variant, whole
from ddz.entrypoints.figures import print_figures
from ddz.entrypoints.progress import Progress, add_quiet
from ddz.entrypoints.running_suite import bench_stack
from ddz.entrypoints.simulate_cmd import failing_suite
from ddz.entrypoints.up_cmd import count_of, parse_scale
from ddz.loadgen.driver import Driver
from ddz.player_kinds import PLAYER_KINDS
from ddz.v1 import bot_pb2, bot_pb2_grpc, recorder_pb2, recorder_pb2_grpc

DRAIN_TIMEOUT = 120.0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "bench", help="benchmarks of the running suite", description="Benchmarks."
    )
    kinds = parser.add_subparsers(dest="bench", required=True, metavar="BENCH")
    e2e = kinds.add_parser(
        "e2e",
        help="T bot tables at once through the local stack: hands/s, latency",
        description="T concurrent bot tables through the local stack with every event "
        "stored: hands/s, events/s, p50/p99 play latency, and the in-process rate.",
    )
    e2e.add_argument("--tables", default="8", help="tables playing at once (default 8)")
    e2e.add_argument("--hands", default="200", help="hands in all (default 200)")
    e2e.add_argument("--variant", default="classic", help="variant (default classic)")
    e2e.add_argument(
        "--player", default=None, choices=PLAYER_KINDS,
        help="bot seats' player for a stack started here (default: DDZ_BOT_PLAYER, strong)",
    )  # fmt: skip
    e2e.add_argument("--json", action="store_true", help="print one JSON object")
    e2e.add_argument(
        "--profile", default=None, metavar="DIR",
        help="cProfile each service into DIR (only for a stack started here)",
    )  # fmt: skip
    e2e.add_argument(
        "--scale", default="", metavar="NAME=N[,NAME=N...]",
        help="instances of services for a stack started here (as ddz up --scale)",
    )  # fmt: skip
    e2e.add_argument(
        "--nats-cluster", default=None, metavar="N",
        help="a JetStream cluster of N nodes for a stack started here (as ddz up)",
    )  # fmt: skip
    add_quiet(e2e)
    e2e.set_defaults(handler=run_e2e)
    crowd_cmd.register(kinds)


@dataclass
class E2EResult:
    variant: str
    tables: int
    player: str = ""
    hands: int = 0
    events: int = 0
    stored_events: int = 0
    play_seconds: float = 0.0
    seconds: float = 0.0  # until every event is stored
    latency_us: list[tuple[int, int]] = field(default_factory=list)  # (bucket bound, count)
    decisions: int = 0
    conflicts: int = 0
    refused: int = 0
    selfplay_hands_per_s: float = 0.0
    cpu_ms_per_hand: dict[str, float] = field(default_factory=dict)
    rules_calls_per_hand: dict[str, float] = field(default_factory=dict)

    @property
    def hands_per_s(self) -> float:
        return self.hands / self.seconds if self.seconds else 0.0

    def percentile_ms(self, q: float) -> float:
        total = sum(count for _bound, count in self.latency_us)
        seen = 0
        for bound, count in self.latency_us:
            seen += count
            if total and seen >= q * total:
                return bound / 1000
        return 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "variant": self.variant,
            "player": self.player,
            "tables": self.tables,
            "hands": self.hands,
            "seconds": round(self.seconds, 3),
            "hands_per_s": round(self.hands_per_s, 2),
            "events": self.events,
            "events_per_s": round(self.events / self.seconds, 1) if self.seconds else 0.0,
            "stored_events": self.stored_events,
            "play_latency_ms": {
                "p50": self.percentile_ms(0.50),
                "p99": self.percentile_ms(0.99),
                "samples": self.decisions,
            },
            "conflicts": self.conflicts,
            "refused": self.refused,
            "selfplay_hands_per_s": round(self.selfplay_hands_per_s, 2),
            "ratio": round(self.hands_per_s / self.selfplay_hands_per_s, 4)
            if self.selfplay_hands_per_s
            else None,
            "cpu_ms_per_hand": self.cpu_ms_per_hand,
            "rules_calls_per_hand": self.rules_calls_per_hand,
        }


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (Linux ``/proc``; 0 elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def stack_cpu(stack: Stack | None) -> dict[str, float]:
    if stack is None:
        return {}
    out: dict[str, float] = {}
    for child in stack.children():
        name = child.service or "nats-server"  # every node of a cluster counts
        out[name] = out.get(name, 0.0) + cpu_seconds(child.process.pid)
    return out


def rules_calls(stack: Stack | None) -> dict[str, float]:
    """``RulesService`` calls finished so far by method, every rules instance's summed
    (its ``ddz_rpc_handled_total``; nothing for a stack not started here)."""
    if stack is None:
        return {}
    calls: dict[str, float] = {}
    for child in stack.instances("rules"):
        for method, count in calls_handled(stack.metrics_address(child)).items():
            calls[method] = calls.get(method, 0.0) + count
    return calls


async def _bot_stats(settings: Settings, stack: Stack | None) -> bot_pb2.GetStatsResponse:
    """The bot service's counters; of a stack started here, every instance's summed."""
    targets = [c.address for c in stack.instances("bot")] if stack is not None else [None]
    total = bot_pb2.GetStatsResponse()
    buckets: dict[int, int] = {}
    for target in targets:
        channel = make_channel(settings.calling, "bot", target=target)
        try:
            stub = bot_pb2_grpc.BotServiceStub(channel)  # type: ignore[no-untyped-call]
            stats = await ask("bot", stub.GetStats, bot_pb2.GetStatsRequest())
        finally:
            await channel.close()
        total.player = stats.player
        total.accepted += stats.accepted
        total.refused += stats.refused
        total.conflicts += stats.conflicts
        total.errors += stats.errors
        total.hands_in_play += stats.hands_in_play
        for bucket in stats.latency:
            buckets[bucket.le_us] = buckets.get(bucket.le_us, 0) + bucket.count
    for le_us, count in sorted(buckets.items()):
        total.latency.add(le_us=le_us, count=count)
    return total


async def _store_position(stub: recorder_pb2_grpc.RecorderServiceStub) -> int:
    page = await ask(
        "recorder", stub.ReadAll, recorder_pb2.ReadAllRequest(after_position=0, limit=1)
    )
    return int(page.max_position)


async def e2e(settings: Settings, stack: Stack | None, variant: str, hands: int,
              tables: int, progress: Progress | None = None) -> E2EResult:  # fmt: skip
    result = E2EResult(variant, tables)
    channel = make_channel(settings.calling, "recorder")
    recorder = recorder_pb2_grpc.RecorderServiceStub(channel)  # type: ignore[no-untyped-call]
    try:
        async with Driver(settings.calling, settings.keys) as driver:
            if progress is not None:
                progress.stage(f"warming up {tables} tables", unit="")
            await driver.play(variant, tables, tables)  # warm up every table's path
            before = await _bot_stats(settings, stack)
            start_position = await _store_position(recorder)
            cpu_before = stack_cpu(stack)
            calls_before = rules_calls(stack)
            started = time.perf_counter()
            if progress is not None:
                progress.stage(f"{variant}: playing", total=hands)
            results = await driver.play(
                variant, hands, tables, None if progress is None else lambda _r: progress.advance()
            )
            result.play_seconds = time.perf_counter() - started
            result.events = sum(r.events for r in results)
            deadline = time.monotonic() + DRAIN_TIMEOUT
            # Each hand is also one hand_assigned event on its table's stream.
            stored_when_done = start_position + result.events + len(results)
            while await _store_position(recorder) < stored_when_done:
                if time.monotonic() > deadline:
                    break
                await asyncio.sleep(0.01)
            result.seconds = time.perf_counter() - started
            cpu_after = stack_cpu(stack)
            calls_after = rules_calls(stack)
            after = await _bot_stats(settings, stack)
            result.hands = len(results)
            result.stored_events = await driver.stored_events(results)
    finally:
        await channel.close()
    # The bot service says which player it runs: a stack already running may have been
    # started with another DDZ_BOT_PLAYER than this process's.
    result.player = after.player
    result.decisions = (after.accepted + after.refused) - (before.accepted + before.refused)
    result.conflicts = after.conflicts - before.conflicts
    result.refused = after.refused - before.refused
    earlier = {b.le_us: b.count for b in before.latency}
    result.latency_us = [
        (b.le_us, b.count - earlier.get(b.le_us, 0))
        for b in after.latency
        if b.count > earlier.get(b.le_us, 0)
    ]
    result.cpu_ms_per_hand = {
        name: round((cpu_after[name] - cpu_before.get(name, 0.0)) * 1000 / max(1, result.hands), 1)
        for name in cpu_after
    }
    result.rules_calls_per_hand = {
        method: round((calls - calls_before.get(method, 0.0)) / max(1, result.hands), 2)
        for method, calls in sorted(calls_after.items())
        if calls > calls_before.get(method, 0.0)
    }
    return result


def selfplay_rate(variant: str, hands: int, player: str) -> float:
    """In-process hands/s with the bot service's player in every seat."""
    rules = ruleset_for(variant)
    players = [make_player(player, seed) for seed in range(3)]
    master = run_seed("bench-e2e")
    started = time.perf_counter()
    for index in range(hands):
        play_hand(rules, RoomSettings(), players, hand_seed(master, index), hand_id=f"b{index}")
    return hands / (time.perf_counter() - started)


def run_e2e(args: argparse.Namespace) -> int:
    variant = check_variant(args.variant)
    hands = whole(args.hands, "--hands", 1_000_000)
    tables = whole(args.tables, "--tables", 1024)
    profile = Path(args.profile).resolve() if args.profile else None
    settings = Settings.from_env()
    if args.player:
        settings = replace(settings, bot=replace(settings.bot, bot_player=args.player))

    scale = parse_scale(args.scale)
    cluster = 0 if args.nats_cluster is None else count_of(args.nats_cluster, "--nats-cluster")

    def measure() -> int:
        with Progress("ddz bench e2e", quiet=args.quiet) as progress:
            with bench_stack(settings, profile, scale, cluster) as (live, stack):
                if stack is None and args.player:
                    raise ValueError(
                        "--player applies to a stack started by the bench: stop `ddz up` first"
                    )
                result = asyncio.run(e2e(live, stack, variant, hands, tables, progress))
                if stack is not None:
                    progress.stage("stopping its stack", unit="")
            progress.stage("in-process self-play, for the ratio", unit="")
            result.selfplay_hands_per_s = selfplay_rate(variant, hands, result.player)
        if args.json:
            print(json.dumps(result.to_json()))
        else:
            print_result(result)
        return 0

    return failing_suite(measure)


def print_result(result: E2EResult) -> None:
    data = result.to_json()
    title = f"ddz bench e2e: {result.variant}, {result.tables} tables, {result.player} bots"
    latency = data["play_latency_ms"]
    rows = [
        ("hands (every event stored)", f"{result.hands} in {result.seconds:.2f} s"),
        ("hands/s end to end", f"{result.hands_per_s:.1f}"),
        ("events/s", f"{data['events_per_s']:.0f}"),
        ("events / stored", f"{result.events} / {result.stored_events}"),
        ("play latency p50 / p99 (ms)", f"{latency['p50']:.2f} / {latency['p99']:.2f}"),
        ("plays measured", f"{result.decisions}"),
        ("stale-version retries", f"{result.conflicts}"),
        ("in-process self-play hands/s", f"{result.selfplay_hands_per_s:.1f}"),
        ("end to end / in-process", f"{data['ratio']}"),
    ]
    rows += [(f"CPU ms/hand: {name}", f"{ms:.1f}") for name, ms in result.cpu_ms_per_hand.items()]
    rows += [
        (f"rules calls/hand: {method}", f"{calls:.2f}")
        for method, calls in result.rules_calls_per_hand.items()
    ]
    print_figures(title, rows)
