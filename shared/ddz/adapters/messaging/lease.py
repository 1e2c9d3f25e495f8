"""Instance leases on NATS KV: one holder at a time for work only one instance may do.

A ``Lease`` is one key of the KV bucket ``ddz_leases``; its value is the holder's id,
and each write carries the lease's time to live as its own per-message TTL (``Nats-TTL``,
nats-server 2.11, which the suite requires anyway), so leases of different TTLs share
one bucket. It is taken with a write expecting no live entry (KV ``create``) and
renewed with a write expecting the revision the holder last wrote (KV ``update``: only
if nobody wrote since), every ``ttl / 8``. So:

- a holder that dies (killed, cut off) stops renewing; its entry ages out of the
  bucket one TTL after its last renewal, and a standby's next ``create`` takes it;
- a holder whose renewal is refused (someone else's revision) counts the lease as lost
  at once and stops acting (``on_lost``); one whose renewal gets no answer (NATS
  unreachable, a stream leader being elected after a node died) keeps trying, every
  ``UNANSWERED_RETRY``, and in any case ``held`` turns false, and the lease is lost,
  ``(1 - SAFETY) * ttl`` after the start of its last successful renewal, by its own
  clock, before any standby can have taken over; at the default TTL that is later
  than the longest election of a new leader for the bucket's stream (``ELECTION``,
  ``ddz.adapters.messaging.election``: the one policy of every write that rides an election out);
- a holder that stops cleanly deletes its entry (with its revision), so a standby takes
  over within ``STANDBY_POLL`` instead of one TTL;
- a holder that died on this host (its holder id names this host and a pid that no
  longer runs, ``holder_is_gone``) is taken over at once, with a write expecting its
  entry's revision: a service restarted by its supervisor does not wait one TTL for
  its own earlier run's lease.

This is the usual NATS KV election (create to take, update with the last revision to
renew, a TTL to expire). ``want`` lets a holder give a lease up while it runs (the bot's
shares of partitions). The store's and the bus's own single-writer checks
stay in place beneath it: a lease bounds who acts, it is not what keeps data correct.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import socket
import time
from collections.abc import Awaitable, Callable

import nats.errors
import nats.js.errors
import structlog
from nats.js.api import Header
from nats.js.kv import KeyValue

from ddz.adapters.messaging.bus import EventBus
from ddz.adapters.messaging.election import ELECTION, UNANSWERED_RETRY
from ddz.adapters.telemetry import metrics
from ddz.application.tasks import cancel_and_wait

log = structlog.get_logger("ddz.lease")

BUCKET = "ddz_leases"
DEFAULT_TTL = 20.0
"""Seconds a lease lives after its last renewal (``DDZ_LEASE_TTL``): how long a standby
waits for a holder that died on another host. Long enough that a holder, renewing every
TTL/8 and giving up a quarter of it (``SAFETY``), still holds the lease 12.5 s after its
last renewal: more than an ``ELECTION``."""
RENEWALS_PER_TTL = 8
"""Renewals per TTL."""
STANDBY_POLL = 1.0
"""Seconds at most between a standby's attempts to take the lease (one refused write
each): a released lease is taken within this, an expired one within this of its end."""
SAFETY = 0.25
"""Fraction of the TTL a holder gives up before its entry can expire: its own clock
and the server's may run apart by that much without two holders acting."""

WRONG_LAST_SEQUENCE = (10071, 10164)  # JSStreamWrongLastSequence(Constant)Err

Hook = Callable[[], Awaitable[None] | None]


def instance_id(service: str) -> str:
    """A holder id unique to this process and service instance: host, pid, random."""
    return f"{service}-{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(3)}"


_HOLDERS_HERE: set[str] = set()
"""The holder ids of this process's leases (several instances may share a process)."""


def holder_is_gone(value: bytes) -> bool:
    """True when the holder id ``value`` (``instance_id``, optionally ``@address`` after
    it) names a process of this host that no longer runs, or this very process's pid
    when no lease of this process holds that id (an earlier run of a restarted container,
    whose pid is the same): its entry is left to expire, but nobody renews it, so it is
    taken at once rather than one TTL later. A holder on another host is never judged: it
    may be alive."""
    ident = value.decode("utf-8", "replace").split("@", 1)[0]
    if ident in _HOLDERS_HERE:
        return False
    parts = ident.rsplit("-", 2)
    if len(parts) != 3 or not parts[1].isdigit():
        return False
    service_and_host, pid = parts[0], int(parts[1])
    if not service_and_host.endswith(f"-{socket.gethostname()}"):
        return False
    if pid == os.getpid():
        return True  # not one of ours (above): a run before this one
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False  # a process of someone else's: alive
    return False


async def lease_bucket(bus: EventBus, replicas: int = 1) -> KeyValue:
    """The bucket of leases, made when missing (no bucket TTL: each entry has its own)."""
    return await bus.bucket(BUCKET, replicas)


