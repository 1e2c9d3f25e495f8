"""The ``ddz`` command line's wiring: each command loads only its own module."""

from __future__ import annotations

import argparse
import subprocess
import sys

from ddz.entrypoints import cli


def subcommands(parser: argparse.ArgumentParser) -> set[str]:
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return set(action.choices)


def test_every_command_is_mapped_to_the_module_that_registers_it() -> None:
    assert subcommands(cli.build_parser()) == set(cli.COMMANDS)
    for command, module in cli.COMMANDS.items():
        assert command in subcommands(cli.build_parser(command)), module


def test_a_rules_query_does_not_import_the_adapters() -> None:
    """``ddz rules`` is called once per position by operators' scripts: it must not pay
    for gRPC, SQLAlchemy or NATS."""
    code = (
        "import sys; from ddz.entrypoints import cli; cli.build_parser('rules'); "
        "print(sorted(m for m in ('grpc', 'sqlalchemy', 'nats') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_a_command_run_in_a_thread_of_a_program_leaves_signals_to_it() -> None:
    """Only a process's main thread takes signals: ``main`` called in another thread
    (a program that runs ``ddz audit`` off its event loop) runs the command all the same,
    and sets no SIGTERM handler of its own."""
    code = (
        "import signal, threading; from ddz.entrypoints import cli\n"
        "codes = []\n"
        "thread = threading.Thread(target=lambda: codes.append(cli.main(\n"
        "    ['rules', 'classify', '--variant', 'classic', '33'])))\n"
        "thread.start(); thread.join()\n"
        "print(codes, signal.getsignal(signal.SIGTERM) is signal.SIG_DFL)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "[0] True"
