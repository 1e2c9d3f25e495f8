"""The settlement service, wired: projection tables + durable consumer (``ApplySettled``)
+ servicer (``Queries``)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence

import grpc
from ddz.adapters.messaging.bus import EventBus
from ddz.adapters.rpc.grpc_server import full_service_name
from ddz.adapters.runtime.service_runner import connect_bus
from ddz.adapters.security.event_signing import event_keyring
from ddz.adapters.service_db import upgrade_service_db
from ddz.adapters.service_db.balances import BalanceProjection
from ddz.adapters.store import SqlEventStore, make_engine
from ddz.adapters.telemetry.health import Check, database_reachable
from ddz.config import Settings
from ddz.v1 import settlement_pb2, settlement_pb2_grpc

from .adapters.consumer import DURABLE, BusStartedHands, SettlementConsumer
from .servicer import SettlementServicer
from .use_cases.handlers import ApplySettled, Queries

NAME = "settlement"


class SettlementApp:
    full_names: Sequence[str] = (full_service_name(settlement_pb2, "SettlementService"),)

    def __init__(self, settings: Settings, durable: str) -> None:
        self.settings = settings
        self.durable = durable
        self.engine = make_engine(settings.database_url)
        self.projection = BalanceProjection(self.engine)
        self.bus: EventBus | None = None
        self.consumer: SettlementConsumer | None = None

    async def start(self) -> None:
        await asyncio.to_thread(upgrade_service_db, self.engine)
        self.bus = await connect_bus(self.settings, NAME)
        apply = ApplySettled(
            self.projection, BusStartedHands(self.bus), SqlEventStore(self.engine),
            event_keyring(self.settings),
        )  # fmt: skip
        self.consumer = SettlementConsumer(self.bus, apply)
        await self.consumer.start(self.durable)

    def checks(self) -> Mapping[str, Check]:
        bus = self.bus
        assert bus is not None, "start() first"
        return {
            "nats": lambda: bus.connected,
            "database": database_reachable(self.engine),
            "consumer": bus.subscriptions_healthy,
        }

    def add_to_server(self, server: grpc.aio.Server) -> None:
        settlement_pb2_grpc.add_SettlementServiceServicer_to_server(  # type: ignore[no-untyped-call]
            SettlementServicer(Queries(self.projection)), server
        )

    async def close(self) -> None:
        if self.bus is not None:
            await self.bus.close()  # stops the durable subscription first
        self.engine.dispose()


async def build(settings: Settings, *, durable: str = DURABLE) -> SettlementApp:
    return SettlementApp(settings, durable)
