"""The rooms' queues on NATS KV: each queued player's ticket is an entry, so a table
service that restarts seats them as if it had not stopped.

One bucket, ``ddz_room_queue`` (made once, like the lease bucket: by the stack's
``provision`` user, or by the table service where nobody made it), key
``<room>.<player>``, value the ticket as JSON (room, player, when they joined in Unix
seconds, balance). Each write carries its own time to live (``Nats-TTL``), so a ticket
that nobody seats or takes out (its service gone for long) ages out of the bucket. A
ticket is taken out with a purge of its key (``Nats-Rollup: sub``: the entry goes), the
purge marker itself living a minute, so a seated player leaves nothing behind.

The lobby changes its queues in synchronous steps: ``keep`` and ``drop`` only schedule
the write, and the writes of one key go out in the order they were asked for. A write
the bucket's stream does not answer (a leader being elected) is asked again, under the
same message id, until ``election.RIDE_OUT`` has passed.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
import uuid
from collections.abc import Coroutine
from typing import Any

import nats.errors
import nats.js.errors
import structlog
from nats.js.api import Header
from nats.js.kv import KeyValue

from ddz.adapters.messaging.bus import EventBus
from ddz.adapters.messaging.election import RIDE_OUT, until_answered
from ddz.adapters.messaging.server import MSG_ID
from ddz.application.room_tickets import QueuedTicket, ticket_key

log = structlog.get_logger("ddz.room_queue")

BUCKET = "ddz_room_queue"
PURGED_TTL = 60
"""Seconds a purge marker stays (it only has to outlive the entry it removes)."""
KV_OPERATION = "KV-Operation"


def encode_ticket(ticket: QueuedTicket) -> bytes:
    value = {"room": ticket.room_id, "player": ticket.player_id, "joined": ticket.joined,
             "balance": ticket.balance}  # fmt: skip
    return json.dumps(value, separators=(",", ":")).encode()


def decode_ticket(data: bytes) -> QueuedTicket:
    """A ticket from its entry; ``ValueError`` when the entry is none."""
    try:
        value = json.loads(data)
        room, player, joined = value["room"], value["player"], value["joined"]
        balance = value.get("balance")
    except (ValueError, TypeError, KeyError) as exc:
        raise ValueError(f"not a queued ticket: {exc}") from None
    if not (isinstance(room, str) and isinstance(player, str)):
        raise ValueError("not a queued ticket: room and player are text")
    if isinstance(joined, bool) or not isinstance(joined, int | float):
        raise ValueError("not a queued ticket: joined is a number")
    if balance is not None and (isinstance(balance, bool) or not isinstance(balance, int)):
        raise ValueError("not a queued ticket: balance is a whole number")
    return QueuedTicket(room, player, float(joined), balance)


async def room_queue_bucket(bus: EventBus, replicas: int = 1) -> KeyValue:
    """The bucket of queued tickets, made when missing (no bucket TTL: each entry has
    its own)."""
    return await bus.bucket(BUCKET, replicas)


class RoomQueueKV:
    """The ``RoomQueueLog`` port of the table service on the bucket."""

    def __init__(self, bus: EventBus, replicas: int = 1, timeout: float = 5.0) -> None:
        self.bus = bus
        self.replicas = replicas
        self.timeout = timeout
        self._kv: KeyValue | None = None
        self._last: dict[str, asyncio.Future[None]] = {}  # key -> its latest write

    async def open(self) -> None:
        self._kv = await room_queue_bucket(self.bus, self.replicas)

    # -- writing, in the background ------------------------------------------------------

    def keep(self, ticket: QueuedTicket, ttl: float) -> None:
        """Write the ticket, to live ``ttl`` seconds (whole, at least one)."""
        subject = f"$KV.{BUCKET}.{ticket.key}"
        value = encode_ticket(ticket)
        self._after(ticket.key, self._publish(subject, value, {}, max(1, int(ttl))))

    def drop(self, room_id: str, player_id: str) -> None:
        """Take the player's ticket out (seated, or they left)."""
        key = ticket_key(room_id, player_id)
        headers = {KV_OPERATION: "PURGE", Header.ROLLUP.value: "sub"}
        self._after(key, self._publish(f"$KV.{BUCKET}.{key}", b"", headers, PURGED_TTL))

    def _after(self, key: str, write: Coroutine[Any, Any, None]) -> None:
        previous = self._last.get(key)

        async def in_turn() -> None:
            if previous is not None:
                with contextlib.suppress(Exception):  # logged where it failed
                    await previous
            try:
                await write
            except (nats.errors.Error, TimeoutError, OSError) as exc:
                # The queue in memory goes on; only a restart would miss this ticket.
                log.warning("queued_ticket_not_written", key=key, error=repr(exc))

        task = asyncio.ensure_future(in_turn())
        self._last[key] = task
        task.add_done_callback(lambda done: self._done(key, done))

    def _done(self, key: str, done: asyncio.Future[None]) -> None:
        if self._last.get(key) is done:
            del self._last[key]

    async def _publish(self, subject: str, value: bytes, headers: dict[str, str], ttl: int) -> None:
        """One write, asked again while the bucket's stream elects a leader; each attempt
        carries the same message id, so a repeat of one stored (its answer lost) is
        dropped as a duplicate rather than written twice."""
        headers = {**headers, MSG_ID: uuid.uuid4().hex}

        async def send(seconds: float) -> None:
            await self.bus.js.publish(subject, value, headers=headers, timeout=seconds, msg_ttl=ttl)

        until = time.monotonic() + RIDE_OUT
        await until_answered(send, until=until, timeout=self.timeout)

    async def settle(self) -> None:
        """Wait for the writes under way."""
        await asyncio.gather(*self._last.values(), return_exceptions=True)

    # -- reading, once at start ------------------------------------------------------------

    async def tickets(self) -> list[QueuedTicket]:
        """Every ticket in the bucket, by the stream's subjects (no consumer needed)."""
        if self._kv is None:
            await self.open()
        assert self._kv is not None
        info = await self.bus.js.stream_info(f"KV_{BUCKET}", subjects_filter=f"$KV.{BUCKET}.>")
        found = []
        for subject in sorted(info.state.subjects or {}):
            key = subject.removeprefix(f"$KV.{BUCKET}.")
            try:
                entry = await self._kv.get(key)
            except nats.js.errors.KeyNotFoundError:  # purged, or aged out meanwhile
                continue
            try:
                ticket = decode_ticket(entry.value or b"")
            except ValueError as exc:
                log.warning("queued_ticket_unreadable", key=key, error=str(exc))
                continue
            if ticket.key != key:
                log.warning("queued_ticket_misplaced", key=key, ticket=ticket.key)
                continue
            found.append(ticket)
        return found
