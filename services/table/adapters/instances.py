"""Which table instance is the active one: the holder of the lease ``table``.

The lease's value (``ddz.adapters.messaging.lease``: the holder's id) is the holder's instance id
and the address the other instances dial it at, ``<instance id>@<host:port>``. It is
written again with every renewal, so what a standby reads is always the current
holder's address: no second key that could outlive its holder or name another one.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable
from dataclasses import dataclass

import nats.errors
import nats.js.errors
import structlog
from ddz.adapters.messaging.bus import EventBus
from ddz.adapters.messaging.lease import STANDBY_POLL, lease_bucket
from ddz.application.tasks import cancel_and_wait
from ddz.config.game import TableSettings
from ddz.config.network import WILDCARD_HOSTS, NetworkSettings
from nats.js.kv import KeyValue

LEASE = "table"
"""The KV key (bucket ``ddz_leases``) of the one active table instance."""
NAME = "table"
POLL = STANDBY_POLL / 2
"""Seconds between a standby's reads of the lease: a new active is known within this
of taking over (it takes an expired lease within ``STANDBY_POLL`` of its end)."""

log = structlog.get_logger("ddz.table.instances")


def advertised(table: TableSettings, network: NetworkSettings) -> str:
    """Where the other instances dial this one (``DDZ_TABLE_ADVERTISE``), else where it
    listens; for a wildcard host, the address this host's name resolves to (a container's
    or a pod's own IP; loopback on a machine whose name resolves there)."""
    if table.table_advertise:
        return table.table_advertise
    host, _, port = network.listen_address(NAME).rpartition(":")
    if host in WILDCARD_HOSTS:
        try:
            host = socket.gethostbyname(socket.gethostname())
        except OSError:
            host = "127.0.0.1"
    return f"{host}:{port}"


def holder_id(instance: str, address: str) -> str:
    """The lease's value for ``instance`` dialled at ``address``."""
    return f"{instance}@{address}"


@dataclass(frozen=True, slots=True)
class Active:
    """The active instance as its lease names it; ``address`` None: none it can be
    dialled at (it listens on port 0, or its value has no address)."""

    holder: str
    address: str | None

    @classmethod
    def of(cls, value: str) -> Active:
        _instance, _, address = value.partition("@")
        port = address.rpartition(":")[2]
        dialable = port.isdigit() and int(port) > 0
        return cls(value, address if dialable else None)


class ActiveWatch:
    """Reads the lease every ``POLL`` s and tells ``on_change`` who holds it now (None:
    nobody: released, or expired and not yet taken). While NATS does not answer, the
    last answer stands: the active instance may well still serve."""

    def __init__(
        self, bus: EventBus, *, replicas: int, on_change: Callable[[Active | None], None]
    ) -> None:
        self.bus = bus
        self.replicas = replicas
        self.on_change = on_change
        self.active: Active | None = None
        self._kv: KeyValue | None = None
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self._kv = await lease_bucket(self.bus, self.replicas)
        await self._read()
        self._task = asyncio.create_task(self._run(), name="table:active-watch")

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(POLL)
            await self._read()

    async def _read(self) -> None:
        assert self._kv is not None
        try:
            async with asyncio.timeout(POLL):
                entry = await self._kv.get(LEASE)
            value = entry.value.decode("utf-8", "replace") if entry.value else ""
            active: Active | None = Active.of(value) if value else None
        except nats.js.errors.KeyNotFoundError:  # deleted or expired too
            active = None
        except (nats.errors.Error, TimeoutError, OSError):
            return
        if active != self.active:
            self.active = active
            self.on_change(active)

    async def stop(self) -> None:
        await cancel_and_wait([self._task])
        self._task = None
