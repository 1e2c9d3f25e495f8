"""The ``ddz`` command line. Each command group lives in its own module with a
``register(subparsers)`` function; this file only wires them together.

Errors that come from bad input are reported as one line on stderr with exit code 2:
a ``ValueError`` (a flag, a setting, a file of the data dir: ``data_files.BadFile``),
or an ``OSError`` on a file that no reader turned into one. A command whose reader went
away (a closed pipe) ends quietly with exit code 0. Ctrl-C ends a command with exit code
130, SIGTERM with 143, each after it stopped what it started.
"""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys
import threading
from collections.abc import Sequence
from types import FrameType

from ddz.adapters.files.data_files import file_error
from ddz.adapters.telemetry.tracing import shutdown_tracing
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
    "desk": "desk_cmd",
}
# Modules under ddz.entrypoints that add subcommands, in help order.
COMMAND_MODULES = tuple(dict.fromkeys(COMMANDS.values()))


class UsageError(Exception):
    """Bad input from the user: printed as one line, exit code 2."""


class Terminated(KeyboardInterrupt):
    """SIGTERM: the command stops as on Ctrl-C, stopping what it started (a stack of its
    own, the crowd's processes) on the way out, and exits 143."""


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    # Once: a second SIGTERM must not cut short the stopping the first one began.
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raise Terminated


class _Version(argparse.Action):
    """``ddz --version``: the package's version and the event contract's (the envelope
    version every event is written with), read only when asked."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, help="print the version and exit")

    def __call__(self, parser: argparse.ArgumentParser, *args: object) -> None:
        from importlib.metadata import PackageNotFoundError, version

        from ddz.adapters.security.event_signing import ENVELOPE_VERSION

        try:
            package = version("ddz")
        except PackageNotFoundError:
            package = "unknown (not installed)"
        print(f"ddz {package}, event contract version {ENVELOPE_VERSION}")
        parser.exit()


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command, or only of ``command``'s module when it is known."""
    parser = argparse.ArgumentParser(prog="ddz", description="Dou Dizhu platform tools")
    parser.add_argument("--version", action=_Version)
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    wanted = COMMANDS.get(command or "")
    for name in COMMAND_MODULES:
        if wanted is None or name == wanted:
            module = importlib.import_module(f"ddz.entrypoints.{name}")
            module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    # gRPC's core prints a line per failed TLS handshake (a suite of another data dir at
    # the configured port): noise to a person, whose command says what is wrong in its own
    # words. Set before gRPC loads; GRPC_VERBOSITY=INFO brings the lines back.
    os.environ.setdefault("GRPC_VERBOSITY", "ERROR")
    argv = sys.argv[1:] if argv is None else list(argv)
    command = argv[0] if argv and not argv[0].startswith("-") else None
    parser = build_parser(command)
    args = parser.parse_args(argv)
    build = engine_build()
    if build.stale:
        print(f"ddz: warning: {build.describe()}", file=sys.stderr)
    stdout_before = _stdout_file()
    # Left alone when ignored (a parent's choice) or already taken; ``ddz up`` and a
    # service's runner set their own while they run. Only the main thread takes signals
    # (``main`` called in a thread of a program, as a test does, leaves them to it).
    if (
        threading.current_thread() is threading.main_thread()
        and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    ):
        signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        return _run(args, stdout_before)
    finally:
        shutdown_tracing()  # a tool that called services exports its spans before it ends


def _run(args: argparse.Namespace, stdout_before: tuple[int, int] | None) -> int:
    try:
        result: int = args.handler(args)
    except SystemExit as exc:
        # rich's console ends the process with exit 1 when the reader went away, after
        # pointing stdout at /dev/null (``Console.on_broken_pipe``): that is ours to end.
        if exc.code == 1 and stdout_before != _stdout_file() == _devnull_file():
            return 0
        raise
    except (UsageError, ValueError) as exc:  # ValueError: BadFile, a setting, a flag
        print(f"ddz: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # before OSError, of which it is one
        return _reader_gone()
    except OSError as exc:
        bad = file_error(exc)  # a file no reader turned into a BadFile: still one line
        if bad is None:
            raise
        print(f"ddz: error: {bad}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:
        return 143 if isinstance(exc, Terminated) else 130
    try:
        sys.stdout.flush()  # what is still buffered: the reader may be gone by now
    except BrokenPipeError:
        return _reader_gone()
    return result


def _stdout_file() -> tuple[int, int] | None:
    try:
        stat = os.fstat(sys.stdout.fileno())
    except (OSError, ValueError):
        return None
    return stat.st_dev, stat.st_ino


def _devnull_file() -> tuple[int, int]:
    stat = os.stat(os.devnull)
    return stat.st_dev, stat.st_ino


def _reader_gone() -> int:
    """What a command does when the reader of its output went away (``ddz audit X | head
    -1``): end quietly, as ``head`` asked, exit 0. Later writes of the buffered rest (at
    exit) go nowhere instead of raising again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return 0


if __name__ == "__main__":
    # Run the imported module's main, not this copy's: under ``python -m`` this file is
    # ``__main__``, and the command modules raise ``ddz.entrypoints.cli.UsageError``.
    from ddz.entrypoints.cli import main as cli_main

    sys.exit(cli_main())
