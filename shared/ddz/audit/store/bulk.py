"""``ddz audit --all``: every hand in the store, counted by verdict and failed check.

Hands are audited in batches, each hand on its own: a record that makes a check fail
(or crash) is that hand's failure, and the run goes on. Hands left incomplete for longer
than ``incomplete_after`` seconds (by their last event's time) are listed as stale.
Hands are audited in batches; with ``workers`` > 1 each batch goes to a worker process
that opens its own connection to the store, reads its hands in two queries and audits
them, so reading and replaying both use every core. Only each hand's one-line verdict
comes back to the parent.
"""

from __future__ import annotations

import datetime as dt
import gc
import multiprocessing
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from ddz.adapters.store import EventStore, SqlEventStore, create_store
from ddz.adapters.store.keys import Keyring, PlainKeys
from ddz.application.event_store import StreamSignature
from ddz.audit.account.report import AuditReport
from ddz.audit.checks.context import StoredRow
from ddz.audit.checks.results import FAILURE_NAMES, HASH_CHAIN, INCOMPLETE, Verdict
from ddz.audit.run import audit_hand
from ddz.audit.store.source import hand_stream_ids, read_hands

BATCH = 200  # hands per read and per task, at most
MIN_BATCH = 20
MAX_LISTED_FAILURES = 1000
DEFAULT_INCOMPLETE_AFTER = 3600.0
"""Seconds after its last event an incomplete hand is listed as stale (``--incomplete-after``)."""


@dataclass(frozen=True, slots=True)
class HandVerdict:
    hand_id: str
    rules: str  # the recorded rule set's name ("" when it could not be read)
    events: int
    verdict: Verdict
    failed_check: str | None
    message: str
    last_at: dt.datetime | None = None  # an incomplete hand's last event time

    @classmethod
    def of(cls, report: AuditReport) -> HandVerdict:
        first = report.events[0].event if report.events else None
        rules = getattr(getattr(first, "rules", None), "name", "")
        last_at = None
        if report.verdict is Verdict.INCOMPLETE and report.events:
            envelope = report.events[-1].envelope
            if envelope.HasField("occurred_at"):
                last_at = envelope.occurred_at.ToDatetime(tzinfo=dt.UTC)
        return cls(
            report.hand_id, rules, report.event_count, report.verdict, report.failed_check,
            report.message, last_at,
        )  # fmt: skip

    @classmethod
    def unreadable(cls, stream_id: str, exc: Exception) -> HandVerdict:
        """A hand whose stored record could not even be handed to the audit."""
        return cls(
            stream_id.removeprefix("hand-"), "", 0, Verdict.FAILED, HASH_CHAIN,
            f"{HASH_CHAIN} check failed: the stored record cannot be read "
            f"({type(exc).__name__}: {str(exc)[:200]})",
        )  # fmt: skip

    def to_json(self) -> dict[str, Any]:
        return {
            "hand_id": self.hand_id,
            "rules": self.rules,
            "verdict": self.verdict.value,
            "failed_check": self.failed_check,
            "message": self.message,
        }


