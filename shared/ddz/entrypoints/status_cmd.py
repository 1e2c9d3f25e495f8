"""``ddz status``: how the suite running from ``DDZ_DATA_DIR`` is.

    ddz status            # a table for a person
    ddz status --json     # the same for a script (keys: docs/CLI.md)

Every service instance and NATS node with its pid, address, health, uptime and
restarts; the ``DDZ`` stream and each consumer's lag; the event store's size and last
event (``ddz.adapters.runtime.suite_status``). Exit code 0 when everything serves, 1 when
anything does not (each named on a line of its own), 3 when no suite runs there.
"""

from __future__ import annotations

import argparse
import json
import sys

from ddz.config import Settings

NOT_SERVING = 1
NO_SUITE = 3


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "status",
        help="how the suite running from DDZ_DATA_DIR is: health, lag, store",
        description="Every service instance and NATS node of the suite running from "
        "DDZ_DATA_DIR (started by ddz up) with its pid, address, health, uptime and "
        "restarts; the DDZ stream and its consumers' lag; the event store's size and last "
        "event. Exit code 0 when everything serves, 1 when anything does not, 3 when no "
        "suite runs there.",
    )
    parser.add_argument("--json", action="store_true", help="print JSON (docs/CLI.md)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from ddz.adapters.runtime import stack_file, suite_status

    live = stack_file.found(Settings.from_env())  # the running stack's addresses
    status = suite_status.read(live.data_dir, live.calling, live.bus, live.store)
    if args.json:
        print(json.dumps(status.as_json(), indent=2))
    if not status.running:
        print(
            f"ddz: no suite runs from {live.data_dir} (no live stack.json there): "
            "start one with `ddz up`, or set DDZ_DATA_DIR to its data dir",
            file=sys.stderr,
        )
        return NO_SUITE
    if not args.json:
        print(render(status))
    if status.problems:
        return NOT_SERVING
    return 0


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    seconds = int(seconds)
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, seconds = divmod(rest, 60)
    if days:
        return f"{days}d{hours:02d}h"
    if hours:
        return f"{hours}h{minutes:02d}m"
    return f"{minutes}m{seconds:02d}s"


def size(count: int | None) -> str:
    if count is None:
        return "-"
    value = float(count)
    for unit in ("B", "kB", "MB", "GB"):
        if value < 1000 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1000
    return f"{count} B"  # not reached


def render(status: object) -> str:
    from ddz.adapters.runtime.suite_status import Status, age

    assert isinstance(status, Status)
    lines = [f"suite in {status.data_dir} (ddz up: pid {status.pid})", ""]
    header = f"{'PART':<14}{'HEALTH':<20}{'PID':>8}  {'UPTIME':>7}  {'RESTARTS':>8}  ADDRESS"
    lines.append(header)
    for part in [*status.nats, *status.instances]:
        health = part.health + (f" {part.role}" if part.role else "")
        pid = str(part.pid) if part.pid else "-"
        lines.append(
            f"{part.name:<14}{health:<20}{pid:>8}  {duration(part.uptime_s):>7}  "
            f"{part.restarts:>8}  {part.address}"
        )
    lines.append("")
    stream = status.stream
    if stream is None:
        lines.append("stream DDZ: no NATS node answers for it")
    else:
        replicas = f"{stream.replicas} replica" + ("s" if stream.replicas != 1 else "")
        if stream.replicas > 1 and stream.leader:
            replicas += f", leader {stream.leader}"
        lines.append(
            f"stream {stream.name}: {stream.messages:,} events, {size(stream.bytes)}, "
            f"sequence {stream.first_seq:,}-{stream.last_seq:,}, {replicas}"
        )
        for peer in stream.peers:
            state = "current" if peer["current"] else "not current"
            state = "offline" if peer["offline"] else state
            lag = f", {peer['lag']:,} operations behind" if peer["lag"] else ""
            lines.append(f"  replica {peer['name']}: {state}{lag}")
    if status.consumers is None:
        lines.append("consumers: not shown (the NATS user ddz may not list them)")
    elif status.consumers:
        lines.append(f"  {'CONSUMER':<22}{'LAG':>8}{'UNACKED':>9}{'REDELIVERED':>13}")
        for consumer in sorted(status.consumers, key=lambda c: c.name):
            lines.append(
                f"  {consumer.name:<22}{consumer.pending:>8,}{consumer.ack_pending:>9,}"
                f"{consumer.redelivered:>13,}"
            )
    store = status.store
    if store is not None:
        if store.error:
            lines.append(f"store {store.url}: {store.error}")
        else:
            last = "no event yet"
            if store.last_event_time is not None:
                last = (f"last event {store.last_event_time} "
                        f"({duration(age(store.last_event_time))} ago)")  # fmt: skip
            lines.append(
                f"store {store.url}: {size(store.size_bytes)}, position "
                f"{store.last_position:,}, {last}"
            )
    lines.append("")
    if status.problems:
        lines.append("NOT SERVING:")
        lines += [f"  {problem}" for problem in status.problems]
        lines.append(
            f"Each one's log is {status.data_dir}/logs/<name>.log (ddz up restarts a process "
            "that exits: one that stays down cannot start, or cannot reach what it needs)."
        )
    else:
        lines.append("everything serves")
    return "\n".join(lines)
