"""The dealer service, wired: the seed vault, the new hands' streams and the tables'
records on the NATS bus, the ``Dealer`` use cases on them, and the servicer in front."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from contextlib import AsyncExitStack

import grpc
from ddz.adapters.messaging.bus import EventBus
from ddz.adapters.messaging.hand_stream import JetStreamHandLog
from ddz.adapters.rpc.grpc_server import full_service_name
from ddz.adapters.runtime.service_runner import connect_bus, producer_name
from ddz.adapters.security.event_signing import ensure_signer, event_keyring
from ddz.adapters.service_db import upgrade_service_db
from ddz.adapters.store import make_engine
from ddz.adapters.store.reachable import database_reachable
from ddz.adapters.telemetry.health import Check
from ddz.config import Settings
from ddz.v1 import dealer_pb2, dealer_pb2_grpc
from sqlalchemy import Engine

from .adapters.seeds import SeedVault
from .adapters.table_records import BusTableRecords
from .servicer import DealerServicer
from .use_cases.handlers import Dealer

NAME = "dealer"


class DealerApp:
    """The dealer built whole (``build``): its bus, database and servicer."""

    full_names: Sequence[str] = (full_service_name(dealer_pb2, "DealerService"),)

    def __init__(
        self, bus: EventBus, engine: Engine, servicer: DealerServicer, resources: AsyncExitStack
    ) -> None:
        self.bus = bus
        self.engine = engine
        self.servicer = servicer
        self.resources = resources

    async def start(self) -> None:
        pass  # nothing runs before the first call but what ``build`` opened

    def checks(self) -> Mapping[str, Check]:
        bus = self.bus
        return {"nats": lambda: bus.connected, "database": database_reachable(self.engine)}

    def add_to_server(self, server: grpc.aio.Server) -> None:
        dealer_pb2_grpc.add_DealerServiceServicer_to_server(self.servicer, server)  # type: ignore[no-untyped-call]

    async def close(self) -> None:
        await self.resources.aclose()


async def build(settings: Settings) -> DealerApp:
    """The dealer with its tables upgraded and its bus connected; what was opened is
    closed again if a later step fails."""
    resources = AsyncExitStack()
    try:
        engine = make_engine(settings.store.database_url)
        resources.callback(engine.dispose)
        await asyncio.to_thread(upgrade_service_db, engine)
        bus = await connect_bus(settings.bus, NAME)
        resources.push_async_callback(bus.close)
        keyring = event_keyring(settings.keys)  # the table's records are verified too
        dealer = Dealer(
            SeedVault(engine),
            JetStreamHandLog(bus, ensure_signer(settings.keys, NAME), keyring),
            BusTableRecords(bus, keyring),
            producer_name(NAME),
        )  # fmt: skip
        return DealerApp(bus, engine, DealerServicer(dealer), resources)
    except BaseException:
        await resources.aclose()
        raise
