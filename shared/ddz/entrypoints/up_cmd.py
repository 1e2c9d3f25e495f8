"""``ddz up``: the whole suite on this machine until Ctrl-C.

    ddz up [--nats-port PORT] [--scale NAME=N[,NAME=N...]] [--nats-cluster N]

Starts a NATS server with JetStream (unless ``DDZ_NATS_URL`` names one; on a random
port when 4222 is taken) and the six services, each a child process logging to
``<DDZ_DATA_DIR>/logs/``; waits until every health check answers SERVING; prints
where everything is, one line per instance and per NATS node, and writes it to
``<DDZ_DATA_DIR>/stack.json`` for the other tools. ``--scale rules=3,bot=2`` starts that
many instances of those services (each on its own port; every client is given all of
them); ``--nats-cluster 3`` starts a three-node JetStream cluster on loopback instead of
one server, with the streams replicated on three nodes.

Then it supervises them (``Supervisor``): a service instance or NATS node that exits is
restarted at the same address, one line each on stdout; a crash loop (more than
``DDZ_RESTART_LIMIT`` restarts of one child within ``DDZ_RESTART_WINDOW`` s) stops
everything and exits 1 with that child's log tail, as does a service that exits before
it first answers. Ctrl-C or SIGTERM stops the services, then NATS, restarting nothing.

One suite per data dir: a second ``ddz up`` on a data dir a suite runs from exits at
once with code 2 naming that suite's pid and table address (``suite_lock``), as does one
whose ports are taken (naming the port and the setting that moves it). Each start
begins new logs; the last run's are kept in ``logs/previous/``.
"""

from __future__ import annotations

import argparse
import shlex
import shutil
import signal
import sys
from pathlib import Path
from types import FrameType

from ddz.adapters.runtime.children import SetupRefused, StackError
from ddz.adapters.runtime.stack import Stack
from ddz.adapters.runtime.stopping import SignalStop
from ddz.adapters.runtime.supervisor import CrashLoop, Supervisor
from ddz.adapters.security.tls_files import grpcurl_flags
from ddz.config import Settings
from ddz.config.network import SERVICE_PORTS, WILDCARD_HOSTS
from ddz.urls import redacted_url

MAX_INSTANCES = 16
"""Instances of one service, and nodes of a cluster, that one machine's stack starts."""


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
    parser.add_argument(
        "--scale", default="", metavar="NAME=N[,NAME=N...]",
        help=f"instances of services (e.g. rules=3,bot=2; names: {', '.join(SERVICE_PORTS)})",
    )  # fmt: skip
    parser.add_argument(
        "--nats-cluster", default=None, metavar="N",
        help="start a JetStream cluster of N nodes on loopback (e.g. 3) instead of one server",
    )  # fmt: skip
    parser.set_defaults(handler=run)


def parse_scale(text: str) -> dict[str, int]:
    """``rules=3,bot=2`` as ``{"rules": 3, "bot": 2}`` (``--scale`` may be given once,
    with commas); a ValueError names what is wrong."""
    scale: dict[str, int] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, sep, count = item.partition("=")
        name = name.strip()
        if not sep or name not in SERVICE_PORTS:
            raise ValueError(
                f"--scale takes NAME=N with NAME one of {', '.join(SERVICE_PORTS)}, got {item!r}"
            )
        scale[name] = count_of(count, f"--scale {name}")
    return scale


def count_of(text: str, what: str) -> int:
    try:
        count = int(text)
    except ValueError:
        raise ValueError(f"{what} must be a whole number, got {text.strip()!r}") from None
    if not 1 <= count <= MAX_INSTANCES:
        raise ValueError(f"{what} must be 1..{MAX_INSTANCES}, got {count}")
    return count


