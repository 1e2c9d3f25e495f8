"""The real ``ddz`` command line, told only its data dir: it finds the rest there (keys,
certificates, the store, a running suite's ``stack.json``), as a user's shell with
``DDZ_DATA_DIR`` set would, and none of the test's own ``DDZ_*`` settings leak in.

- ``ddz``: in a process of its own, as a user runs it;
- ``ddz_here``: the same entry point (``ddz.entrypoints.cli.main``) called in the test's
  process with the same environment, its output captured (``run_here``: any
  environment). For tests of what a command says and does, where a process of its own
  proves nothing and costs a Python start-up (~1 s) a call; every command keeps at least
  one test through ``ddz`` (or its own subprocess), so that the program itself is run.
"""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
import traceback
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from ddz.entrypoints.cli import main


def command_env(data_dir: Path | None, env: Mapping[str, str] | None = None) -> dict[str, str]:
    """This process's environment without its ``DDZ_*`` settings, plus ``data_dir`` and
    ``env``."""
    command = {k: v for k, v in os.environ.items() if not k.startswith("DDZ_")}
    if data_dir is not None:
        command["DDZ_DATA_DIR"] = str(data_dir)
    command.update(env or {})
    return command


def ddz(data_dir: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ddz.entrypoints.cli", *args],
        capture_output=True, text=True, timeout=timeout, env=command_env(data_dir),
    )  # fmt: skip


@contextlib.contextmanager
def environment(env: Mapping[str, str]) -> Iterator[None]:
    """``os.environ`` is ``env`` inside, this process's own again after."""
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def ddz_here(data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``ddz(data_dir, *args)`` in this process (``run_here``)."""
    return run_here(args, command_env(data_dir))


def run_here(
    args: Sequence[str], env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``ddz ARGS`` as the program runs it, in this process, with ``os.environ`` as ``env``
    (this process's own if None) meanwhile: its exit code (argparse's exit as well),
    stdout and stderr. An exception it lets out is what ``python`` would make of it: the
    traceback on stderr, exit code 1."""
    out, err = io.StringIO(), io.StringIO()
    with (
        environment(dict(os.environ) if env is None else env),
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
    ):
        try:
            code: int | str | None = main(list(args))
        except SystemExit as exc:
            code = exc.code
        except Exception:
            traceback.print_exc(file=err)
            code = 1
    if not isinstance(code, int):  # sys.exit("message") prints it and exits 1
        if code is not None:
            err.write(f"{code}\n")
        code = 0 if code is None else 1
    return subprocess.CompletedProcess(["ddz", *args], code, out.getvalue(), err.getvalue())
