"""The recorder's use cases, on the ``EventStore`` port: store what arrived from the bus,
and read streams and pages back (the audits of hands from the store are
``adapters.audits``).

Storing decides, per arrived event, what the bus should do with it:

- ``STORED``: stored now, or already stored with the same bytes (a redelivery, a
  duplicate publish): ack;
- ``RETRY``: a gap (an earlier event of its stream is not stored yet), or the store
  failed for a reason of its own (database unreachable): retried later, without a
  limit, since an event must not be lost because the database was down for a while;
- ``REFUSED``: it can never be stored (not an envelope, its version taken by another
  event, its id taken by other bytes): evidence of a bug or a second writer, kept on
  the bus for inspection.

Store calls are blocking: each use case makes them in a worker thread.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum

import structlog
from ddz.application.bad_events import BadEvent, CodecError
from ddz.application.errors import Reason, Refusal
from ddz.application.event_store import (
    GENESIS_HASH,
    Append,
    DuplicateEventId,
    EventStore,
    InvalidEnvelope,
    StoredEvent,
    VersionConflict,
)
from ddz.application.streams import stream_parts

from .ports import SignedEnvelopes

log = structlog.get_logger("ddz.recorder")

HAND_END_TYPE = "seed_revealed"  # the last event of a hand: its chain head is signed
DEFAULT_PAGE = 1000
MAX_PAGE = 10_000
PAGE_BYTES = 512 * 1024
"""A page stops growing at this many envelope bytes, so an answer stays well under the
gRPC message limit whatever the events hold."""


class Verdict(Enum):
    STORED = "stored"
    RETRY = "retry"
    REFUSED = "refused"


@dataclass(frozen=True, slots=True)
class Outcome:
    """What became of one arrived event (``stream_id``/``version`` as far as known)."""

    verdict: Verdict
    stream_id: str = ""
    version: int = 0
    why: str = ""


STORED = Outcome(Verdict.STORED)


@dataclass
class _Arrival:
    index: int
    data: bytes
    stream_id: str
    version: int
    event_type: str
    trace_id: str | None = None


class Record:
    """Stores a fetched batch in one transaction for all its streams, stream by stream
    when that fails (the store is the bottleneck of the whole suite at full speed);
    ``sign_head(stream_id)`` signs a stream's head once its hand's last event is
    stored."""

    def __init__(
        self,
        store: EventStore,
        sign_head: Callable[[str], None] | None = None,
        *,
        keyring: SignedEnvelopes,
        on_stored: Callable[[Sequence[tuple[str, Sequence[bytes]]]], None] | None = None,
    ) -> None:
        self.store = store
        self.sign_head = sign_head
        # The desk's hand index, kept as events are stored: once per fetched batch, with
        # each stream's stored events (``HandIndex.apply_many``).
        self.on_stored = on_stored
        self.keyring = keyring  # nothing is stored that its producer did not sign
        # The chains this process verified and stored from their first event: the
        # background audit need not verify those signatures again (``VerifiedChains``).
        self.chains = VerifiedChains()
        self.stored = 0  # events written (not counting redeliveries)

    async def __call__(
        self, arrived: Sequence[bytes], trace_ids: Sequence[str | None] | None = None
    ) -> list[Outcome]:
        """One outcome per arrived envelope, in the order they arrived. ``trace_ids``: the
        trace each arrived in (kept with it), one per envelope when given."""
        outcomes: list[Outcome] = [STORED] * len(arrived)
        streams: dict[str, list[_Arrival]] = {}
        for index, data in enumerate(arrived):
            try:
                envelope = self.keyring.open(data)
            except BadEvent as exc:  # refused: kept on the bus as evidence, never stored
                outcomes[index] = Outcome(
                    Verdict.REFUSED, exc.stream_id, exc.version, f"{exc.why}: {exc}"
                )
                continue
            except CodecError:
                outcomes[index] = Outcome(Verdict.REFUSED, why="not an EventEnvelope")
                continue
            arrival = _Arrival(
                index,
                data,
                envelope.stream_id,
                envelope.stream_version,
                envelope.type,
                trace_ids[index] if trace_ids is not None else None,
            )
            streams.setdefault(arrival.stream_id, []).append(arrival)
        if streams:
            # One hop to the writer thread per fetched batch.
            written = await asyncio.to_thread(self._write_all, streams)
            for items, results in zip(streams.values(), written, strict=True):
                for item, result in zip(items, results, strict=True):
                    outcomes[item.index] = _outcome(item, result)
        return outcomes

    def _write_all(self, streams: dict[str, list[_Arrival]]) -> list[list[Exception | None]]:
        """Store each stream's items: the streams whose items are consecutive versions
        (the usual case) in one transaction for them all, and if that fails, or for the
        others, stream by stream; then fold what was stored into the index at once."""
        stored: list[tuple[str, Sequence[bytes]]] = []
        for items in streams.values():
            items.sort(key=lambda i: i.version)
        whole = {stream_id: items for stream_id, items in streams.items() if _consecutive(items)}
        done: dict[str, list[Exception | None]] = {}
        try:
            rows = self.store.append_streams([
                Append(stream_id, items[0].version - 1, [i.data for i in items],
                       [i.trace_id for i in items])
                for stream_id, items in whole.items()
            ])  # fmt: skip
        except Exception:
            pass  # sort out which stream is the problem (or retry them), one by one
        else:
            for (stream_id, items), appended in zip(whole.items(), rows, strict=True):
                self._after_write(stream_id, items, appended, stored)
                done[stream_id] = [None] * len(items)
        written = [
            done[stream_id] if stream_id in done else self._write(stream_id, items, stored)
            for stream_id, items in streams.items()
        ]
        self._index(stored)
        return written

    def _index(self, stored: list[tuple[str, Sequence[bytes]]]) -> None:
        if stored and self.on_stored is not None:
            try:
                self.on_stored(stored)
            except Exception:  # the events are stored; the index is rebuilt from them
                log.exception("hand_index_failed", streams=[stream for stream, _ in stored])

    def _write(
        self, stream_id: str, items: list[_Arrival], stored: list[tuple[str, Sequence[bytes]]]
    ) -> list[Exception | None]:
        """Store one stream's items (sorted by version): in one transaction when they
        are consecutive versions (the usual case), else one by one. None (stored) or the
        error, per item, in the order of ``items``; what was stored is added to
        ``stored``."""
        if _consecutive(items):
            try:
                written = self.store.append(
                    stream_id,
                    items[0].version - 1,
                    [i.data for i in items],
                    [i.trace_id for i in items],
                )
                self._after_write(stream_id, items, written, stored)
                return [None] * len(items)
            except Exception:
                pass  # sort out which of them is the problem (or retry them), one by one
        results: list[Exception | None] = []
        for item in items:
            try:
                written = self.store.append(
                    stream_id, max(item.version - 1, 0), [item.data], [item.trace_id]
                )
                self._after_write(stream_id, [item], written, stored)
                results.append(None)
            except Exception as exc:
                results.append(exc)
        return results

    def _after_write(
        self,
        stream_id: str,
        items: list[_Arrival],
        written: Sequence[StoredEvent],
        stored: list[tuple[str, Sequence[bytes]]],
    ) -> None:
        self.stored += len(items)
        stored.append((stream_id, [i.data for i in items]))
        self.chains.extend(stream_id, written)
        if self.sign_head is not None and any(i.event_type == HAND_END_TYPE for i in items):
            try:
                self.sign_head(stream_id)
            except Exception:  # the events are stored; a missing signature shows in audits
                log.exception("sign_head_failed", stream_id=stream_id)


class VerifiedChains:
    """The head (version, hash) of each stream whose every event this process verified
    (``EventKeyring.open``: the producer's signature) and saw stored, from version 1 on,
    each row's ``prev_hash`` the head it knew: so the stored chain up to that head is
    the bytes it verified, whatever is done to the store later (the audit recomputes the
    chain from the stored bytes; ``ddz.audit.checks.provenance``). In memory only: after a
    restart, or for a stream whose chain it did not follow from the start (another
    writer before it, a break in the chain), it knows nothing and the audit verifies
    every signature. Bounded: the oldest streams are forgotten first."""

    def __init__(self, limit: int = 50_000) -> None:
        self.limit = limit
        self._heads: dict[str, tuple[int, str]] = {}
        self._lock = threading.Lock()

    def extend(self, stream_id: str, written: Sequence[StoredEvent]) -> None:
        """``written``: the rows ``append`` returned for events verified on arrival (a
        row stored before with the same bytes included)."""
        if not written:
            return
        with self._lock:
            head = self._heads.pop(stream_id, None)
        for row in written:
            if head is not None and row.stream_version <= head[0]:
                continue  # stored before with these bytes (a redelivery): already in
            known = (
                row.stream_version == 1 and row.prev_hash == GENESIS_HASH
                if head is None
                else row.stream_version == head[0] + 1 and row.prev_hash == head[1]
            )
            if not known:
                return  # not the chain followed (or not from its start): forget it
            head = (row.stream_version, row.hash)
        assert head is not None
        with self._lock:  # the writer extends, the auditing thread reads and forgets
            self._heads[stream_id] = head
            if len(self._heads) > self.limit:
                del self._heads[next(iter(self._heads))]

    def head(self, stream_id: str) -> tuple[int, str] | None:
        """The verified head of ``stream_id``, None when this process does not know it."""
        with self._lock:
            return self._heads.get(stream_id)

    def forget(self, stream_id: str) -> None:
        with self._lock:
            self._heads.pop(stream_id, None)


def _consecutive(items: list[_Arrival]) -> bool:
    """The (sorted) items are versions n, n+1, ... of their stream, from n >= 1."""
    first = items[0].version
    return first >= 1 and [i.version for i in items] == list(range(first, first + len(items)))


def _outcome(item: _Arrival, error: Exception | None) -> Outcome:
    if error is None:
        return STORED
    if isinstance(error, VersionConflict) and error.actual < error.expected:
        verdict, why = Verdict.RETRY, "gap: an earlier event of the stream is not stored yet"
    elif isinstance(error, VersionConflict | DuplicateEventId | InvalidEnvelope | ValueError):
        verdict, why = Verdict.REFUSED, str(error)
    else:
        log.warning("store_failed", stream_id=item.stream_id, error=repr(error))
        verdict, why = Verdict.RETRY, repr(error)
    return Outcome(verdict, item.stream_id, item.version, why)


class Reads:
    """The store read back: one stream, or every event in pages."""

    def __init__(self, store: EventStore) -> None:
        self.store = store

    async def stream(self, stream_id: str, after_version: int) -> list[StoredEvent]:
        try:
            stream_parts(stream_id)
        except ValueError as exc:
            raise Refusal.invalid(str(exc), Reason.UNKNOWN_STREAM) from None
        events = await asyncio.to_thread(self.store.read_stream, stream_id, after_version)
        if not events and after_version == 0:
            raise Refusal.not_found(Reason.UNKNOWN_STREAM, f"no events in stream {stream_id!r}")
        return events

    async def page(self, after_position: int, limit: int) -> tuple[list[StoredEvent], int]:
        """Events after ``after_position`` (``limit`` of them, 0: a default page, never
        more than ``MAX_PAGE`` or about ``PAGE_BYTES``) and the highest position stored."""
        limit = min(limit or DEFAULT_PAGE, MAX_PAGE)
        return await asyncio.to_thread(self._page, after_position, limit)

    def _page(self, after: int, limit: int) -> tuple[list[StoredEvent], int]:
        max_position = self.store.max_position()
        events = self.store.read_all(after, limit)
        size = 0
        for index, event in enumerate(events):
            size += len(event.envelope)
            if size > PAGE_BYTES and index > 0:
                return events[:index], max_position
        return events, max_position
