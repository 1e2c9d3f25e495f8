"""Finding the suite a tool is to play through (``simulate``, ``demo``, ``play``,
``bench``), or starting one of its own for the command.

The suite of the data dir is the one its ``stack.json`` names (``stack_file.found``) or,
without that file, the one at the configured addresses. A table that answers SERVING is
used at once. One that is ours but not serving yet is waited for, up to
``SUITE_PATIENCE``: a suite is ours when its ``stack.json`` names a live process, or when
its table answers this data dir's certificate at all (NOT_SERVING while it gets NATS
back after a restart or a cut, say). A busy table that misses the first, short probe is
asked once more with time to answer. Only when nothing of ours is there does a tool
start a stack of its own, and it says so on stderr first (``announce_own_stack``).
"""

from __future__ import annotations

import contextlib
import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ddz.adapters.runtime import stack_file
from ddz.adapters.runtime.children import StackError
from ddz.adapters.runtime.probes import SERVING, health_status
from ddz.adapters.runtime.stack import Stack
from ddz.config import Settings

FIRST_ASK = 1.0
"""Seconds the first health probe may take: a suite at rest answers in milliseconds."""

SECOND_ASK = 4.0
"""Seconds the second probe may take, when the first got no answer: a table busy with
many tables, or on a loaded machine, answers late rather than never."""

SUITE_PATIENCE = 30.0
"""Seconds a tool waits for a suite of its data dir that answers but does not serve yet:
a supervised service restarting, or reconnecting to NATS, serves again in seconds."""


def answering_suite(settings: Settings) -> Settings | None:
    """The settings of the data dir's suite once its table serves, or None when no suite
    of this data dir runs (or one that does never serves within ``SUITE_PATIENCE``)."""
    live = stack_file.found(settings)
    table = live.network.address("table")
    status = health_status(table, FIRST_ASK, settings=live.calling)
    if status == SERVING:
        return live
    if status is None:
        status = health_status(table, SECOND_ASK, settings=live.calling)
        if status == SERVING:
            return live
    if status is None and stack_file.read(settings.data_dir) is None:
        return None
    print(
        f"ddz: the suite of {settings.data_dir} does not serve yet (table at {table}); "
        f"waiting up to {SUITE_PATIENCE:.0f} s for it",
        file=sys.stderr,
        flush=True,
    )
    deadline = time.monotonic() + SUITE_PATIENCE
    while time.monotonic() < deadline:
        time.sleep(0.5)
        if health_status(table, FIRST_ASK, settings=live.calling) == SERVING:
            return live
    return None


def announce_own_stack(settings: Settings) -> None:
    """Say on stderr, before it starts, that this command starts a suite of its own, and
    where: a user who meant the suite of another data dir sees it at once."""
    table = settings.network.address("table")
    why = f"no table answers at {table}"
    if listening(table):
        # Something is there but did not answer us: a suite made with another data
        # dir's certificates (the usual case), or another program.
        why = f"the table at {table} does not take this data dir's certificates: another suite's?"
    print(
        f"ddz: no suite is running from {settings.data_dir} ({why}): starting one for this "
        f"command only, its data in {settings.data_dir}; to use a running suite, set "
        "DDZ_DATA_DIR to its data dir",
        file=sys.stderr,
        flush=True,
    )


def listening(address: str) -> bool:
    """True when something accepts connections at ``address`` (its first ``host:port``)."""
    host, _, port = address.split(",")[0].rpartition(":")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=1.0):
            return True
    except (OSError, ValueError):
        return False


@contextlib.contextmanager
def running_stack(settings: Settings) -> Iterator[Settings]:
    """The settings of a suite that answers: the data dir's (``answering_suite``), or a
    stack started here (ephemeral ports) and stopped on exit."""
    live = answering_suite(settings)
    if live is not None:
        yield live
        return
    with own_stack(settings) as stack:
        yield stack.settings


@contextlib.contextmanager
def own_stack(settings: Settings, **options: Any) -> Iterator[Stack]:
    """A stack of this command's own (ephemeral ports, ``Stack``'s ``options``), said on
    stderr before it starts and stopped on exit; one that cannot start is a
    ``ValueError`` (one line)."""
    announce_own_stack(settings)
    try:
        stack = Stack(settings, ephemeral_ports=True, **options).start()
    except StackError as exc:
        raise ValueError(f"cannot start the stack: {exc}") from None
    try:
        yield stack
    finally:
        stack.stop()


@contextlib.contextmanager
def bench_stack(
    settings: Settings,
    profile: Path | None,
    scale: dict[str, int] | None = None,
    nats_cluster: int = 0,
) -> Iterator[tuple[Settings, Stack | None]]:
    """The suite of the data dir (``answering_suite``) and None, or a stack started for
    the benchmark (``own_stack``) and that stack: its processes are the bench's to
    measure. Options of a stack's own are refused for a running suite."""
    live = answering_suite(settings)
    if live is not None:
        if profile is not None or scale or nats_cluster:
            raise ValueError(
                "--profile, --scale and --nats-cluster need a stack started by the bench: "
                "stop `ddz up` first"
            )
        yield live, None
        return
    with own_stack(settings, profile_dir=profile, scale=scale, nats_cluster=nats_cluster) as stack:
        yield stack.settings, stack