def describe(stack: Stack) -> str:
    """Where everything is, for people and for ``grpcurl``."""
    settings = stack.settings
    lines = [
        "ddz: the suite is up",
        f"  data dir     {settings.data_dir}",
        f"  event store  {_redacted(settings.store.database_url)}",
        f"  logs         {settings.telemetry.log_dir}/",
    ]
    children = stack.children()
    if not any(not child.service for child in children):
        nats = redacted_url(settings.bus.nats_url, keep_user=False)
        lines.append(f"  nats         {nats}  (external)")
    for child in children:
        lines.append(f"  {child.name:<12} {child.address}  (pid {child.process.pid})")
    if stack.instances("console"):
        lines.append(
            f"  console      {console_url(settings)}  (sign in with: ddz token staff NAME)"
        )
    if stack.instances("play"):
        lines.append(f"  play         {play_url(settings)}  (sign in with: ddz token player NAME)")
    if stack.cluster is not None:
        lines.append(f"  streams      {settings.bus.stream_replicas} replicas")

    def first(service: str) -> str:  # of its instances
        return settings.network.address(service).split(",")[0]

    # The tools find this suite by its data dir (stack.json): the same DDZ_DATA_DIR.
    same = f"DDZ_DATA_DIR={shlex.quote(str(settings.data_dir))} {ddz_command()}"
    lines += [
        "",
        "  next, in another terminal (the same data dir finds this suite):",
        f"        {same} play                 # take a seat against two bots",
        f"        {same} simulate --hands 20  # bots play 20 hands",
        f"        {same} audit --all          # check every hand stored",
        f"        grpcurl {grpcurl_flags(settings.tls, client_cert=False)} {first('table')} list",
    ]
    if settings.tls.insecure:
        lines.append("  WARNING: DDZ_INSECURE is set: plaintext gRPC, no identities, no rights.")
    lines.append("  Ctrl-C stops everything.")
    return "\n".join(lines)


def console_url(settings: Settings) -> str:
    """The dispute desk's address in a browser (loopback for a wildcard host)."""
    host, port = settings.network.console_web_address.rsplit(":", 1)
    host = "127.0.0.1" if host in WILDCARD_HOSTS else host
    return f"https://{host}:{port}"


def play_url(settings: Settings) -> str:
    """The player's page in a browser (loopback for a wildcard host)."""
    host, port = settings.network.listen_address("play", settings.network.play_web_port).rsplit(
        ":", 1
    )
    host = "127.0.0.1" if host in WILDCARD_HOSTS else host
    return f"https://{host}:{port}"


def ddz_command() -> str:
    """How to run this ``ddz`` from here: ``ddz`` when it is the one on the PATH, else its
    path (``.venv/bin/ddz`` for a newcomer who has not activated the virtualenv)."""
    here = Path(sys.executable).parent / "ddz"
    found = shutil.which("ddz")
    if not here.exists() or (found is not None and Path(found).resolve() == here.resolve()):
        return "ddz"
    try:
        return shlex.quote(str(here.relative_to(Path.cwd())))
    except ValueError:
        return shlex.quote(str(here))


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
    scale = parse_scale(args.scale)
    cluster = 0 if args.nats_cluster is None else count_of(args.nats_cluster, "--nats-cluster")
    if cluster > 1 and settings.bus.nats_url:
        raise ValueError("--nats-cluster starts a cluster here; DDZ_NATS_URL names one already")
    if cluster > 1 and nats_port is not None:
        raise ValueError("--nats-port is for one server; a cluster's nodes take free ports")
    stack = Stack(settings, nats_port=nats_port, scale=scale, nats_cluster=cluster)
    try:
        stack.claim()  # before a word of starting: another suite here, a port taken
    except SetupRefused as exc:
        print(f"ddz: error: {exc}", file=sys.stderr)
        return 2
    stop = SignalStop()  # set by the handler below, which must take no lock

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        nats = f"a {cluster}-node NATS cluster" if cluster > 1 else "NATS"
        instances = sum(stack.scale.values())
        print(f"ddz: starting {nats} and {instances} service instances...", file=sys.stderr)
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
