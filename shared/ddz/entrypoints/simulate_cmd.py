"""``ddz simulate``: bots play N hands through the running services.

    ddz simulate --variant V --hands N [--tables T] [--json]

Connects to the suite at the addresses of the ``DDZ_*`` settings; when no table
service answers there, it starts a stack of its own for the run (NATS and the six
services, data in ``DDZ_DATA_DIR``) and stops it afterwards. T tables play at once,
each opened with three bot seats; progress goes to stderr (a bar on a terminal, a line
every few seconds elsewhere; ``--quiet``: none). Prints hands/s, the
landlord win rate and the settlement totals (read from the settlement service);
``--json`` prints ``{"hands": N, "hands_per_s": x, "events": k, "stored_events": k}``
where ``events`` counts every event of those hands (internal ones included) and
``stored_events`` how many of them the recorder has stored.

A service that restarts during the run is waited for (``loadgen/driver.py``); one that
does not come back ends the run with one line, ``ddz: error: <service>: ...``, exit 1
(``failing_suite``, shared by ``demo``, ``bench`` and ``play``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import grpc

from ddz.adapters.rpc.grpc_client import refusal_from
from ddz.application.errors import Refusal
from ddz.config import Settings
from ddz.domain.ruleset import VARIANTS
from ddz.entrypoints.arguments import check_variant, whole
from ddz.entrypoints.figures import print_figures
from ddz.entrypoints.progress import Progress, add_quiet
from ddz.entrypoints.running_suite import running_stack
from ddz.loadgen.driver import Driver, HandResult, SettlementTotals

MAX_HANDS = 1_000_000
MAX_TABLES = 256
SUITE_FAILED = 1
"""Exit code of a command the suite failed (a service down): not the user's input (2)."""


def failing_suite(command: Callable[[], int]) -> int:
    """``command()``, or when a service failed it (a ``Refusal`` from the driver, a
    failed call): the reason in one line on stderr and ``SUITE_FAILED``."""
    try:
        return command()
    except Refusal as refusal:
        message = refusal.message
    except grpc.RpcError as error:
        message = refusal_from(error, "the suite").message
    print(f"ddz: error: {message}", file=sys.stderr)
    return SUITE_FAILED


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "simulate",
        help="bots play N hands through the running services",
        description="Bots play N hands through the services (starting a local stack "
        "when none answers) and print hands/s, landlord win rate and settlement totals.",
    )
    parser.add_argument("--variant", default="classic", help=f"one of {', '.join(VARIANTS)}")
    parser.add_argument("--hands", default="20", help="how many hands (default 20)")
    parser.add_argument("--tables", default="1", help="tables playing at once (default 1)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    add_quiet(parser)
    parser.set_defaults(handler=run)


@dataclass
class Report:
    variant: str
    tables: int
    results: list[HandResult] = field(default_factory=list)
    seconds: float = 0.0
    stored_events: int = 0
    totals: SettlementTotals = field(default_factory=SettlementTotals)

    @property
    def hands(self) -> int:
        return len(self.results)

    @property
    def events(self) -> int:
        return sum(r.events for r in self.results)

    @property
    def hands_per_s(self) -> float:
        return self.hands / self.seconds if self.seconds else 0.0

    @property
    def landlord_win_rate(self) -> float:
        return sum(r.landlord_won for r in self.results) / max(1, self.hands)

    def to_json(self) -> dict[str, Any]:
        return {
            "hands": self.hands,
            "hands_per_s": round(self.hands_per_s, 2),
            "events": self.events,
            "stored_events": self.stored_events,
        }


async def simulate(
    settings: Settings,
    variant: str,
    hands: int,
    tables: int,
    on_hand: Callable[[HandResult], None] | None = None,
) -> Report:
    """Play the hands, then read back what the recorder and settlement hold of them."""
    report = Report(variant, tables)
    async with Driver(settings.calling, settings.keys) as driver:
        started = time.perf_counter()
        report.results = await driver.play(variant, hands, tables, on_hand)
        report.seconds = time.perf_counter() - started
        report.stored_events = await driver.stored_events(report.results)
        report.totals = await driver.settlement(report.results)
    return report


def play_with_progress(
    settings: Settings, variant: str, hands: int, tables: int, progress: Progress
) -> Report:
    """``simulate``, each hand counted by ``progress`` (a stage of its own)."""
    progress.stage(f"{variant}: playing", total=hands)
    return asyncio.run(simulate(settings, variant, hands, tables, lambda _r: progress.advance()))


def run(args: argparse.Namespace) -> int:
    variant = check_variant(args.variant)
    hands = whole(args.hands, "--hands", MAX_HANDS)
    tables = whole(args.tables, "--tables", MAX_TABLES)
    settings = Settings.from_env()
    return failing_suite(
        lambda: _run(settings, variant, hands, tables, as_json=args.json, quiet=args.quiet)
    )


def _run(
    settings: Settings, variant: str, hands: int, tables: int, *, as_json: bool, quiet: bool
) -> int:
    with Progress("ddz simulate", quiet=quiet) as progress, running_stack(settings) as live:
        report = play_with_progress(live, variant, hands, tables, progress)
    if as_json:
        print(json.dumps(report.to_json()))
    else:
        print_report(report)
    return 0


def print_report(report: Report) -> None:
    title = f"ddz simulate: {report.variant}, {report.tables} table(s), bots"
    rows = [
        ("hands", f"{report.hands}"),
        ("hands/s", f"{report.hands_per_s:.1f}"),
        ("landlord win rate", f"{report.landlord_win_rate:.1%}"),
        ("events (internal included)", f"{report.events}"),
        ("events stored by the recorder", f"{report.stored_events}"),
        ("hands settled", f"{report.totals.hands}"),
        ("settlement: system take", f"{report.totals.system}"),
    ]
    players = report.totals.players
    if len(players) <= 6:
        rows += [(f"settlement: {p}", f"{amount:+d}") for p, amount in sorted(players.items())]
    elif players:
        best = max(players, key=lambda p: players[p])
        worst = min(players, key=lambda p: players[p])
        rows += [
            (f"settlement: best of {len(players)} players ({best})", f"{players[best]:+d}"),
            (f"settlement: worst ({worst})", f"{players[worst]:+d}"),
        ]
    print_figures(title, rows)