@dataclass
class AllReport:
    hands: int = 0
    clean: int = 0
    incomplete: int = 0
    events: int = 0
    seconds: float = 0.0
    workers: int = 1
    failed_by_check: dict[str, int] = field(
        default_factory=lambda: {name: 0 for name in FAILURE_NAMES if name != INCOMPLETE}
    )
    by_rules: dict[str, int] = field(default_factory=dict)
    failures: list[HandVerdict] = field(default_factory=list)
    incomplete_after: float = DEFAULT_INCOMPLETE_AFTER
    now: float = 0.0  # the time stale hands are measured against (Unix seconds)
    stale: list[HandVerdict] = field(default_factory=list)

    @property
    def failed(self) -> int:
        return sum(self.failed_by_check.values())

    @property
    def hands_per_s(self) -> float:
        return self.hands / self.seconds if self.seconds > 0 else 0.0

    def add(self, verdict: HandVerdict) -> None:
        self.hands += 1
        self.events += verdict.events
        self.by_rules[verdict.rules] = self.by_rules.get(verdict.rules, 0) + 1
        if verdict.verdict is Verdict.CLEAN:
            self.clean += 1
        elif verdict.verdict is Verdict.INCOMPLETE:
            self.incomplete += 1
            last = verdict.last_at
            stale = last is not None and self.now - last.timestamp() > self.incomplete_after
            if stale and len(self.stale) < MAX_LISTED_FAILURES:
                self.stale.append(verdict)
        else:
            assert verdict.failed_check is not None
            self.failed_by_check[verdict.failed_check] = (
                self.failed_by_check.get(verdict.failed_check, 0) + 1
            )
            if len(self.failures) < MAX_LISTED_FAILURES:
                self.failures.append(verdict)

    def to_json(self) -> dict[str, Any]:
        return {
            "hands": self.hands,
            "clean": self.clean,
            "failed": self.failed,
            "incomplete": self.incomplete,
            "failed_by_check": dict(self.failed_by_check),
            "by_rules": dict(sorted(self.by_rules.items())),
            "events": self.events,
            "seconds": round(self.seconds, 3),
            "hands_per_s": round(self.hands_per_s, 1),
            "workers": self.workers,
            "failures": [f.to_json() for f in self.failures],
            "incomplete_after": self.incomplete_after,
            "stale_incomplete": [self._stale_json(v) for v in self.stale],
        }

    def _stale_json(self, verdict: HandVerdict) -> dict[str, Any]:
        assert verdict.last_at is not None
        return {
            "hand_id": verdict.hand_id,
            "rules": verdict.rules,
            "events": verdict.events,
            "last_event_at": verdict.last_at.isoformat(),
            "idle_seconds": round(self.now - verdict.last_at.timestamp(), 1),
            "message": verdict.message,
        }


def audit_streams(
    store: EventStore, stream_ids: Sequence[str], keys: Keyring | bytes, key_id: str = "k1"
) -> list[HandVerdict]:
    """Audit the hands of ``stream_ids`` in this process, each on its own."""
    keyring = Keyring.of_hmac(keys, key_id) if isinstance(keys, bytes) else keys
    try:
        records = list(read_hands(store, stream_ids))
    except Exception:
        if len(stream_ids) == 1:
            raise
        # One hand's rows break the batch's read: read them one by one to find it.
        return [v for stream_id in stream_ids for v in _audit_alone(store, stream_id, keyring)]
    return [_verdict(record.events, record.signatures, keyring) for record in records]


def _audit_alone(store: EventStore, stream_id: str, keys: Keyring) -> list[HandVerdict]:
    try:
        records = list(read_hands(store, [stream_id]))
    except Exception as exc:
        return [HandVerdict.unreadable(stream_id, exc)]
    return [_verdict(record.events, record.signatures, keys) for record in records]


def _verdict(
    events: Sequence[StoredRow], signatures: Sequence[StreamSignature], keys: Keyring
) -> HandVerdict:
    try:
        return HandVerdict.of(audit_hand(events, keys, signatures))
    except Exception as exc:  # audit_hand fails checks, not runs; this is a last guard
        return HandVerdict.unreadable(events[0].stream_id if events else "?", exc)


