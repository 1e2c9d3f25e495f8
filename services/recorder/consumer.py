"""The recorder's durable consumer: every event on ``ddz.v1.>`` into the event store.

Its own pull loop (not ``EventBus.subscribe_durable``) so that a fetched batch is
written with one store transaction per stream instead of one per event: the store
is the bottleneck of the whole suite at full speed. Per message the outcome is:

- stored, or already stored with the same bytes (a redelivery, a duplicate
  publish): ack;
- a gap (an earlier event of its stream is not stored yet): nak, retried later;
- can never be stored (not an envelope, its version taken by another event, its id
  taken by other bytes): term, with an error log line. Such an event is evidence of a
  bug or a second writer; it stays on the bus for inspection.
- anything else (database unreachable): nak, retried later, without a limit: an
  event must not be lost because the database was down for a while.

Acked only after the write committed, so a crash or restart means redelivery, never
loss.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field

import nats.errors
import structlog
from ddz.adapters.bus import ALL_SUBJECTS, EventBus
from ddz.adapters.codec import CodecError, parse_envelope
from ddz.adapters.store import (
    DuplicateEventId,
    EventStore,
    InvalidEnvelope,
    StoreError,
    VersionConflict,
)
from nats.aio.msg import Msg
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

log = structlog.get_logger("ddz.recorder")

DURABLE = "recorder"
RETRY_DELAY = 0.5  # seconds, times the delivery count (capped)
MAX_RETRY_DELAY = 10.0
HAND_END_TYPE = "seed_revealed"  # the last event of a hand: its chain head is signed


@dataclass
class _Item:
    msg: Msg
    data: bytes
    stream_id: str = ""
    version: int = 0
    event_type: str = ""


@dataclass
class StoreConsumer:
    bus: EventBus
    store: EventStore
    durable: str = DURABLE
    batch: int = 256
    idle_fetch_timeout: float = 2.0
    linger: float = 0.02
    """After a fetch that did not fill a batch, wait this long before the next one, so
    the events of that time are stored together: one fetch and one transaction per
    stream for many events instead of one each (events arrive one per move, and a
    fetch otherwise returns about one). Only when events are stored is delayed;
    nothing in play waits for the store."""
    sign_head: Callable[[str], None] | None = None
    stored: int = 0  # events written (not counting redeliveries)
    _task: asyncio.Task[None] | None = None
    _stopping: asyncio.Event = field(default_factory=asyncio.Event)
    _fetching: bool = False

    async def start(self) -> None:
        await self.bus.js.add_consumer(
            self.bus.stream,
            ConsumerConfig(
                durable_name=self.durable,
                filter_subject=ALL_SUBJECTS,
                ack_policy=AckPolicy.EXPLICIT,
                deliver_policy=DeliverPolicy.ALL,
                max_deliver=-1,
                ack_wait=60.0,
                max_ack_pending=20_000,
            ),
        )
        pull = await self.bus.js.pull_subscribe_bind(durable=self.durable, stream=self.bus.stream)
        self._stopping.clear()
        self._task = asyncio.create_task(self._run(pull), name=f"durable:{self.durable}")

    async def stop(self) -> None:
        """Finish the batch in hand, then stop fetching (unacked messages are redelivered)."""
        self._stopping.set()
        if self._task is not None:
            if self._fetching:  # waiting for messages, none in hand: no need to wait
                self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _run(self, pull: object) -> None:
        try:
            while not self._stopping.is_set():
                self._fetching = True
                try:
                    messages = await pull.fetch(self.batch, timeout=self.idle_fetch_timeout)  # type: ignore[attr-defined]
                except TimeoutError:
                    continue
                except (nats.errors.ConnectionClosedError, nats.errors.ConnectionDrainingError):
                    return
                except nats.errors.Error as exc:
                    log.warning("fetch_failed", error=str(exc))
                    await asyncio.sleep(RETRY_DELAY)
                    continue
                finally:
                    self._fetching = False
                await self._handle(messages)
                if len(messages) < self.batch and self.linger > 0:
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self._stopping.wait(), self.linger)
        finally:
            with contextlib.suppress(Exception):
                await pull.unsubscribe()  # type: ignore[attr-defined]

    async def _handle(self, messages: list[Msg]) -> None:
        streams: dict[str, list[_Item]] = {}
        for msg in messages:
            item = _Item(msg, msg.data)
            try:
                envelope = parse_envelope(msg.data)
            except CodecError:
                await self._give_up(item, "not an EventEnvelope")
                continue
            item.stream_id, item.version = envelope.stream_id, envelope.stream_version
            item.event_type = envelope.type
            streams.setdefault(item.stream_id, []).append(item)
        if not streams:
            return
        # One hop to the writer thread per fetched batch (a transaction per stream).
        written = await asyncio.to_thread(
            lambda: [(items, self._write(stream_id, items)) for stream_id, items in streams.items()]
        )
        for items, outcomes in written:
            for item, outcome in zip(items, outcomes, strict=True):
                await self._settle(item, outcome)

    def _write(self, stream_id: str, items: list[_Item]) -> list[str | Exception]:
        """Store one stream's items: in one transaction when they are consecutive
        versions (the usual case), else one by one. "ok" or the error, per item."""
        items.sort(key=lambda i: i.version)
        versions = [i.version for i in items]
        if versions == list(range(versions[0], versions[0] + len(items))) and versions[0] >= 1:
            try:
                self.store.append(stream_id, versions[0] - 1, [i.data for i in items])
                self._after_write(stream_id, items)
                return ["ok"] * len(items)
            except (StoreError, ValueError):
                pass  # sort out which of them is the problem, one by one
        outcomes: list[str | Exception] = []
        for item in items:
            try:
                self.store.append(stream_id, max(item.version - 1, 0), [item.data])
                self._after_write(stream_id, [item])
                outcomes.append("ok")
            except Exception as exc:
                outcomes.append(exc)
        return outcomes

    def _after_write(self, stream_id: str, items: list[_Item]) -> None:
        self.stored += len(items)
        if self.sign_head is not None and any(i.event_type == HAND_END_TYPE for i in items):
            try:
                self.sign_head(stream_id)
            except Exception:  # the events are stored; a missing signature shows in audits
                log.exception("sign_head_failed", stream_id=stream_id)

    async def _settle(self, item: _Item, outcome: str | Exception) -> None:
        if outcome == "ok":
            await item.msg.ack()
            return
        assert isinstance(outcome, Exception)
        if isinstance(outcome, VersionConflict) and outcome.actual < outcome.expected:
            await self._retry(item, "gap: an earlier event of the stream is not stored yet")
        elif isinstance(outcome, VersionConflict | DuplicateEventId | InvalidEnvelope | ValueError):
            await self._give_up(item, str(outcome))
        else:
            log.warning("store_failed", stream_id=item.stream_id, error=repr(outcome))
            await self._retry(item, repr(outcome))

    async def _retry(self, item: _Item, why: str) -> None:
        attempts = item.msg.metadata.num_delivered
        log.info("event_retry", stream_id=item.stream_id, version=item.version, why=why,
                 attempts=attempts)  # fmt: skip
        await item.msg.nak(delay=min(MAX_RETRY_DELAY, RETRY_DELAY * attempts))

    async def _give_up(self, item: _Item, why: str) -> None:
        log.error(
            "event_refused",
            stream_id=item.stream_id,
            version=item.version,
            stream_seq=item.msg.metadata.sequence.stream,
            why=why,
        )
        await item.msg.term()
