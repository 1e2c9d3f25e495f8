"""The ``ddz`` command line. Each command group lives in its own module with a
``register(subparsers)`` function; this file only wires them together.

Errors that come from bad input are reported as one line on stderr with exit code 2.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

# Modules under ddz.entrypoints that add subcommands, in help order.
COMMAND_MODULES = (
    "rules_cmd",
    "settle_cmd",
    "selfplay_cmd",
    "serve_cmd",
    "up_cmd",
    "simulate_cmd",
    "demo_cmd",
    "bench_cmd",
    "eval_cmd",
    "audit_cmd",
    "play_cmd",
)


class UsageError(Exception):
    """Bad input from the user: printed as one line, exit code 2."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ddz", description="Dou Dizhu platform tools")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMAND_MODULES:
        module = importlib.import_module(f"ddz.entrypoints.{name}")
        module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        result: int = args.handler(args)
    except (UsageError, ValueError) as exc:
        print(f"ddz: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    return result


if __name__ == "__main__":
    sys.exit(main())
