"""The ``ddz`` command line. Each command group lives in its own module with a
``register(subparsers)`` function; this file only wires them together.

Errors that come from bad input are reported as one line on stderr with exit code 2:
a ``ValueError`` (a flag, a setting, a file of the data dir: ``data_files.BadFile``),
or an ``OSError`` on a file that no reader turned into one.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from ddz.adapters.data_files import file_error
from ddz.compiled import engine_build

# The subcommands each module adds: ``ddz rules ...`` imports only ``rules_cmd``, so a
# command does not pay for the gRPC, SQLAlchemy and NATS imports of the others (a tool
# that calls ``ddz rules`` once per position would). ``ddz --help`` imports them all.
COMMANDS = {
    "rules": "rules_cmd",
    "settle": "settle_cmd",
    "selfplay": "selfplay_cmd",
    "serve": "serve_cmd",
    "up": "up_cmd",
    "init": "init_cmd",
    "simulate": "simulate_cmd",
    "demo": "demo_cmd",
    "bench": "bench_cmd",
    "eval": "eval_cmd",
    "audit": "audit_cmd",
    "rebuild": "audit_cmd",
    "keys": "keys_cmd",
    "play": "play_cmd",
    "status": "status_cmd",
    "token": "token_cmd",
}
# Modules under ddz.entrypoints that add subcommands, in help order.
COMMAND_MODULES = tuple(dict.fromkeys(COMMANDS.values()))


class UsageError(Exception):
    """Bad input from the user: printed as one line, exit code 2."""


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command, or only of ``command``'s module when it is known."""
    parser = argparse.ArgumentParser(prog="ddz", description="Dou Dizhu platform tools")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    wanted = COMMANDS.get(command or "")
    for name in COMMAND_MODULES:
        if wanted is None or name == wanted:
            module = importlib.import_module(f"ddz.entrypoints.{name}")
            module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    command = argv[0] if argv and not argv[0].startswith("-") else None
    parser = build_parser(command)
    args = parser.parse_args(argv)
    build = engine_build()
    if build.stale:
        print(f"ddz: warning: {build.describe()}", file=sys.stderr)
    try:
        result: int = args.handler(args)
    except (UsageError, ValueError) as exc:  # ValueError: BadFile, a setting, a flag
        print(f"ddz: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        bad = file_error(exc)  # a file no reader turned into a BadFile: still one line
        if bad is None:
            raise
        print(f"ddz: error: {bad}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    return result


if __name__ == "__main__":
    # Run the imported module's main, not this copy's: under ``python -m`` this file is
    # ``__main__``, and the command modules raise ``ddz.entrypoints.cli.UsageError``.
    from ddz.entrypoints.cli import main as cli_main

    sys.exit(cli_main())
