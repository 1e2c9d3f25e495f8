"""``ddz demo``: the README's main job -- a few hands of every variant through the real
services, then where the event store is and how to look at a hand.

    ddz demo [--hands N]

Uses the suite running at the ``DDZ_*`` addresses, or starts a local stack for the
run (same code as ``ddz simulate``). Each hand is dealt by the dealer, decided move by
move by the rules service, played by the bot service, recorded by the recorder and
settled by the settlement service.
"""

from __future__ import annotations

import argparse

from ddz.adapters.messaging.hand_stream import hand_stream_id
from ddz.adapters.security.tls_files import grpcurl_flags
from ddz.config import Settings
from ddz.domain.ruleset import VARIANTS
from ddz.entrypoints.arguments import whole
from ddz.entrypoints.progress import Progress
from ddz.entrypoints.running_suite import running_stack
from ddz.entrypoints.simulate_cmd import Report, failing_suite, play_with_progress
from ddz.urls import redacted_url

MAX_HANDS = 1000


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "demo",
        help="a few hands of every variant through the six services",
        description="Bots play a few hands of every variant through the real services "
        "(starting a local stack when none answers); then shows where the events are.",
    )
    parser.add_argument("--hands", default="3", help="hands per variant (default 3)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    hands = whole(args.hands, "--hands", MAX_HANDS)
    return failing_suite(lambda: _run(Settings.from_env(), hands))


def _run(settings: Settings, hands: int) -> int:
    reports: list[Report] = []
    with Progress("ddz demo") as progress, running_stack(settings) as live:
        for variant in VARIANTS:
            reports.append(play_with_progress(live, variant, hands, 1, progress))
    print_summary(reports)
    print_where(settings, reports)
    return 0


def print_summary(reports: list[Report]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title="ddz demo: hands played by bots through the six services")
    for column in ("variant", "hands", "hands/s", "landlord won", "events", "stored",
                   "system take"):  # fmt: skip
        table.add_column(column, justify="left" if column == "variant" else "right")
    for report in reports:
        table.add_row(
            report.variant,
            str(report.hands),
            f"{report.hands_per_s:.1f}",
            f"{sum(r.landlord_won for r in report.results)}/{report.hands}",
            str(report.events),
            str(report.stored_events),
            str(report.totals.system),
        )
    Console().print(table)


def print_where(settings: Settings, reports: list[Report]) -> None:
    recorder = settings.network.address("recorder")  # where `ddz up` serves it
    last = reports[-1].results[-1] if reports and reports[-1].results else None
    stream = hand_stream_id(last.hand_id) if last is not None else "hand-<hand id>"
    store = redacted_url(settings.store.database_url)
    if store.startswith("sqlite:///"):
        store = store.removeprefix("sqlite:///") + " (SQLite)"
    hand_id = last.hand_id if last is not None else "HAND_ID"
    lines = [
        "",
        f"Event store: {store}",
        f"Data dir:    {settings.data_dir} (JetStream files; service logs in logs/)",
        "",
        "Audit a hand (transcript, every check, exit 0 when clean; --at N for the table",
        "after event N) and every hand in the store:",
        f"  .venv/bin/ddz audit {hand_id}",
        "  .venv/bin/ddz audit --all",
        "",
        f"Inspect a hand (e.g. {stream}) while the suite runs (`ddz up` in another",
        "terminal; this demo's own stack stops when the demo ends):",
        f"  grpcurl {grpcurl_flags(settings.tls)} \\",
        f'    -d \'{{"stream_id": "{stream}"}}\' {recorder} ddz.v1.RecorderService/ReadStream',
    ]
    if settings.store.database_url.startswith("sqlite:///"):
        path = settings.store.database_url.removeprefix("sqlite:///")
        lines += [
            "or read the store itself:",
            f"  sqlite3 {path} \\",
            f"    \"select stream_version, type from events where stream_id = '{stream}'"
            ' order by stream_version"',
        ]
    lines.append("More: docs/OPERATIONS.md")
    print("\n".join(lines))
