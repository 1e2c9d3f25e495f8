"""The dealer service, wired: the seed vault, the new hands' streams and the tables'
records on the NATS bus, the ``Dealer`` use cases on them, and the servicer in front."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence

import grpc
from ddz.adapters.messaging.bus import EventBus
from ddz.adapters.messaging.hand_stream import JetStreamHandLog
from ddz.adapters.rpc.grpc_server import full_service_name
from ddz.adapters.runtime.service_runner import connect_bus, producer_name
from ddz.adapters.security.event_signing import ensure_signer, event_keyring
from ddz.adapters.service_db import upgrade_service_db
from ddz.adapters.store import make_engine
from ddz.adapters.telemetry.health import Check, database_reachable
from ddz.config import Settings
from ddz.v1 import dealer_pb2, dealer_pb2_grpc

from .adapters.seeds import SeedVault
from .adapters.table_records import BusTableRecords
from .servicer import DealerServicer
from .use_cases.handlers import Dealer

NAME = "dealer"


class DealerApp:
    full_names: Sequence[str] = (full_service_name(dealer_pb2, "DealerService"),)

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.engine = make_engine(settings.database_url)
        self.bus: EventBus | None = None
        self.servicer: DealerServicer | None = None

    async def start(self) -> None:
        await asyncio.to_thread(upgrade_service_db, self.engine)
        self.bus = await connect_bus(self.settings, NAME)
        keyring = event_keyring(self.settings)  # the table's records are verified too
        dealer = Dealer(
            SeedVault(self.engine),
            JetStreamHandLog(self.bus, ensure_signer(self.settings, NAME), keyring),
            BusTableRecords(self.bus, keyring),
            producer_name(NAME),
        )  # fmt: skip
        self.servicer = DealerServicer(dealer)

    def checks(self) -> Mapping[str, Check]:
        bus = self.bus
        assert bus is not None, "start() first"
        return {"nats": lambda: bus.connected, "database": database_reachable(self.engine)}

    def add_to_server(self, server: grpc.aio.Server) -> None:
        assert self.servicer is not None, "start() first"
        dealer_pb2_grpc.add_DealerServiceServicer_to_server(self.servicer, server)  # type: ignore[no-untyped-call]

    async def close(self) -> None:
        if self.bus is not None:
            await self.bus.close()
        self.engine.dispose()


async def build(settings: Settings) -> DealerApp:
    return DealerApp(settings)
