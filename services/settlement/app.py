"""The settlement service, wired: projection tables + durable consumer (``ApplySettled``)
+ servicer (``Queries``)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from contextlib import AsyncExitStack

import grpc
from ddz.adapters.messaging.bus import EventBus
from ddz.adapters.rpc.grpc_server import full_service_name
from ddz.adapters.runtime.service_runner import connect_bus
from ddz.adapters.security.event_signing import event_keyring
from ddz.adapters.service_db import upgrade_service_db
from ddz.adapters.service_db.balances import BalanceProjection
from ddz.adapters.store import SqlEventStore, make_engine
from ddz.adapters.store.reachable import database_reachable
from ddz.adapters.telemetry.health import Check
from ddz.config import Settings
from ddz.v1 import settlement_pb2, settlement_pb2_grpc
from sqlalchemy import Engine

from .adapters.consumer import DURABLE, BusStartedHands, SettlementConsumer
from .servicer import SettlementServicer
from .use_cases.handlers import ApplySettled, Queries

NAME = "settlement"


class SettlementApp:
    """The settlement built whole (``build``); ``start`` starts its durable consumer."""

    full_names: Sequence[str] = (full_service_name(settlement_pb2, "SettlementService"),)

    def __init__(
        self,
        bus: EventBus,
        engine: Engine,
        projection: BalanceProjection,
        consumer: SettlementConsumer,
        durable: str,
        resources: AsyncExitStack,
    ) -> None:
        self.bus = bus
        self.engine = engine
        self.projection = projection
        self.consumer = consumer
        self.durable = durable
        self.resources = resources

    async def start(self) -> None:
        await self.consumer.start(self.durable)

    def checks(self) -> Mapping[str, Check]:
        bus = self.bus
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
        await self.resources.aclose()  # the bus first: stops the durable subscription


async def build(settings: Settings, *, durable: str = DURABLE) -> SettlementApp:
    """The settlement with its tables upgraded and its bus connected; what was opened is
    closed again if a later step fails."""
    resources = AsyncExitStack()
    try:
        engine = make_engine(settings.store.database_url)
        resources.callback(engine.dispose)
        projection = BalanceProjection(engine)
        await asyncio.to_thread(upgrade_service_db, engine)
        bus = await connect_bus(settings.bus, NAME)
        resources.push_async_callback(bus.close)
        apply = ApplySettled(
            projection, BusStartedHands(bus), SqlEventStore(engine), event_keyring(settings.keys)
        )
        consumer = SettlementConsumer(bus, apply)
        return SettlementApp(bus, engine, projection, consumer, durable, resources)
    except BaseException:
        await resources.aclose()
        raise
