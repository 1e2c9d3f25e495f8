"""``ddz up``: the whole suite on this machine until Ctrl-C.

    ddz up [--nats-port PORT]

Starts a NATS server with JetStream (unless ``DDZ_NATS_URL`` names one; on a random
port when 4222 is taken) and the six services, each a child process logging to
``<DDZ_DATA_DIR>/logs/``; waits until every health check answers SERVING; prints
where everything is. Then it supervises them (``Supervisor``): a service or NATS that
exits is restarted at the same address, one line each on stdout; a crash loop (more
than ``DDZ_RESTART_LIMIT`` restarts of one child within ``DDZ_RESTART_WINDOW`` s) stops
everything and exits 1 with that child's log tail, as does a service that exits before
it first answers. Ctrl-C or SIGTERM stops the services, then NATS, restarting nothing.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from types import FrameType

from ddz.adapters.certs import grpcurl_flags
from ddz.adapters.stack import CrashLoop, Stack, StackError, Supervisor
from ddz.config import Settings, redacted_url


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "up",
        help="run NATS and the six services on this machine until Ctrl-C",
        description="Start NATS (JetStream) and every service as child processes; "
        "Ctrl-C stops them all. Settings: DDZ_* environment variables (docs/CONFIG.md).",
    )
    parser.add_argument(
        "--nats-port", default=None, metavar="PORT",
        help="port of the NATS server it starts (default 4222, or a free one when 4222 is "
        "taken; 0: always a free one)",
    )  # fmt: skip
    parser.set_defaults(handler=run)


def describe(stack: Stack) -> str:
    """Where everything is, for people and for ``grpcurl``."""
    settings = stack.settings
    nats = redacted_url(settings.nats_url, keep_user=False) + (
        f"  (pid {stack.nats.process.pid})" if stack.nats is not None else "  (external)"
    )
    lines = [
        "ddz: the suite is up",
        f"  data dir     {settings.data_dir}",
        f"  event store  {_redacted(settings.database_url)}",
        f"  nats         {nats}",
        f"  logs         {settings.log_dir}/",
    ]
    for name, child in stack.processes.items():
        lines.append(f"  {name:<12} {child.address}  (pid {child.process.pid})")
    lines += ["", "  try:  ddz simulate --variant classic --hands 20"]
    lines += [
        f"        grpcurl {grpcurl_flags(settings, client_cert=False)} "
        f"{settings.address('table')} list",
        f"        grpcurl {grpcurl_flags(settings)} {settings.address('recorder')} list",
    ]
    if settings.insecure:
        lines.append("  WARNING: DDZ_INSECURE is set: plaintext gRPC, no identities, no rights.")
    lines.append("  Ctrl-C stops everything.")
    return "\n".join(lines)


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        raise ValueError(f"--nats-port must be a port number, got {text!r}") from None
    if not 0 <= port <= 65535:
        raise ValueError(f"--nats-port must be 0..65535, got {port}")
    return port


def _redacted(url: str) -> str:
    if "@" not in url or "://" not in url:
        return url
    scheme, rest = url.split("://", 1)
    credentials, host = rest.rsplit("@", 1)
    user = credentials.split(":", 1)[0]
    return f"{scheme}://{user}@{host}"


def run(args: argparse.Namespace) -> int:
    settings = Settings.from_env()
    nats_port = None if args.nats_port is None else _port(args.nats_port)
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    stack = Stack(settings, nats_port=nats_port)
    try:
        print(f"ddz: starting NATS and {len(stack.services)} services...", file=sys.stderr)
        try:
            stack.start(cancel=stop)
        except StackError as exc:
            if stop.is_set():
                return 0  # Ctrl-C while starting: what started is stopped (``finally``)
            print(f"ddz: error: {exc}", file=sys.stderr)
            return 1
        print(describe(stack), flush=True)
        supervisor = Supervisor(stack, report=lambda line: print(line, flush=True))
        try:
            supervisor.watch(stop)
        except CrashLoop as exc:
            print(f"ddz: error: {exc}", file=sys.stderr)
            return 1
        print("ddz: stopping...", file=sys.stderr)
        return 0
    finally:
        stack.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if stop.is_set():
            print("ddz: stopped", file=sys.stderr)