def _batches(items: Sequence[str], size: int) -> Iterator[Sequence[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _shrinking_batches(items: Sequence[str], workers: int) -> Iterator[Sequence[str]]:
    """Big batches first (few reads), then smaller and smaller ones: each is a share of
    what is left, so the workers run out of work together instead of one finishing a
    long batch alone at the end (guided self-scheduling)."""
    start = 0
    while start < len(items):
        size = max(MIN_BATCH, min(BATCH, (len(items) - start) // (2 * workers)))
        yield items[start : start + size]
        start += size


# -- worker processes: one store connection each ------------------------------------------

_YOUNG_COLLECTION_EVERY = 50_000  # allocations (the interpreter's default: 700)
_worker_store: SqlEventStore | None = None
_worker_keys = Keyring()


def _init_worker(database_url: str, keys: PlainKeys) -> None:
    global _worker_store, _worker_keys
    _worker_store = create_store(database_url)
    _worker_keys = Keyring.from_plain(keys)
    # The worker's heap so far (modules, no garbage: the parent's by fork, its own imports
    # by spawn) is frozen out of the cycle collector, which would otherwise trace all of
    # it again and again (~6% of a worker's time). The audit makes many short-lived
    # acyclic values, so young collections run less often too: each found nearly nothing
    # to free.
    gc.freeze()
    gc.set_threshold(_YOUNG_COLLECTION_EVERY, *gc.get_threshold()[1:])


def _audit_batch(stream_ids: Sequence[str]) -> list[HandVerdict]:
    assert _worker_store is not None, "the pool initializer did not run"
    return audit_streams(_worker_store, stream_ids, _worker_keys)


def _context() -> multiprocessing.context.BaseContext:
    """fork, the cheapest start (nothing to re-import), only from a process of one
    thread: a child forked while another thread holds a lock (SQLite's allocator, seen in
    a process with a recorder's writer thread) waits for it forever. Else spawn."""
    forkable = "fork" in multiprocessing.get_all_start_methods() and _threads() == 1
    return multiprocessing.get_context("fork" if forkable else "spawn")


def _threads() -> int:
    """This process's threads, gRPC's and other native ones included where the system
    lists them."""
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return threading.active_count()


def default_workers() -> int:
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1)


def audit_all(
    database_url: str,
    keys: Keyring | bytes,
    key_id: str = "k1",
    *,
    workers: int = 1,
    limit: int | None = None,
    batch: int | None = None,
    on_progress: Callable[[int, int], None] | None = None,
    open_store: EventStore | None = None,
    incomplete_after: float = DEFAULT_INCOMPLETE_AFTER,
    now: float | None = None,
) -> AllReport:
    """Audit every hand of the store at ``database_url`` (the oldest ``limit``) with
    ``keys`` (a ``Keyring``, or an HMAC key's bytes named ``key_id``; without the
    producers' event keyring every hand fails ``producer_signature``).

    ``on_progress(done, total)`` is called after each batch. ``open_store``: an open store
    to use when ``workers`` is 1 (the recorder service passes its own). Incomplete hands
    whose last event is more than ``incomplete_after`` seconds before ``now`` (default:
    the wall clock) are listed in ``stale``."""
    started = time.perf_counter()
    keyring = Keyring.of_hmac(keys, key_id) if isinstance(keys, bytes) else keys
    own = open_store is None
    store = open_store if open_store is not None else create_store(database_url)
    try:
        stream_ids = hand_stream_ids(store, limit)
        report = AllReport(
            workers=workers, incomplete_after=incomplete_after,
            now=time.time() if now is None else now,
        )  # fmt: skip
        if batch is None:
            batches = list(_shrinking_batches(stream_ids, max(workers, 1)))
        else:
            batches = list(_batches(stream_ids, batch))
        results: Iterable[list[HandVerdict]]
        if workers <= 1 or len(batches) <= 1:
            results = (audit_streams(store, ids, keyring) for ids in batches)
            _collect(report, results, len(stream_ids), on_progress)
        else:
            if own:
                store.close()  # the children open their own; no pooled sockets across fork
            with ProcessPoolExecutor(
                max_workers=workers,
                mp_context=_context(),
                initializer=_init_worker,
                initargs=(database_url, keyring.to_plain()),
            ) as pool:
                results = pool.map(_audit_batch, batches)
                _collect(report, results, len(stream_ids), on_progress)
    finally:
        if own:
            store.close()
    report.seconds = time.perf_counter() - started
    return report


def _collect(
    report: AllReport,
    results: Iterable[list[HandVerdict]],
    total: int,
    on_progress: Callable[[int, int], None] | None,
) -> None:
    for verdicts in results:
        for verdict in verdicts:
            report.add(verdict)
        if on_progress is not None:
            on_progress(report.hands, total)
