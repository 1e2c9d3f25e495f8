"""The recorder service, wired: event store + durable consumer (``Record``) + servicers
(``Reads``, ``Audits``).

One writer per store: every instance serves reads and audits, but only the holder of
the store's lease (``ddz.adapters.messaging.lease``, key ``recorder.<store>``) runs the consumer;
the others stand by, SERVING, and the first to take the lease when its holder goes
starts consuming (``StoreConsumer.start(take_over=True)``). A lone instance takes the
lease as it starts (or, after a holder was killed, one ``DDZ_LEASE_TTL`` later).
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import Mapping, Sequence

import grpc
import structlog
from ddz.adapters.messaging.bus import EventBus
from ddz.adapters.messaging.lease import Lease, instance_id
from ddz.adapters.rpc.grpc_server import full_service_name
from ddz.adapters.runtime.service_runner import connect_bus
from ddz.adapters.security.event_signing import event_keyring
from ddz.adapters.service_db import upgrade_service_db
from ddz.adapters.service_db.hand_index import HandIndex
from ddz.adapters.store import SqlEventStore, create_store
from ddz.adapters.store.keys import Ed25519Signer, Keyring, ensure_signing_key
from ddz.adapters.store.reachable import database_reachable
from ddz.adapters.telemetry.health import Check
from ddz.audit.evidence.file import Evidence, build_evidence
from ddz.audit.evidence.keys import NoAuditKeys, auditor_keyring
from ddz.audit.store.source import hand_stream_id, load_hand
from ddz.config import Settings
from ddz.urls import redacted_url
from ddz.v1 import (
    audit_pb2,
    audit_pb2_grpc,
    desk_pb2,
    desk_pb2_grpc,
    recorder_pb2,
    recorder_pb2_grpc,
)

from .adapters.audits import Audits
from .adapters.consumer import StoreConsumer
from .audit_servicer import AuditServicer
from .desk_servicer import DeskServicer
from .servicer import RecorderServicer
from .use_cases.handlers import Reads, Record, VerifiedChains

NAME = "recorder"
AUDIT_BATCH = 50  # ended hands audited per round for the desk's index
AUDIT_PAUSE = 2.0  # seconds between rounds when none was waiting
ANALYZE_EVERY = 600.0  # seconds between refreshes of the index's planner statistics

log = structlog.get_logger("ddz.recorder")


class RecorderApp:
    full_names: Sequence[str] = (
        full_service_name(recorder_pb2, "RecorderService"),
        full_service_name(audit_pb2, "AuditService"),
        full_service_name(desk_pb2, "DeskService"),
    )

    def __init__(
        self,
        settings: Settings,
        *,
        durable: str,
        sign_heads: bool,
        signer: Ed25519Signer,
        store: SqlEventStore,
        bus: EventBus,
    ) -> None:
        self.settings = settings
        self.durable = durable
        self.signer = signer
        self.store = store
        self.bus = bus
        self.active = False  # this instance is the writer: its consumer runs
        self.holder = instance_id(NAME)
        self._auditing: asyncio.Task[None] | None = None
        self.index = HandIndex(store.engine)  # the dispute desk's hand summaries
        record = Record(
            store, sign_head=self._sign_head if sign_heads else None,
            keyring=event_keyring(settings.keys), on_stored=self.index.apply_many,
        )  # fmt: skip
        self.chains: VerifiedChains = record.chains  # what ``Record`` verified as it stored
        self.consumer = StoreConsumer(bus, record, durable)
        self.lease = Lease(
            bus, writer_lease(settings.store.database_url), self.holder,
            service=NAME, ttl=settings.bus.lease_ttl, replicas=settings.bus.stream_replicas,
            on_taken=self._write, on_lost=self._stand_by,
        )  # fmt: skip
        # Public keys (the keyring, and this recorder's own key even if the keyring file
        # is elsewhere), plus the HMAC key of older hands when it is there.
        self.keys = (
            auditor_keyring_or_empty(settings)
            .with_public({signer.key_id: signer.public_key})
            .with_events(event_keyring(settings.keys))  # every event: its producer's
        )
        self.audits = Audits(store, settings.store.database_url, self.keys)

    async def start(self) -> None:
        await self.lease.start()
        if not self.active:
            log.info("recorder_standby", lease=self.lease.name, holder=self.holder)

    async def _write(self) -> None:
        """The lease is ours: consume, taking over what a writer before us held."""
        await self.consumer.start(take_over=True)
        self.active = True
        if self._auditing is None or self._auditing.done():
            self._auditing = asyncio.create_task(self._audit_ended_hands())
        log.info("recorder_writing", holder=self.holder, durable=self.durable)

    async def _stand_by(self) -> None:
        """The lease is lost: stop consuming at once (the batch in hand is finished;
        storing it again after the next writer is a no-op in the store)."""
        self.active = False
        await self.consumer.stop()
        log.warning("recorder_standby", holder=self.holder, why="lease lost")

    async def _audit_ended_hands(self) -> None:
        """The writer audits each hand once its record ends, for the desk's "failed
        audit" filter (the hand page audits again, live, whenever it is opened)."""
        analyzed = 0.0
        while self.active:
            try:
                done = await asyncio.to_thread(self._audit_some)
                if time.monotonic() - analyzed > ANALYZE_EVERY:
                    await asyncio.to_thread(self.index.optimize)
                    analyzed = time.monotonic()
            except Exception:
                log.exception("hand_index_audit_failed")
                done = 0
            await asyncio.sleep(0.2 if done else AUDIT_PAUSE)

    def _audit_some(self) -> int:
        index, audits = self.index, self.audits
        hands = index.pending_audits(AUDIT_BATCH)
        for hand_id in hands:
            # A hand this process verified as it stored it is not verified twice: the
            # audit recomputes the stored chain and checks it ends at the head verified
            # (DECISIONS.md, "The recorder's audit trusts what it verified").
            stream_id = hand_stream_id(hand_id)
            verified = self.chains.head(stream_id)
            report = audits._audit(hand_id, verified)
            if report is not None:
                index.set_audit(hand_id, report.verdict.value, report.message)
            self.chains.forget(stream_id)
        return len(hands)

    def _evidence(self, hand_id: str, keys: Keyring) -> Evidence | None:
        """A hand's evidence file, carrying the public keys that signed it (None: the
        store has no such hand)."""
        if load_hand(self.store, hand_id) is None:
            return None
        return build_evidence(self.store, hand_id, keys)

    def checks(self) -> Mapping[str, Check]:
        """A standby is SERVING (it answers reads); the writer's consumer must run."""
        bus, store, consumer, lease = self.bus, self.store, self.consumer, self.lease
        return {
            "nats": lambda: bus.connected,
            "database": database_reachable(store.engine),
            "consumer": lambda: not self.active or consumer.healthy,
            "lease": lambda: lease.running,
        }

    def _sign_head(self, stream_id: str) -> None:
        """A finished hand's chain head, signed with the recorder's Ed25519 key."""
        self.store.sign_head(stream_id, self.signer)

    def add_to_server(self, server: grpc.aio.Server) -> None:
        recorder_pb2_grpc.add_RecorderServiceServicer_to_server(  # type: ignore[no-untyped-call]
            RecorderServicer(Reads(self.store)), server
        )
        keys = self.keys
        audit = AuditServicer(self.audits)
        audit_pb2_grpc.add_AuditServiceServicer_to_server(audit, server)  # type: ignore[no-untyped-call]
        # the evidence file carries public keys only (published_keys: never an HMAC key)
        desk = DeskServicer(self.index, lambda hand_id: self._evidence(hand_id, keys))
        desk_pb2_grpc.add_DeskServiceServicer_to_server(desk, server)  # type: ignore[no-untyped-call]

    async def close(self) -> None:
        self.active = False
        if self._auditing is not None:
            self._auditing.cancel()
        await self.consumer.stop()
        await self.lease.stop()  # after the consumer: the next writer starts after us
        await self.bus.close()
        self.store.close()


