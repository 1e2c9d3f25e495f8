"""How the suite running from a data directory is: what ``ddz status`` shows.

It reads ``<data dir>/stack.json`` (``stack_file``: every instance and NATS node with its
pid, address and restarts, written by ``ddz up`` and again after each restart), then asks
each part itself: a service instance its gRPC health (over mutual TLS, as the tools
do), a NATS node whether it answers and serves the ``DDZ`` stream (as the ``ddz`` tools
user, which may read the stream's and its consumers' state and nothing it could
change), the event store its size and its last event. A process's uptime is read from
``/proc`` (Linux).

Every part is asked with a short timeout, so a hung part shows as ``NO_ANSWER`` instead
of hanging the command; ``Status.problems`` says, one line each, what is not serving.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import nats
import sqlalchemy as sa
from nats.js.api import ConsumerInfo, StreamInfo

from ddz.adapters.messaging import nats_auth
from ddz.adapters.messaging.subjects import STREAM_NAME
from ddz.adapters.runtime import stack_file
from ddz.adapters.runtime.probes import SERVING, health_status
from ddz.adapters.telemetry.health import ACTIVE_TABLE
from ddz.config.bus import BusSettings
from ddz.config.calling import CallSettings
from ddz.config.store import StoreSettings
from ddz.urls import redacted_url

TIMEOUT = 2.0  # seconds each part may take to answer

# What ``health`` says of a part.
UP = "SERVING"
DOWN = "NOT_SERVING"
SILENT = "NO_ANSWER"  # nothing answers at its address
EXITED = "EXITED"  # its process no longer runs


@dataclass
class Part:
    """A service instance or a NATS node."""

    name: str
    service: str  # "" for a NATS node
    address: str
    pid: int
    health: str
    uptime_s: float | None
    restarts: int
    metrics: str = ""  # where its Prometheus metrics are ("" for NATS)
    role: str = ""  # the table's: "active" or "standby"


@dataclass
class Consumer:
    name: str
    pending: int  # messages of the stream not yet delivered to it: its lag
    ack_pending: int  # delivered, not yet acknowledged
    redelivered: int
    last_delivered: int  # stream sequence


@dataclass
class Stream:
    name: str
    messages: int
    bytes: int
    first_seq: int
    last_seq: int
    replicas: int
    leader: str
    peers: list[dict[str, Any]] = field(default_factory=list)  # the other replicas


@dataclass
class Store:
    url: str  # without its password
    size_bytes: int | None
    last_position: int  # the store position of its last event (0: none yet)
    last_event_time: str | None  # ISO 8601, UTC
    error: str = ""


@dataclass
class Status:
    data_dir: str
    running: bool
    pid: int = 0  # the process that started the suite (ddz up)
    instances: list[Part] = field(default_factory=list)
    nats: list[Part] = field(default_factory=list)
    stream: Stream | None = None
    consumers: list[Consumer] | None = None  # None: the NATS user may not list them
    store: Store | None = None
    problems: list[str] = field(default_factory=list)

    @property
    def serving(self) -> bool:
        return self.running and not self.problems

    def as_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["serving"] = self.serving
        return data


def uptime(pid: int) -> float | None:
    """Seconds since process ``pid`` started (None: no such process, or no /proc), on the
    clock the kernel counts both in: seconds since boot."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        since_boot = float(Path("/proc/uptime").read_text().split()[0])
    except (OSError, IndexError, ValueError):
        return None
    started = int(stat[19]) / os.sysconf("SC_CLK_TCK")  # field 22: starttime, in ticks
    return max(0.0, since_boot - started)


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, 0)
            return True
        return False
    return state not in ("Z", "X")  # a zombie has exited, its parent not yet told


def read(data_dir: Path, calling: CallSettings, bus: BusSettings, store: StoreSettings) -> Status:
    """The status of the suite running from ``data_dir`` (``running`` False: none runs
    there), asked with the parts of the settings ``stack_file.found`` gives."""
    record = stack_file.read(data_dir)
    status = Status(data_dir=str(data_dir), running=record is not None)
    if record is None:
        return status
    status.pid = int(record.get("pid", 0))
    entries = record.get("instances", [])
    with ThreadPoolExecutor(max_workers=max(1, min(16, len(entries)))) as pool:
        # At once: a hung instance costs its timeout once, not once per instance.
        status.instances = list(pool.map(lambda entry: _instance(entry, calling), entries))
    nats_nodes = record.get("nats", [])
    nodes, status.stream, status.consumers = asyncio.run(_ask_nats(nats_nodes, bus))
    status.nats = nodes
    status.store = _store(store)
    for part in [*status.nats, *status.instances]:
        if part.health != UP:
            status.problems.append(f"{part.name} at {part.address}: {part.health}")
    if status.stream is None:
        status.problems.append(f"the {STREAM_NAME} stream does not answer")
    if status.store.error:
        status.problems.append(f"the event store: {status.store.error}")
    return status


def _instance(entry: dict[str, Any], calling: CallSettings) -> Part:
    pid = int(entry.get("pid", 0))
    address = str(entry.get("address", ""))
    service = str(entry.get("service", ""))
    part = Part(
        name=str(entry.get("name", service)), service=service, address=address, pid=pid,
        health=EXITED, uptime_s=None, restarts=int(entry.get("restarts", 0)),
        metrics=str(entry.get("metrics", "")),
    )  # fmt: skip
    if not alive(pid):
        return part
    part.uptime_s = _rounded(uptime(pid))
    answer = health_status(address, TIMEOUT, settings=calling)
    part.health = SILENT if answer is None else (UP if answer == SERVING else DOWN)
    if service == "table" and part.health == UP:
        active = health_status(address, TIMEOUT, ACTIVE_TABLE, settings=calling)
        part.role = "active" if active == SERVING else "standby"
    return part


