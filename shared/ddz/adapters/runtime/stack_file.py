"""Where a running local stack is: ``<data dir>/stack.json``.

``Stack`` writes it once every service answers and removes it when it stops. The tools
(``ddz simulate``, ``bench``, ``audit``, ``play``, ``demo``) read it (``found``), so
against a stack started with ``--scale`` or ``--nats-cluster`` they need no flags: it
gives them every instance's address and every NATS node, and what the environment sets
(``DDZ_NATS_URL``, ``DDZ_<NAME>_ADDR``) still wins. ``ddz status`` reads it too; the
stack writes it again after each restart of a child (its new pid, its restarts).

It holds no secret: addresses, NATS URLs without credentials (the NATS users' seeds are
files of the data dir, found by their names), and the pid of the process that started
the stack, so that the file a killed ``ddz up`` left behind is ignored.

It takes the whole ``Settings``: ``found`` amends a tool's own (its bus, store and
network parts) and returns it whole, and ``describe`` reads a stack's.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any, Protocol

from ddz.adapters.files.data_files import BadFile, read_bytes
from ddz.adapters.runtime.children import ServiceProcess
from ddz.config import Settings
from ddz.config.network import SERVICE_PORTS
from ddz.urls import redacted_url

FILE = "stack.json"
VERSION = 1
FIX = "stop the `ddz up` of this data dir if one runs, else remove the file"


def path(data_dir: Path) -> Path:
    return data_dir / FILE


class DescribedStack(Protocol):
    """What the file says of a running stack (``Stack`` is one)."""

    services: tuple[str, ...]
    restarts: dict[str, int]

    @property
    def settings(self) -> Settings: ...

    def children(self) -> list[ServiceProcess]: ...

    def metrics_address(self, child: ServiceProcess) -> str: ...


def describe(stack: DescribedStack) -> dict[str, Any]:
    """What the file says of ``stack``: its instances, its NATS nodes, every client's
    addresses."""
    settings = stack.settings
    children = stack.children()
    return {
        "version": VERSION,
        "pid": os.getpid(),
        "nats_url": ",".join(
            redacted_url(url, keep_user=False) for url in settings.bus.nats_url.split(",")
        ),
        "addresses": {name: settings.network.address(name) for name in stack.services},
        # Only a URL without a password: the tools are given the rest by the environment.
        "database_url": settings.store.database_url
        if redacted_url(settings.store.database_url) == settings.store.database_url
        else "",
        "instances": [
            {
                "name": c.name,
                "service": c.service,
                "address": c.address,
                "metrics": stack.metrics_address(c),
                "pid": c.process.pid,
                "restarts": stack.restarts.get(c.name, 0),
            }
            for c in children
            if c.service
        ],
        "nats": [
            {
                "name": c.name,
                "url": c.address,
                "pid": c.process.pid,
                "restarts": stack.restarts.get(c.name, 0),
            }
            for c in children
            if not c.service
        ],
    }


def write(stack: DescribedStack) -> None:
    """Write (atomically: a reader never sees half a file) where ``stack`` is."""
    target = path(stack.settings.data_dir)
    partial = target.with_name(f".{FILE}.{os.getpid()}")
    partial.write_text(json.dumps(describe(stack), indent=2) + "\n", encoding="utf-8")
    os.replace(partial, target)


def remove(data_dir: Path) -> None:
    """Remove the file if this process wrote it (another stack's stays)."""
    record = _load(path(data_dir))
    if record is not None and record.get("pid") == os.getpid():
        with contextlib.suppress(FileNotFoundError):
            path(data_dir).unlink()


def read(data_dir: Path) -> dict[str, Any] | None:
    """The running stack's record, or None: no file, or one whose stack is gone (its
    process no longer runs). A file that is not a stack's record, or the record of a
    running stack in another version, is a ``BadFile``: a tool that ignored it would
    start a stack of its own beside the running one."""
    file = path(data_dir)
    try:
        data = read_bytes(file, "record of the running stack", FIX)
    except FileNotFoundError:
        return None
    try:
        record = json.loads(data.decode("utf-8"))
    except ValueError:
        record = None
    pid = record.get("pid") if isinstance(record, dict) else None
    if not isinstance(record, dict) or not isinstance(pid, int) or isinstance(pid, bool):
        raise BadFile(file, "not the record of a running stack", FIX)
    if not _alive(pid):
        return None  # left by a stack that was killed: nothing runs there
    if record.get("version") != VERSION:
        raise BadFile(
            file,
            f"written by another version of ddz (record version {record.get('version')!r}, "
            f"this one reads {VERSION}) for the stack of pid {pid}",
            "use the ddz that started that stack, or stop it",
        )
    return record


def found(settings: Settings, env: Mapping[str, str] = os.environ) -> Settings:
    """``settings`` with the NATS URL, service addresses and event store of the stack
    running from their data dir, where the environment (``env``) does not name them."""
    record = read(settings.data_dir)
    if record is None:
        return settings
    database_url = record.get("database_url")
    if isinstance(database_url, str) and database_url and not env.get("DDZ_DATABASE_URL"):
        settings = dataclasses.replace(
            settings, store=dataclasses.replace(settings.store, database_url=database_url)
        )
    raw = record.get("addresses")
    addresses = {
        name: target
        for name, target in (raw.items() if isinstance(raw, dict) else ())
        if name in SERVICE_PORTS and isinstance(target, str) and target
    }
    nats_url = record.get("nats_url")
    return dataclasses.replace(
        settings,
        bus=dataclasses.replace(
            settings.bus,
            nats_url=settings.bus.nats_url or (nats_url if isinstance(nats_url, str) else ""),
        ),
        network=dataclasses.replace(
            settings.network,
            addresses=MappingProxyType({**addresses, **settings.network.addresses}),
        ),
    )


def _load(file: Path) -> dict[str, Any] | None:
    try:
        record = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process: it runs
    return True