def writer_lease(database_url: str) -> str:
    """The name of a store's writer lease: one writer per store, whatever the instance
    (the URL without its credentials, hashed to a KV key)."""
    digest = hashlib.sha256(redacted_url(database_url, keep_user=False).encode()).hexdigest()
    return f"{NAME}.{digest[:16]}"


def auditor_keyring_or_empty(settings: Settings) -> Keyring:
    try:
        return auditor_keyring(settings.keys)
    except NoAuditKeys:
        return Keyring()


async def build(
    settings: Settings, *, durable: str = "recorder", sign_heads: bool = True
) -> RecorderApp:
    """The recorder with its signing key (made when missing, its public key published
    for auditors), its store and the desk's index upgraded, and its bus connected; the
    store is closed again if a later step fails. ``start`` runs for the writer's lease."""
    signer = await asyncio.to_thread(
        ensure_signing_key,
        settings.keys.audit_signing_key_path,
        settings.keys.audit_public_keys_path,
    )
    store = await asyncio.to_thread(create_store, settings.store.database_url, upgrade=True)
    try:
        # The desk's index lives in the services' lineage of the same database.
        await asyncio.to_thread(upgrade_service_db, store.engine)
        bus = await connect_bus(settings.bus, NAME)
    except BaseException:
        store.close()
        raise
    try:
        return RecorderApp(
            settings, durable=durable, sign_heads=sign_heads, signer=signer, store=store, bus=bus
        )
    except BaseException:
        await bus.close()
        store.close()
        raise
