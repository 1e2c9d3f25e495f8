"""The hands shared among bot instances: ``DDZ_BOT_PARTITIONS`` partitions by hand id,
each one a lease (``ddz.adapters.messaging.lease``, key ``bot.partition.<k>``), each instance
holding its share.

A hand belongs to partition ``bucket % count``, its subject bucket
(``ddz.adapters.messaging.subjects.bucket_of``) modulo the partitions (``partition_of``); the
instance holding that partition's lease is the only one that plays the hand's bot seats,
so one bot turn gets one decision. The instances count one another by their member
keys (``bot.member.<holder>``, written every renewal interval with the lease TTL, so a
dead instance's key goes with its leases). Of M live instances, the ``i``-th by member
key wants partition ``k`` when ``k mod M == i``: every instance computes the same
share from the same keys, and each takes its own partitions when they are free and lets
go of the others. The rules clients route partition ``k`` to the ``k mod N``-th of N
rules instances (``ddz.adapters.rpc.routing``), so with as many of each, one bot instance's
hands all go to one rules instance and its batches of moves stay whole. An instance
that joins or leaves therefore moves only partitions, never history: the new holder of
a partition reads the unfinished hands of that partition from the bus
(``hands.resume_hands``), as a restarted bot does.

A partition is whole buckets (``buckets_of``), so an instance's consumer filters on the
subjects of the partitions it holds, and the server sends it no other hand's events.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections.abc import Awaitable, Callable, Iterable

import nats.errors
import structlog
from ddz.adapters.messaging.bus import EventBus
from ddz.adapters.messaging.lease import BUCKET, Lease, lease_bucket
from ddz.adapters.messaging.subjects import BUCKETS, partition_of
from ddz.application.tasks import cancel_and_wait

log = structlog.get_logger("ddz.bot.partitions")

PREFIX = "bot"
PartitionHook = Callable[[int], Awaitable[None]]
__all__ = ["Partitions", "buckets_of", "partition_of", "subject_token"]


class Partitions:
    """The partitions this instance holds (``held``), kept to about its share."""

    def __init__(
        self,
        bus: EventBus,
        holder: str,
        count: int,
        *,
        ttl: float,
        replicas: int = 1,
        on_taken: PartitionHook,
        on_lost: PartitionHook,
        on_members: Callable[[int], None] = lambda _members: None,
    ) -> None:
        self.bus = bus
        self.holder = holder
        self.count = count
        self.ttl = ttl
        self.replicas = replicas
        self.members = 1  # live instances, this one included (as last counted)
        self.index = 0  # this instance's place among them, by member key
        self._on_taken = on_taken
        self._on_members = on_members
        self._on_lost = on_lost
        self.leases = [self._lease(k) for k in range(count)]
        self._task: asyncio.Task[None] | None = None
        self._member_subject = f"$KV.{BUCKET}.{PREFIX}.member.{subject_token(holder)}"

    @property
    def held(self) -> frozenset[int]:
        return frozenset(k for k, lease in enumerate(self.leases) if lease.held)

    def holds(self, partition: int) -> bool:
        return self.leases[partition].held

    @property
    def share(self) -> int:
        return math.ceil(self.count / max(1, self.members))

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    async def start(self) -> None:
        """Announce this instance, count the others, then take a share."""
        await lease_bucket(self.bus, self.replicas)
        await self._announce()
        for lease in self.leases:
            await lease.start()
        self._task = asyncio.create_task(self._run(), name="bot:members")

    async def stop(self) -> None:
        await cancel_and_wait([self._task])
        self._task = None
        for lease in self.leases:
            await lease.stop()

    def _lease(self, k: int) -> Lease:
        return Lease(
            self.bus, f"{PREFIX}.partition.{k}", self.holder, service="bot", ttl=self.ttl,
            replicas=self.replicas, on_taken=self._hook(self._on_taken, k),
            on_lost=self._hook(self._on_lost, k), want=self._wanted(k),
        )  # fmt: skip

    def _hook(self, hook: PartitionHook, partition: int) -> Callable[[], Awaitable[None]]:
        async def call() -> None:
            await hook(partition)

        return call

    def _wanted(self, partition: int) -> Callable[[], bool]:
        def wanted() -> bool:
            return partition % self.members == self.index

        return wanted

    async def _run(self) -> None:
        interval = self.leases[0].interval if self.leases else self.ttl / 4
        while True:
            await asyncio.sleep(interval)
            with contextlib.suppress(nats.errors.Error, TimeoutError):
                await self._announce()

    async def _announce(self) -> None:
        """Write this instance's member key (living one TTL) and count the live ones."""
        await self.bus.js.publish(self._member_subject, b"", msg_ttl=self.ttl)
        info = await self.bus.js.stream_info(
            f"KV_{BUCKET}", subjects_filter=f"$KV.{BUCKET}.{PREFIX}.member.>"
        )
        keys = set(info.state.subjects or {}) | {self._member_subject}
        ordered = sorted(keys)
        members, index = len(ordered), ordered.index(self._member_subject)
        if (members, index) != (self.members, self.index):
            log.info("bot_members", members=members, index=index,
                     share=math.ceil(self.count / members))  # fmt: skip
        changed = members != self.members
        self.members, self.index = members, index
        if changed:
            self._on_members(members)


def buckets_of(partitions: Iterable[int], count: int) -> list[int]:
    """The subject buckets of ``partitions`` (of ``count``)."""
    wanted = set(partitions)
    return [bucket for bucket in range(BUCKETS) if bucket % count in wanted]


def subject_token(holder: str) -> str:
    """``holder`` as one subject token (letters, digits, ``-`` and ``_``)."""
    return "".join(c if c.isascii() and (c.isalnum() or c in "-_") else "_" for c in holder)
