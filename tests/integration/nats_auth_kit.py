"""A client of the stack's nats-server as ``ddz up`` configures it (``nats_auth``): each
service's settings and user, and how a refusal reaches the client. The server and the
``connect`` fixture are in conftest.py."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path

from ddz.config import Settings
from nats.aio.client import Client

Connect = Callable[..., Awaitable[Client]]
VIOLATION = "permissions violation"
WAIT = 10  # bound on waiting for the server's answer (never a timed assertion)


def settings_for(data_dir: Path) -> Settings:
    return Settings.from_env({"DDZ_DATA_DIR": str(data_dir)})


class Errors:
    """What nats-py hands its ``error_cb``: a permission violation is reported there,
    never raised by ``publish`` or ``subscribe``."""

    def __init__(self) -> None:
        self.seen: list[str] = []
        self.arrived = asyncio.Event()

    async def callback(self, exc: Exception) -> None:
        self.seen.append(str(exc))
        self.arrived.set()

    async def violation(self) -> str:
        await asyncio.wait_for(self.arrived.wait(), WAIT)
        return "\n".join(self.seen)
