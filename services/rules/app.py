"""The rules service, wired: the hands' log on the NATS bus, the dealer's seeds over a
channel, the ``Rules`` use cases on them, and the servicer in front."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AsyncExitStack

import grpc
from ddz.adapters.messaging.bus import EventBus
from ddz.adapters.messaging.hand_stream import JetStreamHandLog
from ddz.adapters.rpc.grpc_client import make_channel
from ddz.adapters.rpc.grpc_server import full_service_name
from ddz.adapters.runtime.service_runner import connect_bus, producer_name
from ddz.adapters.security.event_signing import ensure_signer, event_keyring
from ddz.adapters.telemetry.health import Check
from ddz.config import Settings
from ddz.v1 import dealer_pb2_grpc, rules_pb2, rules_pb2_grpc

from .adapters.clients import DealerSeeds
from .servicer import RulesServicer
from .use_cases.cache import HandCache, KeyedLocks
from .use_cases.handlers import Rules

NAME = "rules"
CACHE_SIZE = 2000  # hands in play kept folded; the rest are rebuilt from the bus


class RulesApp:
    """The rules built whole (``build``): its bus, its channel to the dealer, its servicer."""

    full_names: Sequence[str] = (full_service_name(rules_pb2, "RulesService"),)

    def __init__(self, bus: EventBus, servicer: RulesServicer, resources: AsyncExitStack) -> None:
        self.bus = bus
        self.servicer = servicer
        self.resources = resources

    async def start(self) -> None:
        pass  # nothing runs before the first call but what ``build`` opened

    def checks(self) -> Mapping[str, Check]:
        bus = self.bus
        return {"nats": lambda: bus.connected}

    def add_to_server(self, server: grpc.aio.Server) -> None:
        rules_pb2_grpc.add_RulesServiceServicer_to_server(self.servicer, server)  # type: ignore[no-untyped-call]

    async def close(self) -> None:
        await self.resources.aclose()  # the dealer's channel, then the bus


async def build(settings: Settings) -> RulesApp:
    """The rules with the bus connected and the dealer's channel open; what was opened
    is closed again if a later step fails."""
    resources = AsyncExitStack()
    try:
        bus = await connect_bus(settings.bus, NAME)
        resources.push_async_callback(bus.close)
        channel = make_channel(settings.calling, "dealer")
        resources.push_async_callback(channel.close)
        dealer = dealer_pb2_grpc.DealerServiceStub(channel)  # type: ignore[no-untyped-call]
        rules = Rules(
            JetStreamHandLog(bus, ensure_signer(settings.keys, NAME), event_keyring(settings.keys)),
            DealerSeeds(dealer),
            HandCache(CACHE_SIZE),
            KeyedLocks(),
            producer_name(NAME),
        )
        return RulesApp(bus, RulesServicer(rules), resources)
    except BaseException:
        await resources.aclose()
        raise