async def _ask_nats(
    entries: list[dict[str, Any]], bus: BusSettings
) -> tuple[list[Part], Stream | None, list[Consumer] | None]:
    """Each node on its own connection; the stream and its consumers through the first
    that serves it."""
    nodes: list[Part] = []
    stream: Stream | None = None
    consumers: list[Consumer] | None = None
    if not entries:  # a NATS the stack did not start (DDZ_NATS_URL): ask it as one
        entries = [{"name": "nats", "url": url, "pid": 0} for url in bus.nats_servers]
    for entry in entries:
        pid = int(entry.get("pid", 0))
        url = str(entry.get("url", ""))
        node = Part(
            name=str(entry.get("name", "nats")), service="", address=url, pid=pid,
            health=EXITED, uptime_s=None, restarts=int(entry.get("restarts", 0)),
        )  # fmt: skip
        nodes.append(node)
        if pid and not alive(pid):
            continue
        node.uptime_s = _rounded(uptime(pid)) if pid else None
        try:
            found = await _ask_node(url, bus, want_stream=stream is None)
        except (TimeoutError, OSError, nats.errors.Error):
            node.health = SILENT
            continue
        if found is None:
            node.health = DOWN  # it answers, but not for the stream: no JetStream
            continue
        node.health = UP
        if stream is None:
            info, consumers = found
            stream = _stream(info)
    return nodes, stream, consumers


async def _ask_node(
    url: str, bus: BusSettings, *, want_stream: bool
) -> tuple[StreamInfo, list[Consumer] | None] | None:
    options = nats_auth.connect_options(bus, nats_auth.TOOLS)

    async def quiet(exc: Exception) -> None:
        """The client's own errors: the caller says what failed, in one word."""

    nc = await nats.connect(
        servers=[url], name="ddz-status", allow_reconnect=False, connect_timeout=TIMEOUT,
        max_reconnect_attempts=0, error_cb=quiet, **options,
    )  # fmt: skip
    try:
        js = nc.jetstream(timeout=TIMEOUT)
        try:
            info = await js.stream_info(STREAM_NAME)
        except nats.errors.Error:
            return None
        if not want_stream:
            return info, None
        try:
            listed: list[ConsumerInfo] | None = await js.consumers_info(STREAM_NAME)
        except nats.errors.Error:
            listed = None  # not allowed (an older users file): the rest still shows
        return info, None if listed is None else [_consumer(c) for c in listed]
    finally:
        with contextlib.suppress(Exception):
            await nc.close()


def _stream(info: StreamInfo) -> Stream:
    state = info.state
    cluster = info.cluster
    peers = [
        {"name": p.name, "current": bool(p.current), "offline": bool(p.offline),
         "lag": int(p.lag or 0)}
        for p in ((cluster.replicas or []) if cluster is not None else [])
    ]  # fmt: skip
    return Stream(
        name=info.config.name or STREAM_NAME,
        messages=int(state.messages or 0), bytes=int(state.bytes or 0),
        first_seq=int(state.first_seq or 0), last_seq=int(state.last_seq or 0),
        replicas=int(info.config.num_replicas or 1),
        leader=(cluster.leader or "") if cluster is not None else "",
        peers=peers,
    )  # fmt: skip


def _consumer(info: ConsumerInfo) -> Consumer:
    return Consumer(
        name=info.name or (info.config.durable_name or ""),
        pending=int(info.num_pending or 0), ack_pending=int(info.num_ack_pending or 0),
        redelivered=int(info.num_redelivered or 0),
        last_delivered=int(info.delivered.stream_seq or 0) if info.delivered else 0,
    )  # fmt: skip


def _store(settings: StoreSettings) -> Store:
    """The event store's size (bytes on disk) and its last event."""
    from ddz.adapters.store import make_engine
    from ddz.adapters.store.schema import events

    url = settings.database_url
    store = Store(url=redacted_url(url), size_bytes=None, last_position=0, last_event_time=None)
    engine = make_engine(url, connect_args={} if "sqlite" in url else {"connect_timeout": 3})
    try:
        with engine.connect() as connection:
            last = connection.execute(
                sa.select(events.c.position, events.c.occurred_at)
                .order_by(events.c.position.desc())
                .limit(1)
            ).first()
            if engine.dialect.name == "postgresql":
                store.size_bytes = int(
                    connection.execute(
                        sa.text("SELECT pg_total_relation_size(CAST(:table AS regclass))"),
                        {"table": events.name},
                    ).scalar_one()
                )
    except sa.exc.SQLAlchemyError as exc:
        cause = getattr(exc, "orig", None) or exc
        store.error = f"{type(cause).__name__}: cannot read it"
        return store
    finally:
        engine.dispose()
    if engine.dialect.name == "sqlite" and engine.url.database:
        files = [Path(engine.url.database + suffix) for suffix in ("", "-wal", "-shm")]
        store.size_bytes = sum(f.stat().st_size for f in files if f.exists())
    if last is not None:
        store.last_position = int(last.position)
        when = last.occurred_at
        if when is not None:
            when = when if when.tzinfo else when.replace(tzinfo=UTC)
            store.last_event_time = when.astimezone(UTC).isoformat(timespec="seconds")
    return store


def age(iso: str | None, now: datetime | None = None) -> float | None:
    """Seconds since ``iso`` (a ``last_event_time``)."""
    if iso is None:
        return None
    return ((now or datetime.now(UTC)) - datetime.fromisoformat(iso)).total_seconds()


def _rounded(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds, 1)
