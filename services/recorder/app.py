"""The recorder service, wired: event store + durable consumer (``Record``) + servicers
(``Reads``, ``Audits``)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence

import grpc
import structlog
from ddz.adapters.bus import EventBus
from ddz.adapters.grpc_server import full_service_name
from ddz.adapters.health import Check, database_reachable
from ddz.adapters.service_runner import connect_bus
from ddz.adapters.store import SqlEventStore, create_store
from ddz.adapters.store.keys import Ed25519Signer, Keyring, ensure_signing_key
from ddz.audit.keys import NoAuditKeys, auditor_keyring
from ddz.config import Settings
from ddz.v1 import audit_pb2, audit_pb2_grpc, recorder_pb2, recorder_pb2_grpc

from .audit_servicer import AuditServicer
from .consumer import StoreConsumer
from .handlers import Audits, Reads, Record
from .servicer import RecorderServicer

NAME = "recorder"

log = structlog.get_logger("ddz.recorder")


class RecorderApp:
    full_names: Sequence[str] = (
        full_service_name(recorder_pb2, "RecorderService"),
        full_service_name(audit_pb2, "AuditService"),
    )

    def __init__(self, settings: Settings, durable: str, sign_heads: bool) -> None:
        self.settings = settings
        self.durable = durable
        self.sign_heads = sign_heads
        self.store: SqlEventStore | None = None
        self.bus: EventBus | None = None
        self.consumer: StoreConsumer | None = None
        self.signer: Ed25519Signer | None = None

    async def start(self) -> None:
        # The signing key first: made when missing, its public key published for auditors.
        self.signer = await asyncio.to_thread(
            ensure_signing_key,
            self.settings.audit_signing_key_path,
            self.settings.audit_public_keys_path,
        )
        self.store = await asyncio.to_thread(create_store, self.settings.database_url, upgrade=True)
        self.bus = await connect_bus(self.settings, NAME)
        record = Record(self.store, sign_head=self._sign_head if self.sign_heads else None)
        self.consumer = StoreConsumer(self.bus, record, self.durable)
        await self.consumer.start()

    def checks(self) -> Mapping[str, Check]:
        bus, store, consumer = self.bus, self.store, self.consumer
        assert bus is not None and store is not None and consumer is not None, "start() first"
        return {
            "nats": lambda: bus.connected,
            "database": database_reachable(store.engine),
            "consumer": lambda: consumer.healthy,
        }

    def _sign_head(self, stream_id: str) -> None:
        """A finished hand's chain head, signed with the recorder's Ed25519 key."""
        assert self.store is not None and self.signer is not None
        self.store.sign_head(stream_id, self.signer)

    def add_to_server(self, server: grpc.aio.Server) -> None:
        assert self.store is not None, "start() first"
        recorder_pb2_grpc.add_RecorderServiceServicer_to_server(  # type: ignore[no-untyped-call]
            RecorderServicer(Reads(self.store)), server
        )
        assert self.signer is not None
        # Public keys (the keyring, and this recorder's own key even if the keyring file
        # is elsewhere), plus the HMAC key of older hands when it is there.
        keys = auditor_keyring_or_empty(self.settings).with_public(
            {self.signer.key_id: self.signer.public_key}
        )
        audits = Audits(self.store, self.settings.database_url, keys)
        audit = AuditServicer(audits)
        audit_pb2_grpc.add_AuditServiceServicer_to_server(audit, server)  # type: ignore[no-untyped-call]

    async def close(self) -> None:
        if self.consumer is not None:
            await self.consumer.stop()
        if self.bus is not None:
            await self.bus.close()
        if self.store is not None:
            self.store.close()


def auditor_keyring_or_empty(settings: Settings) -> Keyring:
    try:
        return auditor_keyring(settings)
    except NoAuditKeys:
        return Keyring()


async def build(
    settings: Settings, *, durable: str = "recorder", sign_heads: bool = True
) -> RecorderApp:
    return RecorderApp(settings, durable, sign_heads)
