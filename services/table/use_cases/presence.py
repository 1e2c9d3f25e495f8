"""A player's event stream is their connection (§10.2): when the last stream a player
has open on their seat drops in the middle of a hand and none is open again within the
grace period (``DDZ_RECONNECT_GRACE``), the connection is lost: the seat is
disconnected and the bot plays it; when they open one again, the seat is theirs again.
Within the grace period nothing is recorded: the turn clock runs on as for anyone.

Opening and dropping are serialised per seat, so a stream that drops while the player
is already back on a new one never disconnects them (the new one counts), and a
reconnect never overtakes the disconnect it answers.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Awaitable, Callable

import structlog
from ddz.application.tasks import cancel_and_wait
from ddz.domain.hand.state import SEATS

log = structlog.get_logger("ddz.table.presence")

Key = tuple[str, int]  # (hand id, seat)
Action = Callable[[str, int], Awaitable[None]]


class Presence:
    def __init__(self, on_drop: Action, on_back: Action, grace: float = 0.0) -> None:
        self.on_drop = on_drop
        self.on_back = on_back
        self.grace = grace
        self.open: Counter[Key] = Counter()
        self._locks: dict[Key, asyncio.Lock] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._closing = False

    def _lock(self, key: Key) -> asyncio.Lock:
        return self._locks.setdefault(key, asyncio.Lock())

    async def opened(self, hand_id: str, seat: int) -> None:
        """A stream of the seat's player starts: they are here (reconnect if away)."""
        key = (hand_id, seat)
        async with self._lock(key):
            self.open[key] += 1
            await self.on_back(hand_id, seat)

    def closed(self, hand_id: str, seat: int, *, dropped: bool) -> None:
        """A stream ended: normally (the hand is over) or ``dropped`` by the client. Called
        from the stream's ``finally``, possibly while it is being cancelled: the work
        runs in a task of its own."""
        key = (hand_id, seat)
        self.open[key] -= 1
        if not dropped or self._closing:
            self._forget(key)
            return
        task = asyncio.create_task(self._dropped(key), name=f"dropped:{hand_id}:{seat}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _dropped(self, key: Key) -> None:
        try:
            if self.grace > 0:
                await asyncio.sleep(self.grace)  # a stream opened meanwhile counts
            async with self._lock(key):
                if self.open[key] <= 0 and not self._closing:
                    log.info("connection_lost", hand_id=key[0], seat=key[1], grace_s=self.grace)
                    await self.on_drop(*key)
        except Exception:
            log.exception("disconnect_on_drop_failed", hand_id=key[0], seat=key[1])
        finally:
            self._forget(key)

    def _forget(self, key: Key) -> None:
        if self.open[key] <= 0:
            self.open.pop(key, None)  # two drops within a grace period forget it once

    def hand_over(self, hand_id: str) -> None:
        """The hand has ended: nothing of it to serialise any more."""
        for seat in SEATS:  # its own keys, looked up: not a scan of every hand's
            lock = self._locks.get((hand_id, seat))
            if lock is not None and not lock.locked():
                del self._locks[(hand_id, seat)]

    async def close(self) -> None:
        """Stopping the service ends every stream: that is no player's drop."""
        self._closing = True
        await cancel_and_wait(list(self._tasks))