class Lease:
    """The lease ``name`` as ``holder`` would hold it: ``start()`` keeps trying to take
    it and, once taken, renews it; ``on_taken``/``on_lost`` are called as that changes;
    ``stop()`` releases it. ``held``: this instance may act now."""

    def __init__(
        self,
        bus: EventBus,
        name: str,
        holder: str,
        *,
        service: str,
        ttl: float = DEFAULT_TTL,
        replicas: int = 1,
        on_taken: Hook | None = None,
        on_lost: Hook | None = None,
        want: Callable[[], bool] = lambda: True,
    ) -> None:
        self.bus = bus
        self.name = name
        self.holder = holder
        _HOLDERS_HERE.add(holder.split("@", 1)[0])
        self.service = service
        if ttl < 1:
            raise ValueError(f"a lease lives at least a second (Nats-TTL), got {ttl}")
        self.ttl = float(int(ttl))  # Nats-TTL is whole seconds
        self.replicas = replicas
        self.on_taken = on_taken
        self.on_lost = on_lost
        self.want = want  # asked each round: False lets a held lease go (shares of work)
        self.answering = False  # the last KV call got an answer (taken or refused)
        self._kv: KeyValue | None = None
        self._revision: int | None = None  # of our entry while we hold the lease
        self._deadline = 0.0  # time.monotonic() after which we no longer count as holder
        self._task: asyncio.Task[None] | None = None
        self._stopping = asyncio.Event()

    def __repr__(self) -> str:
        return f"Lease({self.name!r}, holder={self.holder!r}, held={self.held})"

    @property
    def held(self) -> bool:
        """Taken, renewed, and not yet near the end of its TTL by our own clock."""
        if self._revision is None:
            return False
        return time.monotonic() < self._deadline

    @property
    def held_until(self) -> float | None:
        """The ``time.monotonic()`` at which ``held`` turns false unless a renewal lands
        first (each one pushes it on); None when not held."""
        return self._deadline if self.held else None

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    @property
    def interval(self) -> float:
        return self.ttl / RENEWALS_PER_TTL

    @property
    def grace(self) -> float:
        """The least time the lease stays held after NATS stops answering: its last
        renewal may have begun one interval before."""
        return self.ttl * (1 - SAFETY) - self.interval

    async def start(self) -> None:
        """Open the bucket and try to take the lease once now (so a lone instance holds
        it when ``start`` returns), then keep at it in the background."""
        if self.replicas > 1 and self.grace < ELECTION:
            log.warning("lease_shorter_than_an_election", lease=self.name, ttl_s=self.ttl,
                        grace_s=round(self.grace, 2), election_s=ELECTION,
                        then="a NATS node's death may cost this lease")  # fmt: skip
        self._kv = await lease_bucket(self.bus, self.replicas)
        self._stopping.clear()
        await self._tick()
        self._task = asyncio.create_task(self._run(), name=f"lease:{self.name}")

    async def stop(self) -> None:
        """Stop renewing and release the lease if held (a standby takes it at once)."""
        self._stopping.set()
        await cancel_and_wait([self._task])
        self._task = None
        await self._release()

    async def _release(self) -> None:
        """Give the lease up: our entry deleted (with its revision), so the next holder
        need not wait for it to expire."""
        revision, self._revision = self._revision, None
        await self._delete(revision)

    async def _give_up(self) -> None:
        """Let go of a lease we no longer want: stop acting first (``on_lost``, which
        already sees it not ``held``), then delete our entry for the next holder (who
        cannot take it before, whatever ``on_lost`` awaits)."""
        revision, self._revision = self._revision, None
        await _call_safely(self.on_lost, self)
        await self._delete(revision)

    async def _delete(self, revision: int | None) -> None:
        if revision is not None:
            metrics.LEASES_HELD.labels(self.service).dec()
            if self._kv is not None and self.bus.connected:
                with contextlib.suppress(nats.errors.Error, TimeoutError):
                    await self._kv.delete(self.name, last=revision)
            log.info("lease_released", lease=self.name, holder=self.holder)

    async def wait_held(self, timeout: float) -> bool:
        """Wait until the lease is held (True) or ``timeout`` seconds pass (False)."""
        deadline = time.monotonic() + timeout
        while not self.held and time.monotonic() < deadline:
            await asyncio.sleep(min(0.05, self.interval))
        return self.held

    async def _run(self) -> None:
        while not self._stopping.is_set():
            holding = self._revision is not None
            if not holding:
                pause = min(self.interval, STANDBY_POLL)
            elif not self.answering:
                pause = min(self.interval, UNANSWERED_RETRY)
            else:
                pause = self.interval
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(pause):
                    await self._stopping.wait()
            if not self._stopping.is_set():
                await self._tick()

    async def _tick(self) -> None:
        """Renew the lease if held, else try to take it; lose it on any failure."""
        assert self._kv is not None
        asked_at = time.monotonic()
        was_held = self._revision is not None
        if was_held and not self.held:  # the renewals fell behind (a blocked loop)
            await self._lose("renewal overdue")
            was_held = False
        if not self.want():
            if was_held:
                await self._give_up()
            return
        try:
            try:
                async with asyncio.timeout(self.interval):
                    revision = await self._write(was_held)
            except nats.js.errors.NoStreamResponseError:
                if was_held:
                    raise  # no answer while renewing: likely a leader being elected
                # No bucket (a server that restarted without its store): made again.
                async with asyncio.timeout(self.interval):
                    self._kv = await lease_bucket(self.bus, self.replicas)
                async with asyncio.timeout(self.interval):
                    revision = await self._write(was_held)
        except (nats.errors.Error, TimeoutError, OSError) as exc:
            refused = isinstance(exc, nats.js.errors.KeyWrongLastSequenceError)
            first_unanswered = self.answering and not refused
            self.answering = refused
            if was_held and (refused or not self.held):
                await self._lose(type(exc).__name__)
            elif was_held and first_unanswered:
                # NATS did not answer (a node died, a stream leader is being elected): the
                # entry lives on, so the lease is still ours until our own deadline, before
                # which nobody can take it; the next renewal may get through. Said once a
                # silence (renewals then come every UNANSWERED_RETRY).
                log.warning("lease_renewal_failed", lease=self.name, holder=self.holder,
                            error=type(exc).__name__,
                            held_for_s=round(self._deadline - time.monotonic(), 2))  # fmt: skip
            return
        if was_held and not self.answering:
            log.info("lease_renewed_again", lease=self.name, holder=self.holder,
                     held_for_s=round(self._deadline - time.monotonic(), 2))  # fmt: skip
        self.answering = True
        self._revision = revision
        self._deadline = asked_at + self.ttl * (1 - SAFETY)
        if not was_held:
            metrics.LEASES_HELD.labels(self.service).inc()
            log.info("lease_taken", lease=self.name, holder=self.holder, ttl_s=self.ttl)
            try:
                await _call(self.on_taken)
            except Exception:  # could not start acting: not the holder (tried again)
                log.exception("lease_not_acted_on", lease=self.name, holder=self.holder)
                await self._lose("on_taken failed")

    async def _write(self, renewing: bool) -> int:
        assert self._kv is not None
        value = self.holder.encode()
        if renewing:
            assert self._revision is not None
            try:
                return await self._put(value, last=self._revision)
            except nats.js.errors.KeyWrongLastSequenceError:
                # Our last renewal was written but its answer lost (NATS failed over):
                # the entry holds our id at a revision we were not told. Nobody else
                # writes our id, so it is still ours.
                entry = await self._kv.get(self.name)
                if entry.value != value or entry.revision is None:
                    raise
                return await self._put(value, last=entry.revision)
        try:
            return await self._put(value, last=0)
        except nats.js.errors.KeyWrongLastSequenceError:
            # A live entry, or the tombstone of a released one (taken over its
            # revision), or ours from before a lost renewal (nobody wrote since, so it
            # is still ours), or another holder's (refused again).
            try:
                entry = await self._kv.get(self.name)
            except nats.js.errors.KeyNotFoundError as gone:  # a tombstone (or expired since)
                if gone.entry is None or gone.entry.revision is None:
                    raise
                return await self._put(value, last=gone.entry.revision)
            if entry.revision is None:
                raise
            if entry.value != value and not holder_is_gone(entry.value or b""):
                raise
            if entry.value != value:
                log.info("lease_taken_from_dead_holder", lease=self.name,
                         dead=(entry.value or b"").decode("utf-8", "replace"))  # fmt: skip
            return await self._put(value, last=entry.revision)

    async def _put(self, value: bytes, *, last: int) -> int:
        """Write ``value`` if the key's last revision is ``last`` (0: no live entry),
        to live ``ttl`` seconds. ``KeyWrongLastSequenceError`` if it is not."""
        assert self._kv is not None
        headers = {Header.EXPECTED_LAST_SUBJECT_SEQUENCE.value: str(last)}
        try:
            ack = await self.bus.js.publish(
                f"$KV.{BUCKET}.{self.name}", value, headers=headers, msg_ttl=self.ttl
            )
        except nats.js.errors.APIError as exc:
            if exc.err_code in WRONG_LAST_SEQUENCE:
                raise nats.js.errors.KeyWrongLastSequenceError(
                    description=exc.description
                ) from None
            raise
        return int(ack.seq)

    async def _lose(self, why: str) -> None:
        self._revision = None
        metrics.LEASES_HELD.labels(self.service).dec()
        log.warning("lease_lost", lease=self.name, holder=self.holder, why=why)
        await _call_safely(self.on_lost, self)


async def _call(hook: Hook | None) -> None:
    if hook is not None:
        result = hook()
        if result is not None:
            await result


async def _call_safely(hook: Hook | None, lease: Lease) -> None:
    try:
        await _call(hook)
    except Exception:  # stopping failed: logged; the lease is not ours either way
        log.exception("lease_loss_not_handled", lease=lease.name, holder=lease.holder)
