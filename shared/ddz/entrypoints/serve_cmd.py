"""``ddz serve NAME``: run one service in the foreground, exactly as
``python -m services.NAME`` does (``ddz.adapters.runtime.service_runner.main``)."""

from __future__ import annotations

import argparse

from ddz.config.network import SERVICE_PORTS


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "serve",
        help="run one service (dealer, rules, bot, settlement, table, recorder)",
        description="Run one service until SIGTERM/Ctrl-C. Settings come from DDZ_* "
        "variables (docs/CONFIG.md); the service's port is DDZ_<NAME>_PORT.",
    )
    parser.add_argument("name", choices=tuple(SERVICE_PORTS), metavar="NAME",
                        help=f"one of {', '.join(SERVICE_PORTS)}")  # fmt: skip
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from ddz.adapters.runtime.service_runner import main  # grpc/nats only when serving

    return main(args.name)
