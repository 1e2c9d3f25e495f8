"""Keeping the ``DDZ`` stream fit after a start or a reconnection: created with the
suite's configuration or an existing one raised to what correctness needs, restored after
the server lost its store, and the consumers kept by the bus verified after it."""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import replace
from typing import Any, Protocol

import nats.errors
import nats.js.errors
import structlog
from nats.aio.client import Client
from nats.js import JetStreamContext
from nats.js.api import StorageType, StreamConfig

from ddz.adapters.messaging.server import (
    ATOMIC_SERVER_VERSION,
    STREAM_NAME_IN_USE_ERR,
    UnsupportedServer,
    check_server_version,
)
from ddz.adapters.messaging.subjects import ALL_SUBJECTS

log = structlog.get_logger("ddz.bus")


class KeptConsumer(Protocol):
    """A consumer the bus verifies after a reconnection (``EventBus.keep``): the server
    may have restarted without its store and lost it."""

    def unverified(self) -> None:
        """The connection came back: unhealthy until ``verify`` answers."""

    async def verify(self) -> bool:
        """Whether the consumer is there, after creating it again if it was lost."""
        ...


class StreamUpkeep:
    """The stream upkeep of ``EventBus`` (its state is set up by ``EventBus.__init__``)."""

    nc: Client
    js: JetStreamContext
    stream: str
    closing: bool
    _atomic: bool | None
    _stream_options: dict[str, Any]
    _told_kept: bool
    _restoring: asyncio.Task[bool] | None
    _kept: list[KeptConsumer]

    async def ensure_stream(
        self,
        *,
        duplicate_window: float = 120.0,
        max_age: float | None = None,
        max_bytes: int | None = None,
        replicas: int = 1,
        storage: StorageType = StorageType.FILE,
    ) -> None:
        """Create the stream with this configuration, or make an existing one fit for us.

        A new stream gets ``replicas`` copies and the retention limits (``max_age``
        seconds, ``max_bytes``; None: no limit). An existing stream keeps its replicas,
        limits and storage: an operator may have scaled it to R3 or changed its
        retention, and a starting service must not undo that. Only what the suite's
        correctness needs is raised there: our subjects, the duplicate window (at least
        ``duplicate_window``, so a retried publish is still recognised), atomic batches,
        direct gets (``allow_direct``: a read of one subject's last message, which a NATS
        permission can pin to that subject, unlike ``STREAM.MSG.GET``).
        A difference it leaves alone is logged once per bus (``stream_config_kept``).

        Atomic batch publishing is asked for on nats-server >= 2.12 (an older server
        lacks it, and ``atomic_batches`` then says no). A server older than
        ``MIN_SERVER_VERSION`` is refused (``UnsupportedServer``). ``restore_stream``
        does it again with the same configuration."""
        self._stream_options = {
            "duplicate_window": duplicate_window, "max_age": max_age, "max_bytes": max_bytes,
            "replicas": replicas, "storage": storage,
        }  # fmt: skip
        server = self.nc.connected_server_version
        url = self.nc.connected_url
        version = (server.major, server.minor, server.patch)
        check_server_version(version, url.geturl() if url is not None else "")
        atomic = version >= ATOMIC_SERVER_VERSION
        if max_age is not None:
            duplicate_window = min(duplicate_window, max_age)  # the server's own rule
        wanted = StreamConfig(
            name=self.stream,
            subjects=[ALL_SUBJECTS],
            storage=storage,
            num_replicas=replicas,
            duplicate_window=duplicate_window,
            max_age=max_age,
            max_bytes=max_bytes,
            allow_atomic=True if atomic else None,
            allow_direct=True,  # reads pinned to a subject (settlement's: nats_auth)
        )
        try:
            info = await self.js.stream_info(self.stream)
        except nats.js.errors.NotFoundError:
            try:
                await self.js.add_stream(wanted)
                return
            except nats.js.errors.BadRequestError as exc:
                if exc.err_code != STREAM_NAME_IN_USE_ERR:
                    raise
                # Another service created it a moment ago: fit that one.
                info = await self.js.stream_info(self.stream)
        await self._fit_stream(info.config, wanted)

    async def _fit_stream(self, have: StreamConfig, wanted: StreamConfig) -> None:
        """Raise in the existing stream ``have`` what correctness needs of ``wanted``;
        leave the rest, and log what differs once."""
        raised: dict[str, Any] = {}
        subjects = list(have.subjects or [])
        if ALL_SUBJECTS not in subjects:
            raised["subjects"] = [*subjects, ALL_SUBJECTS]
        window = wanted.duplicate_window or 0
        if _limit(have.max_age) is not None:
            window = min(window, have.max_age or 0)  # no longer than the stream keeps
        if (have.duplicate_window or 0) < window:
            raised["duplicate_window"] = window
        if wanted.allow_atomic and not have.allow_atomic:
            raised["allow_atomic"] = True
        if wanted.allow_direct and not have.allow_direct:
            raised["allow_direct"] = True
        kept = {
            name: {"stream": mine, "ours": theirs}
            for name, mine, theirs in (
                ("replicas", have.num_replicas or 1, wanted.num_replicas or 1),
                ("max_age", _limit(have.max_age), _limit(wanted.max_age)),
                ("max_bytes", _limit(have.max_bytes), _limit(wanted.max_bytes)),
                ("storage", _plain(have.storage), _plain(wanted.storage)),
            )
            if mine != theirs
        }
        if kept and not self._told_kept:
            self._told_kept = True
            log.info("stream_config_kept", stream=self.stream, **kept)
        if raised:
            log.warning("stream_config_raised", stream=self.stream, **raised)
            await self.js.update_stream(replace(have, **raised))
            self._atomic = None

    def restore_soon(self) -> None:
        """After a reconnection (from its hook, which must not wait for the server's
        answers), in the background: the stream (``restore_stream``), then each consumer
        kept here (``keep``; ``DurablePull`` keeps itself), each unhealthy until then;
        ``close`` cancels it."""
        for consumer in self._kept:
            consumer.unverified()
        if self._restoring is None or self._restoring.done():
            self._restoring = asyncio.create_task(self._restore(), name="restore")

    async def _restore(self) -> bool:
        if not await self.restore_stream():
            return False
        for consumer in list(self._kept):
            await consumer.verify()
        return True

    def keep(self, consumer: KeptConsumer) -> None:
        """Verify ``consumer`` after each reconnection (``restore_soon``)."""
        self._kept.append(consumer)

    def forget(self, consumer: KeptConsumer) -> None:
        with contextlib.suppress(ValueError):
            self._kept.remove(consumer)

    async def restore_stream(self, *, attempts: int = 60, delay: float = 0.5) -> bool:
        """``ensure_stream`` again, as configured last, e.g. after a reconnection to a
        server that lost its store. A server whose JetStream is still starting does
        not answer yet: retried ``attempts`` times. Whether the stream is there."""
        for attempt in range(1, attempts + 1):
            if self.closing or self.nc.is_closed:
                return False
            try:
                await self.ensure_stream(**self._stream_options)
                return True
            except UnsupportedServer:
                raise
            except (nats.errors.Error, TimeoutError) as exc:
                if attempt == attempts:
                    log.warning("stream_not_restored", stream=self.stream, error=repr(exc))
                    return False
                await asyncio.sleep(delay)
        return False


def _plain(value: object) -> str:
    """An enum of the server's answer (sometimes a plain string) as its value."""
    return str(getattr(value, "value", value))


def _limit(value: float | None) -> float | None:
    """A stream limit as one value: the server's "no limit" (0 or -1) as None."""
    return None if value is None or value <= 0 else value
